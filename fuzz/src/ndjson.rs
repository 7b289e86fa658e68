//! Target `ndjson`: a streaming tool answer (`application/x-ndjson`, §7.2)
//! from a tenant backend, cut into lines the way `read_ndjson` cuts the
//! stream and fed to today's per-line parser
//! [`ndjson_line`](root::integrations::client::ndjson_line). Kept in its own
//! module so it can be repointed at the incremental splitter that replaces
//! the line loop (only [`run`]'s body changes).
//!
//! Invariants checked: a line is ignored, forwards progress, yields the
//! result, or is a bad response — never another failure; a failed result
//! always carries an error text and never operator detail; forwarded
//! progress is non-empty, starts trimmed and is capped at
//! [`MAX_PROGRESS_CHARS`]; the verdict does not depend on whether a
//! progress receiver is attached.

use root::integrations::client::{InvokeFailure, MAX_PROGRESS_CHARS, ndjson_line};
use tokio::sync::mpsc;

/// Progress messages buffered per line before `try_send` drops the rest.
const PROGRESS_BUFFER: usize = 4;

/// Parse one stream body, line by line, until its result line.
pub fn run(data: &[u8]) {
    let (tx, mut rx) = mpsc::channel::<String>(PROGRESS_BUFFER);
    for line in data.split_inclusive(|b| *b == b'\n') {
        let with_progress = ndjson_line(line, Some(&tx));
        let without = ndjson_line(line, None);
        while let Ok(message) = rx.try_recv() {
            assert!(!message.is_empty(), "empty progress forwarded");
            assert_eq!(message.trim_start(), message, "progress starts trimmed");
            assert!(message.chars().count() <= MAX_PROGRESS_CHARS);
        }
        match (with_progress, without) {
            (Ok(None), Ok(None)) => {}
            (Ok(Some(result)), Ok(Some(again))) => {
                assert_eq!(result, again);
                if !result.success {
                    assert!(result.error.as_deref().is_some_and(|e| !e.is_empty()));
                }
                assert!(result.error_detail.is_none());
                return;
            }
            (Err(InvokeFailure::BadResponse(a)), Err(InvokeFailure::BadResponse(b))) => {
                assert_eq!(a, b);
                assert!(!a.is_empty());
                return;
            }
            (a, b) => panic!("a line must be ignored, a result or a bad response: {a:?} / {b:?}"),
        }
    }
}

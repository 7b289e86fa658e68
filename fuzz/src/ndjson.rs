//! Target `ndjson`: a streaming tool answer (`application/x-ndjson`, §7.2)
//! from a tenant backend, cut into chunks as the network might deliver it
//! (chunk sizes from the input's first byte), split by the incremental
//! [`LineSplitter`] `read_ndjson` uses, and
//! each line fed to the per-line parser
//! [`ndjson_line`].
//!
//! Invariants checked: the splitter yields exactly the lines of a plain
//! split on `\n` whatever the chunking (or refuses a line over its cap); a
//! line is ignored, forwards progress, yields the result, or is a bad
//! response — never another failure; a failed result always carries an
//! error text and never operator detail; forwarded progress is non-empty,
//! starts trimmed and is capped at [`MAX_PROGRESS_CHARS`]; the verdict does
//! not depend on whether a progress receiver is attached.

use root::integrations::client::{InvokeFailure, MAX_PROGRESS_CHARS, ndjson_line};
use root::outbound::{LineError, LineSplitter};
use tokio::sync::mpsc;

/// Progress messages buffered per line before `try_send` drops the rest.
const PROGRESS_BUFFER: usize = 4;

/// Per-line cap of the splitter under test: small, so inputs reach it.
const MAX_LINE: usize = 1024;

/// The lines of `body` as the splitter yields them when the bytes arrive
/// in chunks of `1 + (seed + i) % 7` bytes, checked against a plain split.
fn lines_of(seed: u8, body: &[u8]) -> Vec<Vec<u8>> {
    let mut splitter = LineSplitter::new(MAX_LINE, u64::MAX);
    let mut lines = Vec::new();
    let mut rest = body;
    let mut i = 0usize;
    let mut refused = false;
    while !rest.is_empty() {
        let n = (1 + (seed as usize + i) % 7).min(rest.len());
        match splitter.push(&rest[..n]) {
            Ok(done) => lines.extend(done),
            Err(LineError::LineTooLong { max }) => {
                assert_eq!(max, MAX_LINE);
                refused = true;
                break;
            }
            Err(e) => panic!("no stream cap is set: {e}"),
        }
        rest = &rest[n..];
        i += 1;
    }
    let expected: Vec<&[u8]> = body.split(|b| *b == b'\n').collect();
    if refused {
        assert!(
            expected.iter().any(|l| l.len() > MAX_LINE),
            "a line was refused although none is over the cap"
        );
        return lines;
    }
    lines.extend(splitter.finish());
    // A trailing newline leaves an empty last piece that is not a line.
    let expected: Vec<&[u8]> = match expected.split_last() {
        Some((&[], init)) => init.to_vec(),
        _ => expected,
    };
    assert!(
        expected.iter().all(|l| l.len() <= MAX_LINE),
        "an over-long line was not refused"
    );
    assert_eq!(lines, expected, "the chunking changed the lines");
    lines
}

/// Parse one stream body, line by line, until its result line.
pub fn run(data: &[u8]) {
    let Some((&seed, body)) = data.split_first() else {
        return;
    };
    let (tx, mut rx) = mpsc::channel::<String>(PROGRESS_BUFFER);
    for line in lines_of(seed, body) {
        let with_progress = ndjson_line(&line, Some(&tx));
        let without = ndjson_line(&line, None);
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

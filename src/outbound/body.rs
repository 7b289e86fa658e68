//! Bounded reads of response bodies from hosts we do not control. A body is
//! refused on its `Content-Length` before a byte is read, and a streamed
//! one as soon as it passes the cap, so a hostile or broken server costs at
//! most the cap in memory — never an OOM. Large bodies are parsed on the
//! blocking pool so megabytes of JSON never stall an async worker.

use serde::de::DeserializeOwned;

/// Bodies above this size are parsed on tokio's blocking pool.
pub const BLOCKING_PARSE_BYTES: usize = 256 * 1024;

/// A body that could not be read within its cap.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    /// Declared or streamed size over the cap.
    #[error("response body over the {limit}-byte limit")]
    TooLarge {
        /// The cap that was exceeded.
        limit: usize,
    },
    /// The connection failed (or the request timed out) while reading.
    #[error("response body not read")]
    Read(#[source] reqwest::Error),
}

/// Read the whole body, refusing one over `limit` bytes (by its
/// `Content-Length` first, then while streaming).
pub async fn read_capped(mut resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, BodyError> {
    let declared = resp.content_length();
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(BodyError::TooLarge { limit });
    }
    // Preallocate what was declared (already known to be within the cap).
    let mut buf = Vec::with_capacity(declared.map_or(0, |n| n as usize));
    while let Some(chunk) = resp.chunk().await.map_err(BodyError::Read)? {
        if buf.len() + chunk.len() > limit {
            return Err(BodyError::TooLarge { limit });
        }
        buf.extend_from_slice(&chunk);
    }
    Ok(buf)
}

/// The first `limit` bytes of the body (an error page's excerpt); the rest
/// is never read, and a read failure just ends the prefix.
pub async fn read_prefix(mut resp: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    while buf.len() < limit {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                let take = chunk.len().min(limit - buf.len());
                buf.extend_from_slice(&chunk[..take]);
            }
            Ok(None) | Err(_) => break,
        }
    }
    buf
}

/// Run `parse` (of a body of `len` bytes) on the blocking pool when the
/// body is over [`BLOCKING_PARSE_BYTES`], inline otherwise. `Err` only if
/// the blocking task panicked or was cancelled.
pub async fn parse_sized<R, F>(len: usize, parse: F) -> Result<R, tokio::task::JoinError>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    if len > BLOCKING_PARSE_BYTES {
        tokio::task::spawn_blocking(parse).await
    } else {
        Ok(parse())
    }
}

/// Parse JSON (`T`) from `bytes`, off the async thread when large. The
/// error says why (serde's message, or that parsing was aborted).
pub async fn parse_json<T>(bytes: Vec<u8>) -> Result<T, String>
where
    T: DeserializeOwned + Send + 'static,
{
    parse_sized(bytes.len(), move || {
        serde_json::from_slice::<T>(&bytes).map_err(|e| e.to_string())
    })
    .await
    .map_err(|e| format!("parsing aborted: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn json_parses_inline_or_on_the_blocking_pool() {
        let small: serde_json::Value = parse_json(b"{\"a\":1}".to_vec()).await.unwrap();
        assert_eq!(small["a"], 1);
        let big = format!("[{}0]", "1,".repeat(BLOCKING_PARSE_BYTES));
        let v: Vec<u8> = parse_json(big.into_bytes()).await.unwrap();
        assert_eq!(v.len(), BLOCKING_PARSE_BYTES + 1);
        let e = parse_json::<serde_json::Value>(b"nope".to_vec())
            .await
            .unwrap_err();
        assert!(e.starts_with("expected ident"), "{e}");
    }
}

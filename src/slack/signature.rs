//! Slack request signatures (§8.2): `v0=` + hex HMAC-SHA256 over
//! `v0:{timestamp}:{raw body}` with the app's signing secret used as a
//! UTF-8 string key (never hex-decoded). The MAC covers the bytes exactly as
//! received — Slack escapes `/` as `\/` and non-ASCII as `\uXXXX`, so a
//! re-serialised body would not verify. Compared in constant time; a
//! timestamp more than [`MAX_SKEW_SECS`] from now is stale (replay window).

use hmac::{Hmac, Mac};
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// Header carrying `v0=<hex>`.
pub const SIGNATURE_HEADER: &str = "x-slack-signature";
/// Header carrying the unix timestamp the signature covers.
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";
/// Slack's replay window: 5 minutes either way.
pub const MAX_SKEW_SECS: i64 = 300;
/// The only signature version Slack sends.
const VERSION: &str = "v0";

/// Why a request does not verify (never says which secret was tried).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A header is missing or not of the expected form.
    #[error("missing or malformed Slack signature headers")]
    Malformed,
    /// The timestamp is outside the 5-minute window.
    #[error("stale Slack request timestamp")]
    Stale,
    /// The MAC does not match.
    #[error("Slack signature mismatch")]
    Mismatch,
}

/// `v0=<hex>` for `body` at `timestamp` under `secret`.
pub fn sign(secret: &str, timestamp: &str, body: &[u8]) -> String {
    format!("{VERSION}={}", hex::encode(mac(secret, timestamp, body)))
}

fn mac(secret: &str, timestamp: &str, body: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length; `new_from_slice` cannot fail for it.
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    m.update(VERSION.as_bytes());
    m.update(b":");
    m.update(timestamp.as_bytes());
    m.update(b":");
    m.update(body);
    m.finalize().into_bytes().to_vec()
}

/// Verify `signature` (the `x-slack-signature` value) over `body` sent at
/// `timestamp`, against `secret`, at unix time `now_secs`.
pub fn verify(
    secret: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
    now_secs: i64,
) -> Result<(), SignatureError> {
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| SignatureError::Malformed)?;
    // `abs_diff`: `ts` is unauthenticated and may be `i64::MIN`, where
    // `(now - ts).abs()` overflows (a panic with overflow checks, a
    // negative skew that passes the window without them).
    if now_secs.abs_diff(ts) > MAX_SKEW_SECS.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    let given = signature
        .trim()
        .strip_prefix("v0=")
        .and_then(|h| hex::decode(h).ok())
        .ok_or(SignatureError::Malformed)?;
    let expected = mac(secret, timestamp.trim(), body);
    if bool::from(expected.ct_eq(&given)) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slack");

    fn vector(json: &str, body: &str) -> (String, String, Vec<u8>, String) {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{FIXTURES}/{json}")).unwrap())
                .unwrap();
        let body = std::fs::read(format!("{FIXTURES}/{body}")).unwrap();
        let s = |k: &str| v[k].as_str().unwrap().to_string();
        (
            s("signing_secret"),
            s("x_slack_request_timestamp"),
            body,
            s("expected_x_slack_signature"),
        )
    }

    /// Slack's published vectors (a form body and a compact JSON body)
    /// verify on a clock at their timestamp, and are stale on a real one.
    #[test]
    fn slacks_published_vectors_verify_and_are_stale_today() {
        for (json, body) in [
            ("signature_vector.json", "signature_vector_body.txt"),
            (
                "signature_vector_2_json.json",
                "signature_vector_2_json_body.json",
            ),
        ] {
            let (secret, ts, body, expected) = vector(json, body);
            assert_eq!(sign(&secret, &ts, &body), expected, "{json}");
            let at: i64 = ts.parse().unwrap();
            assert_eq!(verify(&secret, &ts, &body, &expected, at), Ok(()));
            assert_eq!(verify(&secret, &ts, &body, &expected, at + 300), Ok(()));
            assert_eq!(
                verify(&secret, &ts, &body, &expected, at + 301),
                Err(SignatureError::Stale)
            );
            assert_eq!(
                verify(&secret, &ts, &body, &expected, 1_800_000_000),
                Err(SignatureError::Stale)
            );
            // Negative controls: a trailing newline, another secret, ts + 1.
            let mut longer = body.clone();
            longer.push(b'\n');
            assert_eq!(
                verify(&secret, &ts, &longer, &expected, at),
                Err(SignatureError::Mismatch)
            );
            assert_eq!(
                verify("another-secret", &ts, &body, &expected, at),
                Err(SignatureError::Mismatch)
            );
            let next = (at + 1).to_string();
            assert_eq!(
                verify(&secret, &next, &body, &expected, at),
                Err(SignatureError::Mismatch)
            );
        }
    }

    /// L-1: a timestamp at the ends of `i64` is stale, never an overflow
    /// (this test runs with overflow checks on) nor a wrapped skew that
    /// passes the window.
    #[test]
    fn security_l1_slack_skew_check_does_not_overflow() {
        assert_eq!(
            verify("s", "-9223372036854775808", b"{}", "v0=00", 1_700_000_000),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify("s", "9223372036854775807", b"{}", "v0=00", -1_700_000_000),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify("s", "-9223372036854775808", b"{}", "v0=00", i64::MAX),
            Err(SignatureError::Stale)
        );
        // The window's edges are unchanged.
        let now = 1_700_000_000;
        let edge = (now - MAX_SKEW_SECS).to_string();
        let good = sign("s", &edge, b"{}");
        assert_eq!(verify("s", &edge, b"{}", &good, now), Ok(()));
        let past = (now - MAX_SKEW_SECS - 1).to_string();
        assert_eq!(
            verify("s", &past, b"{}", &sign("s", &past, b"{}"), now),
            Err(SignatureError::Stale)
        );
    }

    #[test]
    fn malformed_headers_are_refused() {
        let now = 1_700_000_000;
        let ts = now.to_string();
        let good = sign("s", &ts, b"{}");
        assert_eq!(verify("s", &ts, b"{}", &good, now), Ok(()));
        for bad in ["", "v1=00", "v0=zz", "abc"] {
            assert_eq!(
                verify("s", &ts, b"{}", bad, now),
                Err(SignatureError::Malformed),
                "{bad:?}"
            );
        }
        assert_eq!(
            verify("s", "yesterday", b"{}", &good, now),
            Err(SignatureError::Malformed)
        );
    }
}

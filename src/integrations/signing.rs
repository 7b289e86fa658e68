//! root-int/1 request signing (§7.1): HMAC-SHA256 keyed with the
//! integration's signing secret over `"{timestamp}.{body}"`, where the
//! timestamp is unix seconds as a decimal string and the body is the exact
//! bytes sent (empty for GET). The signature travels as lowercase hex.
//!
//! The platform signs and never checks skew on its own requests; backends
//! verify with [`verify`], which allows [`MAX_SKEW_SECS`] of clock skew.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// Header carrying the unix-seconds timestamp that was signed.
pub const TIMESTAMP_HEADER: &str = "x-root-timestamp";
/// Header carrying the lowercase-hex HMAC-SHA256 signature.
pub const SIGNATURE_HEADER: &str = "x-root-signature";
/// Skew a backend should tolerate between its clock and the timestamp (§7.1).
pub const MAX_SKEW_SECS: i64 = 300;
/// Random bytes in a generated signing secret (hex-encoded: 64 characters).
pub const SECRET_BYTES: usize = 32;

type HmacSha256 = Hmac<Sha256>;

/// Why a signature was refused. The message never contains the secret.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// A header is absent.
    #[error("missing {0} header")]
    Missing(&'static str),
    /// The timestamp is not a decimal number of seconds.
    #[error("malformed timestamp")]
    BadTimestamp,
    /// The timestamp is further than the tolerance from `now`.
    #[error("timestamp outside the {0} s tolerance")]
    Skewed(i64),
    /// The signature is not hex or does not match.
    #[error("signature mismatch")]
    Mismatch,
}

fn mac(secret: &str, timestamp: &str, body: &[u8]) -> HmacSha256 {
    let mut mac =
        HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC accepts keys of any length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The lowercase-hex signature of `body` sent at `timestamp` (unix seconds).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    hex::encode(
        mac(secret, &timestamp.to_string(), body)
            .finalize()
            .into_bytes(),
    )
}

/// Check a received request: the timestamp must be within `max_skew_secs`
/// of `now_secs` and the signature must match (constant-time comparison).
pub fn verify(
    secret: &str,
    timestamp: &str,
    body: &[u8],
    signature: &str,
    now_secs: i64,
    max_skew_secs: i64,
) -> Result<(), SignatureError> {
    let ts: i64 = timestamp
        .trim()
        .parse()
        .map_err(|_| SignatureError::BadTimestamp)?;
    // `abs_diff` cannot overflow on extreme timestamps (a plain subtraction
    // panics in debug builds and wraps into "in window" in release ones); a
    // negative tolerance admits nothing.
    let within = u64::try_from(max_skew_secs).is_ok_and(|max| now_secs.abs_diff(ts) <= max);
    if !within {
        return Err(SignatureError::Skewed(max_skew_secs));
    }
    let expected = hex::decode(signature.trim()).map_err(|_| SignatureError::Mismatch)?;
    mac(secret, timestamp.trim(), body)
        .verify_slice(&expected)
        .map_err(|_| SignatureError::Mismatch)
}

/// A fresh signing secret: [`SECRET_BYTES`] bytes from the thread-local
/// CSPRNG (ChaCha, seeded from the OS), hex-encoded.
pub fn generate_secret() -> String {
    let mut bytes = [0u8; SECRET_BYTES];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Unix seconds of `at` (what the platform signs with).
pub fn unix_secs(at: storage::Ts) -> i64 {
    at.micros().div_euclid(1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_independently_computed_vectors() {
        // python3 -c "import hmac,hashlib; print(hmac.new(b'whsec_test',
        //   b'1700000000.{\"a\":1}', hashlib.sha256).hexdigest())"
        assert_eq!(
            sign("whsec_test", 1_700_000_000, br#"{"a":1}"#),
            "38877139021993b830af32feea6e18a8da83eb2f6e49ee50bd9e4cf4ca4d3789"
        );
        // GET: the body is the empty string, the payload "1700000000."
        assert_eq!(
            sign("whsec_test", 1_700_000_000, b""),
            "5967f3c560522fa40cf2876ebc3c3a08551dd6959aaade3b413460591895bdcc"
        );
    }

    #[test]
    fn the_mac_is_rfc_4231_hmac_sha256() {
        // RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?".
        let mut m = HmacSha256::new_from_slice(b"Jefe").unwrap();
        m.update(b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(m.finalize().into_bytes()),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn verify_accepts_a_fresh_signature_and_refuses_tampering_and_skew() {
        let body = br#"{"params":{}}"#;
        let sig = sign("s3cret-s3cret-s3cret", 1_000, body);
        assert_eq!(
            verify("s3cret-s3cret-s3cret", "1000", body, &sig, 1_000, 300),
            Ok(())
        );
        assert_eq!(
            verify("s3cret-s3cret-s3cret", "1000", body, &sig, 1_300, 300),
            Ok(())
        );
        assert_eq!(
            verify("s3cret-s3cret-s3cret", "1000", body, &sig, 1_301, 300),
            Err(SignatureError::Skewed(300))
        );
        assert_eq!(
            verify("s3cret-s3cret-s3cret", "1000", body, &sig, 699, 300),
            Err(SignatureError::Skewed(300))
        );
        assert_eq!(
            verify(
                "s3cret-s3cret-s3cret",
                "1000",
                br#"{"params":{"x":1}}"#,
                &sig,
                1_000,
                300
            ),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify("other-secret", "1000", body, &sig, 1_000, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify("s3cret-s3cret-s3cret", "1000", body, "zz", 1_000, 300),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify("s3cret-s3cret-s3cret", "soon", body, &sig, 1_000, 300),
            Err(SignatureError::BadTimestamp)
        );
    }

    #[test]
    fn extreme_timestamps_are_a_clean_skew_failure() {
        let body = b"{}";
        for (ts, now) in [
            (i64::MIN, 1_700_000_000),
            (i64::MAX, 1_700_000_000),
            (i64::MIN, i64::MAX),
            (i64::MAX, i64::MIN),
            (-1, 1_700_000_000),
        ] {
            let sig = sign("s3cret-s3cret-s3cret", ts, body);
            assert_eq!(
                verify(
                    "s3cret-s3cret-s3cret",
                    &ts.to_string(),
                    body,
                    &sig,
                    now,
                    300
                ),
                Err(SignatureError::Skewed(300)),
                "ts {ts}, now {now}"
            );
        }
        // Beyond i64: not a timestamp at all.
        assert_eq!(
            verify("s", "99999999999999999999", body, "00", 0, 300),
            Err(SignatureError::BadTimestamp)
        );
        // Negative but within the window (clocks near the epoch) still verifies.
        let sig = sign("s3cret-s3cret-s3cret", -100, body);
        assert_eq!(
            verify("s3cret-s3cret-s3cret", "-100", body, &sig, 100, 300),
            Ok(())
        );
        // Found by the `signature` fuzz target: the widest tolerance still
        // works at the edge, and a negative tolerance admits nothing.
        let sig = sign("s3cret-s3cret-s3cret", i64::MAX, body);
        assert_eq!(
            verify(
                "s3cret-s3cret-s3cret",
                "9223372036854775807",
                body,
                &sig,
                i64::MAX,
                i64::MAX
            ),
            Ok(())
        );
        assert_eq!(
            verify("s3cret-s3cret-s3cret", "1000", body, "00", 1_000, -1),
            Err(SignatureError::Skewed(-1))
        );
    }

    #[test]
    fn generated_secrets_are_long_hex_and_distinct() {
        let a = generate_secret();
        let b = generate_secret();
        assert_eq!(a.len(), SECRET_BYTES * 2);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}

//! Target `slack_signature`: Slack's request signature check
//! ([`verify`], §8.2) over arbitrary `x-slack-request-timestamp` /
//! `x-slack-signature` strings, bodies and clocks — both headers are
//! unauthenticated input read before the MAC is checked. The input is
//! structured (`arbitrary`) so valid signatures and in-window timestamps
//! are as likely as garbage, and clocks reach the ends of `i64` (review
//! L-1: the skew check once overflowed there).
//!
//! The oracle is independent of `signature.rs`: HMAC-SHA256 over
//! `"v0:{trimmed timestamp}:{body}"` computed here, and the verdict order
//! malformed timestamp, then skew (exact, in 128-bit arithmetic), then a
//! malformed signature, then the MAC. [`sign`] must agree with the oracle.

use arbitrary::{Arbitrary, Unstructured};
use hmac::{Hmac, Mac};
use root::slack::signature::{MAX_SKEW_SECS, SignatureError, sign, verify};
use sha2::Sha256;

/// One verification: secret, headers, body and the verifier's clock.
#[derive(Arbitrary, Debug)]
pub struct Input {
    secret: String,
    timestamp: Timestamp,
    body: Vec<u8>,
    signature: Signature,
    clock: Clock,
}

/// The `x-slack-request-timestamp` header.
#[derive(Arbitrary, Debug)]
enum Timestamp {
    /// Decimal seconds, as Slack sends.
    Secs(i64),
    /// Decimal seconds with whitespace around.
    Padded { secs: i64, before: Pad, after: Pad },
    /// `+N`: parses as a number; the MAC covers the `+`.
    Plus(u32),
    /// Anything.
    Raw(String),
}

#[derive(Arbitrary, Debug, Clone, Copy)]
enum Pad {
    None,
    Space,
    Tab,
    Newline,
    NoBreakSpace,
}

impl Pad {
    fn as_str(self) -> &'static str {
        match self {
            Pad::None => "",
            Pad::Space => " ",
            Pad::Tab => "\t",
            Pad::Newline => "\r\n",
            Pad::NoBreakSpace => "\u{a0}",
        }
    }
}

/// The `x-slack-signature` header, derived from the correct one or not.
#[derive(Arbitrary, Debug)]
enum Signature {
    Valid,
    Uppercase,
    Padded,
    WithoutVersion,
    OtherVersion,
    Truncated(u8),
    Flipped(u8),
    Raw(String),
}

/// The verifier's clock.
#[derive(Arbitrary, Debug)]
enum Clock {
    /// Within a few hours of the header's timestamp.
    Near(i16),
    /// Any instant.
    At(i64),
}

fn mac_hex(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(b"v0:");
    mac.update(timestamp.as_bytes());
    mac.update(b":");
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

/// Decode `data` as an [`Input`] (what cargo-fuzz does) and run it.
pub fn run_bytes(data: &[u8]) {
    if let Ok(input) = Input::arbitrary_take_rest(Unstructured::new(data)) {
        run(input);
    }
}

/// Verify one request against the oracle.
pub fn run(input: Input) {
    let header = match &input.timestamp {
        Timestamp::Secs(s) => s.to_string(),
        Timestamp::Padded {
            secs,
            before,
            after,
        } => format!("{}{secs}{}", before.as_str(), after.as_str()),
        Timestamp::Plus(n) => format!("+{n}"),
        Timestamp::Raw(s) => s.clone(),
    };
    let trimmed = header.trim();
    let parsed: Option<i64> = trimmed.parse().ok();
    let mac = mac_hex(&input.secret, trimmed, &input.body);
    assert_eq!(
        sign(&input.secret, trimmed, &input.body),
        format!("v0={mac}"),
        "sign() is v0= + HMAC-SHA256 over \"v0:{{ts}}:{{body}}\""
    );
    let signature = match input.signature {
        Signature::Valid => format!("v0={mac}"),
        Signature::Uppercase => format!("v0={}", mac.to_uppercase()),
        Signature::Padded => format!(" v0={mac}\n"),
        Signature::WithoutVersion => mac.clone(),
        Signature::OtherVersion => format!("v1={mac}"),
        Signature::Truncated(n) => format!("v0={}", &mac[..usize::from(n) % mac.len()]),
        Signature::Flipped(i) => {
            let mut bytes = mac.clone().into_bytes();
            let at = usize::from(i) % bytes.len();
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            format!("v0={}", String::from_utf8(bytes).expect("hex is ASCII"))
        }
        Signature::Raw(s) => s,
    };
    let now = match input.clock {
        Clock::Near(offset) => parsed.unwrap_or(0).saturating_add(i64::from(offset)),
        Clock::At(t) => t,
    };
    let expected = match parsed {
        None => Err(SignatureError::Malformed),
        Some(ts) if (i128::from(now) - i128::from(ts)).abs() > i128::from(MAX_SKEW_SECS) => {
            Err(SignatureError::Stale)
        }
        Some(_) => {
            let given = signature
                .trim()
                .strip_prefix("v0=")
                .and_then(|h| hex::decode(h).ok());
            let wanted = hex::decode(&mac).expect("our own hex");
            match given {
                None => Err(SignatureError::Malformed),
                Some(g) if g == wanted => Ok(()),
                Some(_) => Err(SignatureError::Mismatch),
            }
        }
    };
    assert_eq!(
        verify(&input.secret, &header, &input.body, &signature, now),
        expected,
        "timestamp {header:?}, signature {signature:?}, now {now}"
    );
}

//! Target `signature`: the root-int/1 request signature check
//! ([`verify`], §7.1) a tenant backend runs on `x-root-timestamp` and
//! `x-root-signature`, over arbitrary header strings, clocks and skews.
//! The input is structured (`arbitrary`) so valid signatures and in-window
//! timestamps are as likely as garbage.
//!
//! The oracle is independent of `signing.rs`: HMAC-SHA256 over
//! `"{trimmed timestamp}.{body}"` computed here, and the verdict order of
//! the spec — malformed timestamp, then skew (exact, in 128-bit arithmetic),
//! then signature. [`sign`] must agree with the same oracle.

use arbitrary::{Arbitrary, Unstructured};
use hmac::{Hmac, Mac};
use root::integrations::signing::{MAX_SKEW_SECS, SignatureError, sign, verify};
use sha2::Sha256;

/// One verification: secret, headers, body, the verifier's clock and skew.
#[derive(Arbitrary, Debug)]
pub struct Input {
    secret: String,
    timestamp: Timestamp,
    body: Vec<u8>,
    signature: Signature,
    clock: Clock,
    skew: Skew,
}

/// The `x-root-timestamp` header.
#[derive(Arbitrary, Debug)]
enum Timestamp {
    /// Decimal seconds, as the platform sends.
    Secs(i64),
    /// Decimal seconds with whitespace around.
    Padded { secs: i64, before: Pad, after: Pad },
    /// `+N`: parses as a number but is not what the platform signs.
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

/// The `x-root-signature` header, derived from the correct one or not.
#[derive(Arbitrary, Debug)]
enum Signature {
    Valid,
    Uppercase,
    Padded,
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

/// The tolerated skew.
#[derive(Arbitrary, Debug)]
enum Skew {
    Spec,
    Any(i64),
}

fn mac_hex(secret: &str, timestamp: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("any key length");
    mac.update(timestamp.as_bytes());
    mac.update(b".");
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
        } => {
            format!("{}{secs}{}", before.as_str(), after.as_str())
        }
        Timestamp::Plus(n) => format!("+{n}"),
        Timestamp::Raw(s) => s.clone(),
    };
    let trimmed = header.trim();
    let parsed: Option<i64> = trimmed.parse().ok();
    let expected_mac = mac_hex(&input.secret, trimmed, &input.body);
    if let Some(ts) = parsed {
        assert_eq!(
            sign(&input.secret, ts, &input.body),
            mac_hex(&input.secret, &ts.to_string(), &input.body),
            "sign() is HMAC-SHA256 over \"{{ts}}.{{body}}\""
        );
    }
    let signature = match input.signature {
        Signature::Valid => expected_mac.clone(),
        Signature::Uppercase => expected_mac.to_uppercase(),
        Signature::Padded => format!(" {expected_mac}\n"),
        Signature::Truncated(n) => expected_mac[..usize::from(n) % expected_mac.len()].to_string(),
        Signature::Flipped(i) => {
            let mut bytes = expected_mac.clone().into_bytes();
            let at = usize::from(i) % bytes.len();
            bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
            String::from_utf8(bytes).expect("hex is ASCII")
        }
        Signature::Raw(s) => s,
    };
    let now = match input.clock {
        Clock::Near(offset) => parsed.unwrap_or(0).saturating_add(i64::from(offset)),
        Clock::At(t) => t,
    };
    let skew = match input.skew {
        Skew::Spec => MAX_SKEW_SECS,
        Skew::Any(s) => s,
    };
    let expected = match parsed {
        None => Err(SignatureError::BadTimestamp),
        Some(ts) if (i128::from(now) - i128::from(ts)).abs() > i128::from(skew) => {
            Err(SignatureError::Skewed(skew))
        }
        Some(_) => {
            let given = hex::decode(signature.trim()).ok();
            let wanted = hex::decode(&expected_mac).expect("our own hex");
            if given.as_deref() == Some(wanted.as_slice()) {
                Ok(())
            } else {
                Err(SignatureError::Mismatch)
            }
        }
    };
    assert_eq!(
        verify(&input.secret, &header, &input.body, &signature, now, skew),
        expected,
        "timestamp {header:?}, now {now}, skew {skew}"
    );
}

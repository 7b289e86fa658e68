//! Target `primitive_signature`: the hosted mail provider's webhook
//! signature ([`verify`], §8.3), `Primitive-Signature:
//! t=<unix>,v1=<hex>[,v1=…]`, over arbitrary headers, bodies and clocks.
//! The input is structured (`arbitrary`): headers are built from parts
//! (the `t=` anywhere among valid, mangled, unknown and empty parts, with
//! or without padding) or are raw text, so every branch is reached.
//!
//! The oracle reads the header the way the published SDK does — parts
//! split on `,` and trimmed, empty parts skipped, the first `=` splits key
//! and value, exactly one `t=` of at most 18 digits, at least one `v1=`,
//! unknown keys ignored — then the window (300 s old to 60 s ahead,
//! inclusive) and HMAC-SHA256 over `"{t}.{body}"` against every `v1` that
//! is hex. The verdict's SDK error code must match; [`sign`] must agree.

use arbitrary::{Arbitrary, Unstructured};
use hmac::{Hmac, Mac};
use root::email::primitive::{MAX_AGE_SECS, MAX_FUTURE_SECS, SignatureError, sign, verify};
use sha2::Sha256;

/// One delivery: secret, header, body and the verifier's clock.
#[derive(Arbitrary, Debug)]
pub struct Input {
    secret: String,
    body: Vec<u8>,
    header: Header,
    clock: Clock,
}

/// The `Primitive-Signature` header.
#[derive(Arbitrary, Debug)]
enum Header {
    /// No header at all.
    Absent,
    /// `t=` inserted at `t_at` among `parts`, joined by `,` (or `, `).
    Built {
        stamp: Stamp,
        parts: Vec<Part>,
        t_at: u8,
        spaced: bool,
    },
    /// Anything.
    Raw(String),
}

/// The `t=` value.
#[derive(Arbitrary, Debug)]
enum Stamp {
    /// Unix seconds as the provider sends them.
    Secs(u32),
    /// Any integer (negative ones are not digits).
    Any(i64),
    /// Anything.
    Raw(String),
}

/// One part besides `t=`.
#[derive(Arbitrary, Debug)]
enum Part {
    /// `v1=` + the right MAC.
    Valid,
    /// The right MAC in uppercase.
    Upper,
    /// The right MAC with one hex digit changed.
    Flipped(u8),
    /// A prefix of the right MAC.
    Truncated(u8),
    /// `v1=` + anything.
    V1(String),
    /// `key=value` with any key (`v0=…`, a second `t=`, …).
    Other(String, String),
    /// A part with no `=`.
    Bare(String),
    /// Nothing between two commas.
    Empty,
}

/// The verifier's clock.
#[derive(Arbitrary, Debug)]
enum Clock {
    /// Within a few hours of the `t=` value.
    Near(i16),
    /// Any instant.
    At(i64),
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

/// The SDK's verdict (its error code) for `header` at `now`.
fn oracle(secret: &str, header: Option<&str>, body: &[u8], now: i64) -> Result<(), &'static str> {
    const MISSING: &str = "MISSING_SIGNATURE";
    const INVALID: &str = "INVALID_SIGNATURE_HEADER";
    let header = header.ok_or(MISSING)?;
    if header.trim().is_empty() {
        return Err(MISSING);
    }
    let mut t: Option<&str> = None;
    let mut v1: Vec<Vec<u8>> = Vec::new();
    let mut saw_v1 = false;
    for part in header.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, value) = part.split_once('=').ok_or(INVALID)?;
        match key.trim() {
            "t" if t.is_some() => return Err(INVALID),
            "t" => t = Some(value.trim()),
            "v1" => {
                saw_v1 = true;
                v1.extend(hex::decode(value.trim()).ok());
            }
            _ => {}
        }
    }
    let t = t.ok_or(INVALID)?;
    if t.is_empty() || t.len() > 18 || !t.bytes().all(|b| b.is_ascii_digit()) || !saw_v1 {
        return Err(INVALID);
    }
    let unix: i64 = t.parse().expect("at most 18 digits fit an i64");
    let age = i128::from(now) - i128::from(unix);
    if age > i128::from(MAX_AGE_SECS) || age < -i128::from(MAX_FUTURE_SECS) {
        return Err("TIMESTAMP_OUT_OF_RANGE");
    }
    let wanted = hex::decode(mac_hex(secret, t, body)).expect("our own hex");
    if v1.contains(&wanted) {
        Ok(())
    } else {
        Err("SIGNATURE_MISMATCH")
    }
}

/// Verify one delivery against the oracle.
pub fn run(input: Input) {
    let (header, unix) = match &input.header {
        Header::Absent => (None, None),
        Header::Raw(s) => (Some(s.clone()), None),
        Header::Built {
            stamp,
            parts,
            t_at,
            spaced,
        } => {
            let t = match stamp {
                Stamp::Secs(s) => s.to_string(),
                Stamp::Any(n) => n.to_string(),
                Stamp::Raw(s) => s.clone(),
            };
            let mac = mac_hex(&input.secret, t.trim(), &input.body);
            let mut rendered: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    Part::Valid => format!("v1={mac}"),
                    Part::Upper => format!("v1={}", mac.to_uppercase()),
                    Part::Flipped(i) => {
                        let mut bytes = mac.clone().into_bytes();
                        let at = usize::from(*i) % bytes.len();
                        bytes[at] = if bytes[at] == b'0' { b'1' } else { b'0' };
                        format!("v1={}", String::from_utf8(bytes).expect("hex is ASCII"))
                    }
                    Part::Truncated(n) => format!("v1={}", &mac[..usize::from(*n) % mac.len()]),
                    Part::V1(s) => format!("v1={s}"),
                    Part::Other(k, v) => format!("{k}={v}"),
                    Part::Bare(s) => s.replace('=', ""),
                    Part::Empty => String::new(),
                })
                .collect();
            let at = usize::from(*t_at) % (rendered.len() + 1);
            rendered.insert(at, format!("t={t}"));
            let joined = rendered.join(if *spaced { ", " } else { "," });
            (Some(joined), t.trim().parse::<i64>().ok())
        }
    };
    let now = match input.clock {
        Clock::Near(offset) => unix.unwrap_or(0).saturating_add(i64::from(offset)),
        Clock::At(t) => t,
    };
    if let Some(u) = unix {
        assert_eq!(
            sign(&input.secret, u, &input.body),
            mac_hex(&input.secret, &u.to_string(), &input.body),
            "sign() is HMAC-SHA256 over \"{{t}}.{{body}}\""
        );
    }
    let got = verify(&input.secret, header.as_deref(), &input.body, now);
    match &got {
        Err(SignatureError::Stale { age_secs }) => assert!(*age_secs > MAX_AGE_SECS),
        Err(SignatureError::Future { ahead_secs }) => assert!(*ahead_secs > MAX_FUTURE_SECS),
        _ => {}
    }
    assert_eq!(
        got.as_ref().map_err(SignatureError::code).copied(),
        oracle(&input.secret, header.as_deref(), &input.body, now),
        "header {header:?}, now {now}: {got:?}"
    );
}

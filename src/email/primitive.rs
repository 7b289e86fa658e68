//! The hosted provider's webhook (§8.3 `platform_alias`): Primitive signs
//! each delivery with `Primitive-Signature: t=<unix>,v1=<hex>[,v1=<hex>…]`,
//! the hex being HMAC-SHA256 over `"{t}." + raw body` keyed with the
//! webhook secret as UTF-8 bytes (a `whsec_` prefix is part of the key, never
//! stripped or decoded). Several `v1` values may be present (secret
//! rotation), unknown keys (`v0=…`) are ignored, whitespace around parts is
//! allowed, hex compares case-insensitively and in constant time. A
//! timestamp older than [`MAX_AGE_SECS`] or more than [`MAX_FUTURE_SECS`]
//! ahead is refused (the published SDK's window).
//!
//! [`EmailReceivedEvent`] is the `email.received` event (version
//! 2025-12-14), read leniently: every field defaults, `null` where a list or
//! string is expected reads as empty, so a surprising payload never panics.

use hmac::{Hmac, Mac};
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use sha2::Sha256;
use subtle::ConstantTimeEq;

/// The signature header (HTTP header names are case-insensitive).
pub const SIGNATURE_HEADER: &str = "primitive-signature";
/// Oldest accepted signature, in seconds before now (inclusive).
pub const MAX_AGE_SECS: i64 = 300;
/// Furthest accepted signature in the future, in seconds (inclusive).
pub const MAX_FUTURE_SECS: i64 = 60;
/// The event type Root handles.
pub const EMAIL_RECEIVED: &str = "email.received";
/// Longest `t=` value accepted (digits of an i64).
const MAX_TIMESTAMP_DIGITS: usize = 18;

/// Why a delivery does not verify (for the log line; never the secret).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// No `Primitive-Signature` header (or an empty one).
    #[error("missing Primitive-Signature header")]
    Missing,
    /// The header is not `t=<unix>,v1=<hex>…`.
    #[error("malformed Primitive-Signature header: {0}")]
    Malformed(&'static str),
    /// Signed more than [`MAX_AGE_SECS`] ago.
    #[error("stale Primitive signature ({age_secs} s old; at most {MAX_AGE_SECS} s)")]
    Stale {
        /// How old the timestamp is.
        age_secs: i64,
    },
    /// Signed more than [`MAX_FUTURE_SECS`] ahead of our clock.
    #[error(
        "Primitive signature from the future ({ahead_secs} s ahead; at most {MAX_FUTURE_SECS} s)"
    )]
    Future {
        /// How far ahead the timestamp is.
        ahead_secs: i64,
    },
    /// No `v1` value matches.
    #[error("Primitive signature mismatch")]
    Mismatch,
}

impl SignatureError {
    /// The SDK's error code for this failure (`TIMESTAMP_OUT_OF_RANGE`, …).
    pub fn code(&self) -> &'static str {
        match self {
            SignatureError::Missing => "MISSING_SIGNATURE",
            SignatureError::Malformed(_) => "INVALID_SIGNATURE_HEADER",
            SignatureError::Stale { .. } | SignatureError::Future { .. } => {
                "TIMESTAMP_OUT_OF_RANGE"
            }
            SignatureError::Mismatch => "SIGNATURE_MISMATCH",
        }
    }
}

/// The parts of a header that matter: the timestamp as sent and every
/// `v1` value that is well-formed hex.
struct ParsedHeader<'a> {
    timestamp: &'a str,
    unix: i64,
    candidates: Vec<Vec<u8>>,
}

fn parse_header(header: &str) -> Result<ParsedHeader<'_>, SignatureError> {
    if header.trim().is_empty() {
        return Err(SignatureError::Missing);
    }
    let mut timestamp = None;
    let mut candidates = Vec::new();
    let mut saw_v1 = false;
    for part in header.split(',') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let Some((key, value)) = part.split_once('=') else {
            return Err(SignatureError::Malformed("a part is not key=value"));
        };
        match key.trim() {
            "t" => {
                if timestamp.is_some() {
                    return Err(SignatureError::Malformed("more than one t="));
                }
                timestamp = Some(value.trim());
            }
            "v1" => {
                saw_v1 = true;
                // A value that is not hex can match nothing; another v1 may.
                if let Ok(bytes) = hex::decode(value.trim()) {
                    candidates.push(bytes);
                }
            }
            _ => {}
        }
    }
    let timestamp = timestamp.ok_or(SignatureError::Malformed("no t= timestamp"))?;
    if timestamp.is_empty()
        || timestamp.len() > MAX_TIMESTAMP_DIGITS
        || !timestamp.bytes().all(|b| b.is_ascii_digit())
    {
        return Err(SignatureError::Malformed("t= is not unix seconds"));
    }
    let unix = timestamp
        .parse()
        .map_err(|_| SignatureError::Malformed("t= is not unix seconds"))?;
    if !saw_v1 {
        return Err(SignatureError::Malformed("no v1= signature"));
    }
    Ok(ParsedHeader {
        timestamp,
        unix,
        candidates,
    })
}

/// HMAC-SHA256 of `"{timestamp}." + body` under `secret` (UTF-8 bytes).
fn mac(secret: &str, timestamp: &str, body: &[u8]) -> Vec<u8> {
    let mut m = <Hmac<Sha256> as Mac>::new_from_slice(secret.as_bytes())
        .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
    m.update(timestamp.as_bytes());
    m.update(b".");
    m.update(body);
    m.finalize().into_bytes().to_vec()
}

/// The lowercase-hex `v1` value for `body` signed at `timestamp` (what
/// Primitive sends; tests and fakes use it).
pub fn sign(secret: &str, timestamp: i64, body: &[u8]) -> String {
    hex::encode(mac(secret, &timestamp.to_string(), body))
}

/// Verify a delivery: `header` is the `Primitive-Signature` value (`None`
/// when absent), `raw_body` the bytes exactly as received, `now_unix` the
/// injected clock's unix seconds.
pub fn verify(
    secret: &str,
    header: Option<&str>,
    raw_body: &[u8],
    now_unix: i64,
) -> Result<(), SignatureError> {
    let parsed = parse_header(header.ok_or(SignatureError::Missing)?)?;
    let age = now_unix.saturating_sub(parsed.unix);
    if age > MAX_AGE_SECS {
        return Err(SignatureError::Stale { age_secs: age });
    }
    if age < -MAX_FUTURE_SECS {
        return Err(SignatureError::Future {
            ahead_secs: age.saturating_neg(),
        });
    }
    let expected = mac(secret, parsed.timestamp, raw_body);
    // Compare against every candidate (no early exit on a match).
    let matched = parsed
        .candidates
        .iter()
        .fold(subtle::Choice::from(0), |acc, c| acc | expected.ct_eq(c));
    if bool::from(matched) {
        Ok(())
    } else {
        Err(SignatureError::Mismatch)
    }
}

/// `null` reads as the type's default (serde's `default` covers only
/// absent fields).
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// A list of strings from `null`, one string or an array (non-strings in
/// the array are skipped).
fn string_list<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => vec![s],
        Value::Array(items) => items
            .into_iter()
            .filter_map(|v| match v {
                Value::String(s) => Some(s),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    })
}

/// A string or nothing, whatever JSON type arrived.
fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

/// The `email.received` event.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct EmailReceivedEvent {
    /// `evt_…`.
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    /// `email.received` (machine mail such as `email.bounced` has the same shape).
    #[serde(deserialize_with = "nullable")]
    pub event: String,
    /// `2025-12-14`.
    #[serde(deserialize_with = "nullable")]
    pub version: String,
    /// The mail.
    #[serde(deserialize_with = "nullable")]
    pub email: ReceivedEmail,
}

/// `email`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct ReceivedEmail {
    /// Primitive's id of the mail (`em_…`).
    #[serde(deserialize_with = "nullable")]
    pub id: String,
    /// RFC 3339.
    #[serde(deserialize_with = "opt_string")]
    pub received_at: Option<String>,
    /// The SMTP envelope.
    #[serde(deserialize_with = "nullable")]
    pub smtp: Smtp,
    /// Selected headers, decoded.
    #[serde(deserialize_with = "nullable")]
    pub headers: EventHeaders,
    /// The raw message, when included.
    #[serde(deserialize_with = "nullable")]
    pub content: Content,
    /// Primitive's parse.
    #[serde(deserialize_with = "nullable")]
    pub parsed: Parsed,
    /// SPF / DKIM / DMARC verdicts for the `From` domain (`spf`, `dmarc`,
    /// `dmarcFromDomain`, `dmarcSpfAligned`, `dkimSignatures[]`), read by
    /// `sender_auth::from_primitive`.
    #[serde(deserialize_with = "nullable")]
    pub auth: Value,
}

/// `email.smtp`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Smtp {
    /// HELO name.
    #[serde(deserialize_with = "opt_string")]
    pub helo: Option<String>,
    /// Envelope sender.
    #[serde(deserialize_with = "opt_string")]
    pub mail_from: Option<String>,
    /// Envelope recipients (the alias that routes to a tenant).
    #[serde(deserialize_with = "string_list")]
    pub rcpt_to: Vec<String>,
}

/// `email.headers`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct EventHeaders {
    /// With angle brackets, or null.
    #[serde(deserialize_with = "opt_string")]
    pub message_id: Option<String>,
    /// Subject.
    #[serde(deserialize_with = "opt_string")]
    pub subject: Option<String>,
    /// `From` as written (`Name <a@b>` or `a@b`).
    #[serde(deserialize_with = "opt_string")]
    pub from: Option<String>,
    /// `To` as written.
    #[serde(deserialize_with = "opt_string")]
    pub to: Option<String>,
    /// `Date` as written.
    #[serde(deserialize_with = "opt_string")]
    pub date: Option<String>,
}

/// `email.content`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Content {
    /// Inline raw MIME (absent or `included: false` when too big).
    #[serde(deserialize_with = "nullable")]
    pub raw: RawContent,
}

/// `email.content.raw`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct RawContent {
    /// Whether `data` carries the message.
    #[serde(deserialize_with = "nullable")]
    pub included: bool,
    /// `base64`.
    #[serde(deserialize_with = "opt_string")]
    pub encoding: Option<String>,
    /// Hex SHA-256 of the decoded bytes.
    #[serde(deserialize_with = "opt_string")]
    pub sha256: Option<String>,
    /// The encoded message.
    #[serde(deserialize_with = "opt_string")]
    pub data: Option<String>,
}

/// `email.parsed`.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(default)]
pub struct Parsed {
    /// `complete`, …
    #[serde(deserialize_with = "opt_string")]
    pub status: Option<String>,
    /// Text part, or null.
    #[serde(deserialize_with = "opt_string")]
    pub body_text: Option<String>,
    /// HTML part, or null.
    #[serde(deserialize_with = "opt_string")]
    pub body_html: Option<String>,
    /// Reply-To: strings or `{address|email, name}` objects, or null.
    #[serde(deserialize_with = "nullable")]
    pub reply_to: Value,
    /// Cc, same shapes.
    #[serde(deserialize_with = "nullable")]
    pub cc: Value,
    /// Message ids (with brackets), or null.
    #[serde(deserialize_with = "string_list")]
    pub in_reply_to: Vec<String>,
    /// Message ids (with brackets), or null.
    #[serde(deserialize_with = "string_list")]
    pub references: Vec<String>,
}

impl EmailReceivedEvent {
    /// Parse a delivery body (after [`verify`]).
    pub fn parse(raw_body: &[u8]) -> Result<EmailReceivedEvent, serde_json::Error> {
        serde_json::from_slice(raw_body)
    }

    /// The raw MIME bytes when they are included, base64 and (when a
    /// digest is given) match it; `None` otherwise.
    pub fn raw_mime(&self) -> Option<Vec<u8>> {
        use base64::Engine;
        let raw = &self.email.content.raw;
        if !raw.included {
            return None;
        }
        let encoding = raw.encoding.as_deref().unwrap_or("base64");
        if !encoding.eq_ignore_ascii_case("base64") {
            return None;
        }
        let data: String = raw
            .data
            .as_deref()?
            .chars()
            .filter(|c| !c.is_ascii_whitespace())
            .collect();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data)
            .ok()?;
        if let Some(want) = raw.sha256.as_deref() {
            let got = hex::encode(<Sha256 as sha2::Digest>::digest(&bytes));
            if !got.eq_ignore_ascii_case(want.trim()) {
                tracing::warn!(
                    event = %self.id,
                    "primitive raw MIME digest mismatch; using the parsed fields"
                );
                return None;
            }
        }
        Some(bytes)
    }
}

#[cfg(test)]
#[path = "primitive_test.rs"]
mod tests;

//! One normalized inbound mail, whichever way it arrived: a Primitive
//! `email.received` event, Postmark's inbound JSON or raw RFC 5322 MIME.
//!
//! Threading ids are read from the header text by one rule
//! (`mime::message_ids`): bracketed `<left@right>` ids in order,
//! invalid ones skipped, every `References` header concatenated,
//! duplicates removed. Addresses are lower-cased; names are decoded
//! (RFC 2047 / 2231). The text is the text part, or the sanitized HTML's
//! text when there is only HTML.

use mail_parser::{Address, Message, MessageParser, MimeHeaders};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use storage::Ts;

use super::automatic::{MailTraits, classify};
use super::mime::{dedupe, html_to_text, message_ids, normalize_id, parse_addresses, parse_date};
use super::primitive::EmailReceivedEvent;
pub use super::quote::strip_quoted_reply;
use super::sender_auth::{self, SenderAuth};

/// Prefix of the `email-inbound` queue's job ids (§8.3).
pub const JOB_ID_PREFIX: &str = "email-inbound-";

/// One address with its display name.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mailbox {
    /// Lower-cased, trimmed.
    pub email: String,
    /// Display name (decoded), when one was given.
    pub name: Option<String>,
}

impl Mailbox {
    /// `email` lower-cased and trimmed; a blank name is none. `None` for an
    /// address without `@` or with whitespace / control characters in it.
    pub fn new(email: &str, name: Option<&str>) -> Option<Mailbox> {
        let email = email
            .trim()
            .trim_matches(|c| c == '<' || c == '>')
            .to_lowercase();
        let (local, domain) = email.rsplit_once('@')?;
        let ok = !local.is_empty()
            && !domain.is_empty()
            && !email
                .chars()
                .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '<' | '>' | ',' | ';'));
        let name = name
            .map(|n| n.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|n| !n.is_empty());
        ok.then_some(Mailbox { email, name })
    }
}

/// A received mail, normalized.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboundEmail {
    /// `<…>`, when the mail has a valid Message-ID.
    pub message_id: Option<String>,
    /// The first valid `In-Reply-To` id.
    pub in_reply_to: Option<String>,
    /// Valid `References` ids, in order, without duplicates.
    pub references: Vec<String>,
    /// The sender.
    pub from: Mailbox,
    /// Where replies go, when it differs from `from`.
    pub reply_to: Option<Mailbox>,
    /// To recipients.
    pub to: Vec<Mailbox>,
    /// Cc recipients.
    pub cc: Vec<Mailbox>,
    /// Subject (trimmed; empty when none).
    pub subject: String,
    /// The text part, or the sanitized HTML's text.
    pub text: String,
    /// The HTML part as received (not sanitized: render it only after
    /// sanitizing).
    pub html: Option<String>,
    /// The `Date` header, when it parses.
    pub date: Option<Ts>,
    /// The provider's own id (Postmark's `MessageID`, Primitive's `em_…`).
    pub provider_message_id: Option<String>,
    /// Whether someone who saw the SMTP transaction vouched for `from`
    /// (security H-1; unauthenticated unless a verdict says so).
    #[serde(default)]
    pub sender_auth: SenderAuth,
    /// Why no person wrote this mail (auto-reply, bounce, list), if so:
    /// such mail is never answered (security M-2).
    #[serde(default)]
    pub automatic: Option<String>,
}

/// Why a mail cannot be read (the route answers 400 with this text).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum InboundError {
    /// Empty body.
    #[error("the message is empty")]
    Empty,
    /// Not RFC 5322.
    #[error("not a MIME message: {0}")]
    Mime(String),
    /// Not the JSON expected.
    #[error("invalid JSON: {0}")]
    Json(String),
    /// No usable sender address.
    #[error("the message has no valid sender address (From)")]
    NoSender,
}

fn mailboxes(addr: Option<&Address<'_>>) -> Vec<Mailbox> {
    addr.map(|a| {
        a.iter()
            .filter_map(|m| Mailbox::new(m.address()?, m.name()))
            .collect()
    })
    .unwrap_or_default()
}

fn unique(boxes: Vec<Mailbox>) -> Vec<Mailbox> {
    let mut out: Vec<Mailbox> = Vec::new();
    for b in boxes {
        if !out.iter().any(|o| o.email == b.email) {
            out.push(b);
        }
    }
    out
}

/// `raw` without a leading mbox `From ` separator line.
fn strip_mbox_line(raw: &[u8]) -> &[u8] {
    if raw.starts_with(b"From ") {
        match raw.iter().position(|&b| b == b'\n') {
            Some(i) => &raw[i + 1..],
            None => &[],
        }
    } else {
        raw
    }
}

/// Raw values of every header named `name` (case-insensitive), in order.
fn raw_headers<'a>(msg: &'a Message<'_>, name: &str) -> Vec<&'a str> {
    msg.headers_raw()
        .filter(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
        .collect()
}

/// The text and HTML of a parsed message: the first `text/plain` body
/// part, else the first HTML part's sanitized text.
fn bodies(msg: &Message<'_>) -> (String, Option<String>) {
    let html = msg
        .html_bodies()
        .find(|p| p.is_text_html())
        .and_then(|p| p.text_contents())
        .map(str::to_string);
    let text = msg
        .text_bodies()
        .find(|p| p.is_text() && !p.is_text_html())
        .and_then(|p| p.text_contents())
        .map(|t| t.replace("\r\n", "\n").trim().to_string());
    let text = match (text, &html) {
        (Some(t), _) => t,
        (None, Some(h)) => html_to_text(h),
        (None, None) => String::new(),
    };
    (text, html)
}

impl InboundEmail {
    /// Parse raw RFC 5322 MIME (CRLF or LF; an mbox `From ` line first is
    /// skipped).
    pub fn from_mime(raw: &[u8]) -> Result<InboundEmail, InboundError> {
        let raw = strip_mbox_line(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            return Err(InboundError::Empty);
        }
        let msg = MessageParser::default()
            .parse(raw)
            .ok_or_else(|| InboundError::Mime("no headers could be read".into()))?;
        if msg.headers().is_empty() {
            return Err(InboundError::Mime("no headers could be read".into()));
        }
        let from = mailboxes(msg.from())
            .into_iter()
            .next()
            .or_else(|| mailboxes(msg.sender()).into_iter().next())
            .ok_or(InboundError::NoSender)?;
        let ids = |name: &str| -> Vec<String> {
            raw_headers(&msg, name)
                .into_iter()
                .flat_map(message_ids)
                .collect()
        };
        let (text, html) = bodies(&msg);
        let automatic = classify(&MailTraits {
            headers: msg.headers_raw().collect(),
            from: &from.email,
            envelope_from: None,
            content_type: msg
                .content_type()
                .map(|c| format!("{}/{}", c.ctype(), c.subtype().unwrap_or("")).to_lowercase()),
        });
        Ok(InboundEmail {
            message_id: ids("Message-ID").into_iter().next(),
            in_reply_to: ids("In-Reply-To").into_iter().next(),
            references: dedupe(ids("References")),
            reply_to: mailboxes(msg.reply_to()).into_iter().next(),
            to: unique(mailboxes(msg.to())),
            cc: unique(mailboxes(msg.cc())),
            subject: msg.subject().unwrap_or_default().trim().to_string(),
            text,
            html,
            date: raw_headers(&msg, "Date")
                .first()
                .and_then(|d| parse_date(&super::mime::unfold(d)))
                .map(Ts::from_secs),
            provider_message_id: None,
            // Headers inside raw MIME are the sender's own text: a verdict
            // comes only from whoever delivered it (the route sets it).
            sender_auth: SenderAuth::no_verdict(),
            automatic,
            from,
        })
    }

    /// A Primitive `email.received` event: the raw MIME when it is included
    /// (and matches its digest), each field it lacks taken from the event's
    /// `headers` / `parsed`; without raw MIME, those fields alone.
    pub fn from_primitive(event: &EmailReceivedEvent) -> Result<InboundEmail, InboundError> {
        let e = &event.email;
        let from_mime = event.raw_mime().and_then(|raw| Self::from_mime(&raw).ok());
        let json_from = e
            .headers
            .from
            .as_deref()
            .and_then(|f| parse_addresses(f).into_iter().next())
            .and_then(|(a, n)| Mailbox::new(&a, n.as_deref()));
        let json_html = e.parsed.body_html.clone().filter(|h| !h.trim().is_empty());
        let json_text = e
            .parsed
            .body_text
            .as_deref()
            .map(|t| t.replace("\r\n", "\n").trim().to_string())
            .filter(|t| !t.is_empty())
            .or_else(|| json_html.as_deref().map(html_to_text))
            .unwrap_or_default();
        let provider_message_id = Some(e.id.clone()).filter(|id| !id.is_empty());
        let mut mail = match from_mime {
            Some(m) => m,
            None => InboundEmail {
                message_id: None,
                in_reply_to: None,
                references: Vec::new(),
                from: json_from.clone().ok_or(InboundError::NoSender)?,
                reply_to: None,
                to: Vec::new(),
                cc: Vec::new(),
                subject: String::new(),
                text: String::new(),
                html: None,
                date: None,
                provider_message_id: None,
                sender_auth: SenderAuth::no_verdict(),
                automatic: None,
            },
        };
        mail.message_id = mail
            .message_id
            .or_else(|| e.headers.message_id.as_deref().and_then(normalize_id));
        mail.in_reply_to = mail
            .in_reply_to
            .or_else(|| e.parsed.in_reply_to.iter().find_map(|id| normalize_id(id)));
        if mail.references.is_empty() {
            mail.references = dedupe(e.parsed.references.iter().flat_map(|r| message_ids(r)));
        }
        if mail.reply_to.is_none() {
            mail.reply_to = json_mailboxes(&e.parsed.reply_to).into_iter().next();
        }
        if mail.to.is_empty() {
            mail.to = e
                .headers
                .to
                .as_deref()
                .map(string_mailboxes)
                .unwrap_or_default();
        }
        if mail.cc.is_empty() {
            mail.cc = unique(json_mailboxes(&e.parsed.cc));
        }
        if mail.subject.is_empty() {
            mail.subject = e
                .headers
                .subject
                .as_deref()
                .unwrap_or("")
                .trim()
                .to_string();
        }
        if mail.text.is_empty() {
            mail.text = json_text;
        }
        if mail.html.is_none() {
            mail.html = json_html;
        }
        if mail.date.is_none() {
            mail.date = e
                .headers
                .date
                .as_deref()
                .and_then(parse_date)
                .map(Ts::from_secs);
        }
        mail.provider_message_id = provider_message_id;
        mail.sender_auth = sender_auth::from_primitive(&e.auth, &mail.from);
        if mail.automatic.is_none() {
            mail.automatic = classify(&MailTraits {
                from: &mail.from.email,
                envelope_from: e.smtp.mail_from.as_deref(),
                ..MailTraits::default()
            });
        }
        Ok(mail)
    }

    /// Postmark's inbound webhook JSON: RFC ids from `Headers[]` (names
    /// case-insensitive; `MessageID` is Postmark's own id), recipients from
    /// `ToFull` / `CcFull` (the `Cc` string is never re-parsed).
    pub fn from_postmark(json: &Value) -> Result<InboundEmail, InboundError> {
        if !json.is_object() {
            return Err(InboundError::Json("expected a JSON object".into()));
        }
        let pm: PostmarkInbound =
            serde_json::from_value(json.clone()).map_err(|e| InboundError::Json(e.to_string()))?;
        let header_ids = |name: &str| -> Vec<String> {
            pm.headers
                .iter()
                .filter(|h| h.name.trim().eq_ignore_ascii_case(name))
                .flat_map(|h| message_ids(&h.value))
                .collect()
        };
        let from = pm
            .from_full
            .as_ref()
            .and_then(|f| Mailbox::new(&f.email, Some(f.name.as_str())))
            .or_else(|| {
                parse_addresses(&pm.from)
                    .into_iter()
                    .next()
                    .and_then(|(a, n)| Mailbox::new(&a, n.as_deref().or(Some(&pm.from_name))))
            })
            .ok_or(InboundError::NoSender)?;
        let full = |list: &[PostmarkAddress]| {
            unique(
                list.iter()
                    .filter_map(|a| Mailbox::new(&a.email, Some(a.name.as_str())))
                    .collect(),
            )
        };
        let html = Some(pm.html_body.clone()).filter(|h| !h.trim().is_empty());
        let text = Some(pm.text_body.replace("\r\n", "\n").trim().to_string())
            .filter(|t| !t.is_empty())
            .or_else(|| html.as_deref().map(html_to_text))
            .unwrap_or_default();
        let header_pairs = || {
            pm.headers
                .iter()
                .map(|h| (h.name.as_str(), h.value.as_str()))
        };
        let sender_auth = sender_auth::from_headers(header_pairs(), &from);
        let automatic = classify(&MailTraits {
            headers: header_pairs().collect(),
            from: &from.email,
            ..MailTraits::default()
        });
        Ok(InboundEmail {
            message_id: header_ids("Message-ID").into_iter().next(),
            in_reply_to: header_ids("In-Reply-To").into_iter().next(),
            references: dedupe(header_ids("References")),
            reply_to: string_mailboxes(&pm.reply_to).into_iter().next(),
            sender_auth,
            automatic,
            to: full(&pm.to_full),
            cc: full(&pm.cc_full),
            subject: pm.subject.trim().to_string(),
            text,
            html,
            date: parse_date(&pm.date).map(Ts::from_secs),
            provider_message_id: Some(pm.message_id.trim().to_string()).filter(|s| !s.is_empty()),
            from,
        })
    }
}

fn string_mailboxes(value: &str) -> Vec<Mailbox> {
    unique(
        parse_addresses(value)
            .into_iter()
            .filter_map(|(a, n)| Mailbox::new(&a, n.as_deref()))
            .collect(),
    )
}

/// Mailboxes from a lenient JSON value: a string (address list), or an
/// array of strings / `{address | email, name}` objects.
fn json_mailboxes(value: &Value) -> Vec<Mailbox> {
    match value {
        Value::String(s) => string_mailboxes(s),
        Value::Array(items) => items.iter().flat_map(json_mailboxes).collect(),
        Value::Object(o) => o
            .get("address")
            .or_else(|| o.get("email"))
            .and_then(Value::as_str)
            .and_then(|a| Mailbox::new(a, o.get("name").and_then(Value::as_str)))
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

/// The Postmark inbound fields Root reads (lenient: all default).
#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct PostmarkInbound {
    #[serde(deserialize_with = "nullable")]
    from: String,
    #[serde(deserialize_with = "nullable")]
    from_name: String,
    #[serde(deserialize_with = "nullable")]
    from_full: Option<PostmarkAddress>,
    #[serde(deserialize_with = "nullable")]
    to_full: Vec<PostmarkAddress>,
    #[serde(deserialize_with = "nullable")]
    cc_full: Vec<PostmarkAddress>,
    #[serde(deserialize_with = "nullable")]
    reply_to: String,
    #[serde(deserialize_with = "nullable")]
    subject: String,
    #[serde(rename = "MessageID", deserialize_with = "nullable")]
    message_id: String,
    #[serde(deserialize_with = "nullable")]
    date: String,
    #[serde(deserialize_with = "nullable")]
    text_body: String,
    #[serde(deserialize_with = "nullable")]
    html_body: String,
    #[serde(deserialize_with = "nullable")]
    headers: Vec<PostmarkHeader>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct PostmarkAddress {
    #[serde(deserialize_with = "nullable")]
    email: String,
    #[serde(deserialize_with = "nullable")]
    name: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, rename_all = "PascalCase")]
struct PostmarkHeader {
    #[serde(deserialize_with = "nullable")]
    name: String,
    #[serde(deserialize_with = "nullable")]
    value: String,
}

fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// SHA-256 hex of the normalized sender, subject and body — the dedupe key
/// of a mail without a Message-ID (§8.3: same from + subject + body). The
/// subject's and body's whitespace runs are collapsed, so re-wrapping by a
/// relay does not change it.
pub fn content_identity(mail: &InboundEmail) -> String {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let joined = format!(
        "{}\u{1f}{}\u{1f}{}",
        mail.from.email,
        squash(&mail.subject),
        squash(&mail.text)
    );
    sha256_hex(joined.as_bytes())
}

/// `email-inbound-` + SHA-256 hex of the Message-ID, or of the content
/// identity when there is none (§8.3).
pub fn job_id(mail: &InboundEmail) -> String {
    let key = match &mail.message_id {
        Some(id) => id.clone(),
        None => content_identity(mail),
    };
    format!("{JOB_ID_PREFIX}{}", sha256_hex(key.as_bytes()))
}

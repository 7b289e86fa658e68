//! Outbound mail (§8.3): one [`OutgoingEmail`] and the senders that carry
//! it — [`PostmarkSender`], [`PrimitiveSender`], a tenant's signed
//! [`ByoWebhookSender`] and the platform's [`PlatformSender`] (Primitive,
//! falling back to Postmark).
//!
//! Every request goes through the guarded [`OutboundClient`] with a whole
//! exchange bound ([`DEFAULT_SEND_TIMEOUT`]). Outcomes are typed so the
//! caller can act without reading text: [`Accepted`], or a [`SendError`] —
//! `Permanent` (never retried), `Config` (an operator / tenant must act),
//! `Retryable` (nothing was accepted: 429, 5xx, network) and `Ambiguous`
//! (no answer after the request went out: the mail may have been accepted,
//! so a blind resend risks a second copy). Logs carry the provider, status
//! and error code — never a token, a secret or a body.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::inbound::Mailbox;
use crate::config::Secret;
use crate::outbound::{
    OutboundClient, OutboundPolicy, error_chain, read_prefix, refused_destination,
};

/// Bound of one send (connect, request, answer).
pub const DEFAULT_SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Connection establishment bound (a connect failure is retryable).
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Bytes of an answer read (ids and error codes are small).
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// RFC 3834 `Auto-Submitted` on every mail Root sends (security M-2): a
/// well-behaved auto-responder never answers it, and Root's own ingress
/// drops any mail that carries it, so two Roots (or a Root and an
/// out-of-office) cannot keep answering each other.
pub const AUTO_SUBMITTED: (&str, &str) = ("Auto-Submitted", "auto-replied");

/// Longest provider message kept in an error.
const MAX_MESSAGE_CHARS: usize = 300;

/// A reply ready to send (what the route stores on the job before sending).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutgoingEmail {
    /// The tenant's address.
    pub from: Mailbox,
    /// At least one.
    pub to: Vec<Mailbox>,
    /// Carbon copies.
    pub cc: Vec<Mailbox>,
    /// One line.
    pub subject: String,
    /// The text part.
    pub text: String,
    /// The (sanitized) HTML part.
    pub html: Option<String>,
    /// The parent's Message-ID.
    pub in_reply_to: Option<String>,
    /// The thread's ids, oldest first.
    pub references: Vec<String>,
}

/// The provider took the mail.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Accepted {
    /// `postmark`, `primitive` or `byo_webhook`.
    pub provider: &'static str,
    /// The provider's id of the sent mail, when it gave one.
    pub provider_id: Option<String>,
}

/// Why a mail was not (known to be) sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// Refused for good (Postmark 422 + `ErrorCode`, a 4xx, an invalid
    /// message): never retried.
    #[error("refused: {code}: {message}")]
    Permanent {
        /// The provider's code (Postmark's `ErrorCode`, Primitive's
        /// `error.code`, or the HTTP status).
        code: String,
        /// The provider's message (cut).
        message: String,
    },
    /// Credentials or destination wrong (401, no provider configured, a
    /// refused URL): an admin must act.
    #[error("configuration: {0}")]
    Config(String),
    /// Not accepted; safe to retry (429, 5xx, network).
    #[error("retryable: {0}")]
    Retryable(String),
    /// No answer after the request was sent: it may have been accepted.
    #[error("ambiguous: {0}")]
    Ambiguous(String),
}

/// Something that sends mail.
#[async_trait::async_trait]
pub trait EmailSender: Send + Sync {
    /// Send `mail` once (no retries: the queue owns the policy).
    async fn send(&self, mail: &OutgoingEmail) -> Result<Accepted, SendError>;
}

/// `"Name" <email>` (quotes and backslashes escaped) or the bare address.
pub fn format_mailbox(m: &Mailbox) -> String {
    match &m.name {
        Some(name) => {
            let clean: String = name
                .chars()
                .filter(|c| !c.is_control())
                .flat_map(|c| match c {
                    '"' | '\\' => vec!['\\', c],
                    _ => vec![c],
                })
                .collect();
            format!("\"{clean}\" <{}>", m.email)
        }
        None => m.email.clone(),
    }
}

impl OutgoingEmail {
    /// Refuse what no provider should be asked to send: no recipient, an
    /// address that does not normalize, line breaks in header fields.
    pub fn validate(&self) -> Result<(), SendError> {
        let bad = |message: &str| SendError::Permanent {
            code: "invalid_message".into(),
            message: message.into(),
        };
        if self.to.is_empty() {
            return Err(bad("no recipient"));
        }
        let addresses = std::iter::once(&self.from).chain(&self.to).chain(&self.cc);
        for m in addresses {
            if Mailbox::new(&m.email, None).is_none_or(|n| n.email != m.email) {
                return Err(bad("an address is not a plain lower-case mailbox"));
            }
        }
        let header_fields = std::iter::once(&self.subject)
            .chain(&self.in_reply_to)
            .chain(&self.references);
        if header_fields.into_iter().any(|f| f.contains(['\r', '\n'])) {
            return Err(bad("a header field contains a line break"));
        }
        Ok(())
    }

    fn references_header(&self) -> Option<String> {
        (!self.references.is_empty()).then(|| self.references.join(" "))
    }
}

/// The guarded client the senders share.
pub fn email_client(policy: OutboundPolicy) -> Result<OutboundClient, SendError> {
    OutboundClient::new(policy, |b| {
        b.connect_timeout(CONNECT_TIMEOUT)
            .user_agent(concat!("root/", env!("CARGO_PKG_VERSION")))
    })
    .map_err(|e| SendError::Config(format!("HTTP client: {e}")))
}

fn cut(s: &str) -> String {
    s.chars().take(MAX_MESSAGE_CHARS).collect()
}

/// Send `req` and read the answer within `timeout`: `(status, body)`.
async fn exchange(
    provider: &'static str,
    req: reqwest::RequestBuilder,
    timeout: Duration,
) -> Result<(u16, Value), SendError> {
    let call = async {
        let resp = req.send().await.map_err(|e| {
            if refused_destination(&e).is_some() {
                SendError::Config(format!(
                    "{provider}: destination refused: {}",
                    error_chain(&e)
                ))
            } else if e.is_connect() {
                SendError::Retryable(format!("{provider}: connect: {}", error_chain(&e)))
            } else {
                SendError::Retryable(format!("{provider}: network: {}", error_chain(&e)))
            }
        })?;
        let status = resp.status().as_u16();
        let body = read_prefix(resp, MAX_ANSWER_BYTES).await;
        Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(r) => r,
        Err(_) => Err(SendError::Ambiguous(format!(
            "{provider}: no answer within {} ms (the mail may have been accepted)",
            timeout.as_millis()
        ))),
    }
}

fn log_outcome(provider: &'static str, result: &Result<Accepted, SendError>, recipients: usize) {
    match result {
        Ok(a) => {
            tracing::info!(provider, recipients, provider_id = ?a.provider_id, "email accepted")
        }
        Err(e) => tracing::warn!(provider, recipients, error = %e, "email not sent"),
    }
}

/// Postmark's `POST /email` (`X-Postmark-Server-Token`).
#[derive(Clone)]
pub struct PostmarkSender {
    http: OutboundClient,
    base: String,
    token: Arc<Secret>,
    timeout: Duration,
}

impl std::fmt::Debug for PostmarkSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostmarkSender")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl PostmarkSender {
    /// A sender to `base` (`POSTMARK_API_URL`) with the server token.
    pub fn new(http: OutboundClient, base: &str, token: Secret) -> PostmarkSender {
        PostmarkSender {
            http,
            base: base.trim_end_matches('/').to_string(),
            token: Arc::new(token),
            timeout: DEFAULT_SEND_TIMEOUT,
        }
    }

    /// Bound each send by `timeout` instead of [`DEFAULT_SEND_TIMEOUT`].
    pub fn with_timeout(mut self, timeout: Duration) -> PostmarkSender {
        self.timeout = timeout;
        self
    }

    /// The JSON body Postmark receives (threading in `Headers`: Postmark
    /// ignores a top-level `InReplyTo`).
    pub fn body(mail: &OutgoingEmail) -> Value {
        let join = |list: &[Mailbox]| {
            list.iter()
                .map(format_mailbox)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut body = json!({
            "From": format_mailbox(&mail.from),
            "To": join(&mail.to),
            "Subject": mail.subject,
            "TextBody": mail.text,
            "MessageStream": "outbound",
        });
        if !mail.cc.is_empty() {
            body["Cc"] = json!(join(&mail.cc));
        }
        if let Some(html) = &mail.html {
            body["HtmlBody"] = json!(html);
        }
        let mut headers = vec![json!({"Name": AUTO_SUBMITTED.0, "Value": AUTO_SUBMITTED.1})];
        if let Some(id) = &mail.in_reply_to {
            headers.push(json!({"Name": "In-Reply-To", "Value": id}));
        }
        if let Some(refs) = mail.references_header() {
            headers.push(json!({"Name": "References", "Value": refs}));
        }
        body["Headers"] = Value::Array(headers);
        body
    }
}

#[async_trait::async_trait]
impl EmailSender for PostmarkSender {
    async fn send(&self, mail: &OutgoingEmail) -> Result<Accepted, SendError> {
        mail.validate()?;
        let url = format!("{}/email", self.base);
        let req = self
            .http
            .request(reqwest::Method::POST, &url)
            .map_err(|e| SendError::Config(format!("postmark: {e}")))?
            .header("X-Postmark-Server-Token", self.token.expose())
            .header(reqwest::header::ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/json")
            .body(Self::body(mail).to_string());
        let result = match exchange("postmark", req, self.timeout).await {
            Ok((status, answer)) => postmark_outcome(status, &answer),
            Err(e) => Err(e),
        };
        log_outcome("postmark", &result, mail.to.len() + mail.cc.len());
        result
    }
}

fn postmark_outcome(status: u16, answer: &Value) -> Result<Accepted, SendError> {
    let message = cut(answer["Message"].as_str().unwrap_or(""));
    match status {
        200..=299 => Ok(Accepted {
            provider: "postmark",
            provider_id: answer["MessageID"].as_str().map(str::to_string),
        }),
        401 => Err(SendError::Config(format!(
            "postmark: server token refused (401){}",
            if message.is_empty() {
                String::new()
            } else {
                format!(": {message}")
            }
        ))),
        422 => Err(SendError::Permanent {
            code: answer["ErrorCode"]
                .as_i64()
                .map_or_else(|| "422".into(), |c| c.to_string()),
            message,
        }),
        429 | 500..=599 => Err(SendError::Retryable(format!("postmark: HTTP {status}"))),
        _ => Err(SendError::Permanent {
            code: status.to_string(),
            message,
        }),
    }
}

mod providers;
pub use providers::{ByoWebhookSender, PlatformSender, PrimitiveSender};

//! Primitive's send API, a tenant's BYO webhook, and the platform sender
//! that picks between Primitive and Postmark.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::CONTENT_TYPE;
use serde_json::{Value, json};

use super::{
    AUTO_SUBMITTED, Accepted, DEFAULT_SEND_TIMEOUT, EmailSender, OutgoingEmail, PostmarkSender,
    SendError, cut, email_client, exchange, format_mailbox, log_outcome,
};
use crate::config::{Config, Secret};
use crate::integrations::signing::{self, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use crate::outbound::{OutboundClient, OutboundPolicy};
use crate::platform::clock::Clock;

/// Primitive's `POST {PRIMITIVE_API_URL}/send-mail` (bearer API key). The
/// `Idempotency-Key` is the SHA-256 of the request body, so a resend of the
/// same prepared reply is deduplicated by Primitive.
#[derive(Clone)]
pub struct PrimitiveSender {
    http: OutboundClient,
    base: String,
    key: Arc<Secret>,
    timeout: Duration,
}

impl std::fmt::Debug for PrimitiveSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrimitiveSender")
            .field("base", &self.base)
            .finish_non_exhaustive()
    }
}

impl PrimitiveSender {
    /// A sender to `base` (e.g. `https://api.primitive.dev/v1`) with `key`.
    pub fn new(http: OutboundClient, base: &str, key: Secret) -> PrimitiveSender {
        PrimitiveSender {
            http,
            base: base.trim_end_matches('/').to_string(),
            key: Arc::new(key),
            timeout: DEFAULT_SEND_TIMEOUT,
        }
    }

    /// Bound each send by `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> PrimitiveSender {
        self.timeout = timeout;
        self
    }

    /// The JSON body: `to` is one address (Primitive's field is a single
    /// recipient), further To recipients travel in `cc` with the Cc ones.
    pub fn body(mail: &OutgoingEmail) -> Value {
        let mut to = mail.to.iter();
        let first = to.next().map(|m| m.email.clone()).unwrap_or_default();
        let cc: Vec<String> = to.chain(&mail.cc).map(|m| m.email.clone()).collect();
        let mut body = json!({
            "from": format_mailbox(&mail.from),
            "to": first,
            "subject": mail.subject,
            "body_text": mail.text,
            "headers": {AUTO_SUBMITTED.0: AUTO_SUBMITTED.1},
        });
        if !cc.is_empty() {
            body["cc"] = json!(cc);
        }
        if let Some(html) = &mail.html {
            body["body_html"] = json!(html);
        }
        if let Some(id) = &mail.in_reply_to {
            body["in_reply_to"] = json!(id);
        }
        if !mail.references.is_empty() {
            body["references"] = json!(mail.references);
        }
        body
    }
}

#[async_trait::async_trait]
impl EmailSender for PrimitiveSender {
    async fn send(&self, mail: &OutgoingEmail) -> Result<Accepted, SendError> {
        mail.validate()?;
        let body = Self::body(mail).to_string();
        let idempotency = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(body.as_bytes()));
        let url = format!("{}/send-mail", self.base);
        let req = self
            .http
            .request(reqwest::Method::POST, &url)
            .map_err(|e| SendError::Config(format!("primitive: {e}")))?
            .bearer_auth(self.key.expose())
            .header("Idempotency-Key", idempotency)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let result = match exchange("primitive", req, self.timeout).await {
            Ok((status, answer)) => primitive_outcome(status, &answer),
            Err(e) => Err(e),
        };
        log_outcome("primitive", &result, mail.to.len() + mail.cc.len());
        result
    }
}

fn primitive_outcome(status: u16, answer: &Value) -> Result<Accepted, SendError> {
    let code = answer["error"]["code"].as_str().map(str::to_string);
    let message = cut(answer["error"]["message"].as_str().unwrap_or(""));
    match status {
        200..=299 => {
            let data = &answer["data"];
            Ok(Accepted {
                provider: "primitive",
                provider_id: data["id"]
                    .as_str()
                    .or_else(|| data["queue_id"].as_str())
                    .map(str::to_string),
            })
        }
        401 | 403 => Err(SendError::Config(format!(
            "primitive: API key refused (HTTP {status}{})",
            code.map(|c| format!(", {c}")).unwrap_or_default()
        ))),
        429 | 500..=599 => Err(SendError::Retryable(format!("primitive: HTTP {status}"))),
        _ => Err(SendError::Permanent {
            code: code.unwrap_or_else(|| status.to_string()),
            message,
        }),
    }
}

/// A `byo_webhook` tenant's outbound: POST `{type: "email_reply", to, cc,
/// subject, text, html, in_reply_to, references}` to its
/// `outbound_webhook_url`, signed as §7.1 (`x-root-timestamp`,
/// `x-root-signature` over `"{ts}." + body`) with its outbound signing
/// secret. 2xx accepted; 408 / 429 / 5xx / network retryable; other 4xx
/// permanent.
#[derive(Clone)]
pub struct ByoWebhookSender {
    http: OutboundClient,
    url: String,
    secret: Arc<Secret>,
    clock: Arc<dyn Clock>,
    timeout: Duration,
}

impl std::fmt::Debug for ByoWebhookSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ByoWebhookSender")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl ByoWebhookSender {
    /// A sender to the tenant's `url`, signing with `secret` at `clock`'s time.
    pub fn new(
        http: OutboundClient,
        url: &str,
        secret: Secret,
        clock: Arc<dyn Clock>,
    ) -> ByoWebhookSender {
        ByoWebhookSender {
            http,
            url: url.to_string(),
            secret: Arc::new(secret),
            clock,
            timeout: DEFAULT_SEND_TIMEOUT,
        }
    }

    /// Bound each send by `timeout`.
    pub fn with_timeout(mut self, timeout: Duration) -> ByoWebhookSender {
        self.timeout = timeout;
        self
    }

    /// The JSON body (addresses as bare strings, references as an array).
    pub fn body(mail: &OutgoingEmail) -> Value {
        let emails = |list: &[super::Mailbox]| -> Vec<String> {
            list.iter().map(|m| m.email.clone()).collect()
        };
        json!({
            "type": "email_reply",
            "to": emails(&mail.to),
            "cc": emails(&mail.cc),
            "subject": mail.subject,
            "text": mail.text,
            "html": mail.html,
            "in_reply_to": mail.in_reply_to,
            "references": mail.references,
            // Beyond §8.3's fields: the header the tenant's sender must set
            // so auto-responders (and other Roots) leave the reply alone.
            "headers": {AUTO_SUBMITTED.0: AUTO_SUBMITTED.1},
        })
    }
}

#[async_trait::async_trait]
impl EmailSender for ByoWebhookSender {
    async fn send(&self, mail: &OutgoingEmail) -> Result<Accepted, SendError> {
        mail.validate()?;
        let body = Self::body(mail).to_string().into_bytes();
        let ts = signing::unix_secs(self.clock.now());
        let signature = signing::sign(self.secret.expose(), ts, &body);
        // A resend of the same prepared reply (after an unanswered send)
        // carries the same key: the tenant's receiver can drop the copy.
        let idempotency = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&body));
        let req = self
            .http
            .request(reqwest::Method::POST, &self.url)
            .map_err(|e| SendError::Config(format!("byo webhook: {e}")))?
            .header(TIMESTAMP_HEADER, ts.to_string())
            .header(SIGNATURE_HEADER, signature)
            .header("Idempotency-Key", idempotency)
            .header(CONTENT_TYPE, "application/json")
            .body(body);
        let result = match exchange("byo_webhook", req, self.timeout).await {
            Ok((status, answer)) => match status {
                200..=299 => Ok(Accepted {
                    provider: "byo_webhook",
                    provider_id: answer["id"].as_str().map(str::to_string),
                }),
                408 | 429 | 500..=599 => {
                    Err(SendError::Retryable(format!("byo webhook: HTTP {status}")))
                }
                _ => Err(SendError::Permanent {
                    code: status.to_string(),
                    message: cut(answer["error"].as_str().unwrap_or("")),
                }),
            },
            Err(e) => Err(e),
        };
        log_outcome("byo_webhook", &result, mail.to.len() + mail.cc.len());
        result
    }
}

/// The `platform_alias` sender: Primitive when `PRIMITIVE_API_URL` and
/// `PRIMITIVE_API_KEY` are set, else Postmark when `POSTMARK_SERVER_TOKEN`
/// is. A `Retryable` or `Config` failure of Primitive falls back to
/// Postmark; `Permanent` and `Ambiguous` never do (two copies must never be
/// risked).
#[derive(Clone, Debug, Default)]
pub struct PlatformSender {
    primitive: Option<PrimitiveSender>,
    postmark: Option<PostmarkSender>,
}

impl PlatformSender {
    /// From explicit senders (tests, custom wiring).
    pub fn new(primitive: Option<PrimitiveSender>, postmark: Option<PostmarkSender>) -> Self {
        PlatformSender {
            primitive,
            postmark,
        }
    }

    /// From the environment's provider settings.
    pub fn from_config(config: &Config) -> Result<Self, SendError> {
        let http = email_client(OutboundPolicy::from_config(config))?;
        let primitive = match (&config.primitive_api_url, &config.primitive_api_key) {
            (Some(url), Some(key)) => Some(PrimitiveSender::new(http.clone(), url, key.clone())),
            _ => None,
        };
        let postmark = config
            .postmark_server_token
            .as_ref()
            .map(|t| PostmarkSender::new(http, &config.postmark_api_url, t.clone()));
        Ok(PlatformSender::new(primitive, postmark))
    }

    /// Whether any provider is configured.
    pub fn is_configured(&self) -> bool {
        self.primitive.is_some() || self.postmark.is_some()
    }
}

#[async_trait::async_trait]
impl EmailSender for PlatformSender {
    async fn send(&self, mail: &OutgoingEmail) -> Result<Accepted, SendError> {
        if let Some(primitive) = &self.primitive {
            match primitive.send(mail).await {
                Err(e @ (SendError::Retryable(_) | SendError::Config(_))) => {
                    let Some(postmark) = &self.postmark else {
                        return Err(e);
                    };
                    tracing::warn!(error = %e, "primitive send failed; falling back to postmark");
                    return postmark.send(mail).await;
                }
                other => return other,
            }
        }
        match &self.postmark {
            Some(postmark) => postmark.send(mail).await,
            None => Err(SendError::Config(
                "no outbound email provider configured (PRIMITIVE_API_URL + PRIMITIVE_API_KEY or POSTMARK_SERVER_TOKEN)".into(),
            )),
        }
    }
}

//! The one OpenAI-compatible HTTP layer (§3.1): base URL, bearer key,
//! OpenRouter attribution headers, timeouts, and the mapping of every
//! failure to a typed [`AiError`] that says whether a retry can help.
//!
//! The embeddings client uses it now and the chat client will; both get the
//! same error semantics, and the key is sent from exactly one place.

use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::config::{LlmConfig, Secret};
use crate::outbound::{self, BodyError, body::parse_sized};

/// How long to wait for a TCP/TLS connection before giving up.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Whole-request bound when the caller sets none (long chat answers fit).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest provider message kept in an error (bodies can be HTML pages).
const MAX_ERROR_MESSAGE_CHARS: usize = 500;
/// Bytes of an error answer read to find its message (the rest is not).
const ERROR_BODY_PREFIX_BYTES: usize = 64 * 1024;

/// A failed call to the provider.
#[derive(Debug, thiserror::Error)]
pub enum AiError {
    /// No API key: the deployment runs without an LLM provider.
    #[error("LLM not configured: set OPENROUTER_API_KEY")]
    NotConfigured,
    /// The provider answered with an error status or an `{"error":…}` body.
    #[error("provider error {status}: {message}")]
    Provider {
        /// HTTP status (or the numeric `error.code` of a 200 error body).
        status: u16,
        /// `error.code` as sent (a number on OpenRouter, a word on OpenAI).
        code: Option<String>,
        /// `error.message`, or the start of a non-JSON body.
        message: String,
    },
    /// No complete answer within the request timeout.
    #[error("request timed out after {0:?}")]
    Timeout(Duration),
    /// Connection refused/reset, DNS, TLS: the request may not have arrived.
    #[error("transport error: {0}")]
    Transport(String),
    /// A 2xx answer we cannot use (bad JSON, wrong shape or dimensions).
    #[error("invalid provider response: {0}")]
    InvalidResponse(String),
    /// The request could not be built (bad base URL, unusable header value).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    /// Structured output (`chat_json`) still did not parse after every
    /// repair attempt: the model cannot produce this shape for this input.
    #[error("no valid structured output after {attempts} attempts: {message}")]
    StructuredOutput {
        /// Requests made (the first attempt plus the repairs).
        attempts: usize,
        /// Why the last reply was rejected.
        message: String,
    },
}

impl AiError {
    /// Whether the same request may succeed later: rate limits, provider
    /// outages, timeouts and connection failures. Client errors
    /// (400/401/402/403/404/422…) and unusable answers will not change.
    pub fn is_retryable(&self) -> bool {
        match self {
            AiError::Provider { status, .. } => matches!(*status, 408 | 429 | 500..=599),
            AiError::Timeout(_) | AiError::Transport(_) => true,
            AiError::NotConfigured
            | AiError::InvalidResponse(_)
            | AiError::InvalidRequest(_)
            | AiError::StructuredOutput { .. } => false,
        }
    }
}

/// Where requests go and how they authenticate.
#[derive(Clone, Debug)]
pub struct Endpoint {
    /// e.g. `https://openrouter.ai/api/v1` (no trailing slash).
    pub base_url: String,
    /// Sent as `Authorization: Bearer`; `Debug` redacts it.
    pub api_key: Option<Secret>,
    /// `HTTP-Referer` (OpenRouter app attribution).
    pub referer: Option<String>,
    /// `X-Title` (OpenRouter app attribution).
    pub title: Option<String>,
    /// Allow calls without a key (a local OpenAI-compatible server the admin
    /// pointed us at explicitly); otherwise a missing key is
    /// [`AiError::NotConfigured`].
    pub key_optional: bool,
}

impl Endpoint {
    /// The OpenRouter endpoint of `OPENROUTER_*`.
    pub fn openrouter(llm: &LlmConfig) -> Self {
        Endpoint {
            base_url: llm.base_url.clone(),
            api_key: llm.api_key.clone(),
            referer: llm.referer.clone(),
            title: llm.title.clone(),
            key_optional: false,
        }
    }
}

/// Client-wide timeouts; [`AiHttp::post_json`] can shorten the total per call.
#[derive(Clone, Copy, Debug)]
pub struct Timeouts {
    /// Connection establishment.
    pub connect: Duration,
    /// Whole request, body included.
    pub total: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            connect: DEFAULT_CONNECT_TIMEOUT,
            total: DEFAULT_TIMEOUT,
        }
    }
}

/// An OpenAI-compatible API client. Cheap to clone: the connection pool is shared.
#[derive(Clone, Debug)]
pub struct AiHttp {
    client: reqwest::Client,
    endpoint: Endpoint,
    timeouts: Timeouts,
}

/// `{"error": {...}}` as OpenRouter and OpenAI send it.
#[derive(serde::Deserialize)]
struct ErrorEnvelope {
    error: ErrorBody,
}

#[derive(serde::Deserialize)]
struct ErrorBody {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
}

impl AiHttp {
    /// Build the client once (it owns the connection pool).
    pub fn new(endpoint: Endpoint, timeouts: Timeouts) -> Result<Self, AiError> {
        let client = reqwest::Client::builder()
            .connect_timeout(timeouts.connect)
            .timeout(timeouts.total)
            .user_agent(concat!("root/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| AiError::InvalidRequest(format!("HTTP client: {e}")))?;
        let endpoint = Endpoint {
            base_url: endpoint.base_url.trim_end_matches('/').to_string(),
            ..endpoint
        };
        Ok(AiHttp {
            client,
            endpoint,
            timeouts,
        })
    }

    /// Where this client sends requests.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// POST `body` as JSON to `{base_url}/{path}` and decode a 2xx answer.
    /// `timeout` bounds this call (default: the client's total timeout);
    /// a body over `max_bytes` is [`AiError::InvalidResponse`] (refused on
    /// its `Content-Length`, or as soon as the stream passes the cap).
    /// `T` should be a typed response that an `{"error":…}` object does not
    /// satisfy, so a 200 carrying an error is reported as one.
    pub async fn post_json<B, T>(
        &self,
        path: &str,
        body: &B,
        timeout: Option<Duration>,
        max_bytes: usize,
    ) -> Result<T, AiError>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned + Send + 'static,
    {
        let timeout = timeout.unwrap_or(self.timeouts.total);
        let resp = self.send(path, body, timeout).await?;
        let bytes = outbound::read_capped(resp, max_bytes)
            .await
            .map_err(|e| match e {
                BodyError::TooLarge { .. } => AiError::InvalidResponse(e.to_string()),
                BodyError::Read(e) => transport_error(e, timeout),
            })?;
        decode(bytes).await
    }

    /// POST `body` and return the 2xx response unread, for Server-Sent
    /// Events: the caller reads it chunk by chunk with its own idle timeout.
    /// `timeout` bounds the whole exchange, body included. A non-2xx answer
    /// is read and returned as [`AiError::Provider`] like [`Self::post_json`].
    pub async fn post_stream<B>(
        &self,
        path: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<reqwest::Response, AiError>
    where
        B: Serialize + ?Sized,
    {
        self.send(path, body, timeout).await
    }

    /// Send with the key and attribution headers; a non-2xx status becomes
    /// [`AiError::Provider`]. A missing key fails before anything is sent.
    async fn send<B>(
        &self,
        path: &str,
        body: &B,
        timeout: Duration,
    ) -> Result<reqwest::Response, AiError>
    where
        B: Serialize + ?Sized,
    {
        let key = match (&self.endpoint.api_key, self.endpoint.key_optional) {
            (Some(k), _) => Some(k),
            (None, true) => None,
            (None, false) => return Err(AiError::NotConfigured),
        };
        let url = format!(
            "{}/{}",
            self.endpoint.base_url,
            path.trim_start_matches('/')
        );
        let mut req = self.client.post(&url).timeout(timeout).json(body);
        if let Some(k) = key {
            req = req.bearer_auth(k.expose());
        }
        if let Some(r) = &self.endpoint.referer {
            req = req.header("HTTP-Referer", r);
        }
        if let Some(t) = &self.endpoint.title {
            req = req.header("X-Title", t);
        }
        let classify = |e: reqwest::Error| transport_error(e, timeout);
        let resp = req.send().await.map_err(classify)?;
        let status = resp.status();
        if !status.is_success() {
            let bytes = outbound::read_prefix(resp, ERROR_BODY_PREFIX_BYTES).await;
            return Err(provider_error(status.as_u16(), &bytes));
        }
        Ok(resp)
    }
}

/// Map a reqwest failure; the URL in its message never carries the key.
pub(crate) fn transport_error(e: reqwest::Error, timeout: Duration) -> AiError {
    if e.is_timeout() {
        AiError::Timeout(timeout)
    } else if e.is_builder() {
        AiError::InvalidRequest(e.to_string())
    } else if e.is_decode() {
        AiError::InvalidResponse(e.to_string())
    } else {
        AiError::Transport(e.to_string())
    }
}

/// A non-2xx answer: the provider's `error` object when there is one,
/// otherwise the start of the body.
fn provider_error(status: u16, body: &[u8]) -> AiError {
    match serde_json::from_slice::<ErrorEnvelope>(body) {
        Ok(env) => AiError::Provider {
            status,
            code: env.error.code.as_ref().map(code_text),
            message: truncate(env.error.message.as_deref().unwrap_or("")),
        },
        Err(_) => AiError::Provider {
            status,
            code: None,
            message: truncate(String::from_utf8_lossy(body).trim()),
        },
    }
}

fn code_text(code: &serde_json::Value) -> String {
    match code {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn truncate(s: &str) -> String {
    s.chars().take(MAX_ERROR_MESSAGE_CHARS).collect()
}

/// An `{"error":…}` object inside a 2xx answer (a JSON body or an SSE
/// event): the status is the numeric `error.code` when it is an HTTP error
/// status, else 502 (the upstream failed behind OpenRouter).
fn error_in_body(env: &ErrorEnvelope) -> AiError {
    let status = env
        .error
        .code
        .as_ref()
        .and_then(serde_json::Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| (400..=599).contains(c))
        .unwrap_or(502);
    AiError::Provider {
        status,
        code: env.error.code.as_ref().map(code_text),
        message: truncate(env.error.message.as_deref().unwrap_or("")),
    }
}

/// The provider error carried by `value` (`{"error":{…}}`), if any.
pub(crate) fn error_in_json(value: &serde_json::Value) -> Option<AiError> {
    value.get("error")?;
    serde_json::from_value::<ErrorEnvelope>(value.clone())
        .ok()
        .map(|env| error_in_body(&env))
}

/// Decode a 2xx body. OpenRouter can answer 200 with an `{"error":…}` body
/// (the upstream failed after the status was sent); that is a provider
/// error with the status taken from `error.code`, or 502.
async fn decode<T, B>(bytes: B) -> Result<T, AiError>
where
    T: DeserializeOwned + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
{
    let len = bytes.as_ref().len();
    let parse = move || -> Result<T, AiError> {
        let bytes = bytes.as_ref();
        serde_json::from_slice::<T>(bytes).map_err(|e| {
            match serde_json::from_slice::<ErrorEnvelope>(bytes) {
                Ok(env) => error_in_body(&env),
                Err(_) => AiError::InvalidResponse(e.to_string()),
            }
        })
    };
    parse_sized(len, parse)
        .await
        .map_err(|e| AiError::InvalidResponse(format!("response parsing aborted: {e}")))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(s: u16) -> AiError {
        AiError::Provider {
            status: s,
            code: None,
            message: String::new(),
        }
    }

    #[test]
    fn rate_limits_outages_and_network_failures_are_retryable_client_errors_are_not() {
        for s in [408, 429, 500, 502, 503, 504] {
            assert!(status(s).is_retryable(), "{s}");
        }
        for s in [400, 401, 402, 403, 404, 422] {
            assert!(!status(s).is_retryable(), "{s}");
        }
        assert!(AiError::Timeout(Duration::from_secs(1)).is_retryable());
        assert!(AiError::Transport("connection refused".into()).is_retryable());
        assert!(!AiError::NotConfigured.is_retryable());
        assert!(!AiError::InvalidResponse("x".into()).is_retryable());
        assert_eq!(
            AiError::NotConfigured.to_string(),
            "LLM not configured: set OPENROUTER_API_KEY"
        );
    }

    #[test]
    fn provider_error_bodies_are_parsed_whatever_the_code_type() {
        // OpenRouter: numeric code.
        let e = provider_error(
            402,
            br#"{"error":{"message":"Insufficient credits","code":402,"metadata":{}}}"#,
        );
        assert!(
            matches!(&e, AiError::Provider { status: 402, code: Some(c), message } if c == "402" && message == "Insufficient credits"),
            "{e:?}"
        );
        // OpenAI: string code.
        let e = provider_error(
            401,
            br#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#,
        );
        assert!(
            matches!(&e, AiError::Provider { status: 401, code: Some(c), .. } if c == "invalid_api_key")
        );
        // A proxy's HTML page: kept short.
        let html = format!("<html>{}</html>", "x".repeat(5000));
        let e = provider_error(503, html.as_bytes());
        assert!(
            matches!(&e, AiError::Provider { status: 503, code: None, message } if message.chars().count() == MAX_ERROR_MESSAGE_CHARS)
        );
        assert!(e.is_retryable());
    }

    #[tokio::test]
    async fn a_200_carrying_an_error_body_is_a_provider_error() {
        #[derive(serde::Deserialize, Debug)]
        struct Data {
            #[allow(dead_code)]
            data: Vec<u8>,
        }
        let e = decode::<Data, _>(
            br#"{"error":{"message":"upstream overloaded","code":503}}"#.to_vec(),
        )
        .await
        .unwrap_err();
        assert!(matches!(e, AiError::Provider { status: 503, .. }), "{e:?}");
        assert!(e.is_retryable());
        let e = decode::<Data, _>(br#"{"error":{"message":"bad","code":"weird"}}"#.to_vec())
            .await
            .unwrap_err();
        assert!(matches!(e, AiError::Provider { status: 502, .. }), "{e:?}");
        let e = decode::<Data, _>(b"not json".to_vec()).await.unwrap_err();
        assert!(matches!(e, AiError::InvalidResponse(_)), "{e:?}");
        // Leading keep-alive whitespace (OpenRouter) is fine; big bodies parse off-thread.
        let big = format!("\n\n {{\"data\":[{}0]}}", "1,".repeat(200_000));
        assert_eq!(decode::<Data, _>(big).await.unwrap().data.len(), 200_001);
    }

    #[tokio::test]
    async fn without_a_key_nothing_is_sent() {
        let endpoint = Endpoint {
            // Unroutable: a request would fail differently than NotConfigured.
            base_url: "http://127.0.0.1:9".into(),
            api_key: None,
            referer: None,
            title: None,
            key_optional: false,
        };
        let http = AiHttp::new(endpoint, Timeouts::default()).unwrap();
        let e = http
            .post_json::<_, serde_json::Value>("embeddings", &serde_json::json!({}), None, 1024)
            .await
            .unwrap_err();
        assert!(matches!(e, AiError::NotConfigured), "{e:?}");
    }

    #[test]
    fn the_key_is_redacted_in_debug_output() {
        let endpoint = Endpoint {
            base_url: "https://openrouter.ai/api/v1/".into(),
            api_key: Some(Secret::new("sk-or-topsecret")),
            referer: None,
            title: None,
            key_optional: false,
        };
        let http = AiHttp::new(endpoint, Timeouts::default()).unwrap();
        assert_eq!(http.endpoint().base_url, "https://openrouter.ai/api/v1");
        assert!(!format!("{http:?}").contains("topsecret"));
    }
}

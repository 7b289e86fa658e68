//! The root-int/1 client (§7.2–§7.3): signed calls to a tenant backend.
//!
//! Tool invocations retry up to twice (3 attempts, 300 ms × attempt apart)
//! only when the request cannot have been handled — a network failure or
//! HTTP 502/503/504 — and never on a timeout or a broken stream, because the
//! tool may have executed side effects. Their result is the kernel's
//! [`ToolResult`]: `error` is model-facing text, `error_detail` says what
//! happened for operators (status, body excerpt, never the secret), and
//! `images` ride along for the channel. Every invocation writes one
//! `integration_tool_calls` row, durably *before* the request is sent
//! (marked [`AUDIT_INTERRUPTED`]) and completed durably once the call
//! ends: a crash or a cancelled call while the request is out still
//! leaves its audit row, and a row that cannot be written means the
//! request is not sent.
//!
//! Streaming tools answer `application/x-ndjson`: progress lines are
//! forwarded live to the caller's channel, the one `result` line is the
//! result; the tool's timeout bounds the whole stream.
//!
//! Every request goes through the guarded [`OutboundClient`] (§7 base URLs
//! are tenant-controlled): no private addresses unless the operator allows
//! them, no redirects (signed headers never follow a 3xx to another host),
//! and every body is read under a cap ([`EndpointKey::max_response_bytes`],
//! [`MAX_TOOL_RESULT_BYTES`], the NDJSON line and stream caps).

use std::sync::Arc;
use std::time::{Duration, Instant};

use reqwest::header::CONTENT_TYPE;
use serde::Deserialize;
use serde_json::Value;
use storage::{Integration, IntegrationToolCall, RedbStore, Store};
use tokio::sync::mpsc;
use uuid::Uuid;

use super::endpoints::{EndpointKey, EndpointPaths, Method, tool_timeout};
use super::manifest::{
    ADMIN_TIER, Manifest, ManifestError, canonical_reserved_tier, is_reserved_tier,
};
use super::signing::{self, SIGNATURE_HEADER, TIMESTAMP_HEADER};
pub use super::tool_answer::ndjson_line;
use super::tool_answer::{is_ndjson, parse_tool_result, read_ndjson};
use crate::outbound::body::{self, BodyError};
use crate::outbound::{
    OutboundClient, OutboundError, OutboundPolicy, error_chain, refused_destination,
};
use crate::platform::clock::{Clock, SystemClock};
use crate::platform::tool_result::ToolResult;

/// Attempts of one tool invocation (the first plus two retries).
pub const INVOKE_ATTEMPTS: u32 = 3;
/// Delay before retry `n` is `n ×` this.
pub const RETRY_DELAY_STEP: Duration = Duration::from_millis(300);
/// Longest progress message forwarded (characters, after trimming).
pub const MAX_PROGRESS_CHARS: usize = 500;
/// Longest body excerpt kept in an error (for the server log).
pub const MAX_ERROR_BODY_CHARS: usize = 500;
/// Bytes of an error answer's body read for that excerpt (the rest is not).
pub const ERROR_BODY_PREFIX_BYTES: usize = 4 * 1024;
/// Largest JSON tool result (images travel inline as base64).
pub const MAX_TOOL_RESULT_BYTES: usize = 4 * 1024 * 1024;
/// Longest NDJSON line accepted (the `result` line carries a whole result).
pub const MAX_NDJSON_LINE_BYTES: usize = MAX_TOOL_RESULT_BYTES;
/// Largest NDJSON stream (progress lines plus the result line).
pub const MAX_NDJSON_STREAM_BYTES: u64 = 8 * 1024 * 1024;
/// Connection establishment bound for every call.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The streaming content type.
pub const NDJSON_CONTENT_TYPE: &str = "application/x-ndjson";
/// The `error` of an audit row whose call never completed: written before
/// the request leaves, replaced when the call ends. Still there after a
/// crash or a cancelled turn, when the backend may have acted.
pub const AUDIT_INTERRUPTED: &str =
    "interrupted: no outcome was recorded; the request may have reached the backend";

/// A failed non-invoke call (manifest, identity, roster, links, escalations).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// No complete answer within the endpoint's timeout.
    #[error("{endpoint}: no answer within {timeout_ms} ms")]
    Timeout {
        /// The endpoint called.
        endpoint: EndpointKey,
        /// Its bound.
        timeout_ms: u64,
    },
    /// Connection refused/reset, DNS, TLS.
    #[error("{endpoint}: network error: {message}")]
    Network {
        /// The endpoint called.
        endpoint: EndpointKey,
        /// What failed.
        message: String,
    },
    /// The outbound policy refused the destination (a private address, a
    /// name resolving only to private addresses, plain http in production).
    #[error("{endpoint}: destination refused: {message}")]
    Refused {
        /// The endpoint called.
        endpoint: EndpointKey,
        /// Why.
        message: String,
    },
    /// A non-2xx answer.
    #[error("{endpoint}: HTTP {status}: {body}")]
    Status {
        /// The endpoint called.
        endpoint: EndpointKey,
        /// HTTP status.
        status: u16,
        /// Start of the body.
        body: String,
    },
    /// The endpoint answered 404 where the spec makes it optional (roster).
    #[error("{endpoint}: not supported by this backend")]
    Unsupported {
        /// The endpoint called.
        endpoint: EndpointKey,
    },
    /// A 2xx answer we cannot use.
    #[error("{endpoint}: bad response: {message}")]
    BadResponse {
        /// The endpoint called.
        endpoint: EndpointKey,
        /// Why.
        message: String,
    },
    /// The manifest arrived but does not validate.
    #[error(transparent)]
    InvalidManifest(#[from] ManifestError),
    /// The integration row cannot be called (bad `endpoint_paths`).
    #[error("integration misconfigured: {0}")]
    Config(String),
}

use super::wire::InvokeBody;
pub use super::wire::{
    ActsFor, EmailDelegation, Escalation, IdentityQuery, IdentityResolution, InvokePrincipal,
    InvokeRequest, ResolvedPrincipal,
};

/// Why an invocation failed (before it becomes a [`ToolResult`]).
#[derive(Debug)]
pub enum InvokeFailure {
    /// No complete answer within the tool's bound.
    Timeout(Duration),
    /// The backend could not be reached.
    Network(String),
    /// The destination was refused by the outbound policy (SSRF guard).
    Refused(String),
    /// A non-2xx answer (status and a body excerpt).
    Status {
        /// HTTP status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// An answer that is not a usable tool result.
    BadResponse(String),
    /// The integration's own configuration is unusable.
    Config(String),
}

impl InvokeFailure {
    /// Only failures where the backend cannot have acted are retried.
    fn is_retryable(&self) -> bool {
        match self {
            InvokeFailure::Network(_) => true,
            InvokeFailure::Status { status, .. } => matches!(status, 502..=504),
            InvokeFailure::Timeout(_)
            | InvokeFailure::Refused(_)
            | InvokeFailure::BadResponse(_)
            | InvokeFailure::Config(_) => false,
        }
    }

    fn into_result(self, tool: &str, path: &str) -> ToolResult {
        let (error, detail) = match self {
            InvokeFailure::Timeout(t) => (
                format!(
                    "The {tool} tool did not answer within {} seconds. It may still have run, so check before trying again.",
                    t.as_secs_f64()
                ),
                format!("timeout: no complete answer within {} ms", t.as_millis()),
            ),
            InvokeFailure::Network(m) => (
                format!("The {tool} tool could not be reached right now."),
                format!("network: {m}"),
            ),
            InvokeFailure::Refused(m) => (
                format!("The {tool} tool could not be reached."),
                format!("refused: {m}"),
            ),
            InvokeFailure::Status { status, body } => (
                format!("The {tool} tool failed (HTTP {status})."),
                format!("http {status} from POST {path}: {body}"),
            ),
            InvokeFailure::BadResponse(m) => (
                format!("The {tool} tool returned a response that could not be used."),
                format!("bad_response: {m}"),
            ),
            InvokeFailure::Config(m) => (
                format!("The {tool} tool is misconfigured."),
                format!("config: {m}"),
            ),
        };
        ToolResult {
            success: false,
            error: Some(error),
            error_detail: Some(detail),
            ..ToolResult::default()
        }
    }
}

/// How a request failed before any answer arrived.
enum SendFailure {
    /// The outbound policy refused the URL or the resolved address.
    Refused(String),
    /// Anything else (connect, reset, TLS, DNS failure).
    Network(String),
}

impl From<OutboundError> for SendFailure {
    fn from(e: OutboundError) -> Self {
        SendFailure::Refused(e.to_string())
    }
}

fn send_failure(e: &reqwest::Error) -> SendFailure {
    match refused_destination(e) {
        Some(r) => SendFailure::Refused(r.to_string()),
        None => SendFailure::Network(error_chain(e)),
    }
}

/// Signed HTTP to tenant backends. Cheap to clone (one connection pool).
#[derive(Clone)]
pub struct IntegrationClient {
    http: OutboundClient,
    store: RedbStore,
    retry_step: Duration,
    clock: Arc<dyn Clock>,
}

impl std::fmt::Debug for IntegrationClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntegrationClient")
            .field("http", &self.http)
            .field("store", &self.store)
            .field("retry_step", &self.retry_step)
            .finish_non_exhaustive()
    }
}

impl IntegrationClient {
    /// One client per process; `store` receives the audit rows, `policy`
    /// says which backend addresses may be reached.
    pub fn new(store: RedbStore, policy: OutboundPolicy) -> Result<IntegrationClient, CallError> {
        let http = OutboundClient::new(policy, |b| {
            b.connect_timeout(CONNECT_TIMEOUT).user_agent(concat!(
                "root/",
                env!("CARGO_PKG_VERSION"),
                " root-int/1"
            ))
        })
        .map_err(|e| CallError::Config(format!("HTTP client: {e}")))?;
        Ok(IntegrationClient {
            http,
            store,
            retry_step: RETRY_DELAY_STEP,
            clock: Arc::new(SystemClock),
        })
    }

    /// Stamp audit rows with `clock` (the app's one clock).
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The outbound policy backends are held to (registration checks
    /// `base_url` against it too).
    pub fn policy(&self) -> OutboundPolicy {
        self.http.policy()
    }

    fn paths(integration: &Integration) -> Result<EndpointPaths, String> {
        EndpointPaths::from_json(&integration.endpoint_paths.0).map_err(|e| e.to_string())
    }

    /// A signed request: `x-root-timestamp`, `x-root-signature` over
    /// `"{ts}.{body}"`, `content-type: application/json`.
    ///
    /// Refused (nothing sent) when the URL breaks the outbound policy.
    fn signed(
        &self,
        integration: &Integration,
        method: Method,
        path: &str,
        body: Vec<u8>,
    ) -> Result<reqwest::RequestBuilder, OutboundError> {
        let url = format!("{}{}", integration.base_url.trim_end_matches('/'), path);
        let req = match method {
            Method::Get => self.http.request(reqwest::Method::GET, &url)?,
            Method::Post => self.http.request(reqwest::Method::POST, &url)?,
        };
        let ts = signing::unix_secs(self.clock.now());
        let signature = signing::sign(integration.signing_secret.expose(), ts, &body);
        let req = match method {
            Method::Get => req,
            Method::Post => req.body(body),
        };
        Ok(req
            .header(TIMESTAMP_HEADER, ts.to_string())
            .header(SIGNATURE_HEADER, signature)
            .header(CONTENT_TYPE, "application/json"))
    }

    /// One signed call of `key` → the JSON answer (`null` for an empty body).
    async fn call_json(
        &self,
        integration: &Integration,
        key: EndpointKey,
        body: Option<&Value>,
    ) -> Result<Value, CallError> {
        let paths = Self::paths(integration).map_err(CallError::Config)?;
        let bytes = match body {
            Some(b) => serde_json::to_vec(b).map_err(|e| CallError::Config(e.to_string()))?,
            None => Vec::new(),
        };
        let timeout = key.timeout();
        let sent = |f: SendFailure| match f {
            SendFailure::Refused(message) => CallError::Refused {
                endpoint: key,
                message,
            },
            SendFailure::Network(message) => CallError::Network {
                endpoint: key,
                message,
            },
        };
        let request = self
            .signed(integration, key.method(), paths.path(key), bytes)
            .map_err(|e| sent(e.into()))?;
        let limit = key.max_response_bytes();
        let exchange = async {
            let resp = request.send().await.map_err(|e| sent(send_failure(&e)))?;
            let status = resp.status().as_u16();
            if !(200..300).contains(&status) {
                return Ok::<_, CallError>((status, Err(error_excerpt(resp).await)));
            }
            match body::read_capped(resp, limit).await {
                Ok(bytes) => Ok((status, Ok(bytes))),
                Err(BodyError::TooLarge { limit }) => Err(CallError::BadResponse {
                    endpoint: key,
                    message: format!("body over {limit} bytes"),
                }),
                Err(BodyError::Read(e)) => Err(CallError::Network {
                    endpoint: key,
                    message: error_chain(&e),
                }),
            }
        };
        let (status, body) = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| CallError::Timeout {
                endpoint: key,
                timeout_ms: timeout.as_millis() as u64,
            })??;
        let body = match body {
            Ok(bytes) => bytes,
            Err(_) if status == 404 && key == EndpointKey::IdentityRoster => {
                return Err(CallError::Unsupported { endpoint: key });
            }
            Err(excerpt) => {
                return Err(CallError::Status {
                    endpoint: key,
                    status,
                    body: excerpt,
                });
            }
        };
        if body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        body::parse_json(body)
            .await
            .map_err(|e| CallError::BadResponse {
                endpoint: key,
                message: format!("not JSON: {e}"),
            })
    }

    /// `GET manifest`, validated.
    pub async fn fetch_manifest(&self, integration: &Integration) -> Result<Manifest, CallError> {
        let value = self
            .call_json(integration, EndpointKey::Manifest, None)
            .await?;
        Ok(Manifest::parse(&value)?)
    }

    /// Invoke `tool` (bounded by `timeout_ms` ?? 120 s) and record the
    /// audit row. Progress messages of a streaming answer go to `progress`
    /// as they arrive (never blocking the stream: a full channel drops one).
    pub async fn invoke_tool(
        &self,
        integration: &Integration,
        tool: &str,
        timeout_ms: Option<u64>,
        request: InvokeRequest,
        progress: Option<mpsc::Sender<String>>,
    ) -> ToolResult {
        let started = Instant::now();
        let path = Self::paths(integration).map(|p| p.tool_path(tool));
        let mut row = self.audit_row(integration, tool, request.principal_id);
        let result = match &path {
            Ok(path) => {
                // The row is durable before anything is sent (§7.3: every
                // invocation is auditable, also one cut short by a crash or
                // a cancelled turn); without it nothing is sent.
                if let Err(e) = self.store.insert(row.clone()).await {
                    tracing::error!(integration = %integration.name, %tool, error = %e, "integration_tool_calls row not written; tool call not sent");
                    return ToolResult {
                        success: false,
                        error: Some(format!("The {tool} tool could not be run right now.")),
                        error_detail: Some(format!(
                            "audit: the audit row could not be written: {e}"
                        )),
                        ..ToolResult::default()
                    };
                }
                match self
                    .invoke_with_retries(
                        integration,
                        path,
                        tool_timeout(timeout_ms),
                        &request,
                        progress.as_ref(),
                    )
                    .await
                {
                    Ok(r) => r,
                    Err(f) => f.into_result(tool, path),
                }
            }
            Err(e) => InvokeFailure::Config(e.clone()).into_result(tool, "-"),
        };
        let elapsed = started.elapsed();
        if let Some(detail) = &result.error_detail {
            tracing::warn!(
                integration = %integration.name,
                %tool,
                kind = %result.failure_kind(),
                "integration tool failed"
            );
            tracing::debug!(integration = %integration.name, %tool, %detail, "integration tool failure detail");
        }
        row.duration_ms = i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX);
        row.success = result.success;
        row.error = (!result.success)
            .then(|| result.error_detail.clone().or_else(|| result.error.clone()))
            .flatten();
        // Completes the row written before the request (a config failure
        // sent nothing and has no row yet).
        let written = if path.is_ok() {
            self.store.update(row).await
        } else {
            self.store.insert(row).await
        };
        if let Err(e) = written {
            tracing::warn!(integration = %integration.name, %tool, error = %e, "integration_tool_calls row not completed");
        }
        result
    }

    async fn invoke_with_retries(
        &self,
        integration: &Integration,
        path: &str,
        timeout: Duration,
        request: &InvokeRequest,
        progress: Option<&mpsc::Sender<String>>,
    ) -> Result<ToolResult, InvokeFailure> {
        let body = serde_json::to_vec(&InvokeBody {
            invocation_id: Uuid::new_v4(),
            tenant_id: integration.tenant_id,
            request,
        })
        .map_err(|e| InvokeFailure::Config(format!("request body: {e}")))?;
        let mut attempt = 1;
        loop {
            let outcome = tokio::time::timeout(
                timeout,
                self.invoke_once(integration, path, body.clone(), progress),
            )
            .await
            .unwrap_or(Err(InvokeFailure::Timeout(timeout)));
            match outcome {
                Ok(result) => return Ok(result),
                Err(f) if f.is_retryable() && attempt < INVOKE_ATTEMPTS => {
                    tracing::info!(integration = %integration.name, %path, attempt, failure = ?f, "retrying tool invocation");
                    tokio::time::sleep(self.retry_step * attempt).await;
                    attempt += 1;
                }
                Err(f) => return Err(f),
            }
        }
    }

    async fn invoke_once(
        &self,
        integration: &Integration,
        path: &str,
        body: Vec<u8>,
        progress: Option<&mpsc::Sender<String>>,
    ) -> Result<ToolResult, InvokeFailure> {
        let sent = |f: SendFailure| match f {
            SendFailure::Refused(m) => InvokeFailure::Refused(m),
            SendFailure::Network(m) => InvokeFailure::Network(m),
        };
        let resp = self
            .signed(integration, Method::Post, path, body)
            .map_err(|e| sent(e.into()))?
            .send()
            .await
            .map_err(|e| sent(send_failure(&e)))?;
        let status = resp.status().as_u16();
        if !(200..300).contains(&status) {
            let body = error_excerpt(resp).await;
            return Err(InvokeFailure::Status { status, body });
        }
        if is_ndjson(resp.headers()) {
            return read_ndjson(resp, progress).await;
        }
        let bytes = body::read_capped(resp, MAX_TOOL_RESULT_BYTES)
            .await
            .map_err(|e| InvokeFailure::BadResponse(error_chain(&e)))?;
        let value: Value = body::parse_json(bytes)
            .await
            .map_err(|e| InvokeFailure::BadResponse(format!("not JSON: {e}")))?;
        parse_tool_result(value)
    }

    /// The audit row of a call that has not completed: unsuccessful and
    /// [`AUDIT_INTERRUPTED`] until the outcome replaces both.
    fn audit_row(
        &self,
        integration: &Integration,
        tool: &str,
        principal_id: Option<Uuid>,
    ) -> IntegrationToolCall {
        IntegrationToolCall {
            id: Uuid::now_v7(),
            tenant_id: integration.tenant_id,
            integration_id: Some(integration.id),
            integration_name: integration.name.clone(),
            tool_name: tool.to_string(),
            principal_id,
            duration_ms: 0,
            success: false,
            error: Some(AUDIT_INTERRUPTED.to_string()),
            created_at: self.clock.now(),
        }
    }

    /// `POST identity_resolve`.
    pub async fn resolve_identity(
        &self,
        integration: &Integration,
        query: &IdentityQuery,
    ) -> Result<IdentityResolution, CallError> {
        let key = EndpointKey::IdentityResolve;
        let body = serde_json::to_value(query).map_err(|e| CallError::Config(e.to_string()))?;
        let value = self.call_json(integration, key, Some(&body)).await?;
        let resolution: IdentityResolution =
            serde_json::from_value(value).map_err(|e| CallError::BadResponse {
                endpoint: key,
                message: e.to_string(),
            })?;
        if let Some(p) = &resolution.principal {
            p.check(key)?;
        }
        if let Some(a) = &resolution.acts_for {
            a.principal.check(key)?;
        }
        let mut resolution = resolution;
        if resolution
            .acts_for
            .as_ref()
            .is_some_and(|a| canonical_reserved_tier(&a.principal.tier) == Some(ADMIN_TIER))
        {
            tracing::warn!(integration = %integration.name, "acts_for with the {ADMIN_TIER} marker as its tier dropped");
            resolution.acts_for = None;
        }
        Ok(resolution)
    }

    /// `GET identity_roster`; 404 ⇒ [`CallError::Unsupported`]; entries of
    /// reserved tiers (unresolved/public/public_email, and the `__admin__`
    /// marker, in any case or padding) are dropped.
    pub async fn roster(
        &self,
        integration: &Integration,
    ) -> Result<Vec<ResolvedPrincipal>, CallError> {
        let key = EndpointKey::IdentityRoster;
        #[derive(Deserialize)]
        struct Roster {
            principals: Vec<Value>,
        }
        let value = self.call_json(integration, key, None).await?;
        let roster: Roster = serde_json::from_value(value).map_err(|e| CallError::BadResponse {
            endpoint: key,
            message: e.to_string(),
        })?;
        let mut out = Vec::with_capacity(roster.principals.len());
        for entry in roster.principals {
            match serde_json::from_value::<ResolvedPrincipal>(entry) {
                Ok(p) if p.check(key).is_ok() && !is_reserved_tier(&p.tier) => out.push(p),
                Ok(p) if canonical_reserved_tier(&p.tier) == Some(ADMIN_TIER) => {
                    tracing::warn!(integration = %integration.name, "roster entry with the {ADMIN_TIER} marker as its tier skipped");
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(integration = %integration.name, error = %e, "roster entry skipped");
                }
            }
        }
        Ok(out)
    }

    /// `POST links_issue` → the URL.
    pub async fn issue_link(
        &self,
        integration: &Integration,
        destination: &str,
        principal_ref: &str,
    ) -> Result<String, CallError> {
        let key = EndpointKey::LinksIssue;
        let body = serde_json::json!({"destination": destination, "principal_ref": principal_ref});
        let value = self.call_json(integration, key, Some(&body)).await?;
        match value.get("url").and_then(Value::as_str) {
            Some(url) if url.starts_with("https://") || url.starts_with("http://") => {
                Ok(url.to_string())
            }
            _ => Err(CallError::BadResponse {
                endpoint: key,
                message: "expected {\"url\": \"http(s)://…\"}".into(),
            }),
        }
    }

    /// `POST escalations` with the integration's `tenant_id` added; returns
    /// the backend's answer (`null` when it sent no body).
    pub async fn post_escalation(
        &self,
        integration: &Integration,
        escalation: &Escalation,
    ) -> Result<Value, CallError> {
        let mut body =
            serde_json::to_value(escalation).map_err(|e| CallError::Config(e.to_string()))?;
        body["tenant_id"] = Value::String(integration.tenant_id.to_string());
        self.call_json(integration, EndpointKey::Escalations, Some(&body))
            .await
    }
}

/// The start of a non-2xx answer's body, for the server log. A redirect is
/// named as such: it is never followed.
async fn error_excerpt(resp: reqwest::Response) -> String {
    if resp.status().is_redirection() {
        return "redirect not followed".into();
    }
    excerpt(&body::read_prefix(resp, ERROR_BODY_PREFIX_BYTES).await)
}

fn excerpt(body: &[u8]) -> String {
    String::from_utf8_lossy(body)
        .trim()
        .chars()
        .take(MAX_ERROR_BODY_CHARS)
        .collect()
}

#[cfg(test)]
#[path = "client_test.rs"]
mod tests;

//! Step 1 of a sync run (§11.2): get a knowledge source's documents as the
//! source delivered them. [`Fetcher::fetch`] dispatches on `source_kind`:
//!
//! - `web_page` (`web.rs`) — GET the page, follow at most [`MAX_REDIRECTS`]
//!   redirects by hand (each hop re-checked by the outbound policy), and
//!   Readability-extract one article.
//! - `api_pull` (`api.rs`) — call the tenant's API with its headers and
//!   auth, then map the answer (JSON through [`mapping`], or one HTML/text
//!   document).
//! - `webhook` (`webhook.rs`) — POST a §7.1-signed `knowledge.sync.requested`
//!   event; the tenant pushes documents later (or answers them inline).
//! - `api_push` — nothing to fetch: documents arrive through the API.
//!
//! Every request goes through the guarded [`OutboundClient`], so a tenant
//! cannot point Root at its loopback, LAN or a metadata service; every body
//! is read under a cap; the network part of a fetch is bounded by
//! [`FETCH_TIMEOUT`]; HTML and big JSON are parsed on the blocking pool.
//! Errors are one sentence an admin can act on (they land in
//! `knowledge_sync_runs.error`), and never carry a secret: credentials come
//! from `secrets` only at the header they fill, and URLs are shown without
//! user-info or query.

mod api;
pub mod mapping;
mod web;
mod webhook;

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde::{Deserialize, Serialize};
use storage::{KnowledgeSource, SourceKind};
use uuid::Uuid;

use crate::outbound::{
    BodyError, OutboundClient, OutboundError, OutboundPolicy, error_chain, read_capped,
    refused_destination,
};
use crate::platform::clock::Clock;

pub use mapping::{MAPPING_FIELDS, validate_mapping};
pub use web::MAX_REDIRECTS;

/// One document as its source delivered it, before §11.2 normalisation.
/// Also the wire shape of `POST /api/v1/kb/sync` documents (serde field
/// names as written; unknown fields are refused by `deny_unknown_fields`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawDocument {
    /// The source's own id of the document (stable across runs, so a page
    /// is updated rather than duplicated).
    #[serde(default)]
    pub external_id: Option<String>,
    /// A slug the source proposes (normalisation slugifies it).
    #[serde(default)]
    pub slug: Option<String>,
    /// The title.
    #[serde(default)]
    pub title: Option<String>,
    /// The body as HTML (sanitised later, §11.2 step 5).
    #[serde(default)]
    pub content_html: Option<String>,
    /// The body as text (when there is no HTML, or alongside it).
    #[serde(default)]
    pub content_text: Option<String>,
    /// Where a reader can see the original.
    #[serde(default)]
    pub source_url: Option<String>,
    /// Who wrote it.
    #[serde(default)]
    pub author_name: Option<String>,
    /// When the knowledge dates from, as the source wrote it.
    #[serde(default)]
    pub knowledge_date: Option<String>,
}

/// At most this many documents per run (§11.2 step 1).
pub const MAX_DOCUMENTS_PER_RUN: usize = 250;
/// The whole fetch (connect → last body byte) is bounded by this (§11.2 step 1).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(45);
/// A web page body larger than this is refused (Readability on more is
/// slow and no article is that long).
pub const MAX_WEB_PAGE_BYTES: usize = 5 * 1024 * 1024;
/// An API or webhook answer larger than this is refused (250 documents fit
/// many times over).
pub const MAX_API_BYTES: usize = 10 * 1024 * 1024;
/// Connection establishment bound, inside [`FETCH_TIMEOUT`]: a host that
/// does not accept the connection fails fast with a connect error.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest URL shown in an error message.
const MAX_SHOWN_URL_CHARS: usize = 200;

/// What a fetch delivered for `web_page`, `api_pull` or an inline webhook
/// answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// At most [`MAX_DOCUMENTS_PER_RUN`], in the source's order.
    pub documents: Vec<RawDocument>,
    /// How many the source had (more than `documents.len()` when cut), so
    /// the run can report the cut.
    pub documents_total: usize,
    /// The answer's HTTP status (for `knowledge_sync_runs.http_status`).
    pub http_status: Option<u16>,
}

impl Fetched {
    /// `documents` cut to [`MAX_DOCUMENTS_PER_RUN`], `documents_total`
    /// counted before the cut.
    fn capped(mut documents: Vec<RawDocument>, http_status: Option<u16>) -> Fetched {
        let documents_total = documents.len();
        documents.truncate(MAX_DOCUMENTS_PER_RUN);
        Fetched {
            documents,
            documents_total,
            http_status,
        }
    }
}

/// The result of a successful fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchOutcome {
    /// Documents to apply now.
    Documents(Fetched),
    /// webhook kind: the tenant accepted the request and will push documents later.
    Triggered {
        /// The tenant's answer (202, 204…).
        http_status: u16,
    },
}

/// Why a fetch failed: one sentence for the run's `error` column, and the
/// HTTP status when the source answered one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FetchError {
    /// What went wrong and, where it helps, what to change.
    pub message: String,
    /// The source's HTTP status, when the failure is an answer.
    pub http_status: Option<u16>,
}

impl FetchError {
    /// An error with no HTTP status (nothing was answered).
    pub fn new(message: impl Into<String>) -> FetchError {
        FetchError {
            message: message.into(),
            http_status: None,
        }
    }

    /// The same error, recorded against the source's HTTP `status`.
    pub fn with_status(mut self, status: u16) -> FetchError {
        self.http_status = Some(status);
        self
    }
}

/// What the webhook kind needs to tell the tenant where to push.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunRef {
    /// The source's tenant.
    pub tenant_id: Uuid,
    /// The sync run the pushed documents belong to.
    pub run_id: Uuid,
}

/// Fetches knowledge sources. Cheap to clone (one connection pool).
#[derive(Clone)]
pub struct Fetcher {
    http: OutboundClient,
    platform_base_url: String,
    clock: Arc<dyn Clock>,
    timeout: Duration,
}

impl std::fmt::Debug for Fetcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetcher")
            .field("policy", &self.http.policy())
            .field("platform_base_url", &self.platform_base_url)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl Fetcher {
    /// A fetcher whose requests obey `policy`; webhook callbacks point at
    /// `platform_base_url`; webhook signatures are timed by `clock`.
    pub fn new(
        policy: OutboundPolicy,
        platform_base_url: &str,
        clock: Arc<dyn Clock>,
    ) -> Result<Fetcher, FetchError> {
        let http = OutboundClient::new(policy, |b| {
            b.connect_timeout(CONNECT_TIMEOUT).user_agent(concat!(
                "root/",
                env!("CARGO_PKG_VERSION"),
                " (knowledge sync)"
            ))
        })
        .map_err(|e| FetchError::new(format!("the HTTP client could not be built: {e}")))?;
        Ok(Fetcher {
            http,
            platform_base_url: platform_base_url.trim_end_matches('/').to_string(),
            clock,
            timeout: FETCH_TIMEOUT,
        })
    }

    /// Bound each fetch by `timeout` instead of [`FETCH_TIMEOUT`] (tests
    /// exercise the bound without waiting 45 s).
    pub fn with_timeout(mut self, timeout: Duration) -> Fetcher {
        self.timeout = timeout;
        self
    }

    /// Fetch `source` per its `source_kind`: web_page / api_pull → Documents; webhook →
    /// Triggered (or Documents when it answered inline, below); api_push → FetchError
    /// ("api_push sources receive documents through POST /api/v1/kb/sync").
    pub async fn fetch(
        &self,
        source: &KnowledgeSource,
        run: &RunRef,
    ) -> Result<FetchOutcome, FetchError> {
        let result = match source.source_kind {
            SourceKind::WebPage => web::fetch(self, source).await.map(FetchOutcome::Documents),
            SourceKind::ApiPull => api::fetch(self, source).await.map(FetchOutcome::Documents),
            SourceKind::Webhook => webhook::fetch(self, source, run).await,
            SourceKind::ApiPush => Err(FetchError::new(
                "api_push sources receive documents through POST /api/v1/kb/sync",
            )),
        };
        let kind = source.source_kind.as_str();
        match &result {
            Ok(FetchOutcome::Documents(f)) => tracing::info!(
                tenant_id = %source.tenant_id, source_id = %source.id, kind,
                http_status = ?f.http_status, documents = f.documents.len(),
                documents_total = f.documents_total, "knowledge source fetched"
            ),
            Ok(FetchOutcome::Triggered { http_status }) => tracing::info!(
                tenant_id = %source.tenant_id, source_id = %source.id, kind,
                http_status, "knowledge webhook triggered"
            ),
            Err(e) => tracing::warn!(
                tenant_id = %source.tenant_id, source_id = %source.id, kind,
                http_status = ?e.http_status, error = %e, "knowledge source fetch failed"
            ),
        }
        result
    }

    /// The URL the webhook kind tells the tenant to push to:
    /// `{platform_base_url}/webhooks/knowledge/{tenant_id}/{run_id}`.
    pub fn callback_url(&self, run: &RunRef) -> String {
        format!(
            "{}/webhooks/knowledge/{}/{}",
            self.platform_base_url, run.tenant_id, run.run_id
        )
    }

    /// The instant this fetch's network part must be done by.
    fn deadline(&self) -> tokio::time::Instant {
        tokio::time::Instant::now() + self.timeout
    }

    /// `step` unless `deadline` passes first.
    async fn within<T>(
        &self,
        deadline: tokio::time::Instant,
        step: impl Future<Output = Result<T, FetchError>>,
    ) -> Result<T, FetchError> {
        match tokio::time::timeout_at(deadline, step).await {
            Ok(result) => result,
            Err(_) => Err(FetchError::new(format!(
                "the fetch timed out after {}",
                seconds(self.timeout)
            ))),
        }
    }

    /// A request to `url`, refused before anything is sent when the policy
    /// refuses the URL.
    fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, FetchError> {
        self.http
            .request(method, url)
            .map_err(|e| refused_url(url, &e))
    }
}

/// `timeout` for a message: whole seconds as `45 s`, else milliseconds.
fn seconds(timeout: Duration) -> String {
    if timeout.subsec_millis() == 0 && timeout.as_secs() > 0 {
        format!("{} s", timeout.as_secs())
    } else {
        format!("{} ms", timeout.as_millis())
    }
}

/// The source's URL, or the error an admin sees for a source without one.
fn source_url(source: &KnowledgeSource) -> Result<&str, FetchError> {
    match source.url.as_deref().map(str::trim) {
        Some(url) if !url.is_empty() => Ok(url),
        _ => Err(FetchError::new(format!(
            "{} sources need a url",
            source.source_kind.as_str()
        ))),
    }
}

/// The non-empty string `secrets[key]`, if set. The only reader of
/// `secrets`: callers put the value straight into a header or a MAC.
fn secret<'a>(source: &'a KnowledgeSource, key: &str) -> Option<&'a str> {
    source
        .secrets
        .expose()
        .0
        .get(key)
        .and_then(|v| v.as_str())
        .filter(|s| !s.is_empty())
}

/// `url` as an error message may show it: no user-info (a password) and no
/// query (API keys ride there), cut to a readable length.
fn shown_url(url: &str) -> String {
    let shown = match Url::parse(url) {
        Ok(mut parsed) => {
            let had_query = parsed.query().is_some();
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            let mut s = parsed.to_string();
            if had_query {
                s.push_str("?…");
            }
            s
        }
        Err(_) => url.split(['?', '#']).next().unwrap_or_default().to_string(),
    };
    if shown.chars().count() > MAX_SHOWN_URL_CHARS {
        let mut cut: String = shown.chars().take(MAX_SHOWN_URL_CHARS).collect();
        cut.push('…');
        cut
    } else {
        shown
    }
}

/// The policy's refusal of `url` as an admin-facing sentence.
fn refused_url(url: &str, e: &OutboundError) -> FetchError {
    let shown = shown_url(url);
    FetchError::new(match e {
        OutboundError::NonPublicAddress(_) => format!(
            "{shown} is not a public address; refused (set ROOT_ALLOW_PRIVATE_FETCH=true to allow private addresses)"
        ),
        OutboundError::Invalid(why) => format!("{shown} is not a valid URL ({why})"),
        other => format!("{shown} cannot be fetched: {other}"),
    })
}

/// Send `req`; a failure becomes a sentence naming the cause (the
/// resolver's refusal, a connection failure…) without the URL's query.
async fn send(req: reqwest::RequestBuilder) -> Result<reqwest::Response, FetchError> {
    req.send().await.map_err(|e| {
        if let Some(refused) = refused_destination(&e) {
            return FetchError::new(refused.to_string());
        }
        let connect = e.is_connect();
        let timeout = e.is_timeout();
        let chain = error_chain(&e.without_url());
        FetchError::new(if connect {
            format!("could not connect to the source: {chain}")
        } else if timeout {
            format!("the source did not answer in time: {chain}")
        } else {
            format!("the request to the source failed: {chain}")
        })
    })
}

/// The whole body, or an error once it passes `limit` bytes.
async fn read_body(resp: reqwest::Response, limit: usize) -> Result<Vec<u8>, FetchError> {
    read_capped(resp, limit).await.map_err(|e| match e {
        BodyError::TooLarge { limit } => {
            FetchError::new(format!("the response is larger than {limit} bytes"))
        }
        BodyError::Read(e) => FetchError::new(format!(
            "the response could not be read: {}",
            error_chain(&e.without_url())
        )),
    })
}

/// The media type of `resp` (`text/html`), lower-case, without parameters.
fn media_type(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(|v| v.trim().to_ascii_lowercase())
        .filter(|v| !v.is_empty())
}

/// The error for a non-2xx answer; a redirect names where it pointed.
fn status_error(resp: &reqwest::Response) -> FetchError {
    let status = resp.status().as_u16();
    let location = resp
        .headers()
        .get(reqwest::header::LOCATION)
        .and_then(|v| v.to_str().ok());
    let message = match location {
        Some(to) if web::is_followable_redirect(status) => format!(
            "the source answered HTTP {status} redirecting to {}; redirects are not followed for this kind of source, so register the final URL",
            shown_url(to)
        ),
        _ => format!("the source answered HTTP {status}"),
    };
    FetchError::new(message).with_status(status)
}

/// Run `parse` on the blocking pool (HTML parsing is CPU-bound and can
/// take a while on big pages); a panic inside it is an error, not a crash.
async fn on_blocking_pool<T: Send + 'static>(
    parse: impl FnOnce() -> T + Send + 'static,
) -> Result<T, FetchError> {
    tokio::task::spawn_blocking(parse)
        .await
        .map_err(|e| FetchError::new(format!("the response could not be parsed ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_in_errors_lose_credentials_and_queries() {
        assert_eq!(
            shown_url("https://user:hunter2@example.org/a/b?api_key=s3cret#x"),
            "https://example.org/a/b?…"
        );
        assert_eq!(
            shown_url("https://example.org/feed"),
            "https://example.org/feed"
        );
        assert_eq!(shown_url("not a url?key=1"), "not a url");
        let long = format!("https://example.org/{}", "a".repeat(500));
        assert_eq!(shown_url(&long).chars().count(), MAX_SHOWN_URL_CHARS + 1);
    }

    #[test]
    fn timeouts_read_in_seconds_or_milliseconds() {
        assert_eq!(seconds(FETCH_TIMEOUT), "45 s");
        assert_eq!(seconds(Duration::from_millis(150)), "150 ms");
    }

    #[test]
    fn only_non_empty_string_secrets_count() {
        let source = KnowledgeSource {
            secrets: storage::Redacted::new(storage::Json(serde_json::json!({
                "token": "t0k", "password": "", "webhook_signing_secret": 7
            }))),
            ..KnowledgeSource::default()
        };
        assert_eq!(secret(&source, "token"), Some("t0k"));
        assert_eq!(secret(&source, "password"), None);
        assert_eq!(secret(&source, "webhook_signing_secret"), None);
        assert_eq!(secret(&source, "missing"), None);
    }

    #[test]
    fn cuts_keep_the_total() {
        let docs = vec![RawDocument::default(); MAX_DOCUMENTS_PER_RUN + 10];
        let f = Fetched::capped(docs, Some(200));
        assert_eq!(f.documents.len(), MAX_DOCUMENTS_PER_RUN);
        assert_eq!(f.documents_total, MAX_DOCUMENTS_PER_RUN + 10);
    }
}

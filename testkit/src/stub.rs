//! A stub tenant backend speaking root-int/1 — a test double of the
//! *tenant's* server, shared by the integration tests and
//! `examples/stub-integration.rs` (and usable for `/dev/simulate-message`
//! demos). It listens on 127.0.0.1, verifies every request's signature
//! (401 on a missing, wrong or skewed one), records every request, and
//! serves:
//!
//! - a manifest with tiers `member` (object form with `core_tools`) and
//!   `partner` (plain string); tools `lookup_member` (JSON, `images` when
//!   `params.with_image`), `book_room` (JSON, `tiers: [member]`),
//!   `generate_report` (NDJSON: two progress lines, a stray line, the
//!   result) and `admin_stats` (`admin_only`); one prompt section;
//! - identity resolve from a configurable map (`slack:<id>` / `email:<addr>`);
//! - a roster (including reserved-tier and `__admin__` entries the client
//!   must drop);
//! - links issue and escalations (recorded).
//!
//! Routing matches the path's *ending* (`…/manifest`, `…/tools/<name>`,
//! `…/identity/resolve`, `…/identity/roster`, `…/links/issue`,
//! `…/escalations`), so overridden `endpoint_paths` with another prefix
//! reach the same handlers. [`StubBackend::fail_next`] injects failures
//! per path: a status, a delay, a broken or result-less NDJSON stream.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::task::JoinHandle;

use root::integrations::signing::{
    self, MAX_SKEW_SECS, SIGNATURE_HEADER, SignatureError, TIMESTAMP_HEADER,
};

/// A failure to inject into the next call of a path.
#[derive(Clone, Debug, PartialEq)]
pub enum StubFailure {
    /// Answer this status with a small JSON body.
    Status(u16),
    /// Wait, then answer normally.
    Delay(Duration),
    /// Start an NDJSON stream (one progress line), then break the connection.
    BrokenStream,
    /// An NDJSON stream with one progress line that ends without a result.
    StreamWithoutResult,
}

/// One request the stub received.
#[derive(Clone, Debug)]
pub struct StubRequest {
    /// HTTP method.
    pub method: String,
    /// Path (no query).
    pub path: String,
    /// Headers as received.
    pub headers: HeaderMap,
    /// Raw body bytes.
    pub body: Vec<u8>,
    /// Did the signature verify?
    pub signature_valid: bool,
    /// When it arrived.
    pub at: std::time::Instant,
}

impl StubRequest {
    /// A header as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The body as JSON (`null` when empty or not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

struct StubState {
    secret: Mutex<String>,
    manifest: Mutex<Value>,
    identities: Mutex<HashMap<String, Value>>,
    roster: Mutex<Value>,
    requests: Mutex<Vec<StubRequest>>,
    escalations: Mutex<Vec<Value>>,
    failures: Mutex<HashMap<String, VecDeque<StubFailure>>>,
}

/// The running stub. Dropping it stops the server.
pub struct StubBackend {
    base_url: String,
    state: Arc<StubState>,
    task: JoinHandle<()>,
}

impl Drop for StubBackend {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StubBackend {
    /// Start on 127.0.0.1 with a free port.
    pub async fn start(secret: impl Into<String>) -> std::io::Result<StubBackend> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0)), secret).await
    }

    /// Start on `addr`.
    pub async fn start_on(
        addr: SocketAddr,
        secret: impl Into<String>,
    ) -> std::io::Result<StubBackend> {
        let state = Arc::new(StubState {
            secret: Mutex::new(secret.into()),
            manifest: Mutex::new(Self::default_manifest()),
            identities: Mutex::new(default_identities()),
            roster: Mutex::new(default_roster()),
            requests: Mutex::new(Vec::new()),
            escalations: Mutex::new(Vec::new()),
            failures: Mutex::new(HashMap::new()),
        });
        let s = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let s = s.clone();
                async move { handle(s, method, uri, headers, body).await }
            },
        );
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let base_url = format!("http://{}", listener.local_addr()?);
        let task = tokio::spawn(async move {
            if let Err(e) = axum::serve(listener, app).await {
                tracing::error!(error = %e, "stub integration server stopped");
            }
        });
        Ok(StubBackend {
            base_url,
            state,
            task,
        })
    }

    /// `http://127.0.0.1:<port>`
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The secret requests must be signed with.
    pub fn secret(&self) -> String {
        self.state.secret.lock().expect("stub lock").clone()
    }

    /// Expect another secret (after a rotation).
    pub fn set_secret(&self, secret: impl Into<String>) {
        *self.state.secret.lock().expect("stub lock") = secret.into();
    }

    /// Serve another manifest document.
    pub fn set_manifest(&self, manifest: Value) {
        *self.state.manifest.lock().expect("stub lock") = manifest;
    }

    /// Answer identity resolve for `key` (`slack:<id>` or `email:<addr>`,
    /// lower-case) with `response` (`{principal, acts_for?}`).
    pub fn set_identity(&self, key: &str, response: Value) {
        self.state
            .identities
            .lock()
            .expect("stub lock")
            .insert(key.to_lowercase(), response);
    }

    /// Serve another roster document (`{"principals": [...]}`).
    pub fn set_roster(&self, roster: Value) {
        *self.state.roster.lock().expect("stub lock") = roster;
    }

    /// Fail the next `n` calls of `path` with `failure`.
    pub fn fail_next(&self, path: &str, n: usize, failure: StubFailure) {
        let mut f = self.state.failures.lock().expect("stub lock");
        let q = f.entry(path.to_string()).or_default();
        for _ in 0..n {
            q.push_back(failure.clone());
        }
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<StubRequest> {
        self.state.requests.lock().expect("stub lock").clone()
    }

    /// The requests to `path`.
    pub fn requests_to(&self, path: &str) -> Vec<StubRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Forget the recorded requests.
    pub fn clear_requests(&self) {
        self.state.requests.lock().expect("stub lock").clear();
    }

    /// Escalation bodies received.
    pub fn escalations(&self) -> Vec<Value> {
        self.state.escalations.lock().expect("stub lock").clone()
    }

    /// The manifest the stub serves by default.
    pub fn default_manifest() -> Value {
        json!({
            "protocol": "root-int/1",
            "name": "stub-community",
            "access_tiers": [
                {"name": "member", "core_tools": ["search_knowledge_base", "escalate_to_admin"]},
                "partner"
            ],
            "tools": [
                {
                    "name": "lookup_member",
                    "description": "Look up a community member by name or email.",
                    "parameters": {"type": "object",
                        "properties": {"query": {"type": "string"}, "with_image": {"type": "boolean"}},
                        "required": ["query"]},
                    "channels": ["slack", "email", "api", "web"],
                    "tiers": ["member", "partner", "__admin__"],
                    "status_label": "Looking up members"
                },
                {
                    "name": "book_room",
                    "description": "Book a meeting room for the asking member.",
                    "parameters": {"type": "object",
                        "properties": {"room": {"type": "string"}}, "required": ["room"]},
                    "tiers": ["member"],
                    "timeout_ms": 30000
                },
                {
                    "name": "generate_report",
                    "description": "Generate the weekly community report (streams progress).",
                    "parameters": {"type": "object", "properties": {}},
                    "tiers": ["member", "__admin__"],
                    "timeout_ms": 60000,
                    "status_label": "Generating the weekly report"
                },
                {
                    "name": "admin_stats",
                    "description": "Membership statistics for admins.",
                    "parameters": {"type": "object", "properties": {}},
                    "admin_only": true,
                    "tiers": ["__admin__"]
                }
            ],
            "prompt_sections": [
                {"channels": ["slack", "web"], "tiers": ["member", "partner"],
                 "content": "Members can book the Garden and Library rooms with book_room."}
            ],
            "link_destinations": ["dashboard"],
            "link_destination_details": [
                {"destination": "dashboard", "title": "Member dashboard", "path": "/dashboard",
                 "prompt_summary": "bookings, profile and membership status"}
            ],
            "public_guide_url": "https://members.example.org/guide"
        })
    }
}

fn member() -> Value {
    json!({"principal_ref": "member-1", "display_name": "Ada Lovelace", "tier": "member",
           "is_admin": false, "email": "ada@example.org", "traits": {"cohort": "2024"},
           "profile_context": "Runs the Thursday workshop."})
}

fn default_identities() -> HashMap<String, Value> {
    let admin = json!({"principal_ref": "admin-1", "display_name": "Grace Hopper",
                       "tier": "member", "is_admin": true, "email": "grace@example.org"});
    let partner = json!({"principal_ref": "partner-1", "display_name": "Pat Partner",
                         "tier": "partner", "email": "assistant@example.org"});
    HashMap::from([
        (
            "slack:u_member".to_string(),
            json!({"principal": member(), "acts_for": null}),
        ),
        (
            "email:ada@example.org".to_string(),
            json!({"principal": member()}),
        ),
        ("slack:u_admin".to_string(), json!({"principal": admin})),
        (
            "slack:u_public".to_string(),
            json!({"principal": {"principal_ref": "visitor", "display_name": "Visitor", "tier": "public"}}),
        ),
        (
            "email:assistant@example.org".to_string(),
            json!({"principal": partner,
                   "acts_for": {"reason": "historical_cc", "principal": member()}}),
        ),
    ])
}

fn default_roster() -> Value {
    let mut m = member();
    m["slack_user_id"] = json!("U_MEMBER");
    json!({"principals": [
        m,
        {"principal_ref": "admin-1", "display_name": "Grace Hopper", "tier": "member",
         "is_admin": true, "slack_user_id": "U_ADMIN"},
        {"principal_ref": "partner-1", "display_name": "Pat Partner", "tier": "partner"},
        {"principal_ref": "anon", "display_name": "Anon", "tier": "unresolved"},
        {"principal_ref": "visitor", "display_name": "Visitor", "tier": "public"},
        {"principal_ref": "mailer", "display_name": "Mailer", "tier": "public_email"},
        {"principal_ref": "shouty", "display_name": "Shouty", "tier": " Unresolved"},
        {"principal_ref": "marker", "display_name": "Marker", "tier": "__admin__"}
    ]})
}

fn check_signature(secret: &str, headers: &HeaderMap, body: &[u8]) -> Result<(), SignatureError> {
    let get = |name: &'static str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or(SignatureError::Missing(name))
    };
    let ts = get(TIMESTAMP_HEADER)?;
    let sig = get(SIGNATURE_HEADER)?;
    signing::verify(secret, ts, body, sig, unix_now(), MAX_SKEW_SECS)
}

async fn handle(
    state: Arc<StubState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_string();
    let secret = state.secret.lock().expect("stub lock").clone();
    let verdict = check_signature(&secret, &headers, &body);
    state.requests.lock().expect("stub lock").push(StubRequest {
        method: method.to_string(),
        path: path.clone(),
        headers,
        body: body.to_vec(),
        signature_valid: verdict.is_ok(),
        at: std::time::Instant::now(),
    });
    if let Err(e) = verdict {
        return (
            StatusCode::UNAUTHORIZED,
            axum::Json(json!({"error": e.to_string()})),
        )
            .into_response();
    }
    let failure = state
        .failures
        .lock()
        .expect("stub lock")
        .get_mut(&path)
        .and_then(VecDeque::pop_front);
    match failure {
        Some(StubFailure::Status(s)) => {
            let status = StatusCode::from_u16(s).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return (status, axum::Json(json!({"error": "injected failure"}))).into_response();
        }
        Some(StubFailure::Delay(d)) => tokio::time::sleep(d).await,
        Some(StubFailure::BrokenStream) => {
            return ndjson(vec![
                Ok(json!({"type": "progress", "message": "Starting"}).to_string()),
                Err(()),
            ]);
        }
        Some(StubFailure::StreamWithoutResult) => {
            return ndjson(vec![Ok(
                json!({"type": "progress", "message": "Starting"}).to_string()
            )]);
        }
        None => {}
    }
    let json_body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    let n = segments.len();
    if method == Method::GET && path.ends_with("/manifest") {
        let manifest = state.manifest.lock().expect("stub lock").clone();
        return axum::Json(manifest).into_response();
    }
    if method == Method::POST && n >= 2 && segments[n - 2] == "tools" {
        return invoke(&percent_decode(segments[n - 1]), &json_body);
    }
    if method == Method::POST && path.ends_with("/identity/resolve") {
        let key = match (
            json_body["slack_user_id"].as_str(),
            json_body["email"].as_str(),
        ) {
            (Some(id), _) => format!("slack:{id}"),
            (None, Some(email)) => format!("email:{email}"),
            (None, None) => String::new(),
        }
        .to_lowercase();
        let answer = state
            .identities
            .lock()
            .expect("stub lock")
            .get(&key)
            .cloned()
            .unwrap_or_else(|| json!({"principal": null, "acts_for": null}));
        return axum::Json(answer).into_response();
    }
    if method == Method::GET && path.ends_with("/identity/roster") {
        let roster = state.roster.lock().expect("stub lock").clone();
        return axum::Json(roster).into_response();
    }
    if method == Method::POST && path.ends_with("/links/issue") {
        let dest = json_body["destination"].as_str().unwrap_or("");
        let who = json_body["principal_ref"].as_str().unwrap_or("");
        return axum::Json(json!({
            "url": format!("https://members.example.org/go/{dest}?principal={who}")
        }))
        .into_response();
    }
    if method == Method::POST && path.ends_with("/escalations") {
        state.escalations.lock().expect("stub lock").push(json_body);
        return axum::Json(json!({"received": true})).into_response();
    }
    (
        StatusCode::NOT_FOUND,
        axum::Json(json!({"error": "not found"})),
    )
        .into_response()
}

fn invoke(tool: &str, body: &Value) -> Response {
    let params = &body["params"];
    let who = body["principal"]["ref"].clone();
    let answer = match tool {
        "lookup_member" => {
            let mut out = json!({"success": true, "data": {
                "query": params["query"],
                "asked_by": who,
                "members": [{"ref": "member-1", "name": "Ada Lovelace", "cohort": "2024"}]
            }});
            if params["with_image"].as_bool() == Some(true) {
                out["images"] = json!([{"name": "member.png",
                    "base64": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
                    "contentType": "image/png"}]);
            }
            out
        }
        "book_room" => match params["room"].as_str() {
            Some(room) if !room.trim().is_empty() => json!({"success": true, "data": {
                "booked": room, "for": who, "confirmation": "BK-1001"}}),
            _ => json!({"success": false, "error": "Which room? Pass a room name."}),
        },
        "admin_stats" => json!({"success": true, "data": {"members": 42, "active_this_week": 17}}),
        "generate_report" => {
            return ndjson(vec![
                Ok(
                    json!({"type": "progress", "message": "  Collecting member data  "})
                        .to_string(),
                ),
                Ok("# keep-alive (not JSON)".to_string()),
                Ok(json!({"type": "progress", "message": "Rendering the report"}).to_string()),
                Ok(json!({"type": "result", "success": true,
                          "data": {"report": "3 new members this week", "for": who}})
                .to_string()),
            ]);
        }
        _ => {
            return (
                StatusCode::NOT_FOUND,
                axum::Json(json!({"success": false, "error": format!("unknown tool {tool}")})),
            )
                .into_response();
        }
    };
    axum::Json(answer).into_response()
}

/// An NDJSON response sending `lines` 25 ms apart; an `Err` breaks the stream.
fn ndjson(lines: Vec<Result<String, ()>>) -> Response {
    let stream = futures_util::stream::unfold(lines.into_iter(), |mut it| async move {
        let item = it.next()?;
        tokio::time::sleep(Duration::from_millis(25)).await;
        let chunk = match item {
            Ok(line) => Ok(Bytes::from(format!("{line}\n"))),
            Err(()) => Err(std::io::Error::other("stub: stream broken on purpose")),
        };
        Some((chunk, it))
    });
    axum::http::Response::builder()
        .header(CONTENT_TYPE, "application/x-ndjson")
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2]))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Current unix time in seconds (the stub backend checks skew against it).
fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

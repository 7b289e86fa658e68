//! The one fake-HTTP-server kit of the integration tests: an axum server on
//! 127.0.0.1:0 that routes by method + path to canned replies, scripts and
//! closures, records every request for assertions, and can answer with any
//! status, JSON / NDJSON / SSE bodies, streams in pieces, a stall, or a reply
//! held until the test releases it. The fake LLM, the fake embeddings
//! provider and the fake Opik are built on it. Never the internet.
//!
//! ```ignore
//! let fake = FakeHttp::start().await;
//! fake.route("POST", "/v1/things", |req| Reply::json(200, &req.body))
//!     .script("GET", "/health", [Reply::status(500), Reply::status(200)]);
//! let url = fake.url("/v1/things");
//! assert_eq!(fake.requests_to("/v1/things").len(), 1);
//! ```

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde_json::Value;

/// One request a [`FakeHttp`] received.
#[derive(Clone, Debug)]
pub struct SeenRequest {
    /// Upper-case method (`POST`).
    pub method: String,
    /// Path without the query.
    pub path: String,
    /// The query string, if any.
    pub query: Option<String>,
    pub headers: HeaderMap,
    /// The body parsed as JSON (`null` when it is not JSON).
    pub body: Value,
    /// The body as received.
    pub raw: Vec<u8>,
}

impl SeenRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The headers as lower-case `name: value` lines.
    pub fn headers_text(&self) -> String {
        self.headers
            .iter()
            .map(|(k, v)| format!("{}: {}\r\n", k, String::from_utf8_lossy(v.as_bytes())))
            .collect::<String>()
            .to_ascii_lowercase()
    }
}

/// What the fake answers.
pub enum Reply {
    /// A whole body with this status and content type (empty body ⇒ none).
    Body {
        status: u16,
        content_type: &'static str,
        body: Vec<u8>,
    },
    /// A 200 body written in pieces of `piece` bytes, `gap` apart (a
    /// stream the client must reassemble).
    Pieces {
        content_type: &'static str,
        body: Vec<u8>,
        piece: usize,
        gap: Duration,
    },
    /// 200 headers and `first`, then silence until the client gives up.
    Stall {
        content_type: &'static str,
        first: Vec<u8>,
    },
    /// No answer at all until the client gives up.
    Hang,
    /// `then`, once `gate` hands out a permit: a server that blocks until
    /// the test releases it.
    Gated {
        gate: Arc<tokio::sync::Semaphore>,
        then: Box<Reply>,
    },
}

impl Reply {
    /// `status` with no body.
    pub fn status(status: u16) -> Reply {
        Reply::bytes(status, "text/plain", Vec::new())
    }

    /// `status` with a body of this content type.
    pub fn bytes(status: u16, content_type: &'static str, body: Vec<u8>) -> Reply {
        Reply::Body {
            status,
            content_type,
            body,
        }
    }

    /// A JSON body (`null` ⇒ no body).
    pub fn json(status: u16, body: &Value) -> Reply {
        if body.is_null() {
            return Reply::status(status);
        }
        Reply::raw_json(status, body.to_string().into_bytes())
    }

    /// JSON bytes sent as given (so a test can send whitespace or garbage).
    pub fn raw_json(status: u16, body: Vec<u8>) -> Reply {
        Reply::bytes(status, "application/json", body)
    }

    /// An NDJSON body: one JSON value a line.
    pub fn ndjson(status: u16, lines: &[Value]) -> Reply {
        let body: String = lines.iter().map(|l| format!("{l}\n")).collect();
        Reply::bytes(status, "application/x-ndjson", body.into_bytes())
    }

    /// An SSE body (already framed: `data: …\n\n`), sent in one go.
    pub fn sse(body: Vec<u8>) -> Reply {
        Reply::bytes(200, "text/event-stream", body)
    }

    /// An SSE body framed from `events` (`data: <json>\n\n` each), then
    /// `data: [DONE]`.
    pub fn sse_events(events: &[Value]) -> Reply {
        let mut body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
        body.push_str("data: [DONE]\n\n");
        Reply::sse(body.into_bytes())
    }

    /// An SSE body written in pieces of `piece` bytes, `gap` apart.
    pub fn sse_pieces(body: Vec<u8>, piece: usize, gap: Duration) -> Reply {
        Reply::Pieces {
            content_type: "text/event-stream",
            body,
            piece,
            gap,
        }
    }

    /// SSE headers and one keep-alive comment, then silence.
    pub fn stall_sse() -> Reply {
        Reply::Stall {
            content_type: "text/event-stream",
            first: b": OPENROUTER PROCESSING\n\n".to_vec(),
        }
    }

    /// `then`, once `gate` hands out a permit.
    pub fn gated(gate: Arc<tokio::sync::Semaphore>, then: Reply) -> Reply {
        Reply::Gated {
            gate,
            then: Box::new(then),
        }
    }
}

/// A route's closure: the request in, the reply out.
pub type Handler = Arc<dyn Fn(&SeenRequest) -> Reply + Send + Sync>;

/// A side route's test: which requests it answers.
pub type Predicate = Arc<dyn Fn(&SeenRequest) -> bool + Send + Sync>;

#[derive(Default)]
struct Route {
    /// Checked before the script: a matching request is answered by its
    /// handler and consumes nothing (named, so a test can replace one).
    sides: Vec<(&'static str, Predicate, Handler)>,
    /// Answered first, one per request, in order.
    script: VecDeque<Reply>,
    /// Answers once the script is used up.
    handler: Option<Handler>,
}

#[derive(Default)]
struct State {
    requests: Mutex<Vec<SeenRequest>>,
    /// Keyed by (method or `*`, path).
    routes: Mutex<HashMap<(String, String), Route>>,
    fail_next: AtomicUsize,
    /// Woken on every recorded request.
    arrived: tokio::sync::Notify,
}

/// A fake HTTP server on 127.0.0.1:0. Routes can be added at any time; a
/// request with no route gets 404, a route with nothing left to say 418.
pub struct FakeHttp {
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    state: Arc<State>,
}

impl FakeHttp {
    pub async fn start() -> FakeHttp {
        let state = Arc::new(State::default());
        let s = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let s = s.clone();
                async move { answer(&s, method, uri, headers, body).await }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeHttp { base, state }
    }

    /// The absolute URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// Answer `method` (`*` = any) + `path` with `handler` (after any
    /// scripted replies).
    pub fn route(
        &self,
        method: &str,
        path: &str,
        handler: impl Fn(&SeenRequest) -> Reply + Send + Sync + 'static,
    ) -> &Self {
        self.with_route(method, path, |r| r.handler = Some(Arc::new(handler)));
        self
    }

    /// Answer the requests to `method` + `path` for which `when` holds with
    /// `handler`, before any script and without consuming it; a side route
    /// of the same `name` is replaced.
    pub fn side_route(
        &self,
        method: &str,
        path: &str,
        name: &'static str,
        when: impl Fn(&SeenRequest) -> bool + Send + Sync + 'static,
        handler: impl Fn(&SeenRequest) -> Reply + Send + Sync + 'static,
    ) -> &Self {
        self.with_route(method, path, |r| {
            r.sides.retain(|(n, _, _)| *n != name);
            r.sides.push((name, Arc::new(when), Arc::new(handler)));
        });
        self
    }

    /// Answer the next requests to `method` + `path` with `replies`, one
    /// each, in order (e.g. a 500 then a 200 for a retry test).
    pub fn script(
        &self,
        method: &str,
        path: &str,
        replies: impl IntoIterator<Item = Reply>,
    ) -> &Self {
        self.with_route(method, path, |r| r.script.extend(replies));
        self
    }

    /// Answer every request to `path` (any method) with `status` and `body`
    /// (`null` ⇒ no body).
    pub fn reply(&self, path: &str, status: u16, body: Value) -> &Self {
        self.route("*", path, move |_| Reply::json(status, &body))
    }

    /// Answer the next `n` requests, whatever their route, with 503.
    pub fn fail_next(&self, n: usize) {
        self.state.fail_next.store(n, Ordering::SeqCst);
    }

    /// Every request so far, in arrival order.
    pub fn requests(&self) -> Vec<SeenRequest> {
        self.state.requests.lock().unwrap().clone()
    }

    /// The requests to `path`.
    pub fn requests_to(&self, path: &str) -> Vec<SeenRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }

    /// Wait (without sleeping) until at least `n` requests were received.
    pub async fn wait_for_requests(&self, n: usize) {
        self.wait_until(|seen| seen.len() >= n).await
    }

    /// Wait (without sleeping) until at least `n` requests to `path` were
    /// received.
    pub async fn wait_for_requests_to(&self, path: &str, n: usize) {
        self.wait_until(|seen| seen.iter().filter(|r| r.path == path).count() >= n)
            .await
    }

    async fn wait_until(&self, done: impl Fn(&[SeenRequest]) -> bool) {
        loop {
            let arrived = self.state.arrived.notified();
            if done(&self.state.requests.lock().unwrap()) {
                return;
            }
            arrived.await;
        }
    }

    fn with_route(&self, method: &str, path: &str, f: impl FnOnce(&mut Route)) {
        let key = (method.to_ascii_uppercase(), path.to_string());
        f(self.state.routes.lock().unwrap().entry(key).or_default());
    }
}

async fn answer(
    state: &State,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let seen = SeenRequest {
        method: method.to_string(),
        path: uri.path().to_string(),
        query: uri.query().map(str::to_string),
        headers,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        raw: body.to_vec(),
    };
    state.requests.lock().unwrap().push(seen.clone());
    state.arrived.notify_waiters();
    let failing = state
        .fail_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    if failing {
        return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    enum Step {
        Reply(Reply),
        Call(Handler),
    }
    // Take the route's next step under the lock; run a closure outside it.
    let next = {
        let mut routes = state.routes.lock().unwrap();
        let key = [seen.method.clone(), "*".to_string()]
            .into_iter()
            .map(|m| (m, seen.path.clone()))
            .find(|k| routes.contains_key(k));
        match key.and_then(|k| routes.get_mut(&k)) {
            None => return StatusCode::NOT_FOUND.into_response(),
            Some(route) => match route.sides.iter().find(|(_, when, _)| when(&seen)) {
                Some((_, _, handler)) => Ok(Step::Call(handler.clone())),
                None => match route.script.pop_front() {
                    Some(reply) => Ok(Step::Reply(reply)),
                    None => route.handler.clone().map(Step::Call).ok_or(()),
                },
            },
        }
    };
    let reply = match next {
        Ok(Step::Reply(reply)) => reply,
        Ok(Step::Call(handler)) => handler(&seen),
        Err(()) => return (StatusCode::IM_A_TEAPOT, "nothing scripted").into_response(),
    };
    respond(reply).await
}

async fn respond(mut reply: Reply) -> Response {
    if let Reply::Gated { gate, then } = reply {
        let _permit = gate.acquire().await;
        reply = *then;
    }
    match reply {
        Reply::Body {
            status,
            content_type,
            body,
        } => {
            let status = StatusCode::from_u16(status).unwrap();
            if body.is_empty() {
                status.into_response()
            } else {
                (status, [(header::CONTENT_TYPE, content_type)], body).into_response()
            }
        }
        Reply::Pieces {
            content_type,
            body,
            piece,
            gap,
        } => {
            let pieces: Vec<Bytes> = body.chunks(piece).map(Bytes::copy_from_slice).collect();
            let stream = futures_util::stream::iter(pieces.into_iter().enumerate()).then(
                move |(i, p)| async move {
                    if i > 0 {
                        tokio::time::sleep(gap).await;
                    }
                    Ok::<_, std::convert::Infallible>(p)
                },
            );
            stream_response(content_type, Body::from_stream(stream))
        }
        Reply::Stall {
            content_type,
            first,
        } => {
            let stream = futures_util::stream::once(async move {
                Ok::<_, std::convert::Infallible>(Bytes::from(first))
            })
            .chain(futures_util::stream::pending());
            stream_response(content_type, Body::from_stream(stream))
        }
        Reply::Hang => std::future::pending().await,
        Reply::Gated { .. } => unreachable!("a gate opens onto a reply"),
    }
}

fn stream_response(content_type: &'static str, body: Body) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

/// An address on 127.0.0.1 where nothing listens (connections are refused).
pub async fn closed_port_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

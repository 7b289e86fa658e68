//! A loopback JSON endpoint that answers every `POST <path>` with what a
//! caller's function returns for the request body — the in-process stand-in
//! for an OpenAI-compatible provider that `root bench agent` measures the
//! real HTTP client against. It lives here so the HTTP types stay in the
//! web layer; callers pass and get plain `serde_json::Value`s.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::routing::post;
use serde_json::Value;

/// Serve `POST {path}` on 127.0.0.1 (a free port) until the runtime ends,
/// answering each JSON body with `respond(body)`; returns the address.
pub async fn serve_json(
    path: &str,
    respond: Arc<dyn Fn(Value) -> Value + Send + Sync>,
) -> std::io::Result<SocketAddr> {
    let app = axum::Router::new().route(
        path,
        post(move |Json(body): Json<Value>| {
            let respond = respond.clone();
            async move { Json(respond(body)) }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "loopback JSON endpoint stopped");
        }
    });
    Ok(addr)
}

/// What [`serve_any`] answers: the request path and body (JSON, else the
/// form pairs as an object) in, a JSON answer out.
pub type AnyResponder = Arc<dyn Fn(&str, Value) -> Value + Send + Sync>;

/// How long [`serve_any`] waits before answering a request to a path.
pub type AnyDelay = Arc<dyn Fn(&str) -> std::time::Duration + Send + Sync>;

/// Serve every `POST` on 127.0.0.1 (a free port), answering after
/// `delay(path)` with `respond(path, body)` — the stand-in Slack Web API and
/// slow model of `root bench slack`. Returns the address.
pub async fn serve_any(respond: AnyResponder, delay: AnyDelay) -> std::io::Result<SocketAddr> {
    let app = axum::Router::new().fallback(move |uri: axum::http::Uri, body: axum::body::Bytes| {
        let respond = respond.clone();
        let delay = delay.clone();
        async move {
            let wait = delay(uri.path());
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            let parsed: Value = serde_json::from_slice(&body).unwrap_or_else(|_| {
                let query = format!("http://form/?{}", String::from_utf8_lossy(&body));
                let pairs = reqwest::Url::parse(&query)
                    .map(|u| {
                        u.query_pairs()
                            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
                            .collect()
                    })
                    .unwrap_or_default();
                Value::Object(pairs)
            });
            Json(respond(uri.path(), parsed))
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "loopback endpoint stopped");
        }
    });
    Ok(addr)
}

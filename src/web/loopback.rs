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

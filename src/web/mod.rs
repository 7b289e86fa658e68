//! The web layer: the only module that knows axum, tower and HTTP types.
//!
//! One router with the shared layers (request id, tracing, body limit,
//! timeout) over `/health`, `/ready`, `/api/v1` ([`api`]) and the dev harness
//! ([`dev`]); the one exhaustive HTTP error mapping ([`error::ApiError`]);
//! the `Host` guard over every browser route ([`host_check`]); the client
//! address of the sign-in limits ([`client_ip`]). Handlers are thin: they
//! authenticate, parse, call the domain modules below and shape the answer.
//! New ingress (channel webhooks, web chat, dashboard pages, MCP) mounts here.

pub mod api;
mod assets;
pub mod client_ip;
pub mod dashboard;
pub mod dev;
pub mod email;
pub mod error;
mod health;
pub mod host_check;
pub mod kb_pages;
pub mod knowledge;
#[cfg(feature = "tooling")]
pub mod loopback;
pub mod mcp;
mod pages;
pub mod slack;
pub mod turn_response;
pub mod turn_stream;
pub mod webchat;

use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, MatchedPath, Request};
use axum::http::{HeaderName, StatusCode};
use axum::response::IntoResponse;
use tower::ServiceBuilder;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::{DefaultOnResponse, TraceLayer};
use tracing::Level;

use crate::state::AppState;
use crate::web::error::ApiError;

/// The request-id header set on every request and echoed on every response.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Serve `state`'s router on `listener` until `shutdown` resolves; in-flight
/// requests finish first. Each request carries its socket's peer address
/// (`ConnectInfo`), which the sign-in limits key on ([`client_ip`]).
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: AppState,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    axum::serve(
        listener,
        router(state).into_make_service_with_connect_info::<std::net::SocketAddr>(),
    )
    .with_graceful_shutdown(shutdown)
    .await
}

/// Build the application router.
pub fn router(state: AppState) -> Router {
    let request_id = HeaderName::from_static(REQUEST_ID_HEADER);
    let max_body = state.config.max_body_bytes;
    let hosts = host_check::AllowedHosts::from_base_url(&state.config.platform_base_url);
    // Every route a browser opens (web chat, KB pages, logos, the dashboard
    // with `/auth/*` and signup) answers only under PLATFORM_BASE_URL's host
    // or a loopback name: a DNS-rebound page cannot read them (security
    // finding M-3). Probes, webhooks and API-key routes are not checked.
    let browser = Router::new()
        .merge(crate::web::webchat::router())
        .merge(crate::web::kb_pages::router())
        .merge(crate::web::assets::router())
        .merge(crate::web::dashboard::router())
        .layer(axum::middleware::from_fn_with_state(
            hosts.clone(),
            host_check::require_known_host,
        ));
    let mut app = Router::new()
        .route("/health", axum::routing::get(health::health))
        .route("/ready", axum::routing::get(health::ready))
        .nest("/api/v1", crate::web::api::router(state.clone()))
        .merge(crate::web::slack::router())
        .merge(crate::web::email::router())
        .merge(crate::web::knowledge::router())
        .merge(browser)
        .merge(crate::web::api::dashboard_router(state.clone()))
        .merge(crate::web::mcp::router(state.clone()));
    // The dev harness (§8.5) is mounted only when the operator opts in
    // (`ROOT_DEV_HARNESS=true`, which config accepts only outside production
    // on a loopback bind); it still needs an API key of the tenant, and as a
    // browser-reachable route it checks `Host` against DNS rebinding.
    if state.config.dev_harness {
        app = app.nest(
            "/dev",
            crate::web::dev::router()
                .route_layer(axum::middleware::from_fn_with_state(
                    state.clone(),
                    crate::web::api::require_api_key,
                ))
                .layer(axum::middleware::from_fn_with_state(
                    hosts,
                    host_check::require_known_host,
                )),
        );
    }
    app
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(state)
        .layer(
            ServiceBuilder::new()
                .layer(SetRequestIdLayer::new(request_id.clone(), MakeRequestUuid))
                .layer(
                    TraceLayer::new_for_http()
                        .make_span_with(|req: &Request| {
                            let id = req
                                .headers()
                                .get(REQUEST_ID_HEADER)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or("-");
                            tracing::info_span!("http", method = %req.method(), path = %loggable_path(req), request_id = %id)
                        })
                        .on_response(DefaultOnResponse::new().level(Level::INFO)),
                )
                .layer(PropagateRequestIdLayer::new(request_id))
                // `ROOT_MAX_BODY_BYTES` is the one body limit: axum's own
                // 2 MiB default for its extractors is replaced by it.
                .layer(RequestBodyLimitLayer::new(max_body))
                .layer(DefaultBodyLimit::max(max_body))
                .layer(tower_http::timeout::TimeoutLayer::with_status_code(
                    StatusCode::REQUEST_TIMEOUT,
                    Duration::from_secs(300),
                )),
        )
}

/// Path prefixes whose next segment is a credential (the BYO inbound
/// email token); masked wherever a raw path is logged.
const SECRET_SEGMENT_PREFIXES: &[&str] = &["/channels/email/inbound/"];

/// The path as the access log records it (L-3): the route template when a
/// route matched (`/channels/email/inbound/{token}`), so no path parameter
/// — a BYO inbound token above all — is ever logged; an unmatched path with
/// its credential segment masked. Queries are never logged.
fn loggable_path(req: &Request) -> String {
    match req.extensions().get::<MatchedPath>() {
        Some(route) => route.as_str().to_string(),
        None => mask_secret_segments(req.uri().path()),
    }
}

/// `path` with the segment after each `SECRET_SEGMENT_PREFIXES` entry
/// replaced by `{token}` (`platform` is a route name, not a token).
pub fn mask_secret_segments(path: &str) -> String {
    for prefix in SECRET_SEGMENT_PREFIXES {
        if let Some(rest) = path.strip_prefix(prefix) {
            let (segment, tail) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            if !segment.is_empty() && segment != "platform" {
                return format!("{prefix}{{token}}{tail}");
            }
        }
    }
    path.to_string()
}

/// JSON 404 for unknown routes (the path masked: refusals are logged).
pub async fn not_found(req: Request) -> impl IntoResponse {
    ApiError::NotFound(format!(
        "no route for {} {}",
        req.method(),
        mask_secret_segments(req.uri().path())
    ))
}

/// JSON 405 for known paths with the wrong method.
pub async fn method_not_allowed() -> impl IntoResponse {
    ApiError::MethodNotAllowed
}

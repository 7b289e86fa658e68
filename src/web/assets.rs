//! `GET /assets/{tenant}/logo` (§2.3 `tenant_assets`, §14.2): the
//! community's logo for its public pages — the uploaded image, or Root's
//! embedded mark for a community without one (and for an unknown slug, so
//! the route does not tell which communities exist). Served with a strong
//! `ETag`, a short public cache, `nosniff` and a sandboxing CSP, so the
//! bytes are only ever an image.

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::platform::branding::{default_logo, logo};
use crate::state::AppState;
use crate::web::error::ApiError;

/// `/assets/…` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/assets/{tenant}/logo", get(tenant_logo))
}

async fn tenant_logo(
    State(state): State<AppState>,
    Path(tenant_slug): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let logo = match state.tenants.by_slug(&tenant_slug).await? {
        Some(t) => logo(&state.store, t.id).await?,
        None => default_logo(),
    };
    let etag = logo.etag;
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, logo.content_type)], logo.bytes).into_response()
    };
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; sandbox"),
    );
    Ok(resp)
}

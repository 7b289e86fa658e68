//! `/static/dashboard.css` and `/static/dashboard.js`: the dashboard's one
//! stylesheet and one small script, compiled into the binary so a single
//! file is the whole server and the CSP can forbid inline code.

use std::sync::LazyLock;

use axum::Router;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::state::AppState;

const CSS: &str = include_str!("../../../static/dashboard.css");
const JS: &str = include_str!("../../../static/dashboard.js");
/// Content hashes, computed once.
static CSS_ETAG: LazyLock<String> = LazyLock::new(|| etag(CSS));
static JS_ETAG: LazyLock<String> = LazyLock::new(|| etag(JS));

fn etag(body: &str) -> String {
    format!("\"{}\"", &crate::platform::api_keys::hash_token(body)[..16])
}

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route(
            "/static/dashboard.css",
            get(|h: HeaderMap| async move { serve(&h, CSS, &CSS_ETAG, "text/css; charset=utf-8") }),
        )
        .route(
            "/static/dashboard.js",
            get(|h: HeaderMap| async move { serve(&h, JS, &JS_ETAG, "text/javascript; charset=utf-8") }),
        )
}

/// The asset with a content-hash `ETag`; a matching `If-None-Match` is a 304.
fn serve(
    headers: &HeaderMap,
    body: &'static str,
    etag: &str,
    content_type: &'static str,
) -> Response {
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag));
    let mut resp = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, content_type)], body).into_response()
    };
    let h = resp.headers_mut();
    if let Ok(v) = HeaderValue::from_str(etag) {
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
    resp
}

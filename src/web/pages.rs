//! What the server-rendered public pages share (askama templates in
//! `templates/`): the notice page every refusal uses (404 / 403 / 410 on
//! knowledge pages, the chat's 403), and the community header's logo source.

use askama::Template;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{Html, IntoResponse, IntoResponseParts, Response};

#[derive(Template)]
#[template(path = "notice.html")]
struct Notice<'a> {
    heading: &'a str,
    message: &'a str,
}

/// A small page saying what happened and what to do; never cached.
pub fn notice(status: StatusCode, heading: &str, message: &str) -> Response {
    let body = Notice { heading, message }
        .render()
        .unwrap_or_else(|_| heading.to_string());
    (status, [(header::CACHE_CONTROL, "no-store")], Html(body)).into_response()
}

/// A page template as an HTML answer with `parts` (headers), or a logged
/// 500 when it does not render (never an empty 200).
pub fn render_page(page: &impl Template, what: &str, parts: impl IntoResponseParts) -> Response {
    match page.render() {
        Ok(body) => (parts, Html(body)).into_response(),
        Err(e) => {
            tracing::error!(error = %e, page = what, "page did not render");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be shown",
            )
                .into_response()
        }
    }
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie_value<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

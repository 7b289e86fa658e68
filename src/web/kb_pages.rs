//! Knowledge pages in a browser (§14.2, §10.5): `GET
//! /kb/{tenant}/{page}` — a public page for anyone; a private page through
//! the link Root issued (`?token=…`), bound to the first browser that
//! opens it (see `channels::kb_access`). Server-rendered with askama; the
//! page HTML is sanitized again before it is shown, once per page version
//! (cached by page id and content hash), not once per request. Unknown and
//! private pages, and every page of a suspended community, get the same
//! 404; another browser 403; an expired link 410.
//!
//! Tenant-written HTML shares the dashboard's origin, so every answer here
//! carries a CSP that allows no script, no frame and no form (security
//! review L-8), and `nosniff`.

use std::sync::{Arc, LazyLock};

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use moka::sync::Cache;
use serde::Deserialize;
use storage::KnowledgePage;
use uuid::Uuid;

use crate::channels::kb_access::{Access, SESSION_COOKIE, SESSION_DAYS, open_page};
use crate::platform::branding::logo_src;
use crate::retrieval::sanitize::sanitize_page_html;
use crate::state::AppState;
use crate::web::error::ApiError;
use crate::web::pages::{cookie_value, notice, render_page};

/// The policy of every `/kb/…` answer: no script, frame, form or fetch; only
/// the page's inline `<style>`, the logo (`/assets/…` or `https:`) and
/// images of the page (`https:`, `data:`).
pub const KB_PAGE_CSP: &str = "default-src 'none'; img-src 'self' https: data:; style-src 'unsafe-inline'; frame-ancestors 'none'";

/// How many bytes of sanitized page HTML stay cached (a page is at most 2 MiB).
const RENDERED_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// Sanitized page bodies by (page id, content hash): a page is sanitized
/// once per version, so a client looping on a large public page costs a
/// cache read, not an ammonia pass (security review L-8).
static RENDERED: LazyLock<Cache<(Uuid, String), Arc<str>>> = LazyLock::new(|| {
    Cache::builder()
        .weigher(|_, v: &Arc<str>| u32::try_from(v.len()).unwrap_or(u32::MAX))
        .max_capacity(RENDERED_CACHE_BYTES)
        .build()
});

/// `/kb/…` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/kb/{tenant}/{page}", get(page))
}

/// `?token=` (a link's first open) or `?link=` (after binding).
#[derive(Debug, Default, Deserialize)]
pub struct LinkQuery {
    #[serde(default)]
    token: Option<String>,
    #[serde(default)]
    link: Option<String>,
}

#[derive(Template)]
#[template(path = "kb_page.html")]
struct PageView<'a> {
    title: &'a str,
    community: &'a str,
    logo: String,
    byline: String,
    canonical: Option<String>,
    content: &'a str,
}

fn not_found() -> Response {
    notice(
        StatusCode::NOT_FOUND,
        "Page not found",
        "There is no page at this address, or it is not public. If Root gave you a link, open that link.",
    )
}

/// `GET /kb/{tenant}/{page}` — any answer, error pages included, with the
/// [`KB_PAGE_CSP`] and `nosniff` headers.
async fn page(
    state: State<AppState>,
    path: Path<(String, String)>,
    q: Query<LinkQuery>,
    headers: HeaderMap,
) -> Response {
    let mut resp = match page_response(state, path, q, headers).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    };
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(KB_PAGE_CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}

async fn page_response(
    State(state): State<AppState>,
    Path((tenant_slug, page_ref)): Path<(String, String)>,
    Query(q): Query<LinkQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Some(tenant) = state.tenants.by_slug(&tenant_slug).await? else {
        return Ok(not_found());
    };
    // A suspended community's pages are gone, public ones too (review L-2).
    if !crate::platform::tenancy::is_serving(&state.store, &tenant).await? {
        tracing::info!(tenant = %tenant.id, "knowledge page of an inactive community; 404");
        return Ok(not_found());
    }
    let link = q.link.as_deref().and_then(|l| Uuid::parse_str(l).ok());
    let access = open_page(
        &state.store,
        state.clock.as_ref(),
        tenant.id,
        &page_ref,
        q.token.as_deref(),
        link,
        cookie_value(&headers, SESSION_COOKIE),
    )
    .await?;
    let here = format!("/kb/{tenant_slug}/{page_ref}");
    Ok(match access {
        Access::Page(p) => render(&state, &tenant, &tenant_slug, *p, &headers).await,
        Access::NotFound => not_found(),
        Access::Expired => notice(
            StatusCode::GONE,
            "This link has expired",
            "Links to private pages last 30 days. Ask Root for a new one.",
        ),
        Access::OtherBrowser => {
            tracing::warn!(tenant = %tenant.id, "private page link opened in another browser; refused");
            notice(
                StatusCode::FORBIDDEN,
                "This link was issued to someone else",
                "Private page links work only in the browser that first opened them. Ask Root for your own link.",
            )
        }
        Access::Redirect { link_id } => {
            Redirect::to(&format!("{here}?link={link_id}")).into_response()
        }
        Access::Bound { cookie, link_id } => {
            let secure = if state.config.platform_base_url.starts_with("https://") {
                "; Secure"
            } else {
                ""
            };
            let set = format!(
                "{SESSION_COOKIE}={cookie}; Path=/kb/{tenant_slug}/; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
                SESSION_DAYS * 86_400
            );
            let mut resp = Redirect::to(&format!("{here}?link={link_id}")).into_response();
            if let Ok(v) = HeaderValue::from_str(&set) {
                resp.headers_mut().insert(header::SET_COOKIE, v);
            }
            resp.headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
            resp
        }
    })
}

async fn render(
    state: &AppState,
    tenant: &storage::Tenant,
    tenant_slug: &str,
    page: KnowledgePage,
    headers: &HeaderMap,
) -> Response {
    let etag = format!(
        "\"{}\"",
        page.content_hash.as_deref().map_or_else(
            || crate::knowledge::document::content_hash(
                crate::knowledge::document::FinalDocument {
                    slug: &page.slug,
                    title: &page.title,
                    content_html: &page.content_html,
                    source_url: page.source_url.as_deref(),
                    author_name: page.author_name.as_deref(),
                    knowledge_date: page.knowledge_date.as_deref(),
                }
            ),
            str::to_string
        )
    );
    let cache = if page.is_public {
        "public, max-age=300"
    } else {
        "private, no-store"
    };
    if page.is_public
        && headers
            .get(header::IF_NONE_MATCH)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.split(',').any(|t| t.trim() == etag))
    {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    let key = (page.id, etag.clone());
    let html = page.content_html.clone();
    let content = match sanitized(&RENDERED, key, html, sanitize_page_html).await {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "knowledge page could not be sanitized");
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                "the page could not be shown",
            )
                .into_response();
        }
    };
    let byline = [page.author_name.as_deref(), page.knowledge_date.as_deref()]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
    let canonical = page.is_public.then(|| {
        format!(
            "{}/kb/{tenant_slug}/{}",
            state.config.platform_base_url.trim_end_matches('/'),
            page.public_id.as_deref().unwrap_or(&page.slug)
        )
    });
    let view = PageView {
        title: &page.title,
        community: &tenant.display_name,
        logo: logo_src(&tenant.settings.0, tenant_slug),
        byline,
        canonical,
        content: &content,
    };
    render_page(
        &view,
        "knowledge page",
        [
            (header::CACHE_CONTROL, cache.to_string()),
            (header::ETAG, etag),
        ],
    )
}

/// `html` sanitized by `sanitize` (on the blocking pool), or the cached
/// result of an earlier call with the same `key`.
async fn sanitized(
    cache: &Cache<(Uuid, String), Arc<str>>,
    key: (Uuid, String),
    html: String,
    sanitize: fn(&str) -> String,
) -> Result<Arc<str>, tokio::task::JoinError> {
    if let Some(hit) = cache.get(&key) {
        return Ok(hit);
    }
    let clean: Arc<str> = tokio::task::spawn_blocking(move || Arc::from(sanitize(&html))).await?;
    cache.insert(key, clean.clone());
    Ok(clean)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    static CALLS: AtomicUsize = AtomicUsize::new(0);

    fn counting(html: &str) -> String {
        CALLS.fetch_add(1, Ordering::SeqCst);
        sanitize_page_html(html)
    }

    /// L-8: two renders of one page version sanitize once; a new version
    /// (another content hash) is sanitized again.
    #[tokio::test]
    async fn security_l8_kb_page_sanitized_once_per_version() {
        let cache = Cache::new(16);
        let id = Uuid::new_v4();
        let dirty = "<p>hi</p><script>alert(1)</script>".to_string();
        let key = |h: &str| (id, h.to_string());
        let first = sanitized(&cache, key("\"h1\""), dirty.clone(), counting)
            .await
            .unwrap();
        let second = sanitized(&cache, key("\"h1\""), dirty.clone(), counting)
            .await
            .unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), 1);
        assert_eq!(first, second);
        assert!(!first.contains("script"), "{first}");
        sanitized(&cache, key("\"h2\""), dirty, counting)
            .await
            .unwrap();
        assert_eq!(CALLS.load(Ordering::SeqCst), 2);
    }
}

//! Knowledge pages in a browser (§14.2, §10.5): `GET
//! /kb/{tenant}/{page}` — a public page for anyone; a private page through
//! the link Root issued (`?token=…`), bound to the first browser that
//! opens it (see `channels::kb_access`). Server-rendered with askama; the
//! page HTML is sanitized again at render. Unknown and private pages get
//! the same 404; another browser 403; an expired link 410.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;
use storage::KnowledgePage;
use uuid::Uuid;

use crate::channels::kb_access::{Access, SESSION_COOKIE, SESSION_DAYS, open_page};
use crate::platform::branding::logo_src;
use crate::state::AppState;
use crate::web::error::ApiError;
use crate::web::pages::{cookie_value, notice, render_page};

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
    content: String,
}

fn not_found() -> Response {
    notice(
        StatusCode::NOT_FOUND,
        "Page not found",
        "There is no page at this address, or it is not public. If Root gave you a link, open that link.",
    )
}

async fn page(
    State(state): State<AppState>,
    Path((tenant_slug, page_ref)): Path<(String, String)>,
    Query(q): Query<LinkQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let Some(tenant) = state.tenants.by_slug(&tenant_slug).await? else {
        return Ok(not_found());
    };
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
    let html = page.content_html.clone();
    let content = match tokio::task::spawn_blocking(move || {
        crate::retrieval::sanitize::sanitize_page_html(&html)
    })
    .await
    {
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
        content,
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

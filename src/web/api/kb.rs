//! Knowledge base routes (§12.2):
//! `POST /api/v1/kb/pages` (create or replace by slug), `GET /api/v1/kb/pages`
//! (`source_type`, `author_member_id`, `limit` filters; summaries read
//! without the page bodies, at most `LIST_MAX_LIMIT`), `GET` / `DELETE
//! /api/v1/kb/pages/:slug`, and `POST /api/v1/kb/search` (optionally as a
//! `principal_ref`, whose tier's knowledge scoping applies).
//!
//! Writes answer once the change is searchable (read-your-writes for the
//! caller that just wrote), bounded by `INDEX_WAIT`; the data is durable
//! either way and `indexed: false` says the index is still catching up.
//!
//! Search and writes are rate-limited per tenant and per API key (429 with
//! `Retry-After`); reads are not.

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use storage::{IndexCorpus, KnowledgePage, KnowledgePageSummary, Principal, Scan, Store, Ts, key};
use uuid::Uuid;

use super::json::ApiJson;
use super::limited::{Admitted, KbSearch, KbWrite};
use crate::platform::tenancy::current_tenant_id;
use crate::retrieval::{IngestError, KnowledgeQuery, KnowledgeSearch, PageUpsert, SearchError};
use crate::state::AppState;
use crate::tools::catalog::SEARCH_KNOWLEDGE_BASE;
use crate::tools::gating::{GateInput, Surface, TIER_UNRESOLVED, allowed_tools};
use crate::tools::integration::tier_declarations;
use crate::web::error::ApiError;

/// Page size of `GET /kb/pages` when the caller gives none.
pub const LIST_DEFAULT_LIMIT: usize = 100;
/// Largest page size of `GET /kb/pages`: a larger `limit` is cut to this.
pub const LIST_MAX_LIMIT: usize = 500;

/// Body of `POST /kb/pages`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PageBody {
    slug: String,
    title: String,
    content_html: String,
    #[serde(default = "manual")]
    source_type: String,
    #[serde(default)]
    source_url: Option<String>,
    #[serde(default)]
    author_name: Option<String>,
    #[serde(default)]
    author_member_id: Option<String>,
    #[serde(default)]
    knowledge_date: Option<String>,
    #[serde(default)]
    is_public: bool,
    #[serde(default)]
    public_id: Option<String>,
}

fn manual() -> String {
    "manual".into()
}

/// Body of `POST /kb/search`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    source_types: Option<Vec<String>>,
    /// Search as this principal: their tier's knowledge scoping applies
    /// (an unknown ref gets the reserved `unresolved` tier's).
    #[serde(default)]
    principal_ref: Option<String>,
}

impl SearchBody {
    /// A search body built in process (MCP `search_knowledge`).
    pub fn new(
        query: String,
        limit: Option<usize>,
        source_types: Option<Vec<String>>,
        principal_ref: Option<String>,
    ) -> SearchBody {
        SearchBody {
            query,
            limit,
            source_types,
            principal_ref,
        }
    }
}

/// Query of `GET /kb/pages`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListQuery {
    #[serde(default)]
    source_type: Option<String>,
    #[serde(default)]
    author_member_id: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

impl From<IngestError> for ApiError {
    fn from(e: IngestError) -> Self {
        match e {
            IngestError::Invalid(m) => ApiError::BadRequest(m),
            IngestError::Storage(s) => s.into(),
            IngestError::Index(i) => ApiError::Internal(i.into()),
            IngestError::NoTenant(n) => ApiError::Internal(n.into()),
        }
    }
}

impl From<SearchError> for ApiError {
    fn from(e: SearchError) -> Self {
        match e {
            SearchError::Invalid(m) => ApiError::BadRequest(m),
            SearchError::Storage(s) => s.into(),
            // The tenant was deleted while this request was in flight: its
            // key no longer exists, as the next request would find.
            SearchError::Index(crate::retrieval::IndexError::Retired(_)) => ApiError::Unauthorized,
            other => ApiError::Internal(other.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_of_a_tenant_deleted_meanwhile_is_unauthorized_not_internal() {
        let retired = SearchError::Index(crate::retrieval::IndexError::Retired(Uuid::nil()));
        assert!(matches!(ApiError::from(retired), ApiError::Unauthorized));
        let closed = SearchError::Index(crate::retrieval::IndexError::Closed);
        assert!(matches!(ApiError::from(closed), ApiError::Internal(_)));
    }
}

/// A page as the API lists it: no bodies.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PageSummaryView {
    id: Uuid,
    slug: String,
    title: String,
    source_type: String,
    source_url: Option<String>,
    author_name: Option<String>,
    author_member_id: Option<String>,
    knowledge_date: Option<String>,
    is_public: bool,
    public_id: Option<String>,
    created_at: Ts,
    updated_at: Ts,
}

impl From<KnowledgePageSummary> for PageSummaryView {
    fn from(p: KnowledgePageSummary) -> Self {
        PageSummaryView {
            id: p.id,
            slug: p.slug,
            title: p.title,
            source_type: p.source_type,
            source_url: p.source_url,
            author_name: p.author_name,
            author_member_id: p.author_member_id,
            knowledge_date: p.knowledge_date,
            is_public: p.is_public,
            public_id: p.public_id,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// `POST /kb/pages`: the page, its chunk counts, and whether the change is
/// already searchable.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PageWritten {
    #[serde(flatten)]
    page: PageSummaryView,
    chunks: usize,
    unembedded_chunks: usize,
    indexed: bool,
}

/// `GET /kb/pages`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PageList {
    pages: Vec<PageSummaryView>,
    limit: usize,
}

/// `GET /kb/pages/:slug`: the summary and the bodies.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct PageDetail {
    #[serde(flatten)]
    page: PageSummaryView,
    content_html: String,
    content_text: Option<String>,
}

/// `POST /api/v1/kb/pages` — 201 when created, 200 when replaced.
pub async fn upsert_page(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    ApiJson(body): ApiJson<PageBody>,
) -> Result<(StatusCode, Json<PageWritten>), ApiError> {
    let write = state
        .retrieval
        .upsert_page(PageUpsert {
            slug: body.slug,
            title: body.title,
            content_html: body.content_html,
            source_type: body.source_type,
            source_url: body.source_url,
            author_name: body.author_name,
            author_member_id: body.author_member_id,
            knowledge_date: body.knowledge_date,
            is_public: body.is_public,
            public_id: body.public_id,
            knowledge_source_id: None,
            external_id: None,
            ..PageUpsert::default()
        })
        .await?;
    let indexed = match state
        .retrieval
        .wait_searchable(IndexCorpus::Knowledge, write.index_seq)
        .await
    {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(slug = %write.page.slug, error = %e, "page stored; index still catching up");
            false
        }
    };
    let out = PageWritten {
        page: KnowledgePageSummary::from(&write.page).into(),
        chunks: write.chunks,
        unembedded_chunks: write.unembedded,
        indexed,
    };
    let status = if write.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(out)))
}

/// `GET /api/v1/kb/pages`
pub async fn list_pages(
    State(state): State<AppState>,
    query: Result<Query<ListQuery>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<PageList>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let limit = match q.limit {
        None => LIST_DEFAULT_LIMIT,
        Some(0) => {
            return Err(ApiError::BadRequest(format!(
                "limit must be between 1 and {LIST_MAX_LIMIT}"
            )));
        }
        Some(n) => n.min(LIST_MAX_LIMIT),
    };
    let tenant = current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let scan = match (&q.source_type, &q.author_member_id) {
        (Some(t), _) => Scan::index(KnowledgePage::SOURCE_TYPE_IDX, key().str(t)),
        (None, Some(a)) => Scan::index(KnowledgePage::AUTHOR_IDX, key().str(a)),
        (None, None) => Scan::index(KnowledgePage::SLUG_KEY, key()),
    }
    .limit(limit);
    // With both filters the index serves the first and the second is
    // checked per row; the limit counts matching rows either way.
    let author = q.author_member_id.filter(|_| q.source_type.is_some());
    let pages: Vec<KnowledgePageSummary> = state
        .store
        .snapshot(move |s| {
            s.scan_projected(Some(tenant), &scan, |p: &KnowledgePageSummary| {
                author
                    .as_deref()
                    .is_none_or(|a| p.author_member_id.as_deref() == Some(a))
            })
        })
        .await?;
    Ok(Json(PageList {
        pages: pages.into_iter().map(PageSummaryView::from).collect(),
        limit,
    }))
}

/// `GET /api/v1/kb/pages/:slug`
pub async fn get_page(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Json<PageDetail>, ApiError> {
    let tenant = current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let page: KnowledgePage = state
        .store
        .find_unique(Some(tenant), KnowledgePage::SLUG_KEY, key().str(&slug))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no page with slug {slug:?}")))?;
    Ok(Json(PageDetail {
        page: KnowledgePageSummary::from(&page).into(),
        content_html: page.content_html,
        content_text: page.content_text,
    }))
}

/// `DELETE /api/v1/kb/pages/:slug` — 204, or 404 when absent.
pub async fn delete_page(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    Path(slug): Path<String>,
) -> Result<StatusCode, ApiError> {
    let Some(seq) = state.retrieval.delete_page(&slug).await? else {
        return Err(ApiError::NotFound(format!("no page with slug {slug:?}")));
    };
    if let Err(e) = state
        .retrieval
        .wait_searchable(IndexCorpus::Knowledge, Some(seq).filter(|s| *s > 0))
        .await
    {
        tracing::warn!(%slug, error = %e, "page deleted; index still catching up");
    }
    Ok(StatusCode::NO_CONTENT)
}

/// The knowledge scope of `principal_ref`'s tier on the API surface (§5.2):
/// `None` = every source type. An unknown ref is the reserved `unresolved`
/// tier; a tier without `search_knowledge_base` is refused (403).
async fn principal_scope(
    state: &AppState,
    principal_ref: &str,
) -> Result<Option<Vec<String>>, ApiError> {
    let tenant = current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let row: Option<Principal> = state
        .store
        .find_unique(Some(tenant), Principal::REF_KEY, key().str(principal_ref))
        .await?;
    let tier = match row {
        Some(p) => p.tier,
        None => {
            tracing::info!(
                event = "identity.degraded",
                principal_ref,
                "kb search for an unknown principal: reserved tier unresolved"
            );
            TIER_UNRESOLVED.to_string()
        }
    };
    let primed = state.integrations.prime().await?;
    let decls = tier_declarations(&primed);
    let surface = allowed_tools(&GateInput {
        surface: Surface::Api,
        access_level: Some(&tier),
        is_admin: false,
        dashboard_admin: false,
        dashboard_chat: false,
        tier_declarations: &decls,
        integration_tools: &[],
        build_tools: &[],
    });
    if !surface.allows(SEARCH_KNOWLEDGE_BASE) {
        return Err(ApiError::Forbidden(format!(
            "principal {principal_ref:?} (tier {}) may not search the knowledge base",
            surface.tier
        )));
    }
    Ok(surface.knowledge_source_types)
}

/// `POST /api/v1/kb/search`
pub async fn search(
    State(state): State<AppState>,
    _rate: Admitted<KbSearch>,
    ApiJson(body): ApiJson<SearchBody>,
) -> Result<Json<KnowledgeSearch>, ApiError> {
    let out = knowledge_search(&state, body, true).await?;
    Ok(Json(out))
}

/// Fused knowledge search as the body asks, scoped to `principal_ref`'s
/// tier when one is named; `rerank: false` keeps it LLM-free (MCP).
pub(crate) async fn knowledge_search(
    state: &AppState,
    body: SearchBody,
    rerank: bool,
) -> Result<KnowledgeSearch, ApiError> {
    let principal_ref = body
        .principal_ref
        .as_deref()
        .map(str::trim)
        .filter(|r| !r.is_empty());
    let scope = match principal_ref {
        Some(r) => principal_scope(state, r).await?,
        None => None,
    };
    // The caller's filter narrows the tier's scope, never widens it.
    let source_types = match (scope, body.source_types) {
        (None, asked) => asked,
        (Some(scope), None) => Some(scope),
        (Some(scope), Some(asked)) => {
            Some(asked.into_iter().filter(|t| scope.contains(t)).collect())
        }
    };
    Ok(state
        .retrieval
        .search_knowledge(KnowledgeQuery {
            query: body.query,
            limit: body.limit,
            source_types,
            rerank,
            vector: None,
        })
        .await?)
}

/// Body of `POST /kb/link`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkBody {
    /// The page's slug, public id or `/kb/…` URL.
    identifier: String,
    /// Issue the link to this principal (needed for a private page; their
    /// tier's knowledge scope applies).
    #[serde(default)]
    principal_ref: Option<String>,
}

/// `{url, expires_at}`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct LinkAnswer {
    url: String,
    title: String,
    public: bool,
    expires_at: Option<Ts>,
}

/// `POST /api/v1/kb/link` (§12.2): a public page's bare URL, or a private
/// page's personal link (bound to the principal, then to the first browser
/// that opens it).
pub async fn link(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    ApiJson(body): ApiJson<LinkBody>,
) -> Result<Json<LinkAnswer>, ApiError> {
    use crate::tools::core::pages::{LinkError, issue_page_link};
    let tenant = crate::platform::tenancy::current()
        .map(|c| c.tenant)
        .ok_or_else(|| ApiError::Internal(anyhow::anyhow!("no tenant context")))?;
    let (principal, scope) = match body.principal_ref.as_deref().map(str::trim) {
        Some(r) if !r.is_empty() => {
            let row: Principal = state
                .store
                .find_unique(Some(tenant.id), Principal::REF_KEY, key().str(r))
                .await?
                .ok_or_else(|| ApiError::NotFound(format!("no principal {r:?}")))?;
            (Some(row.id), principal_scope(&state, r).await?)
        }
        _ => (None, None),
    };
    let issued = issue_page_link(
        &state.store,
        state.clock.as_ref(),
        &state.config.platform_base_url,
        &tenant.slug,
        tenant.id,
        &body.identifier,
        principal,
        scope.as_deref(),
    )
    .await
    .map_err(|e| match e {
        LinkError::NoReference | LinkError::NeedsPrincipal => ApiError::BadRequest(e.to_string()),
        LinkError::NotFound(_) => ApiError::NotFound(e.to_string()),
        LinkError::Storage(s) => s.into(),
    })?;
    Ok(Json(LinkAnswer {
        url: issued.url,
        title: issued.title,
        public: issued.public,
        expires_at: issued.expires_at,
    }))
}

//! Knowledge base routes (§12.2):
//! `POST /api/v1/kb/pages` (create or replace by slug), `GET /api/v1/kb/pages`
//! (`source_type`, `author_member_id`, `limit` filters), `GET` / `DELETE
//! /api/v1/kb/pages/:slug`, and `POST /api/v1/kb/search`.
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
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{IndexCorpus, KnowledgePage, Scan, Store, key};

use super::json::ApiJson;
use super::limited::{Admitted, KbSearch, KbWrite};
use crate::app::AppState;
use crate::error::ApiError;
use crate::platform::tenancy::current_tenant_id;
use crate::retrieval::{IngestError, KnowledgeQuery, PageUpsert, SearchError};

/// Default page size of `GET /kb/pages`.
pub const LIST_DEFAULT_LIMIT: usize = 100;
/// Largest page size of `GET /kb/pages`.
pub const LIST_MAX_LIMIT: usize = 500;

/// Body of `POST /kb/pages`.
#[derive(Debug, Deserialize)]
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
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearchBody {
    query: String,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    source_types: Option<Vec<String>>,
    /// Accepted for the tier-scoped surface (issue 6 maps it to the
    /// principal's `knowledge_source_types`); today it only has to be a string.
    #[serde(default)]
    #[allow(dead_code)]
    principal_ref: Option<String>,
}

/// Query of `GET /kb/pages`.
#[derive(Debug, Deserialize)]
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
            other => ApiError::Internal(other.into()),
        }
    }
}

fn page_summary(p: &KnowledgePage) -> Value {
    json!({
        "id": p.id,
        "slug": p.slug,
        "title": p.title,
        "source_type": p.source_type,
        "source_url": p.source_url,
        "author_name": p.author_name,
        "author_member_id": p.author_member_id,
        "knowledge_date": p.knowledge_date,
        "is_public": p.is_public,
        "public_id": p.public_id,
        "created_at": p.created_at,
        "updated_at": p.updated_at,
    })
}

/// `POST /api/v1/kb/pages` — 201 when created, 200 when replaced.
pub async fn upsert_page(
    State(state): State<AppState>,
    _rate: Admitted<KbWrite>,
    ApiJson(body): ApiJson<PageBody>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
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
    let mut out = page_summary(&write.page);
    out["chunks"] = json!(write.chunks);
    out["unembedded_chunks"] = json!(write.unembedded);
    out["indexed"] = json!(indexed);
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
) -> Result<Json<Value>, ApiError> {
    let Query(q) = query.map_err(|e| ApiError::BadRequest(e.body_text()))?;
    let limit = q.limit.unwrap_or(LIST_DEFAULT_LIMIT);
    if limit == 0 || limit > LIST_MAX_LIMIT {
        return Err(ApiError::BadRequest(format!(
            "limit must be between 1 and {LIST_MAX_LIMIT}"
        )));
    }
    let tenant = current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let scan = match (&q.source_type, &q.author_member_id) {
        (Some(t), _) => Scan::index(KnowledgePage::SOURCE_TYPE_IDX, key().str(t)),
        (None, Some(a)) => Scan::index(KnowledgePage::AUTHOR_IDX, key().str(a)),
        (None, None) => Scan::index(KnowledgePage::SLUG_KEY, key()),
    };
    // With both filters the index serves the first and the second is checked
    // per row, so scan without a limit only then.
    let both = q.source_type.is_some() && q.author_member_id.is_some();
    let scan = if both { scan } else { scan.limit(limit) };
    let mut pages: Vec<KnowledgePage> = state.store.scan(Some(tenant), scan).await?;
    if both {
        pages.retain(|p| p.author_member_id.as_deref() == q.author_member_id.as_deref());
        pages.truncate(limit);
    }
    Ok(Json(json!({
        "pages": pages.iter().map(page_summary).collect::<Vec<_>>(),
    })))
}

/// `GET /api/v1/kb/pages/:slug`
pub async fn get_page(
    State(state): State<AppState>,
    Path(slug): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let tenant = current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let page: KnowledgePage = state
        .store
        .find_unique(Some(tenant), KnowledgePage::SLUG_KEY, key().str(&slug))
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("no page with slug {slug:?}")))?;
    let mut out = page_summary(&page);
    out["content_html"] = json!(page.content_html);
    out["content_text"] = json!(page.content_text);
    Ok(Json(out))
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

/// `POST /api/v1/kb/search`
pub async fn search(
    State(state): State<AppState>,
    _rate: Admitted<KbSearch>,
    ApiJson(body): ApiJson<SearchBody>,
) -> Result<Json<Value>, ApiError> {
    let out = state
        .retrieval
        .search_knowledge(KnowledgeQuery {
            query: body.query,
            limit: body.limit,
            source_types: body.source_types,
            rerank: true,
            vector: None,
        })
        .await?;
    Ok(Json(
        serde_json::to_value(out).map_err(|e| ApiError::Internal(e.into()))?,
    ))
}

//! `/knowledge` (§14.2, §11): the knowledge base editor — the pages (newest
//! edits first, filtered by source type), a search over them with the same
//! fused retrieval the agent uses, and an editor that creates, previews,
//! edits and deletes manual pages through the same `Retrieval` functions as
//! `POST`/`DELETE /api/v1/kb/pages`. Pages a knowledge source owns are shown
//! read-only: the next sync would replace an edit made here.

use askama::Template;
use axum::Router;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use storage::{IndexCorpus, KnowledgePage, KnowledgePageSummary, Scan, Store, key};

use super::{Chrome, Dashboard, PageForm, failed, harden, page_notice};
use crate::knowledge::ai::markdown_to_html;
use crate::retrieval::ingest::{IngestError, PageUpsert, slugify, validate_page};
use crate::retrieval::knowledge::{KnowledgeQuery, KnowledgeResult};
use crate::retrieval::sanitize::sanitize_page_html;
use crate::state::AppState;
use crate::web::pages::render_page;

/// Pages the list shows (the most recently edited).
pub const LIST_PAGES: usize = 200;
/// Results a dashboard search shows.
pub const SEARCH_RESULTS: usize = 10;
/// Longest slug (`validate_page`'s rule).
const SLUG_MAX_CHARS: usize = 100;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/knowledge", get(list))
        .route("/knowledge/edit", get(edit))
        .route("/knowledge/save", post(save))
        .route("/knowledge/delete", post(delete))
}

/// Query of `/knowledge`.
#[derive(Debug, Default, Deserialize)]
pub struct ListQuery {
    #[serde(default)]
    q: String,
    #[serde(default)]
    source_type: String,
    #[serde(default)]
    done: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/knowledge.html")]
struct ListPage {
    chrome: Chrome,
    q: String,
    source_type: String,
    source_types: Vec<String>,
    pages: Vec<KnowledgePageSummary>,
    results: Vec<KnowledgeResult>,
    searched: bool,
}

async fn list(State(state): State<AppState>, d: Dashboard, Query(q): Query<ListQuery>) -> Response {
    let tenant = d.user.tenant.id;
    let all: Result<Vec<KnowledgePageSummary>, _> = state
        .store
        .snapshot(move |s| {
            s.scan_projected(
                Some(tenant),
                &Scan::index(KnowledgePage::SLUG_KEY, key()),
                |_| true,
            )
        })
        .await;
    let mut all = match all {
        Ok(p) => p,
        Err(e) => {
            tracing::error!(%tenant, error = %e, "knowledge page list failed");
            return failed("The pages could not be loaded.");
        }
    };
    let mut source_types: Vec<String> = all.iter().map(|p| p.source_type.clone()).collect();
    source_types.sort();
    source_types.dedup();
    let source_type = q.source_type.trim().to_string();
    if !source_type.is_empty() {
        all.retain(|p| p.source_type == source_type);
    }
    all.sort_by_key(|p| std::cmp::Reverse(p.updated_at));
    all.truncate(LIST_PAGES);
    let query = q.q.trim().to_string();
    let mut results = Vec::new();
    if !query.is_empty() {
        let search = d.scoped(state.retrieval.search_knowledge(KnowledgeQuery {
            query: query.clone(),
            limit: Some(SEARCH_RESULTS),
            source_types: (!source_type.is_empty()).then(|| vec![source_type.clone()]),
            rerank: false,
            vector: None,
        }));
        match search.await {
            Ok(found) => results = found.results,
            Err(e) => {
                tracing::error!(%tenant, error = %e, "dashboard knowledge search failed");
                return failed("The search could not run.");
            }
        }
    }
    let page = ListPage {
        chrome: Chrome::of(&d, "/knowledge").with_flash(q.done.as_deref()),
        searched: !query.is_empty(),
        q: query,
        source_type,
        source_types,
        pages: all,
        results,
    };
    harden(render_page(&page, "knowledge", ()))
}

/// The editor's fields (the form and the page it re-renders).
#[derive(Debug, Default, Deserialize)]
pub struct EditorForm {
    #[serde(default)]
    csrf: String,
    /// The slug of the page being edited; empty for a new page.
    #[serde(default)]
    original_slug: String,
    #[serde(default)]
    slug: String,
    #[serde(default)]
    title: String,
    /// `html` or `markdown`.
    #[serde(default)]
    format: String,
    #[serde(default)]
    content: String,
    #[serde(default)]
    is_public: Option<String>,
    #[serde(default)]
    knowledge_date: String,
    /// `preview` or `save`.
    #[serde(default)]
    action: String,
}

#[derive(Template)]
#[template(path = "dashboard/knowledge_edit.html")]
struct EditorPage {
    chrome: Chrome,
    form: EditorForm,
    /// The owning source, when a sync owns the page (read-only).
    synced: bool,
    source_type: String,
    preview: Option<String>,
    errors: Vec<(&'static str, String)>,
}

impl EditorPage {
    fn error(&self, field: &str) -> Option<&str> {
        self.errors
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, m)| m.as_str())
    }
}

fn editor(d: &Dashboard, form: EditorForm, synced: bool, source_type: String) -> EditorPage {
    EditorPage {
        chrome: Chrome::of(d, "/knowledge"),
        form,
        synced,
        source_type,
        preview: None,
        errors: Vec::new(),
    }
}

/// Query of `/knowledge/edit`.
#[derive(Debug, Default, Deserialize)]
pub struct EditQuery {
    #[serde(default)]
    slug: Option<String>,
}

async fn find_page(
    state: &AppState,
    d: &Dashboard,
    slug: &str,
) -> storage::StorageResult<Option<KnowledgePage>> {
    state
        .store
        .find_unique(
            Some(d.user.tenant.id),
            KnowledgePage::SLUG_KEY,
            key().str(slug),
        )
        .await
}

async fn edit(State(state): State<AppState>, d: Dashboard, Query(q): Query<EditQuery>) -> Response {
    let Some(slug) = q.slug.filter(|s| !s.is_empty()) else {
        let form = EditorForm {
            format: "markdown".into(),
            ..EditorForm::default()
        };
        return harden(render_page(
            &editor(&d, form, false, "manual".into()),
            "knowledge editor",
            (),
        ));
    };
    let page = match find_page(&state, &d, &slug).await {
        Ok(Some(p)) => p,
        Ok(None) => {
            return page_notice(
                StatusCode::NOT_FOUND,
                "No such page",
                "This community has no page with that slug.",
            );
        }
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "knowledge page read failed");
            return failed("The page could not be loaded.");
        }
    };
    let form = EditorForm {
        original_slug: page.slug.clone(),
        slug: page.slug.clone(),
        title: page.title.clone(),
        format: "html".into(),
        content: page.content_html.clone(),
        is_public: page.is_public.then(|| "on".into()),
        knowledge_date: page.knowledge_date.clone().unwrap_or_default(),
        ..EditorForm::default()
    };
    let mut view = editor(
        &d,
        form,
        page.knowledge_source_id.is_some(),
        page.source_type.clone(),
    );
    view.preview = Some(sanitize_page_html(&page.content_html));
    harden(render_page(&view, "knowledge editor", ()))
}

/// The form's content as page HTML.
fn content_html(form: &EditorForm) -> String {
    if form.format == "markdown" {
        markdown_to_html(&form.content)
    } else {
        form.content.clone()
    }
}

async fn save(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<EditorForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let existing = if form.original_slug.is_empty() {
        None
    } else {
        match find_page(&state, &d, &form.original_slug).await {
            Ok(Some(p)) => Some(p),
            Ok(None) => {
                return page_notice(
                    StatusCode::NOT_FOUND,
                    "No such page",
                    "The page was deleted meanwhile.",
                );
            }
            Err(e) => {
                tracing::error!(tenant = %d.user.tenant.id, error = %e, "knowledge page read failed");
                return failed("The page could not be saved.");
            }
        }
    };
    if existing
        .as_ref()
        .is_some_and(|p| p.knowledge_source_id.is_some())
    {
        return page_notice(
            StatusCode::CONFLICT,
            "This page belongs to a source",
            "A knowledge source owns this page; change it at the source and sync again.",
        );
    }
    let source_type = existing
        .as_ref()
        .map_or_else(|| "manual".to_string(), |p| p.source_type.clone());
    let mut view = editor(&d, form, false, source_type.clone());
    let html = content_html(&view.form);
    view.preview = Some(sanitize_page_html(&html));
    if view.form.action == "preview" {
        return harden(render_page(&view, "knowledge editor", ()));
    }
    // The slug is fixed once a page exists (links and citations use it).
    let slug = match &existing {
        Some(p) => p.slug.clone(),
        None if view.form.slug.trim().is_empty() => slugify(&view.form.title, SLUG_MAX_CHARS),
        None => view.form.slug.trim().to_string(),
    };
    view.form.slug = slug.clone();
    let mut upsert = PageUpsert {
        slug: slug.clone(),
        title: view.form.title.trim().to_string(),
        content_html: html,
        source_type,
        knowledge_date: Some(view.form.knowledge_date.trim().to_string()).filter(|s| !s.is_empty()),
        is_public: view.form.is_public.is_some(),
        ..PageUpsert::default()
    };
    if let Some(p) = &existing {
        upsert.source_url = p.source_url.clone();
        upsert.author_name = p.author_name.clone();
        upsert.author_member_id = p.author_member_id.clone();
        upsert.public_id = p.public_id.clone();
    }
    if upsert.title.is_empty() {
        view.errors.push(("title", "Give the page a title.".into()));
    }
    if let Err(IngestError::Invalid(m)) = validate_page(&upsert) {
        let field = if m.starts_with("slug") {
            "slug"
        } else if m.starts_with("title") {
            "title"
        } else {
            "content"
        };
        if view.error(field).is_none() {
            view.errors.push((field, m));
        }
    }
    if existing.is_none() && view.errors.is_empty() {
        match find_page(&state, &d, &slug).await {
            Ok(Some(_)) => view.errors.push((
                "slug",
                format!("A page with the slug {slug:?} exists; open it from the list to edit it."),
            )),
            Ok(None) => {}
            Err(e) => {
                tracing::error!(tenant = %d.user.tenant.id, error = %e, "knowledge page read failed");
                return failed("The page could not be saved.");
            }
        }
    }
    if !view.errors.is_empty() {
        let resp = render_page(&view, "knowledge editor", ());
        return harden((StatusCode::UNPROCESSABLE_ENTITY, resp).into_response());
    }
    let written = d.scoped(state.retrieval.upsert_page(upsert)).await;
    let write = match written {
        Ok(w) => w,
        Err(IngestError::Invalid(m)) => {
            view.errors.push(("content", m));
            let resp = render_page(&view, "knowledge editor", ());
            return harden((StatusCode::UNPROCESSABLE_ENTITY, resp).into_response());
        }
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "knowledge page save failed");
            return failed("The page could not be saved.");
        }
    };
    tracing::info!(tenant = %d.user.tenant.id, slug = %write.page.slug, by = %d.user.email, "knowledge page saved from the dashboard");
    let searchable = d
        .scoped(
            state
                .retrieval
                .wait_searchable(IndexCorpus::Knowledge, write.index_seq),
        )
        .await
        .is_ok();
    // The chunker skips pages with under 20 chars of text (§10.1): say so
    // rather than let the admin wonder why search does not find the page.
    let unsearchable = write
        .page
        .content_text
        .as_deref()
        .is_none_or(|t| t.trim().is_empty());
    let done = if unsearchable {
        "page-saved-too-short"
    } else if searchable {
        "page-saved"
    } else {
        "page-saved-indexing"
    };
    Redirect::to(&format!("/knowledge?done={done}")).into_response()
}

/// The delete form.
#[derive(Debug, Deserialize)]
pub struct DeleteForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    slug: String,
}

async fn delete(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<DeleteForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match d.scoped(state.retrieval.delete_page(&form.slug)).await {
        Ok(Some(seq)) => {
            tracing::info!(tenant = %d.user.tenant.id, slug = %form.slug, by = %d.user.email, "knowledge page deleted from the dashboard");
            if let Err(e) = d
                .scoped(
                    state
                        .retrieval
                        .wait_searchable(IndexCorpus::Knowledge, Some(seq).filter(|s| *s > 0)),
                )
                .await
            {
                tracing::warn!(slug = %form.slug, error = %e, "page deleted; index still catching up");
            }
            Redirect::to("/knowledge?done=page-deleted").into_response()
        }
        Ok(None) => page_notice(
            StatusCode::NOT_FOUND,
            "No such page",
            "This community has no page with that slug.",
        ),
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "knowledge page delete failed");
            failed("The page could not be deleted.")
        }
    }
}

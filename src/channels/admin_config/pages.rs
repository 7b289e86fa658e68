//! Knowledge page tools of the dashboard chat (§5.1): list, read, write and
//! delete pages through what `/api/v1/kb/pages` and the dashboard's
//! `/knowledge` editor use — the slug-ordered summary scan, the page row by
//! slug, `Retrieval::upsert_page` / `delete_page` and the wait until the
//! change is searchable. Like the editor, a page a knowledge source owns is
//! not rewritten here (the next sync would replace the edit), and a title
//! whose slug is taken never silently overwrites the other page.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use storage::{IndexCorpus, KnowledgePage, KnowledgePageSummary, Scan, Store, key};

use super::{broke, changed, cut};
use crate::agent::ToolResult;
use crate::knowledge::ai::markdown_to_html;
use crate::platform::tool_names as names;
use crate::retrieval::ingest::slugify;
use crate::retrieval::{IngestError, PageUpsert};
use crate::tools::{TurnContext, TypedTool};

/// Pages `list_knowledge_pages` returns when the model asks for no limit.
pub const LIST_DEFAULT_LIMIT: usize = 50;
/// The most it returns (a longer list helps no answer; filter instead).
pub const LIST_MAX_LIMIT: usize = 200;
/// Characters of a page's text `get_knowledge_page` returns.
pub const PAGE_TEXT_MAX_CHARS: usize = 6_000;
/// Longest slug (`validate_page`'s rule), for slugs made from titles.
const SLUG_MAX_CHARS: usize = 100;
/// The source type of pages written by hand (REST default, the editor).
const MANUAL: &str = "manual";

/// `list_knowledge_pages(source_type?, limit?)`.
pub struct ListKnowledgePages;

/// Arguments of `list_knowledge_pages`.
#[derive(Deserialize, JsonSchema)]
pub struct ListPagesArgs {
    /// Only pages of this source type: `manual`, `url`, `api`, `webhook`,
    /// `api_push`, `member_entry` or `slack_extraction`.
    #[serde(default)]
    pub source_type: Option<String>,
    /// At most this many pages (1–200, default 50), in slug order.
    #[serde(default)]
    pub limit: Option<usize>,
}

#[async_trait]
impl TypedTool for ListKnowledgePages {
    type Args = ListPagesArgs;
    fn name(&self) -> &'static str {
        names::LIST_KNOWLEDGE_PAGES
    }
    fn description(&self) -> &'static str {
        "List the community's knowledge-base pages (slug, title, source type, public or not), \
         in slug order, optionally of one source type."
    }
    async fn run(&self, a: ListPagesArgs, ctx: &TurnContext) -> ToolResult {
        let limit = a.limit.unwrap_or(LIST_DEFAULT_LIMIT);
        if !(1..=LIST_MAX_LIMIT).contains(&limit) {
            return ToolResult::failed(format!("limit must be between 1 and {LIST_MAX_LIMIT}."));
        }
        let source_type = a
            .source_type
            .map(|t| t.trim().to_string())
            .filter(|t| !t.is_empty());
        let scan = match &source_type {
            Some(t) => Scan::index(KnowledgePage::SOURCE_TYPE_IDX, key().str(t)),
            None => Scan::index(KnowledgePage::SLUG_KEY, key()),
        }
        .limit(limit + 1);
        let tenant = ctx.tenant_id;
        let read = ctx
            .services
            .store
            .snapshot(move |s| {
                s.scan_projected(Some(tenant), &scan, |_: &KnowledgePageSummary| true)
            })
            .await;
        let mut pages: Vec<KnowledgePageSummary> = match read {
            Ok(p) => p,
            Err(e) => return broke(self.name(), e),
        };
        let more = pages.len() > limit;
        pages.truncate(limit);
        let list: Vec<_> = pages
            .iter()
            .map(|p| {
                json!({
                    "slug": p.slug,
                    "title": p.title,
                    "source_type": p.source_type,
                    "is_public": p.is_public,
                    "updated_at": p.updated_at,
                })
            })
            .collect();
        ToolResult::ok(json!({"pages": list, "count": list.len(), "more": more}))
    }
}

/// `get_knowledge_page(slug)`.
pub struct GetKnowledgePage;

/// Arguments naming one page.
#[derive(Deserialize, JsonSchema)]
pub struct SlugArgs {
    /// The page's slug (from `list_knowledge_pages` or a search; never guessed).
    pub slug: String,
}

/// The page row of `slug`, or the failed result to answer with.
async fn page(ctx: &TurnContext, tool: &str, slug: &str) -> Result<KnowledgePage, ToolResult> {
    match ctx
        .services
        .store
        .find_unique(
            Some(ctx.tenant_id),
            KnowledgePage::SLUG_KEY,
            key().str(slug.trim()),
        )
        .await
    {
        Ok(Some(p)) => Ok(p),
        Ok(None) => Err(ToolResult::failed(format!(
            "There is no knowledge page with the slug {:?}; list the pages for the right one.",
            slug.trim()
        ))),
        Err(e) => Err(broke(tool, e)),
    }
}

#[async_trait]
impl TypedTool for GetKnowledgePage {
    type Args = SlugArgs;
    fn name(&self) -> &'static str {
        names::GET_KNOWLEDGE_PAGE
    }
    fn description(&self) -> &'static str {
        "Read one knowledge-base page by slug: its details and its text (long pages are cut)."
    }
    async fn run(&self, a: SlugArgs, ctx: &TurnContext) -> ToolResult {
        let p = match page(ctx, self.name(), &a.slug).await {
            Ok(p) => p,
            Err(r) => return r,
        };
        let (text, truncated) = cut(
            p.content_text.as_deref().unwrap_or_default(),
            PAGE_TEXT_MAX_CHARS,
        );
        ToolResult::ok(json!({
            "slug": p.slug,
            "title": p.title,
            "source_type": p.source_type,
            "owned_by_knowledge_source": p.knowledge_source_id.is_some(),
            "is_public": p.is_public,
            "public_id": p.public_id,
            "knowledge_date": p.knowledge_date,
            "source_url": p.source_url,
            "author_name": p.author_name,
            "updated_at": p.updated_at,
            "text": text,
            "text_truncated": truncated,
        }))
    }
}

/// `upsert_knowledge_page(slug?, title, content, format?, is_public?, knowledge_date?)`.
pub struct UpsertKnowledgePage;

/// How the content is written.
#[derive(Clone, Copy, Debug, Default, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ContentFormat {
    /// Markdown (converted to HTML as the editor does).
    #[default]
    Markdown,
    /// HTML (sanitised when stored).
    Html,
}

/// Arguments of `upsert_knowledge_page`.
#[derive(Deserialize, JsonSchema)]
pub struct UpsertPageArgs {
    /// An existing page's slug to replace that page. Leave out for a new
    /// page: its slug is made from the title.
    #[serde(default)]
    pub slug: Option<String>,
    /// The page title.
    pub title: String,
    /// The whole page content (it replaces the old content).
    pub content: String,
    /// `markdown` (default) or `html`.
    #[serde(default)]
    pub format: ContentFormat,
    /// Public pages open for anyone; private ones only through a member's
    /// personal link. A new page is private unless this is true; an
    /// existing page keeps its setting when this is left out.
    #[serde(default)]
    pub is_public: Option<bool>,
    /// The date the knowledge is from (e.g. 2025-03-01); an existing page
    /// keeps its date when this is left out.
    #[serde(default)]
    pub knowledge_date: Option<String>,
}

#[async_trait]
impl TypedTool for UpsertKnowledgePage {
    type Args = UpsertPageArgs;
    fn name(&self) -> &'static str {
        names::UPSERT_KNOWLEDGE_PAGE
    }
    fn description(&self) -> &'static str {
        "Create a knowledge-base page, or replace an existing page's title and content by its \
         slug. Pages a knowledge source owns cannot be edited here. The page is searchable by \
         members once saved."
    }
    async fn run(&self, a: UpsertPageArgs, ctx: &TurnContext) -> ToolResult {
        let given = a
            .slug
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        let slug = given
            .clone()
            .unwrap_or_else(|| slugify(&a.title, SLUG_MAX_CHARS));
        if slug.is_empty() {
            return ToolResult::failed("Give the page a title with letters or digits, or a slug.");
        }
        let existing: Option<KnowledgePage> = match ctx
            .services
            .store
            .find_unique(
                Some(ctx.tenant_id),
                KnowledgePage::SLUG_KEY,
                key().str(&slug),
            )
            .await
        {
            Ok(p) => p,
            Err(e) => return broke(self.name(), e),
        };
        if let Some(p) = &existing {
            if given.is_none() {
                return ToolResult::failed(format!(
                    "A page with the slug {slug:?} already exists ({:?}). To replace it, call \
                     again with slug {slug:?}; for a new page, give another slug.",
                    p.title
                ));
            }
            if p.knowledge_source_id.is_some() {
                return ToolResult::failed(format!(
                    "The page {slug:?} belongs to a knowledge source: change it at the source \
                     and sync again (an edit here would be replaced by the next sync)."
                ));
            }
        }
        let content_html = match a.format {
            ContentFormat::Markdown => markdown_to_html(&a.content),
            ContentFormat::Html => a.content,
        };
        let mut upsert = PageUpsert {
            slug: slug.clone(),
            title: a.title.trim().to_string(),
            content_html,
            source_type: MANUAL.into(),
            knowledge_date: a
                .knowledge_date
                .map(|d| d.trim().to_string())
                .filter(|d| !d.is_empty()),
            is_public: a.is_public.unwrap_or(false),
            ..PageUpsert::default()
        };
        if let Some(p) = existing {
            // What the chat does not edit stays as it was (the editor's rule).
            upsert.source_type = p.source_type;
            upsert.source_url = p.source_url;
            upsert.author_name = p.author_name;
            upsert.author_member_id = p.author_member_id;
            upsert.public_id = p.public_id;
            upsert.is_public = a.is_public.unwrap_or(p.is_public);
            upsert.knowledge_date = upsert.knowledge_date.or(p.knowledge_date);
        }
        let retrieval = &ctx.services.retrieval;
        let write = match retrieval.upsert_page(upsert).await {
            Ok(w) => w,
            Err(IngestError::Invalid(m)) => {
                return ToolResult::failed(format!("The page was not saved: {m}."));
            }
            Err(e) => return broke(self.name(), e),
        };
        let verb = if write.created { "created" } else { "replaced" };
        changed(ctx, self.name(), &format!("page {slug} {verb}"));
        let searchable = retrieval
            .wait_searchable(IndexCorpus::Knowledge, write.index_seq)
            .await
            .is_ok();
        // §10.1: the chunker skips pages under 20 characters of text (they
        // are stored without chunks, so without text).
        let too_short = write
            .page
            .content_text
            .as_deref()
            .is_none_or(|t| t.trim().is_empty());
        let note = if too_short {
            "Saved, but the page has under 20 characters of text, so search skips it."
        } else if searchable {
            "Saved; members' searches find it now."
        } else {
            "Saved; search catches up within moments."
        };
        ToolResult::ok(json!({
            "slug": write.page.slug,
            "title": write.page.title,
            "created": write.created,
            "is_public": write.page.is_public,
            "searchable": searchable && !too_short,
            "note": note,
        }))
    }
}

/// `delete_knowledge_page(slug)`.
pub struct DeleteKnowledgePage;

#[async_trait]
impl TypedTool for DeleteKnowledgePage {
    type Args = SlugArgs;
    fn name(&self) -> &'static str {
        names::DELETE_KNOWLEDGE_PAGE
    }
    fn description(&self) -> &'static str {
        "Delete a knowledge-base page by slug (it leaves search at once). A page a knowledge \
         source owns comes back at the source's next sync unless the source drops it."
    }
    async fn run(&self, a: SlugArgs, ctx: &TurnContext) -> ToolResult {
        let slug = a.slug.trim().to_string();
        let retrieval = &ctx.services.retrieval;
        match retrieval.delete_page(&slug).await {
            Ok(Some(seq)) => {
                changed(ctx, self.name(), &format!("page {slug} deleted"));
                if let Err(e) = retrieval
                    .wait_searchable(IndexCorpus::Knowledge, Some(seq).filter(|s| *s > 0))
                    .await
                {
                    tracing::warn!(%slug, error = %e, "page deleted; index still catching up");
                }
                ToolResult::ok(json!({"slug": slug, "deleted": true}))
            }
            Ok(None) => ToolResult::failed(format!(
                "There is no knowledge page with the slug {slug:?}; list the pages for the right one."
            )),
            Err(e) => broke(self.name(), e),
        }
    }
}

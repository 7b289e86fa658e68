//! Knowledge-page tools (§5.1, §10.5): `get_knowledge_page_link` (public
//! page → bare URL; private page → a principal-bound `web_link_tokens` link
//! with a ~30-day expiry; a page whose source type the tier may not search
//! answers like a missing one) and `save_knowledge_entry` (Slack DMs only, a
//! resolved member, an author-owned page that is chunked and indexed).

use async_trait::async_trait;
use rand::RngCore;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use sha2::{Digest, Sha256};
use storage::{KnowledgePage, Store, WebLinkToken, key};
use uuid::Uuid;

use crate::agent::ToolResult;
use crate::platform::tenancy;
use crate::platform::tool_names as names;
use crate::retrieval::PageUpsert;
use crate::tools::spec::{TurnContext, TypedTool, internal_failure};

/// Lifetime of a private page link (§10.5: ~30 days).
pub const WEB_LINK_TOKEN_TTL_DAYS: i64 = 30;
pub use crate::retrieval::ingest::{
    MEMBER_ENTRY_SOURCE_TYPE, SLACK_EXTRACTION_SOURCE_TYPE, entry_html,
};

fn failed(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "That could not be done right now.", e)
}

/// The page reference inside a slug or a `/kb/<tenant>/<id>` URL.
fn page_ref(slug_or_url: &str) -> String {
    let s = slug_or_url.trim();
    let path = s.split(['?', '#']).next().unwrap_or(s);
    match path.find("/kb/") {
        Some(i) => path[i + 4..]
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .unwrap_or("")
            .to_string(),
        None => path.trim_matches('/').to_string(),
    }
}

/// `get_knowledge_page_link(slug_or_url)`.
pub struct GetKnowledgePageLink;

/// Arguments of `get_knowledge_page_link`.
#[derive(Deserialize, JsonSchema)]
pub struct LinkArgs {
    /// The page's slug (from search results) or a /kb/… URL.
    pub slug_or_url: String,
}

#[async_trait]
impl TypedTool for GetKnowledgePageLink {
    type Args = LinkArgs;
    fn name(&self) -> &'static str {
        names::GET_KNOWLEDGE_PAGE_LINK
    }
    fn description(&self) -> &'static str {
        "Get a link to a knowledge-base page for the member: public pages get their public URL, \
         private pages a personal link that only works for this member."
    }
    async fn run(&self, a: LinkArgs, ctx: &TurnContext) -> ToolResult {
        let Some(tenant) = tenancy::current() else {
            return ToolResult::failed("No community context for this link.");
        };
        let issued = issue_page_link(
            &ctx.services.store,
            ctx.services.clock.as_ref(),
            &ctx.services.platform_base_url,
            &tenant.tenant.slug,
            ctx.tenant_id,
            &a.slug_or_url,
            ctx.principal.id,
            ctx.knowledge_source_types.as_deref(),
        )
        .await;
        match issued {
            Ok(l) if l.public => {
                ToolResult::ok(json!({"url": l.url, "title": l.title, "public": true}))
            }
            Ok(l) => ToolResult::ok(json!({
                "url": l.url,
                "title": l.title,
                "public": false,
                "expires_at": l.expires_at,
            })),
            Err(LinkError::NoReference) => {
                ToolResult::failed("Give the page's slug or its /kb/ link.")
            }
            Err(LinkError::NotFound(r)) => ToolResult::failed(format!(
                "No knowledge page {r:?} was found. Search the knowledge base for the right slug."
            )),
            Err(LinkError::NeedsPrincipal) => ToolResult::failed(
                "This page is private; a personal link can only be issued to a recognized member.",
            ),
            Err(LinkError::Storage(e)) => failed(self.name(), e),
        }
    }
}

/// A page link Root hands out (§10.5).
#[derive(Clone, Debug, PartialEq)]
pub struct PageLink {
    /// The URL (with `?token=` for a private page).
    pub url: String,
    /// The page's title.
    pub title: String,
    /// A public page (bare URL, no expiry).
    pub public: bool,
    /// When a private link stops working.
    pub expires_at: Option<storage::Ts>,
}

/// Why no link was issued.
#[derive(Debug, thiserror::Error)]
pub enum LinkError {
    /// Empty slug / URL.
    #[error("give the page's slug or its /kb/ URL")]
    NoReference,
    /// No such page (or out of the caller's knowledge scope).
    #[error("no knowledge page {0:?}")]
    NotFound(String),
    /// A private page needs a principal to bind the link to.
    #[error("a private page's link is issued to a principal: give principal_ref")]
    NeedsPrincipal,
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
}

/// Issue a link to the page `slug_or_url` of a tenant: public pages get
/// their bare URL; private pages a `web_link_tokens` link (~30 days) bound
/// to `principal` (and, when first opened, to that browser). Pages whose
/// source type is outside `scope` answer like missing ones (§5.2).
#[allow(clippy::too_many_arguments)]
pub async fn issue_page_link(
    store: &storage::RedbStore,
    clock: &dyn crate::platform::clock::Clock,
    platform_base_url: &str,
    tenant_slug: &str,
    tenant_id: Uuid,
    slug_or_url: &str,
    principal: Option<Uuid>,
    scope: Option<&[String]>,
) -> Result<PageLink, LinkError> {
    let r = page_ref(slug_or_url);
    if r.is_empty() {
        return Err(LinkError::NoReference);
    }
    let page = match store
        .find_unique::<KnowledgePage>(Some(tenant_id), KnowledgePage::SLUG_KEY, key().str(&r))
        .await?
    {
        Some(p) => Some(p),
        None => {
            store
                .find_unique::<KnowledgePage>(
                    Some(tenant_id),
                    KnowledgePage::PUBLIC_ID_KEY,
                    key().str(&r),
                )
                .await?
        }
    };
    let in_scope = |p: &KnowledgePage| scope.is_none_or(|types| types.contains(&p.source_type));
    let Some(page) = page.filter(in_scope) else {
        return Err(LinkError::NotFound(r));
    };
    let base = platform_base_url.trim_end_matches('/');
    let page_id = page.public_id.clone().unwrap_or_else(|| page.slug.clone());
    let url = format!("{base}/kb/{tenant_slug}/{page_id}");
    if page.is_public {
        return Ok(PageLink {
            url,
            title: page.title,
            public: true,
            expires_at: None,
        });
    }
    let Some(principal) = principal else {
        return Err(LinkError::NeedsPrincipal);
    };
    let mut raw = [0u8; 32];
    rand::rng().fill_bytes(&mut raw);
    let token = hex::encode(raw);
    let now = clock.now();
    let row = store
        .insert(WebLinkToken {
            id: Uuid::new_v4(),
            tenant_id,
            token_hash: hex::encode(Sha256::digest(token.as_bytes())),
            knowledge_page_id: page.id,
            principal_id: principal,
            browser_session_id: None,
            expires_at: now.plus_micros(WEB_LINK_TOKEN_TTL_DAYS * 86_400 * 1_000_000),
            created_at: now,
            last_used_at: None,
        })
        .await?;
    Ok(PageLink {
        url: format!("{url}?token={token}"),
        title: page.title,
        public: false,
        expires_at: Some(row.expires_at),
    })
}

/// `save_knowledge_entry(title, content, category?, update_slug?)`.
pub struct SaveKnowledgeEntry;

/// Arguments of `save_knowledge_entry`.
#[derive(Deserialize, JsonSchema)]
pub struct SaveArgs {
    /// Page title.
    pub title: String,
    /// The knowledge to save, in plain text or simple HTML.
    pub content: String,
    /// Optional category label.
    pub category: Option<String>,
    /// Slug of one of the member's own entries to update instead of creating one.
    pub update_slug: Option<String>,
}

/// A member entry's slug: at most 80 characters, leaving room for a suffix.
fn slugify(title: &str) -> String {
    crate::retrieval::ingest::slugify(title, 80)
}

#[async_trait]
impl TypedTool for SaveKnowledgeEntry {
    type Args = SaveArgs;
    fn name(&self) -> &'static str {
        names::SAVE_KNOWLEDGE_ENTRY
    }
    fn description(&self) -> &'static str {
        "Save knowledge the member shares into the community knowledge base as a page they own \
         (Slack DMs only)."
    }
    async fn run(&self, a: SaveArgs, ctx: &TurnContext) -> ToolResult {
        if !ctx
            .channel_id
            .as_deref()
            .is_some_and(|c| c.starts_with('D'))
        {
            return ToolResult::failed(
                "Knowledge entries can only be saved from a direct message.",
            );
        }
        let Some(member) = ctx.principal.id else {
            return ToolResult::failed("Only a recognized community member can save knowledge.");
        };
        if a.title.trim().is_empty() || a.content.trim().is_empty() {
            return ToolResult::failed("A knowledge entry needs a title and content.");
        }
        let owner = member.to_string();
        let slug = match &a.update_slug {
            Some(s) => {
                let existing = ctx
                    .services
                    .store
                    .find_unique::<KnowledgePage>(
                        Some(ctx.tenant_id),
                        KnowledgePage::SLUG_KEY,
                        key().str(s.trim()),
                    )
                    .await;
                match existing {
                    Ok(Some(p)) if p.author_member_id.as_deref() == Some(owner.as_str()) => p.slug,
                    Ok(_) => {
                        return ToolResult::failed(format!(
                            "No entry {s:?} of yours was found to update."
                        ));
                    }
                    Err(e) => return failed(self.name(), e),
                }
            }
            None => {
                let base = slugify(&a.title);
                let base = if base.is_empty() {
                    "entry".to_string()
                } else {
                    base
                };
                format!("{base}-{}", &Uuid::new_v4().simple().to_string()[..8])
            }
        };
        let write = ctx
            .services
            .retrieval
            .upsert_page(PageUpsert {
                slug,
                title: a.title.trim().to_string(),
                content_html: entry_html(&a.content, a.category.as_deref()),
                source_type: MEMBER_ENTRY_SOURCE_TYPE.into(),
                author_name: ctx.principal.display_name.clone(),
                author_member_id: Some(owner),
                ..PageUpsert::default()
            })
            .await;
        match write {
            Ok(w) => ToolResult::ok(json!({
                "slug": w.page.slug,
                "title": w.page.title,
                "created": w.created,
            })),
            Err(e) => failed(self.name(), e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_refs_from_slugs_and_urls() {
        assert_eq!(page_ref("parking"), "parking");
        assert_eq!(
            page_ref("https://root.example/kb/acme/kb_123?x=1"),
            "kb_123"
        );
        assert_eq!(page_ref("/kb/acme/parking/"), "parking");
    }

    #[test]
    fn slugs_are_url_safe() {
        assert_eq!(
            slugify("Where to park — after 6pm!"),
            "where-to-park-after-6pm"
        );
        assert_eq!(slugify("***"), "");
    }
}

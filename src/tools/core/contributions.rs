//! Contributions & extracted knowledge (§5.1), author-scoped: a member
//! manages only their own indexed public Slack messages
//! (`processed_slack_messages` with `user_id` = their Slack id; the row id is
//! the `contribution_id`) and their own knowledge entries (`knowledge_pages`
//! they authored that came from `save_knowledge_entry` or the Slack
//! extraction). Another member's row answers like a missing one. Every change
//! goes through the ingest API, so search follows; removing a contribution
//! withdraws it from the index and never touches Slack.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{IndexCorpus, KnowledgePage, Scan, Store, key};
use uuid::Uuid;

use super::pages::{MEMBER_ENTRY_SOURCE_TYPE, SLACK_EXTRACTION_SOURCE_TYPE, entry_html};
use crate::agent::ToolResult;
use crate::platform::tool_names as names;
use crate::retrieval::PageUpsert;
use crate::retrieval::contributions::{ContributionError, SlackContributions, excerpt};
use crate::tools::spec::{TurnContext, TypedTool, internal_failure};

/// `list_my_extracted_knowledge` returns at most this many.
pub const LIST_EXTRACTED_KNOWLEDGE_LIMIT: usize = 100;

const NO_SLACK_ID: &str =
    "Your Slack account is not known, so your Slack contributions cannot be managed here.";
const NO_CONTRIBUTION: &str = "No such contribution of yours was found.";
const NEEDS_MEMBER: &str = "Only a recognized community member has knowledge entries.";

fn failed(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "That could not be done right now.", e)
}

/// The member's contributions service, or the refusal when they have no
/// Slack account.
fn contributions<'a>(ctx: &'a TurnContext) -> Result<SlackContributions<'a>, ToolResult> {
    SlackContributions::of(
        &ctx.services.retrieval,
        &ctx.services.slack,
        ctx.principal.slack_user_id.as_deref(),
    )
    .map_err(|_| ToolResult::failed(NO_SLACK_ID))
}

/// The model-facing answer to a failed contribution change.
fn refusal(tool: &str, e: ContributionError) -> ToolResult {
    match e {
        ContributionError::NoSlackAccount => ToolResult::failed(NO_SLACK_ID),
        ContributionError::NotALink => ToolResult::failed(
            "That is not a Slack message link; it looks like \
             https://<workspace>.slack.com/archives/<channel>/p<digits>.",
        ),
        ContributionError::NotFound => ToolResult::failed(NO_CONTRIBUTION),
        ContributionError::NotInPublicChannel => ToolResult::failed(
            "That message could not be found in a public channel the assistant \
             reads: only members' own public-channel messages can be added.",
        ),
        ContributionError::NotTheAuthor => ToolResult::failed(
            "That message was posted by someone else; members can only add their own messages.",
        ),
        ContributionError::Withdrawn => ToolResult::failed(
            "That contribution was removed from search; add it back with \
             add_my_slack_contribution and its link.",
        ),
        ContributionError::Internal(e) => failed(tool, e),
    }
}

fn answer<T: serde::Serialize>(tool: &str, r: Result<T, ContributionError>) -> ToolResult {
    match r {
        Ok(v) => ToolResult::ok(serde_json::to_value(v).unwrap_or(Value::Null)),
        Err(e) => refusal(tool, e),
    }
}

/// `list_my_slack_contributions()`.
pub struct ListMySlackContributions;

/// Arguments of tools without any.
#[derive(Deserialize, JsonSchema)]
pub struct NoArgs {}

#[async_trait]
impl TypedTool for ListMySlackContributions {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::LIST_MY_SLACK_CONTRIBUTIONS
    }
    fn description(&self) -> &'static str {
        "List this member's own public Slack messages that the assistant searches (newest \
         first, up to 50), with their contribution ids."
    }
    async fn run(&self, _args: NoArgs, ctx: &TurnContext) -> ToolResult {
        match contributions(ctx) {
            Ok(c) => answer(self.name(), c.list().await),
            Err(refused) => refused,
        }
    }
}

/// `add_my_slack_contribution(permalink)`.
pub struct AddMySlackContribution;

/// Arguments of `add_my_slack_contribution`.
#[derive(Deserialize, JsonSchema)]
pub struct AddArgs {
    /// The Slack link of one of the member's own public messages
    /// (`https://<workspace>.slack.com/archives/<channel>/p<digits>`).
    pub permalink: String,
}

#[async_trait]
impl TypedTool for AddMySlackContribution {
    type Args = AddArgs;
    fn name(&self) -> &'static str {
        names::ADD_MY_SLACK_CONTRIBUTION
    }
    fn description(&self) -> &'static str {
        "Put one of this member's own public Slack messages (by its link) into the \
         assistant's search, e.g. after removing it or when it was never indexed. Only the \
         member's own messages in public channels."
    }
    async fn run(&self, a: AddArgs, ctx: &TurnContext) -> ToolResult {
        match contributions(ctx) {
            Ok(c) => answer(self.name(), c.add(&a.permalink).await),
            Err(refused) => refused,
        }
    }
}

/// `refresh_my_slack_contribution(contribution_id)`.
pub struct RefreshMySlackContribution;

/// Arguments of `refresh_my_slack_contribution` and `remove_my_slack_contribution`.
#[derive(Deserialize, JsonSchema)]
pub struct ContributionArgs {
    /// Id from `list_my_slack_contributions` (never guessed).
    pub contribution_id: Uuid,
}

#[async_trait]
impl TypedTool for RefreshMySlackContribution {
    type Args = ContributionArgs;
    fn name(&self) -> &'static str {
        names::REFRESH_MY_SLACK_CONTRIBUTION
    }
    fn description(&self) -> &'static str {
        "Re-index one of this member's Slack contributions in the assistant's search from the \
         stored copy of the message."
    }
    async fn run(&self, a: ContributionArgs, ctx: &TurnContext) -> ToolResult {
        match contributions(ctx) {
            Ok(c) => answer(self.name(), c.refresh(a.contribution_id).await),
            Err(refused) => refused,
        }
    }
}

/// `remove_my_slack_contribution(contribution_id)`.
pub struct RemoveMySlackContribution;

#[async_trait]
impl TypedTool for RemoveMySlackContribution {
    type Args = ContributionArgs;
    fn name(&self) -> &'static str {
        names::REMOVE_MY_SLACK_CONTRIBUTION
    }
    fn description(&self) -> &'static str {
        "Remove one of this member's Slack messages from the assistant's search. The message \
         itself stays in Slack (it is never deleted there)."
    }
    async fn run(&self, a: ContributionArgs, ctx: &TurnContext) -> ToolResult {
        let c = match contributions(ctx) {
            Ok(c) => c,
            Err(refused) => return refused,
        };
        match c.remove(a.contribution_id).await {
            Ok(r) if !r.was_in_search => {
                ToolResult::failed("That contribution is already removed from search.")
            }
            Ok(r) => ToolResult::ok(json!({
                "contribution_id": r.contribution.contribution_id,
                "permalink": r.contribution.permalink,
                "in_search": false,
                "removed_from_search": r.removed_from_search,
                "message": "Removed from the assistant's search; the message stays in Slack.",
            })),
            Err(e) => refusal(self.name(), e),
        }
    }
}

/// A page the member may manage here: theirs, and a knowledge entry (saved
/// by them or extracted from their Slack messages), not a synced page.
fn is_own_entry(page: &KnowledgePage, member: Uuid) -> bool {
    page.author_member_id.as_deref() == Some(member.to_string().as_str())
        && (page.extracted_knowledge_id.is_some()
            || page.source_type == MEMBER_ENTRY_SOURCE_TYPE
            || page.source_type == SLACK_EXTRACTION_SOURCE_TYPE)
}

fn entry_view(p: &KnowledgePage) -> Value {
    json!({
        "slug": p.slug,
        "title": p.title,
        "source_type": p.source_type,
        "is_public": p.is_public,
        "updated_at": p.updated_at,
        "excerpt": excerpt(p.content_text.as_deref().unwrap_or("")),
    })
}

/// The caller's entry `slug`, or `None` (missing, someone else's, or not an entry).
async fn own_entry(
    ctx: &TurnContext,
    member: Uuid,
    slug: &str,
) -> Result<Option<KnowledgePage>, storage::StorageError> {
    let page: Option<KnowledgePage> = ctx
        .services
        .store
        .find_unique(
            Some(ctx.tenant_id),
            KnowledgePage::SLUG_KEY,
            key().str(slug.trim()),
        )
        .await?;
    Ok(page.filter(|p| is_own_entry(p, member)))
}

fn no_entry(slug: &str) -> ToolResult {
    ToolResult::failed(format!(
        "No knowledge entry {slug:?} of yours was found. List them with list_my_extracted_knowledge."
    ))
}

/// `list_my_extracted_knowledge()`.
pub struct ListMyExtractedKnowledge;

#[async_trait]
impl TypedTool for ListMyExtractedKnowledge {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::LIST_MY_EXTRACTED_KNOWLEDGE
    }
    fn description(&self) -> &'static str {
        "List the knowledge-base entries this member authored (saved by them or extracted from \
         their Slack messages), newest first, with their slugs."
    }
    async fn run(&self, _args: NoArgs, ctx: &TurnContext) -> ToolResult {
        let Some(member) = ctx.principal.id else {
            return ToolResult::failed(NEEDS_MEMBER);
        };
        let pages: Vec<KnowledgePage> = match ctx
            .services
            .store
            .scan(
                Some(ctx.tenant_id),
                Scan::index(KnowledgePage::AUTHOR_IDX, key().str(&member.to_string())),
            )
            .await
        {
            Ok(p) => p,
            Err(e) => return failed(self.name(), e),
        };
        let mut pages: Vec<KnowledgePage> = pages
            .into_iter()
            .filter(|p| is_own_entry(p, member))
            .collect();
        pages.sort_by_key(|p| std::cmp::Reverse(p.updated_at));
        let list: Vec<Value> = pages
            .iter()
            .take(LIST_EXTRACTED_KNOWLEDGE_LIMIT)
            .map(entry_view)
            .collect();
        let count = list.len();
        ToolResult::ok(json!({"entries": list, "count": count}))
    }
}

/// `update_my_extracted_knowledge_entry(slug, title, content)`.
pub struct UpdateMyExtractedKnowledgeEntry;

/// Arguments of `update_my_extracted_knowledge_entry`.
#[derive(Deserialize, JsonSchema)]
pub struct UpdateEntryArgs {
    /// Slug from `list_my_extracted_knowledge`.
    pub slug: String,
    /// The new title.
    pub title: String,
    /// The new content, in plain text (blank lines separate paragraphs).
    pub content: String,
}

#[async_trait]
impl TypedTool for UpdateMyExtractedKnowledgeEntry {
    type Args = UpdateEntryArgs;
    fn name(&self) -> &'static str {
        names::UPDATE_MY_EXTRACTED_KNOWLEDGE_ENTRY
    }
    fn description(&self) -> &'static str {
        "Rewrite the title and content of one of this member's own knowledge-base entries."
    }
    async fn run(&self, a: UpdateEntryArgs, ctx: &TurnContext) -> ToolResult {
        let Some(member) = ctx.principal.id else {
            return ToolResult::failed(NEEDS_MEMBER);
        };
        if a.title.trim().is_empty() || a.content.trim().is_empty() {
            return ToolResult::failed("A knowledge entry needs a title and content.");
        }
        let page = match own_entry(ctx, member, &a.slug).await {
            Ok(Some(p)) => p,
            Ok(None) => return no_entry(&a.slug),
            Err(e) => return failed(self.name(), e),
        };
        let retrieval = &ctx.services.retrieval;
        let write = retrieval
            .upsert_page(PageUpsert {
                slug: page.slug,
                title: a.title.trim().to_string(),
                content_html: entry_html(&a.content, None),
                source_type: page.source_type,
                source_url: page.source_url,
                author_name: page.author_name,
                author_member_id: page.author_member_id,
                knowledge_date: page.knowledge_date,
                is_public: page.is_public,
                public_id: page.public_id,
                knowledge_source_id: page.knowledge_source_id,
                external_id: page.external_id,
                ..PageUpsert::default()
            })
            .await;
        match write {
            Ok(w) => {
                let searchable = retrieval
                    .wait_searchable(IndexCorpus::Knowledge, w.index_seq)
                    .await
                    .is_ok();
                let mut v = entry_view(&w.page);
                v["searchable"] = json!(searchable);
                ToolResult::ok(v)
            }
            Err(e) => failed(self.name(), e),
        }
    }
}

/// `delete_my_extracted_knowledge_entry(slug)`.
pub struct DeleteMyExtractedKnowledgeEntry;

/// Arguments of `delete_my_extracted_knowledge_entry`.
#[derive(Deserialize, JsonSchema)]
pub struct DeleteEntryArgs {
    /// Slug from `list_my_extracted_knowledge`.
    pub slug: String,
}

#[async_trait]
impl TypedTool for DeleteMyExtractedKnowledgeEntry {
    type Args = DeleteEntryArgs;
    fn name(&self) -> &'static str {
        names::DELETE_MY_EXTRACTED_KNOWLEDGE_ENTRY
    }
    fn description(&self) -> &'static str {
        "Delete one of this member's own knowledge-base entries (it leaves search at once)."
    }
    async fn run(&self, a: DeleteEntryArgs, ctx: &TurnContext) -> ToolResult {
        let Some(member) = ctx.principal.id else {
            return ToolResult::failed(NEEDS_MEMBER);
        };
        let page = match own_entry(ctx, member, &a.slug).await {
            Ok(Some(p)) => p,
            Ok(None) => return no_entry(&a.slug),
            Err(e) => return failed(self.name(), e),
        };
        let retrieval = &ctx.services.retrieval;
        match retrieval.delete_page(&page.slug).await {
            Ok(seq) => {
                let searchable = retrieval
                    .wait_searchable(IndexCorpus::Knowledge, seq.filter(|s| *s > 0))
                    .await
                    .is_ok();
                ToolResult::ok(json!({
                    "slug": page.slug,
                    "title": page.title,
                    "deleted": true,
                    "removed_from_search": searchable,
                }))
            }
            Err(e) => failed(self.name(), e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_authors_entries_are_theirs() {
        let ann = Uuid::new_v4();
        let mut p = KnowledgePage {
            author_member_id: Some(ann.to_string()),
            source_type: MEMBER_ENTRY_SOURCE_TYPE.into(),
            ..KnowledgePage::default()
        };
        assert!(is_own_entry(&p, ann));
        assert!(!is_own_entry(&p, Uuid::new_v4()), "someone else's");
        p.source_type = "url".into();
        assert!(!is_own_entry(&p, ann), "a synced page is not an entry");
        p.extracted_knowledge_id = Some(Uuid::new_v4());
        assert!(is_own_entry(&p, ann), "linked to an extraction");
        p.extracted_knowledge_id = None;
        p.source_type = SLACK_EXTRACTION_SOURCE_TYPE.into();
        assert!(is_own_entry(&p, ann));
    }
}

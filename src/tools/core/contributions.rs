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
use storage::{IndexCorpus, KnowledgePage, ProcessedSlackMessage, Scan, Store, key};
use uuid::Uuid;

use super::pages::{MEMBER_ENTRY_SOURCE_TYPE, SLACK_EXTRACTION_SOURCE_TYPE, entry_html};
use crate::agent::ToolResult;
use crate::platform::tool_names as names;
use crate::retrieval::PageUpsert;
use crate::retrieval::slack::find_permalink;
use crate::tools::spec::{TurnContext, TypedTool, internal_failure};

/// `list_my_slack_contributions` returns at most this many (§5.1).
pub const LIST_CONTRIBUTIONS_LIMIT: usize = 50;
/// `list_my_extracted_knowledge` returns at most this many.
pub const LIST_EXTRACTED_KNOWLEDGE_LIMIT: usize = 100;
/// Characters of a message or page shown in lists.
pub const EXCERPT_CHARS: usize = 300;

const NO_SLACK_ID: &str =
    "Your Slack account is not known, so your Slack contributions cannot be managed here.";
const NO_CONTRIBUTION: &str = "No such contribution of yours was found.";
const NEEDS_MEMBER: &str = "Only a recognized community member has knowledge entries.";

fn failed(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "That could not be done right now.", e)
}

fn excerpt(s: &str) -> String {
    match s.char_indices().nth(EXCERPT_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

fn contribution_view(m: &ProcessedSlackMessage) -> Value {
    json!({
        "contribution_id": m.id,
        "channel_id": m.channel_id,
        "channel_name": m.channel_name,
        "message_ts": m.message_ts,
        "thread_ts": m.thread_ts,
        "permalink": m.permalink,
        "posted_at": m.message_date,
        "text": excerpt(&m.message_text),
        "in_search": m.withdrawn_at.is_none(),
    })
}

/// The caller's message `id`, or the refusal for the model (no Slack id,
/// missing, or someone else's — the last two answer alike).
async fn own_message(
    ctx: &TurnContext,
    tool: &str,
    id: Uuid,
) -> Result<ProcessedSlackMessage, ToolResult> {
    let Some(slack_id) = ctx.principal.slack_user_id.as_deref() else {
        return Err(ToolResult::failed(NO_SLACK_ID));
    };
    let found: Option<ProcessedSlackMessage> = ctx
        .services
        .store
        .get(Some(ctx.tenant_id), key().uuid(id))
        .await
        .map_err(|e| failed(tool, e))?;
    found
        .filter(|m| m.user_id.as_deref() == Some(slack_id))
        .ok_or_else(|| ToolResult::failed(NO_CONTRIBUTION))
}

/// Re-index `msg` (clearing a withdrawal) and wait until search sees it.
async fn reindex(ctx: &TurnContext, tool: &str, mut msg: ProcessedSlackMessage) -> ToolResult {
    let restored = msg.withdrawn_at.take().is_some();
    let retrieval = &ctx.services.retrieval;
    match retrieval.index_slack_message(msg).await {
        Ok((row, seq)) => {
            let searchable = retrieval
                .wait_searchable(IndexCorpus::SlackMessages, seq)
                .await
                .is_ok();
            let mut v = contribution_view(&row);
            v["restored"] = json!(restored);
            v["searchable"] = json!(searchable);
            ToolResult::ok(v)
        }
        Err(e) => failed(tool, e),
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
        let Some(slack_id) = ctx.principal.slack_user_id.as_deref() else {
            return ToolResult::failed(NO_SLACK_ID);
        };
        // Withdrawn rows are skipped, so read more until 50 remain or the
        // member's messages run out.
        let mut scan_limit = LIST_CONTRIBUTIONS_LIMIT * 2;
        loop {
            let rows: Vec<ProcessedSlackMessage> = match ctx
                .services
                .store
                .scan(
                    Some(ctx.tenant_id),
                    Scan::index(ProcessedSlackMessage::USER_IDX, key().str(slack_id))
                        .desc()
                        .limit(scan_limit),
                )
                .await
            {
                Ok(rows) => rows,
                Err(e) => return failed(self.name(), e),
            };
            let exhausted = rows.len() < scan_limit;
            let list: Vec<Value> = rows
                .iter()
                .filter(|m| m.withdrawn_at.is_none())
                .take(LIST_CONTRIBUTIONS_LIMIT)
                .map(contribution_view)
                .collect();
            if exhausted || list.len() == LIST_CONTRIBUTIONS_LIMIT {
                let count = list.len();
                return ToolResult::ok(json!({"contributions": list, "count": count}));
            }
            scan_limit = scan_limit.saturating_mul(4);
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

/// `link`'s message fetched live, as an unindexed row — only from a public,
/// unarchived channel.
async fn live_public_message(
    ctx: &TurnContext,
    link: &crate::retrieval::slack::SlackPermalink,
) -> Option<ProcessedSlackMessage> {
    let api = ctx.services.slack.current().await.ok()??;
    let info = api
        .call(
            "conversations.info",
            crate::slack::Params::form([("channel", link.channel_id.as_str())]),
        )
        .await
        .ok()?;
    let ch = &info["channel"];
    let public = ch["is_channel"].as_bool() == Some(true)
        && ch["is_private"].as_bool() != Some(true)
        && ch["is_archived"].as_bool() != Some(true);
    if !public {
        return None;
    }
    let m =
        crate::tools::permalinks::fetch_message(&api, &link.channel_id, &link.message_ts).await?;
    let now = ctx.services.clock.now();
    Some(ProcessedSlackMessage {
        id: uuid::Uuid::new_v4(),
        tenant_id: ctx.tenant_id,
        channel_id: link.channel_id.clone(),
        channel_name: ch["name"].as_str().map(str::to_string),
        user_id: m["user"].as_str().map(str::to_string),
        message_ts: link.message_ts.clone(),
        thread_ts: m["thread_ts"]
            .as_str()
            .filter(|t| *t != link.message_ts)
            .map(str::to_string),
        message_text: m["text"].as_str()?.to_string(),
        message_date: crate::slack::events::ts_instant(&link.message_ts).unwrap_or(now),
        permalink: Some(link.url.clone()),
        created_at: now,
        ..ProcessedSlackMessage::default()
    })
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
        let Some(slack_id) = ctx.principal.slack_user_id.as_deref() else {
            return ToolResult::failed(NO_SLACK_ID);
        };
        let Some(link) = find_permalink(&a.permalink) else {
            return ToolResult::failed(
                "That is not a Slack message link; it looks like \
                 https://<workspace>.slack.com/archives/<channel>/p<digits>.",
            );
        };
        let found: Option<ProcessedSlackMessage> = match ctx
            .services
            .store
            .find_unique(
                Some(ctx.tenant_id),
                ProcessedSlackMessage::MESSAGE_KEY,
                key().str(&link.channel_id).str(&link.message_ts),
            )
            .await
        {
            Ok(m) => m,
            Err(e) => return failed(self.name(), e),
        };
        let msg = match found {
            Some(m) => m,
            // Not indexed yet: look it up in Slack (public channels only).
            None => match live_public_message(ctx, &link).await {
                Some(m) => m,
                None => {
                    return ToolResult::failed(
                        "That message could not be found in a public channel the assistant \
                         reads: only members' own public-channel messages can be added.",
                    );
                }
            },
        };
        if msg.user_id.as_deref() != Some(slack_id) {
            return ToolResult::failed(
                "That message was posted by someone else; members can only add their own messages.",
            );
        }
        reindex(ctx, self.name(), msg).await
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
        let msg = match own_message(ctx, self.name(), a.contribution_id).await {
            Ok(m) => m,
            Err(refusal) => return refusal,
        };
        if msg.withdrawn_at.is_some() {
            return ToolResult::failed(
                "That contribution was removed from search; add it back with \
                 add_my_slack_contribution and its link.",
            );
        }
        reindex(ctx, self.name(), msg).await
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
        let msg = match own_message(ctx, self.name(), a.contribution_id).await {
            Ok(m) => m,
            Err(refusal) => return refusal,
        };
        if msg.withdrawn_at.is_some() {
            return ToolResult::failed("That contribution is already removed from search.");
        }
        let retrieval = &ctx.services.retrieval;
        match retrieval
            .withdraw_slack_message(&msg.channel_id, &msg.message_ts)
            .await
        {
            Ok(seq) => {
                let searchable = retrieval
                    .wait_searchable(IndexCorpus::SlackMessages, seq)
                    .await
                    .is_ok();
                ToolResult::ok(json!({
                    "contribution_id": msg.id,
                    "permalink": msg.permalink,
                    "in_search": false,
                    "removed_from_search": searchable,
                    "message": "Removed from the assistant's search; the message stays in Slack.",
                }))
            }
            Err(e) => failed(self.name(), e),
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

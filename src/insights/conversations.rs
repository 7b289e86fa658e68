//! Browsing `conversation_logs` (§12.2 `GET /conversations`): one member's
//! messages or the whole tenant's, newest first, filtered by channel, a
//! time range and a text query, with per-channel counts and the members
//! each reply mentioned (`reply_mentions`).
//!
//! The text query is a case-insensitive substring match over the message
//! text and subject: the logs have no full-text index, and the range scan
//! that reads them anyway is bounded by the page limit.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::Serialize;
use storage::{Channel, ConversationLog, Direction, Key, RedbStore, ReplyMention, Scan, Ts, key};
use uuid::Uuid;

use super::{InsightError, PageKey, cut_page, newest_first, principals_by_id, trace_of};

/// Items per page by default.
pub const DEFAULT_LIMIT: usize = 50;
/// Largest page.
pub const MAX_LIMIT: usize = 200;
/// Longest text query, in characters.
pub const MAX_QUERY_CHARS: usize = 200;

/// What to list. `principal_id` scopes to one member (omitted: the tenant).
#[derive(Clone, Debug, Default)]
pub struct ConversationFilter {
    /// Only this member's messages.
    pub principal_id: Option<Uuid>,
    /// Only this channel (the counts ignore it; see [`ConversationPage`]).
    pub channel: Option<Channel>,
    /// Case-insensitive substring of the text or subject.
    pub q: Option<String>,
    /// Inclusive lower bound on `message_at`.
    pub from: Option<Ts>,
    /// Exclusive upper bound on `message_at`.
    pub to: Option<Ts>,
}

/// A member a reply mentioned.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct MentionLabel {
    /// The member's stable ref, when they are a known principal.
    pub principal_ref: Option<String>,
    /// Their display name (or the name the reply used).
    pub name: Option<String>,
    /// Their Slack user id, when mentioned by it.
    pub slack_user_id: Option<String>,
    /// `slack_id` or `name`.
    pub matched_via: String,
    /// The reply used a source this member authored.
    pub content_sourced: bool,
}

/// One logged message.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct ConversationItem {
    /// The log row id.
    pub id: Uuid,
    /// `slack`, `email`, `api` or `web`.
    pub channel: String,
    /// `inbound` (the member) or `outbound` (the agent).
    pub direction: String,
    /// The member's stable ref (absent when unresolved or deleted).
    pub principal_ref: Option<String>,
    /// The member's display name.
    pub principal_name: Option<String>,
    /// The message text.
    pub message_text: Option<String>,
    /// The email subject.
    pub subject: Option<String>,
    /// When the message was sent or received.
    #[schemars(with = "String")]
    pub message_at: Ts,
    /// Pairs a member message with the agent's reply.
    pub exchange_key: Option<String>,
    /// The channel's thread.
    pub thread_key: Option<String>,
    /// Members this reply mentioned (outbound rows only).
    pub mentions: Vec<MentionLabel>,
    /// The agent run that wrote this reply (outbound rows of a turn), for
    /// the trace viewer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<Uuid>,
    /// Inbound email: whether a provider vouched for the sender's `From`
    /// (security H-1) — an unauthenticated sender was answered as a public
    /// sender, whoever `From` named.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_authenticated: Option<bool>,
    /// Why (`dmarc=pass (primitive)`, `no verdict`, …), with
    /// [`sender_authenticated`](Self::sender_authenticated).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender_auth_reason: Option<String>,
}

/// Messages per channel under every filter except `channel`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct ChannelCounts {
    /// Slack messages.
    pub slack: u64,
    /// Email messages.
    pub email: u64,
    /// API messages.
    pub api: u64,
    /// Web chat messages.
    pub web: u64,
}

impl ChannelCounts {
    fn add(&mut self, c: Channel) {
        match c {
            Channel::Slack => self.slack += 1,
            Channel::Email => self.email += 1,
            Channel::Api => self.api += 1,
            Channel::Web => self.web += 1,
        }
    }
}

/// One page of messages.
#[derive(Debug)]
pub struct ConversationPage {
    /// Newest first.
    pub items: Vec<ConversationItem>,
    /// Where the next page continues (`None` on the last one).
    pub next: Option<PageKey>,
    /// Per-channel counts over the whole filtered range (every page alike).
    pub counts: ChannelCounts,
}

/// A page of `filter`'s messages after `after`, newest first.
pub async fn list(
    store: &RedbStore,
    tenant: Uuid,
    filter: ConversationFilter,
    after: Option<PageKey>,
    limit: usize,
) -> Result<ConversationPage, InsightError> {
    if let Some(q) = &filter.q
        && q.chars().count() > MAX_QUERY_CHARS
    {
        return Err(InsightError::invalid(
            "q",
            format!("must be at most {MAX_QUERY_CHARS} characters"),
        ));
    }
    let needle = filter
        .q
        .as_deref()
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .map(str::to_lowercase);
    Ok(store
        .snapshot(move |s| {
            let (index, prefix): (&'static str, Key) = match filter.principal_id {
                Some(p) => (ConversationLog::PRINCIPAL_MESSAGE_AT_IDX, key().uuid(p)),
                None => (ConversationLog::MESSAGE_AT_IDX, key()),
            };
            let matches = |r: &ConversationLog| match &needle {
                None => true,
                Some(n) => [&r.message_text, &r.subject]
                    .into_iter()
                    .flatten()
                    .any(|t| t.to_lowercase().contains(n.as_str())),
            };
            let page_scan =
                newest_first(index, prefix.clone(), filter.from, filter.to, after).limit(limit + 1);
            let rows: Vec<ConversationLog> =
                s.scan_filtered(Some(tenant), &page_scan, |r: &ConversationLog| {
                    filter.channel.is_none_or(|c| r.channel == c) && matches(r)
                })?;
            let (rows, next) = cut_page(rows, limit, |r| (r.message_at, r.id));

            let mut counts = ChannelCounts::default();
            let count_scan = newest_first(index, prefix, filter.from, filter.to, None);
            s.scan_filtered::<ConversationLog>(Some(tenant), &count_scan, |r| {
                if matches(r) {
                    counts.add(r.channel);
                }
                false
            })?;

            let mut mentions: HashMap<Uuid, Vec<ReplyMention>> = HashMap::new();
            for r in rows.iter().filter(|r| r.direction == Direction::Outbound) {
                let found: Vec<ReplyMention> = s.scan_filtered(
                    Some(tenant),
                    &Scan::index(ReplyMention::LOG_MENTION_KEY, key().uuid(r.id)),
                    |_| true,
                )?;
                mentions.insert(r.id, found);
            }
            let people = principals_by_id(
                s,
                tenant,
                rows.iter().filter_map(|r| r.principal_id).chain(
                    mentions
                        .values()
                        .flatten()
                        .filter_map(|m| m.mentioned_principal_id),
                ),
            )?;
            let items = rows
                .into_iter()
                .map(|r| {
                    let who = r.principal_id.and_then(|p| people.get(&p));
                    let labels = mentions
                        .remove(&r.id)
                        .unwrap_or_default()
                        .into_iter()
                        .map(|m| {
                            let p = m.mentioned_principal_id.and_then(|p| people.get(&p));
                            MentionLabel {
                                principal_ref: p.map(|p| p.ref_.clone()),
                                name: p.and_then(|p| p.display_name.clone()).or(m.mentioned_name),
                                slack_user_id: m.mentioned_slack_user_id,
                                matched_via: m.matched_via.as_str().into(),
                                content_sourced: m.content_sourced,
                            }
                        })
                        .collect();
                    let trace_id = trace_of(&r.metadata.0);
                    let auth = &r.metadata.0["sender_auth"];
                    ConversationItem {
                        sender_authenticated: auth["authenticated"].as_bool(),
                        sender_auth_reason: auth["reason"].as_str().map(str::to_string),
                        id: r.id,
                        channel: r.channel.as_str().into(),
                        direction: r.direction.as_str().into(),
                        principal_ref: who.map(|p| p.ref_.clone()),
                        principal_name: who.and_then(|p| p.display_name.clone()),
                        message_text: r.message_text,
                        subject: r.subject,
                        message_at: r.message_at,
                        exchange_key: r.exchange_key,
                        thread_key: r.thread_key,
                        mentions: labels,
                        trace_id,
                    }
                })
                .collect();
            Ok(ConversationPage {
                items,
                next,
                counts,
            })
        })
        .await?)
}

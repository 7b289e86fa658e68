//! The Slack-only tools (§5.1 "Community conversation", Slack DM only) and
//! admin messaging (a separate group, offered to admins on Slack, §5.2):
//! `find_channel_for_community_post`, `start_community_conversation`,
//! `send_slack_dm_admin` and `send_slack_channel_message_admin`. They reach
//! the tenant's workspace through `ToolServices::slack`; nothing is claimed
//! that Slack did not confirm (a post's `ts`, a DM per recipient).

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::agent::ToolResult;
use crate::platform::tool_names as names;
use crate::slack::api::Params;
use crate::slack::workspaces::open_dm;
use crate::slack::{OutgoingMessage, SlackApi, SlackError};
use crate::tools::spec::{TurnContext, TypedTool, internal_failure};

/// `find_channel_for_community_post` default / largest `limit`.
pub const FIND_CHANNEL_DEFAULT_LIMIT: usize = 5;
/// Largest `limit` honoured.
pub const FIND_CHANNEL_MAX_LIMIT: usize = 10;
/// §5.1: at most this many DM recipients inline; more go through the
/// `slack-admin-broadcast` queue.
pub const MAX_INLINE_DM_RECIPIENTS: usize = 10;
/// Longest message the Slack tools post (Slack's own cap is 40 000).
pub const MAX_POST_CHARS: usize = 4000;

const NO_SLACK: &str = "Slack is not connected for this community.";

async fn workspace(tool: &str, ctx: &TurnContext) -> Result<SlackApi, ToolResult> {
    match ctx.services.slack.current().await {
        Ok(Some(api)) => Ok(api),
        Ok(None) => Err(ToolResult::failed(NO_SLACK)),
        Err(e) => Err(internal_failure(
            tool,
            "Slack could not be reached right now.",
            e,
        )),
    }
}

fn slack_failed(tool: &str, what: &str, e: &SlackError) -> ToolResult {
    let mut r = ToolResult::failed(format!("{what} ({}).", e.code().unwrap_or("Slack error")));
    r.error_detail = Some(format!("{tool}: {e}"));
    r
}

/// A public channel as `conversations.list` / `conversations.info` give it.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq)]
pub struct ChannelInfo {
    /// `C…`.
    pub id: String,
    /// Name without `#`.
    #[serde(default)]
    pub name: String,
    /// A public channel.
    #[serde(default)]
    pub is_channel: bool,
    /// Private.
    #[serde(default)]
    pub is_private: bool,
    /// Archived.
    #[serde(default)]
    pub is_archived: bool,
    /// The bot is a member.
    #[serde(default)]
    pub is_member: bool,
    /// Members.
    #[serde(default)]
    pub num_members: u64,
    /// `topic.value`.
    #[serde(default, deserialize_with = "value_text")]
    pub topic: String,
    /// `purpose.value`.
    #[serde(default, deserialize_with = "value_text")]
    pub purpose: String,
}

fn value_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    let v = Value::deserialize(d)?;
    Ok(v["value"].as_str().unwrap_or_default().to_string())
}

impl ChannelInfo {
    /// Posting in it is allowed (public, not archived).
    pub fn is_public_open(&self) -> bool {
        self.is_channel && !self.is_private && !self.is_archived
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() > 2)
        .map(str::to_lowercase)
        .collect()
}

/// How well `channel` fits `topic`: topic words in its name (×3), purpose
/// and topic (×1 each), plus recent matching messages in it (×2 each).
pub fn channel_score(channel: &ChannelInfo, topic: &str, message_hits: usize) -> f64 {
    let name = words(&channel.name.replace(['-', '_'], " "));
    let about = words(&format!("{} {}", channel.purpose, channel.topic));
    let mut score = 0.0;
    for w in words(topic) {
        if name
            .iter()
            .any(|n| n == &w || n.starts_with(&w) || w.starts_with(n.as_str()))
        {
            score += 3.0;
        }
        score += about.iter().filter(|a| **a == w).count().min(2) as f64;
    }
    score + 2.0 * message_hits as f64
}

/// `find_channel_for_community_post(topic, limit?)`.
pub struct FindChannelForCommunityPost;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct FindChannelArgs {
    /// What the member wants to ask the community about.
    pub topic: String,
    /// How many channels to suggest (default 5, at most 10).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[async_trait]
impl TypedTool for FindChannelForCommunityPost {
    type Args = FindChannelArgs;
    fn name(&self) -> &'static str {
        names::FIND_CHANNEL_FOR_COMMUNITY_POST
    }
    fn description(&self) -> &'static str {
        "Rank the community's public Slack channels for posting a question about a topic \
         (by channel name, purpose and where the topic is discussed). Returns the requester's \
         Slack id for the @-mention."
    }
    async fn run(&self, a: FindChannelArgs, ctx: &TurnContext) -> ToolResult {
        let api = match workspace(self.name(), ctx).await {
            Ok(api) => api,
            Err(r) => return r,
        };
        let listed = match api
            .paginate(
                "conversations.list",
                &[("types", "public_channel"), ("exclude_archived", "true")],
                "channels",
            )
            .await
        {
            Ok(l) => l,
            Err(e) => return slack_failed(self.name(), "Could not list the channels", &e),
        };
        // Where the topic is discussed: channels of matching indexed messages.
        let hits = ctx
            .services
            .retrieval
            .search_slack(
                crate::retrieval::slack::SlackQuery {
                    query: a.topic.clone(),
                    limit: Some(30),
                    rerank: false,
                },
                &crate::retrieval::slack::NoPermalinks,
            )
            .await
            .map(|s| s.matches)
            .unwrap_or_default();
        let limit = a
            .limit
            .unwrap_or(FIND_CHANNEL_DEFAULT_LIMIT)
            .clamp(1, FIND_CHANNEL_MAX_LIMIT);
        let mut ranked: Vec<(f64, ChannelInfo)> = listed
            .into_iter()
            .filter_map(|c| serde_json::from_value::<ChannelInfo>(c).ok())
            .filter(ChannelInfo::is_public_open)
            .map(|c| {
                let n = hits.iter().filter(|m| m.channel_id == c.id).count();
                (channel_score(&c, &a.topic, n), c)
            })
            .filter(|(s, _)| *s > 0.0)
            .collect();
        ranked.sort_by(|x, y| {
            y.0.total_cmp(&x.0)
                .then(y.1.num_members.cmp(&x.1.num_members))
                .then(x.1.name.cmp(&y.1.name))
        });
        ranked.truncate(limit);
        ToolResult::ok(json!({
            "channels": ranked.iter().map(|(score, c)| json!({
                "id": c.id, "name": c.name, "purpose": c.purpose, "topic": c.topic,
                "members": c.num_members, "score": score,
            })).collect::<Vec<_>>(),
            "requester_slack_user_id": ctx.principal.slack_user_id,
        }))
    }
}

/// Join `channel` when the bot is not in it (`already_in_channel` is fine).
async fn ensure_joined(api: &SlackApi, channel: &ChannelInfo) -> Result<(), SlackError> {
    if channel.is_member {
        return Ok(());
    }
    api.conversations_join(&channel.id).await.map(|_| ())
}

async fn channel_info(api: &SlackApi, channel: &str) -> Result<ChannelInfo, SlackError> {
    let id = channel.trim().trim_start_matches('#');
    let v = api
        .call("conversations.info", Params::form([("channel", id)]))
        .await?;
    serde_json::from_value(v["channel"].clone()).map_err(|e| SlackError::InvalidResponse {
        method: "conversations.info".into(),
        message: e.to_string(),
    })
}

/// `start_community_conversation(channel, message, cc_slack_user_ids?, confirm?)`.
pub struct StartCommunityConversation;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct StartConversationArgs {
    /// The public channel's id (`C…`).
    pub channel: String,
    /// The exact text the member approved (it names them with `<@U…>`).
    pub message: String,
    /// Members to cc (Slack ids).
    #[serde(default)]
    pub cc_slack_user_ids: Vec<String>,
    /// `true` only after the member explicitly confirmed channel and text.
    #[serde(default)]
    pub confirm: Option<bool>,
}

/// The post as sent: the requester's mention first when the text lacks it,
/// then the cc line.
pub fn community_post_text(message: &str, requester: &str, cc: &[String]) -> String {
    let mention = format!("<@{requester}>");
    let mut text = message.trim().to_string();
    if !text.contains(&mention) {
        text = format!("{mention} {text}");
    }
    let cc: Vec<String> = cc
        .iter()
        .map(|u| u.trim())
        .filter(|u| !u.is_empty() && *u != requester)
        .map(|u| format!("<@{u}>"))
        .collect();
    if !cc.is_empty() {
        text.push_str(&format!("\ncc {}", cc.join(" ")));
    }
    text
}

#[async_trait]
impl TypedTool for StartCommunityConversation {
    type Args = StartConversationArgs;
    fn name(&self) -> &'static str {
        names::START_COMMUNITY_CONVERSATION
    }
    fn description(&self) -> &'static str {
        "Post the member's approved question in a public channel on their behalf (they are \
         @-mentioned). Only after they explicitly confirmed the exact channel and text: pass \
         confirm=true."
    }
    async fn run(&self, a: StartConversationArgs, ctx: &TurnContext) -> ToolResult {
        if a.confirm != Some(true) {
            return ToolResult::failed(
                "Not posted: show the member the channel and the exact text, and call again with \
                 confirm=true only after they say to go ahead.",
            );
        }
        let Some(requester) = ctx.principal.slack_user_id.clone() else {
            return ToolResult::failed("Only a Slack member can start a community conversation.");
        };
        if a.message.trim().is_empty() || a.message.chars().count() > MAX_POST_CHARS {
            return ToolResult::failed(format!(
                "The message must have text and at most {MAX_POST_CHARS} characters."
            ));
        }
        let api = match workspace(self.name(), ctx).await {
            Ok(api) => api,
            Err(r) => return r,
        };
        let channel = match channel_info(&api, &a.channel).await {
            Ok(c) => c,
            Err(e) => return slack_failed(self.name(), "That channel could not be found", &e),
        };
        if !channel.is_public_open() {
            return ToolResult::failed(
                "Community conversations can only start in a public channel.",
            );
        }
        if let Err(e) = ensure_joined(&api, &channel).await {
            return slack_failed(self.name(), "Root could not join that channel", &e);
        }
        let text = community_post_text(&a.message, &requester, &a.cc_slack_user_ids);
        match api
            .post_message(&OutgoingMessage {
                channel: channel.id.clone(),
                text: text.clone(),
                ..OutgoingMessage::default()
            })
            .await
        {
            Ok(ts) => {
                let permalink = api.permalink(&channel.id, &ts).await.ok();
                ToolResult::ok(json!({
                    "posted": true, "channel": channel.id, "channel_name": channel.name,
                    "ts": ts, "permalink": permalink, "text": text,
                }))
            }
            Err(e) => slack_failed(self.name(), "The post did not go through", &e),
        }
    }
}

/// `send_slack_channel_message_admin(channel, message)`.
pub struct SendSlackChannelMessageAdmin;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ChannelMessageArgs {
    /// Channel id (`C…`).
    pub channel: String,
    /// The message.
    pub message: String,
}

#[async_trait]
impl TypedTool for SendSlackChannelMessageAdmin {
    type Args = ChannelMessageArgs;
    fn name(&self) -> &'static str {
        names::SEND_SLACK_CHANNEL_MESSAGE_ADMIN
    }
    fn description(&self) -> &'static str {
        "Admins only: post a message in a Slack channel as the assistant."
    }
    async fn run(&self, a: ChannelMessageArgs, ctx: &TurnContext) -> ToolResult {
        if !ctx.principal.is_admin {
            return ToolResult::failed("Only admins can send messages to channels.");
        }
        if a.message.trim().is_empty() || a.message.chars().count() > MAX_POST_CHARS {
            return ToolResult::failed(format!(
                "The message must have text and at most {MAX_POST_CHARS} characters."
            ));
        }
        let api = match workspace(self.name(), ctx).await {
            Ok(api) => api,
            Err(r) => return r,
        };
        let channel = match channel_info(&api, &a.channel).await {
            Ok(c) => c,
            Err(e) => return slack_failed(self.name(), "That channel could not be found", &e),
        };
        if channel.is_channel
            && !channel.is_private
            && let Err(e) = ensure_joined(&api, &channel).await
        {
            return slack_failed(self.name(), "Root could not join that channel", &e);
        }
        match api
            .post_message(&OutgoingMessage {
                channel: channel.id.clone(),
                text: a.message.trim().to_string(),
                ..OutgoingMessage::default()
            })
            .await
        {
            Ok(ts) => ToolResult::ok(json!({"sent": true, "channel": channel.id, "ts": ts})),
            Err(e) => slack_failed(self.name(), "The message did not go through", &e),
        }
    }
}

/// `send_slack_dm_admin(message, slack_user_ids?, emails?)`.
pub struct SendSlackDmAdmin;

/// Arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AdminDmArgs {
    /// The message each recipient gets.
    pub message: String,
    /// Recipients by Slack id.
    #[serde(default)]
    pub slack_user_ids: Vec<String>,
    /// Recipients by email (looked up in the workspace).
    #[serde(default)]
    pub emails: Vec<String>,
}

/// DM `message` to `user`; the DM channel's message ts.
pub async fn send_dm(api: &SlackApi, user: &str, message: &str) -> Result<String, SlackError> {
    let channel = open_dm(api, user).await?;
    api.post_message(&OutgoingMessage {
        channel,
        text: message.to_string(),
        ..OutgoingMessage::default()
    })
    .await
}

#[async_trait]
impl TypedTool for SendSlackDmAdmin {
    type Args = AdminDmArgs;
    fn name(&self) -> &'static str {
        names::SEND_SLACK_DM_ADMIN
    }
    fn description(&self) -> &'static str {
        "Admins only: send a Slack DM from the assistant to members (by Slack id or email). \
         Up to 10 are sent now; more are queued and sent about one per second."
    }
    async fn run(&self, a: AdminDmArgs, ctx: &TurnContext) -> ToolResult {
        if !ctx.principal.is_admin {
            return ToolResult::failed("Only admins can send DMs to members.");
        }
        if a.message.trim().is_empty() || a.message.chars().count() > MAX_POST_CHARS {
            return ToolResult::failed(format!(
                "The message must have text and at most {MAX_POST_CHARS} characters."
            ));
        }
        let api = match workspace(self.name(), ctx).await {
            Ok(api) => api,
            Err(r) => return r,
        };
        let mut recipients: Vec<String> = Vec::new();
        let mut unresolved: Vec<Value> = Vec::new();
        for id in a
            .slack_user_ids
            .iter()
            .map(|s| s.trim())
            .filter(|s| !s.is_empty())
        {
            if !recipients.iter().any(|r| r == id) {
                recipients.push(id.to_string());
            }
        }
        for email in a.emails.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
            match api
                .call("users.lookupByEmail", Params::form([("email", email)]))
                .await
            {
                Ok(v) => match v["user"]["id"].as_str() {
                    Some(id) if !recipients.iter().any(|r| r == id) => recipients.push(id.into()),
                    Some(_) => {}
                    None => unresolved.push(json!({"email": email, "error": "no user"})),
                },
                Err(e) => unresolved.push(json!({
                    "email": email, "error": e.code().unwrap_or("lookup failed"),
                })),
            }
        }
        if recipients.is_empty() {
            return ToolResult::failed("No recipient could be found in Slack.");
        }
        let message = a.message.trim().to_string();
        if recipients.len() > MAX_INLINE_DM_RECIPIENTS {
            let queued = ctx
                .services
                .queues
                .enqueue_job(
                    &AdminBroadcastPayload {
                        recipients: recipients.clone(),
                        message,
                        requested_by: ctx.principal.principal_ref.clone(),
                    },
                    crate::queue::job::JobOptions {
                        tenant_id: Some(ctx.tenant_id),
                        ..Default::default()
                    },
                )
                .await;
            return match queued {
                Ok((_, job)) => ToolResult::ok(json!({
                    "queued": recipients.len(), "job_id": job.id,
                    "pace": "about one DM per second", "unresolved": unresolved,
                })),
                Err(e) => internal_failure(self.name(), "The DMs could not be queued.", e),
            };
        }
        let mut sent = Vec::new();
        let mut failed = unresolved;
        for user in &recipients {
            match send_dm(&api, user, &message).await {
                Ok(ts) => sent.push(json!({"slack_user_id": user, "ts": ts})),
                Err(e) => failed.push(json!({
                    "slack_user_id": user, "error": e.code().unwrap_or("send failed"),
                })),
            }
        }
        let r = json!({"sent": sent, "failed": failed});
        if sent.is_empty() {
            let mut f = ToolResult::failed("No DM could be delivered.");
            f.data = Some(r);
            f
        } else {
            ToolResult::ok(r)
        }
    }
}

/// `slack-admin-broadcast` payload: one admin DM fan-out over 10 recipients.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AdminBroadcastPayload {
    /// Slack user ids.
    pub recipients: Vec<String>,
    /// The message.
    pub message: String,
    /// The admin's principal ref (for the log).
    pub requested_by: String,
}

impl crate::queue::job::QueuePayload for AdminBroadcastPayload {
    const QUEUE: &'static str = crate::queue::registry::SLACK_ADMIN_BROADCAST;
}

/// The `slack-admin-broadcast` handler: the DMs one by one, about one per
/// second (§13: concurrency 1, one attempt — a failed DM is reported in the
/// job's result, never retried, so nobody gets a message twice).
#[derive(Clone)]
pub struct AdminBroadcast {
    slack: crate::slack::Workspaces,
}

impl AdminBroadcast {
    /// A handler sending through `slack`.
    pub fn new(slack: crate::slack::Workspaces) -> Self {
        AdminBroadcast { slack }
    }
}

#[async_trait]
impl crate::queue::job::TypedJobHandler for AdminBroadcast {
    type Payload = AdminBroadcastPayload;

    async fn run(
        &self,
        p: AdminBroadcastPayload,
        _ctx: &mut crate::queue::JobContext,
    ) -> crate::queue::HandlerResult {
        let api = match self.slack.current().await {
            Ok(Some(api)) => api,
            Ok(None) => return Err(crate::queue::JobError::Permanent(NO_SLACK.into())),
            Err(e) => return Err(crate::queue::JobError::Permanent(e.to_string())),
        };
        let (mut sent, mut failed) = (0usize, Vec::new());
        for (i, user) in p.recipients.iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(self.slack.time_unit()).await;
            }
            match send_dm(&api, user, &p.message).await {
                Ok(_) => sent += 1,
                Err(e) => failed.push(json!({"slack_user_id": user, "error": e.to_string()})),
            }
        }
        tracing::info!(
            requested_by = %p.requested_by,
            sent,
            failed = failed.len(),
            "admin DM broadcast finished"
        );
        Ok(Some(json!({"sent": sent, "failed": failed})))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(name: &str, purpose: &str) -> ChannelInfo {
        ChannelInfo {
            id: format!("C{name}"),
            name: name.into(),
            is_channel: true,
            purpose: purpose.into(),
            ..ChannelInfo::default()
        }
    }

    #[test]
    fn channels_rank_by_name_purpose_and_discussion() {
        let security = channel("security-compliance", "SOC 2, audits and security tooling");
        let random = channel("random", "anything goes");
        assert!(
            channel_score(&security, "SOC 2 compliance auditors", 0)
                > channel_score(&random, "SOC 2 compliance auditors", 0)
        );
        assert_eq!(channel_score(&random, "SOC 2 compliance auditors", 0), 0.0);
        assert_eq!(channel_score(&random, "anything", 3), 1.0 + 6.0);
    }

    #[test]
    fn community_posts_mention_the_requester_once_and_cc_others() {
        assert_eq!(
            community_post_text("<@U1> is researching SOC 2 — tips?", "U1", &[]),
            "<@U1> is researching SOC 2 — tips?"
        );
        assert_eq!(
            community_post_text(
                "Anyone been through SOC 2?",
                "U1",
                &["U2".into(), "U1".into()]
            ),
            "<@U1> Anyone been through SOC 2?\ncc <@U2>"
        );
    }

    #[test]
    fn only_open_public_channels_take_community_posts() {
        let mut c = channel("general", "");
        assert!(c.is_public_open());
        c.is_archived = true;
        assert!(!c.is_public_open());
        let mut p = channel("secret", "");
        p.is_private = true;
        assert!(!p.is_public_open());
    }
}

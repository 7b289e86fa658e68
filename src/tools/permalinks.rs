//! Live Slack permalink resolution (§10.3): a Slack link in a search query
//! names one message; the indexed copy answers first, and a message Root has
//! not indexed (a private-to-Root history, a message older than the install,
//! an edit not yet re-indexed) is fetched live from Slack
//! (`conversations.history` at exactly that ts, then `conversations.replies`
//! for thread replies). Without Slack credentials only the index answers.

use async_trait::async_trait;
use storage::ProcessedSlackMessage;
use uuid::Uuid;

use crate::retrieval::params::SLACK_PERMALINK_SCORE;
use crate::retrieval::slack::{PermalinkResolver, SlackMatch, SlackPermalink, StoredPermalinks};
use crate::slack::Workspaces;
use crate::slack::events::ts_instant;

/// Stored first, then Slack.
pub struct LivePermalinks {
    /// The indexed history.
    pub stored: StoredPermalinks,
    /// The tenants' workspaces.
    pub slack: Workspaces,
}

#[async_trait]
impl PermalinkResolver for LivePermalinks {
    async fn resolve(&self, link: &SlackPermalink) -> Option<SlackMatch> {
        if let Some(m) = self.stored.resolve(link).await {
            return Some(m);
        }
        let api = self.slack.current().await.ok()??;
        let ts = link.message_ts.as_str();
        let message = api.message_at(&link.channel_id, ts).await?;
        let text = message["text"].as_str()?.to_string();
        let row = ProcessedSlackMessage {
            id: Uuid::nil(),
            channel_id: link.channel_id.clone(),
            user_id: message["user"].as_str().map(str::to_string),
            message_ts: ts.to_string(),
            thread_ts: message["thread_ts"]
                .as_str()
                .filter(|t| *t != ts)
                .map(str::to_string),
            message_text: text,
            message_date: ts_instant(ts).unwrap_or_default(),
            permalink: Some(link.url.clone()),
            ..ProcessedSlackMessage::default()
        };
        Some(SlackMatch::from_message(&row, SLACK_PERMALINK_SCORE))
    }
}

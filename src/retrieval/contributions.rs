//! A member's Slack contributions (§5.1, §12.2 `/slack/contributions`):
//! their own indexed public messages (`processed_slack_messages` with
//! `user_id` = their Slack id; the row id is the `contribution_id`). One
//! implementation serves the member tools and the Platform API, so both
//! scope by author the same way: another member's row answers like a
//! missing one. Every change goes through the ingest API, so search follows;
//! removing withdraws from the index and never touches Slack.

use schemars::JsonSchema;
use serde::Serialize;
use storage::{IndexCorpus, ProcessedSlackMessage, Scan, Store, Ts, key};
use uuid::Uuid;

use super::Retrieval;
use super::slack::{SlackPermalink, find_permalink};
use crate::platform::tenancy::current_tenant_id;
use crate::slack::Workspaces;
use crate::slack::api::Params;
use crate::slack::events::ts_instant;

/// A list returns at most this many contributions (§5.1, limit 50).
pub const LIST_CONTRIBUTIONS_LIMIT: usize = 50;
/// Characters of a message shown in lists.
pub const EXCERPT_CHARS: usize = 300;

/// Why a contribution could not be listed or changed.
#[derive(Debug, thiserror::Error)]
pub enum ContributionError {
    /// The member has no known Slack account.
    #[error("no Slack account is known for this member")]
    NoSlackAccount,
    /// `permalink` is not a Slack message link.
    #[error(
        "not a Slack message link; it looks like https://<workspace>.slack.com/archives/<channel>/p<digits>"
    )]
    NotALink,
    /// No such contribution of this member (missing, or someone else's).
    #[error("no such contribution of this member")]
    NotFound,
    /// The linked message is in no public channel Root reads.
    #[error("the message is in no public channel Root reads")]
    NotInPublicChannel,
    /// The linked message was posted by someone else.
    #[error("the message was posted by someone else")]
    NotTheAuthor,
    /// A refresh of a contribution that was removed from search.
    #[error("the contribution was removed from search; add it again by its permalink")]
    Withdrawn,
    /// Storage, index or embedding failure.
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

/// One contribution as members and API clients see it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct Contribution {
    /// `processed_slack_messages.id`.
    pub contribution_id: Uuid,
    /// Slack channel id.
    pub channel_id: String,
    /// Channel name when known.
    pub channel_name: Option<String>,
    /// Slack message ts.
    pub message_ts: String,
    /// Thread parent ts for a reply.
    pub thread_ts: Option<String>,
    /// Link to the message in Slack.
    pub permalink: Option<String>,
    /// When it was posted.
    pub posted_at: Ts,
    /// The text, cut to 300 characters.
    pub text: String,
    /// Whether search finds it (false once removed).
    pub in_search: bool,
}

impl Contribution {
    fn of(m: &ProcessedSlackMessage) -> Self {
        Contribution {
            contribution_id: m.id,
            channel_id: m.channel_id.clone(),
            channel_name: m.channel_name.clone(),
            message_ts: m.message_ts.clone(),
            thread_ts: m.thread_ts.clone(),
            permalink: m.permalink.clone(),
            posted_at: m.message_date,
            text: excerpt(&m.message_text),
            in_search: m.withdrawn_at.is_none(),
        }
    }
}

/// The member's contributions, newest first.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ContributionList {
    /// At most 50, only those in search.
    pub contributions: Vec<Contribution>,
    /// How many are listed.
    pub count: usize,
}

/// A contribution (re-)indexed by an add or refresh.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Reindexed {
    /// The contribution, now in search.
    #[serde(flatten)]
    pub contribution: Contribution,
    /// Whether it had been removed from search before.
    pub restored: bool,
    /// Whether search already finds it (false: it will shortly).
    pub searchable: bool,
}

/// A contribution taken out of search.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Removed {
    /// The contribution, now out of search.
    pub contribution: Contribution,
    /// Whether it was in search before (false: nothing changed).
    pub was_in_search: bool,
    /// Whether search already leaves it out (false: it will shortly).
    pub removed_from_search: bool,
}

/// `s` cut to [`EXCERPT_CHARS`] characters.
pub fn excerpt(s: &str) -> String {
    match s.char_indices().nth(EXCERPT_CHARS) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Contribution management for the current tenant, as the Slack user
/// `slack_user_id`.
pub struct SlackContributions<'a> {
    retrieval: &'a Retrieval,
    slack: &'a Workspaces,
    slack_user_id: String,
}

impl<'a> SlackContributions<'a> {
    /// Act for `slack_user_id` (`None`: the member has no Slack account).
    pub fn of(
        retrieval: &'a Retrieval,
        slack: &'a Workspaces,
        slack_user_id: Option<&str>,
    ) -> Result<Self, ContributionError> {
        let slack_user_id = slack_user_id
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .ok_or(ContributionError::NoSlackAccount)?
            .to_string();
        Ok(SlackContributions {
            retrieval,
            slack,
            slack_user_id,
        })
    }

    /// The member's contributions in search, newest first, at most 50.
    pub async fn list(&self) -> Result<ContributionList, ContributionError> {
        let tenant = current_tenant_id().map_err(anyhow::Error::from)?;
        // Withdrawn rows are skipped, so read more until 50 remain or the
        // member's messages run out.
        let mut scan_limit = LIST_CONTRIBUTIONS_LIMIT * 2;
        loop {
            let rows: Vec<ProcessedSlackMessage> = self
                .retrieval
                .store
                .scan(
                    Some(tenant),
                    Scan::index(
                        ProcessedSlackMessage::USER_IDX,
                        key().str(&self.slack_user_id),
                    )
                    .desc()
                    .limit(scan_limit),
                )
                .await
                .map_err(anyhow::Error::from)?;
            let exhausted = rows.len() < scan_limit;
            let contributions: Vec<Contribution> = rows
                .iter()
                .filter(|m| m.withdrawn_at.is_none())
                .take(LIST_CONTRIBUTIONS_LIMIT)
                .map(Contribution::of)
                .collect();
            if exhausted || contributions.len() == LIST_CONTRIBUTIONS_LIMIT {
                let count = contributions.len();
                return Ok(ContributionList {
                    contributions,
                    count,
                });
            }
            scan_limit = scan_limit.saturating_mul(4);
        }
    }

    /// Put the member's message at `permalink` into search: the indexed
    /// copy, or (never indexed) the message fetched live from a public,
    /// unarchived channel.
    pub async fn add(&self, permalink: &str) -> Result<Reindexed, ContributionError> {
        let link = find_permalink(permalink).ok_or(ContributionError::NotALink)?;
        let tenant = current_tenant_id().map_err(anyhow::Error::from)?;
        let found: Option<ProcessedSlackMessage> = self
            .retrieval
            .store
            .find_unique(
                Some(tenant),
                ProcessedSlackMessage::MESSAGE_KEY,
                key().str(&link.channel_id).str(&link.message_ts),
            )
            .await
            .map_err(anyhow::Error::from)?;
        let msg = match found {
            Some(m) => m,
            None => self
                .live_public_message(&link)
                .await
                .ok_or(ContributionError::NotInPublicChannel)?,
        };
        if msg.user_id.as_deref() != Some(self.slack_user_id.as_str()) {
            return Err(ContributionError::NotTheAuthor);
        }
        self.reindex(msg).await
    }

    /// Re-index contribution `id` from its stored copy.
    pub async fn refresh(&self, id: Uuid) -> Result<Reindexed, ContributionError> {
        let msg = self.own(id).await?;
        if msg.withdrawn_at.is_some() {
            return Err(ContributionError::Withdrawn);
        }
        self.reindex(msg).await
    }

    /// Take contribution `id` out of search (idempotent; Slack is untouched).
    pub async fn remove(&self, id: Uuid) -> Result<Removed, ContributionError> {
        let msg = self.own(id).await?;
        let was_in_search = msg.withdrawn_at.is_none();
        let mut removed_from_search = true;
        if was_in_search {
            let seq = self
                .retrieval
                .withdraw_slack_message(&msg.channel_id, &msg.message_ts)
                .await
                .map_err(anyhow::Error::from)?;
            removed_from_search = self
                .retrieval
                .wait_searchable(IndexCorpus::SlackMessages, seq)
                .await
                .is_ok();
        }
        let mut contribution = Contribution::of(&msg);
        contribution.in_search = false;
        Ok(Removed {
            contribution,
            was_in_search,
            removed_from_search,
        })
    }

    /// The member's message `id` (someone else's answers like a missing one).
    async fn own(&self, id: Uuid) -> Result<ProcessedSlackMessage, ContributionError> {
        let tenant = current_tenant_id().map_err(anyhow::Error::from)?;
        let found: Option<ProcessedSlackMessage> = self
            .retrieval
            .store
            .get(Some(tenant), key().uuid(id))
            .await
            .map_err(anyhow::Error::from)?;
        found
            .filter(|m| m.user_id.as_deref() == Some(self.slack_user_id.as_str()))
            .ok_or(ContributionError::NotFound)
    }

    /// Index `msg` (clearing a withdrawal) and wait until search sees it.
    async fn reindex(
        &self,
        mut msg: ProcessedSlackMessage,
    ) -> Result<Reindexed, ContributionError> {
        let restored = msg.withdrawn_at.take().is_some();
        let (row, seq) = self
            .retrieval
            .index_slack_message(msg)
            .await
            .map_err(anyhow::Error::from)?;
        let searchable = self
            .retrieval
            .wait_searchable(IndexCorpus::SlackMessages, seq)
            .await
            .is_ok();
        Ok(Reindexed {
            contribution: Contribution::of(&row),
            restored,
            searchable,
        })
    }

    /// `link`'s message fetched live, as an unindexed row — only from a
    /// public, unarchived channel.
    async fn live_public_message(&self, link: &SlackPermalink) -> Option<ProcessedSlackMessage> {
        let api = self.slack.current().await.ok()??;
        let info = api
            .call(
                "conversations.info",
                Params::form([("channel", link.channel_id.as_str())]),
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
        let m = api.message_at(&link.channel_id, &link.message_ts).await?;
        let now = self.retrieval.clock.now();
        Some(ProcessedSlackMessage {
            id: Uuid::new_v4(),
            tenant_id: current_tenant_id().ok()?,
            channel_id: link.channel_id.clone(),
            channel_name: ch["name"].as_str().map(str::to_string),
            user_id: m["user"].as_str().map(str::to_string),
            message_ts: link.message_ts.clone(),
            thread_ts: m["thread_ts"]
                .as_str()
                .filter(|t| *t != link.message_ts)
                .map(str::to_string),
            message_text: m["text"].as_str()?.to_string(),
            message_date: ts_instant(&link.message_ts).unwrap_or(now),
            permalink: Some(link.url.clone()),
            created_at: now,
            ..ProcessedSlackMessage::default()
        })
    }
}

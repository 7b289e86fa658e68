//! Mention leaderboards (§6, §12.2 `/mentions/*`) from `reply_mentions`:
//! how often the agent's replies named each member, and how often it did
//! so because it used content they wrote (`content_sourced`).
//!
//! The tier filter matches `principals.tier` exactly (`member` or
//! `mentor`; `all` keeps everyone); rows without a known principal (a
//! Slack id nobody resolved) are left off the leaderboard.

use std::collections::HashMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use storage::{
    ConversationLog, Key, MatchedVia, Principal, RedbStore, ReplyMention, Scan, Ts, key,
};
use uuid::Uuid;

use super::{InsightError, PageKey, cut_page, newest_first, principals_by_id};

/// Leaderboard rows by default.
pub const LEADERBOARD_DEFAULT_LIMIT: usize = 20;
/// Largest leaderboard.
pub const LEADERBOARD_MAX_LIMIT: usize = 100;
/// Details per page by default.
pub const DETAILS_DEFAULT_LIMIT: usize = 50;
/// Largest details page.
pub const DETAILS_MAX_LIMIT: usize = 200;

/// Whose mentions rank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum TierFilter {
    /// Principals of tier `member`.
    Member,
    /// Principals of tier `mentor`.
    Mentor,
    /// Everyone.
    #[default]
    All,
}

impl TierFilter {
    fn keeps(self, tier: &str) -> bool {
        match self {
            TierFilter::Member => tier == "member",
            TierFilter::Mentor => tier == "mentor",
            TierFilter::All => true,
        }
    }
}

/// A member's mention figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, JsonSchema)]
pub struct MentionCounts {
    /// Replies that named them.
    pub mentions: u64,
    /// Of those, replies that used content they wrote.
    pub content_sourced: u64,
    /// Named by Slack mention.
    pub by_slack_id: u64,
    /// Named by display name.
    pub by_name: u64,
    /// The latest mention.
    #[schemars(with = "Option<String>")]
    pub last_mentioned_at: Option<Ts>,
}

impl MentionCounts {
    fn add(&mut self, m: &ReplyMention) {
        self.mentions += 1;
        self.content_sourced += u64::from(m.content_sourced);
        match m.matched_via {
            MatchedVia::SlackId => self.by_slack_id += 1,
            MatchedVia::Name => self.by_name += 1,
        }
        self.last_mentioned_at = self.last_mentioned_at.max(Some(m.message_at));
    }
}

/// One leaderboard row.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct LeaderboardEntry {
    /// 1 = most mentioned.
    pub rank: usize,
    /// The member's stable ref.
    pub principal_ref: String,
    /// Their display name.
    pub display_name: Option<String>,
    /// Their tier.
    pub tier: String,
    /// Their figures.
    #[serde(flatten)]
    pub counts: MentionCounts,
}

/// The leaderboard of `tier` within `[from, to)`: most mentions first, then
/// most content-sourced, then ref.
pub async fn leaderboard(
    store: &RedbStore,
    tenant: Uuid,
    tier: TierFilter,
    from: Option<Ts>,
    to: Option<Ts>,
    limit: usize,
) -> Result<Vec<LeaderboardEntry>, InsightError> {
    Ok(store
        .snapshot(move |s| {
            let mut per: HashMap<Uuid, MentionCounts> = HashMap::new();
            s.scan_filtered::<ReplyMention>(
                Some(tenant),
                &newest_first(ReplyMention::MESSAGE_AT_IDX, key(), from, to, None),
                |m| {
                    if let Some(p) = m.mentioned_principal_id {
                        per.entry(p).or_default().add(m);
                    }
                    false
                },
            )?;
            let people = principals_by_id(s, tenant, per.keys().copied())?;
            let mut rows: Vec<(Principal, MentionCounts)> = per
                .into_iter()
                .filter_map(|(id, c)| people.get(&id).map(|p| (p.clone(), c)))
                .filter(|(p, _)| tier.keeps(&p.tier))
                .collect();
            rows.sort_by(|(pa, a), (pb, b)| {
                b.mentions
                    .cmp(&a.mentions)
                    .then(b.content_sourced.cmp(&a.content_sourced))
                    .then(pa.ref_.cmp(&pb.ref_))
            });
            Ok(rows
                .into_iter()
                .take(limit)
                .enumerate()
                .map(|(i, (p, counts))| LeaderboardEntry {
                    rank: i + 1,
                    principal_ref: p.ref_,
                    display_name: p.display_name,
                    tier: p.tier,
                    counts,
                })
                .collect())
        })
        .await?)
}

fn principal_scan(
    principal: Uuid,
    from: Option<Ts>,
    to: Option<Ts>,
    after: Option<PageKey>,
) -> Scan {
    newest_first(
        ReplyMention::PRINCIPAL_IDX,
        key().uuid(principal),
        from,
        to,
        after,
    )
}

/// `principal`'s figures within `[from, to)`.
pub async fn counts(
    store: &RedbStore,
    tenant: Uuid,
    principal: Uuid,
    from: Option<Ts>,
    to: Option<Ts>,
) -> Result<MentionCounts, InsightError> {
    Ok(store
        .snapshot(move |s| {
            let mut c = MentionCounts::default();
            s.scan_filtered::<ReplyMention>(
                Some(tenant),
                &principal_scan(principal, from, to, None),
                |m| {
                    c.add(m);
                    false
                },
            )?;
            Ok(c)
        })
        .await?)
}

/// One mention of a member.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct MentionDetail {
    /// The `reply_mentions` row id.
    pub id: Uuid,
    /// When the reply was sent.
    #[schemars(with = "String")]
    pub message_at: Ts,
    /// `slack_id` or `name`.
    pub matched_via: String,
    /// The reply used content they wrote.
    pub content_sourced: bool,
    /// The name the reply used (name matches).
    pub mentioned_name: Option<String>,
    /// The reply's log row.
    pub conversation_log_id: Option<Uuid>,
    /// The exchange it answered.
    pub exchange_key: Option<String>,
    /// The reply's channel (absent when its log row is gone).
    pub channel: Option<String>,
}

/// A page of `principal`'s mentions, newest first, after `after`.
pub async fn details(
    store: &RedbStore,
    tenant: Uuid,
    principal: Uuid,
    from: Option<Ts>,
    to: Option<Ts>,
    after: Option<PageKey>,
    limit: usize,
) -> Result<(Vec<MentionDetail>, Option<PageKey>), InsightError> {
    Ok(store
        .snapshot(move |s| {
            let rows: Vec<ReplyMention> = s.scan_filtered(
                Some(tenant),
                &principal_scan(principal, from, to, after).limit(limit + 1),
                |_| true,
            )?;
            let (rows, next) = cut_page(rows, limit, |m| (m.message_at, m.id));
            let pks: Vec<Key> = rows
                .iter()
                .map(|m| key().uuid(m.conversation_log_id.unwrap_or(Uuid::nil())))
                .collect();
            let logs = s.get_many::<ConversationLog>(Some(tenant), &pks)?;
            let items = rows
                .into_iter()
                .zip(logs)
                .map(|(m, log)| MentionDetail {
                    id: m.id,
                    message_at: m.message_at,
                    matched_via: m.matched_via.as_str().into(),
                    content_sourced: m.content_sourced,
                    mentioned_name: m.mentioned_name,
                    conversation_log_id: m.conversation_log_id,
                    exchange_key: m.exchange_key,
                    channel: log.map(|l| l.channel.as_str().to_string()),
                })
                .collect();
            Ok((items, next))
        })
        .await?)
}

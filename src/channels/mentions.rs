//! Reply mentions (§6, §2.4 `reply_mentions`): which members the agent
//! named in its replies, for the mention leaderboards — and whether the
//! named member authored a source the run consulted (`content_sourced`:
//! credit for content, not just a name-drop).
//!
//! A reply is scanned for Slack mentions (`<@U…>`, `matched_via =
//! slack_id`) and for members' display names (whole words, any case,
//! `matched_via = name`). Names shorter than [`MIN_NAME_CHARS`] and names
//! two members share are ignored (a guess is worse than nothing); a name
//! inside a longer matched name counts only as the longer one; the member
//! the reply answers is never counted (the prompt tells the model to use
//! their name). Each member counts once per reply: the Slack id is the
//! row's key when the member has one, so a Slack mention and their name
//! are one row (the table's unique key makes re-scans inserts of nothing).
//!
//! Scans never run on the turn's path: `run_channel_turn` (and the email
//! channel, once its reply is accepted) hands the logged reply to
//! [`ReplyMentions::spawn_scan`]. The members' names are read once per
//! tenant and kept [`DIRECTORY_TTL`] (one scan of `principals`, not one
//! read per candidate). The `reply-mention-sweep` tick (hourly, fanned out
//! per tenant) re-scans the outbound logs of the last [`RESCAN_WINDOW`]
//! with a fresh directory: it catches replies whose scan was lost (a
//! restart) and members who joined since, and upgrades `content_sourced`
//! once the run's source usage is stored. Rows store names and ids only,
//! never reply text (§2.4 privacy rule).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use aho_corasick::{AhoCorasick, MatchKind};
use async_trait::async_trait;
use moka::sync::Cache;
use serde::Serialize;
use serde_json::Value;
use storage::{
    ConversationLog, Direction, KnowledgePage, KnowledgePageSummary, MatchedVia, Principal,
    ProcessedSlackMessage, RedbStore, ReplyMention, ReplySourceUsage, Scan, SlackMessageText,
    SourceUsageType, StorageError, StorageResult, Store, TenantStatus, Ts, key,
};
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use crate::platform::clock::Clock;
use crate::platform::tenancy;
use crate::queue::fan_out::fan_out;
use crate::queue::job::{ReplyMentionSweepTick, TypedJobHandler};
use crate::queue::{HandlerResult, JobContext, JobError, Queues};

/// How far back the hourly sweep re-scans (§13).
pub const RESCAN_WINDOW: Duration = Duration::from_secs(48 * 3600);
/// Display names shorter than this (in characters) are never matched.
pub const MIN_NAME_CHARS: usize = 3;
/// How long a tenant's member directory is reused by reply scans.
pub const DIRECTORY_TTL: Duration = Duration::from_secs(60);
/// Logs read per page by the sweep.
const SWEEP_PAGE: usize = 500;

/// A source a run consulted: its type and ref (`channel:ts` or a slug).
pub type SourceRef = (SourceUsageType, String);

/// A member as the scan sees them.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Known {
    id: Uuid,
    slack_user_id: Option<String>,
    name: Option<String>,
}

/// Who can be mentioned in one tenant: principals by Slack id and by
/// (unambiguous) display name.
pub struct Directory {
    by_slack: HashMap<String, Known>,
    names: Vec<Known>,
    matcher: Option<AhoCorasick>,
}

/// One member named in a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mention {
    /// Their principal, when the directory knows them.
    pub principal_id: Option<Uuid>,
    /// Their Slack id (the mention's, or the principal's).
    pub slack_user_id: Option<String>,
    /// Their display name, when known.
    pub name: Option<String>,
    /// How the reply named them.
    pub via: MatchedVia,
}

impl Directory {
    /// The directory of `principals` (one tenant's).
    pub fn new(principals: impl IntoIterator<Item = Principal>) -> Directory {
        let mut by_slack = HashMap::new();
        let mut by_name: HashMap<String, Option<Known>> = HashMap::new();
        for p in principals {
            let name = p
                .display_name
                .as_deref()
                .map(str::trim)
                .filter(|n| !n.is_empty())
                .map(str::to_string);
            let known = Known {
                id: p.id,
                slack_user_id: p.slack_user_id.clone(),
                name: name.clone(),
            };
            if let Some(s) = &p.slack_user_id {
                by_slack.insert(s.clone(), known.clone());
            }
            if let Some(n) = name.filter(|n| n.chars().count() >= MIN_NAME_CHARS) {
                by_name
                    .entry(n.to_lowercase())
                    .and_modify(|slot| *slot = None)
                    .or_insert(Some(known));
            }
        }
        let mut entries: Vec<(String, Known)> = by_name
            .into_iter()
            .filter_map(|(n, k)| k.map(|k| (n, k)))
            .collect();
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let matcher = (!entries.is_empty())
            .then(|| {
                AhoCorasick::builder()
                    .match_kind(MatchKind::Standard)
                    .build(entries.iter().map(|(n, _)| n.as_str()))
                    .map_err(|e| tracing::error!(error = %e, "member name matcher not built"))
                    .ok()
            })
            .flatten();
        Directory {
            by_slack,
            names: entries.into_iter().map(|(_, k)| k).collect(),
            matcher,
        }
    }

    /// Members `text` names, each once (a Slack mention first), leaving out
    /// the member with id `except` / Slack id `except_slack`.
    pub fn find(
        &self,
        text: &str,
        except: Option<Uuid>,
        except_slack: Option<&str>,
    ) -> Vec<Mention> {
        let mut out: Vec<Mention> = Vec::new();
        let mut seen_ids: HashSet<Uuid> = HashSet::new();
        let mut seen_slack: HashSet<String> = HashSet::new();
        for id in slack_mentions(text) {
            if Some(id) == except_slack || !seen_slack.insert(id.to_string()) {
                continue;
            }
            let known = self.by_slack.get(id);
            if known.is_some_and(|k| Some(k.id) == except) {
                continue;
            }
            if let Some(k) = known {
                seen_ids.insert(k.id);
            }
            out.push(Mention {
                principal_id: known.map(|k| k.id),
                slack_user_id: Some(id.to_string()),
                name: known.and_then(|k| k.name.clone()),
                via: MatchedVia::SlackId,
            });
        }
        for k in self.name_matches(text) {
            if Some(k.id) == except
                || (except_slack.is_some() && k.slack_user_id.as_deref() == except_slack)
                || !seen_ids.insert(k.id)
                || k.slack_user_id
                    .as_ref()
                    .is_some_and(|s| !seen_slack.insert(s.clone()))
            {
                continue;
            }
            out.push(Mention {
                principal_id: Some(k.id),
                slack_user_id: k.slack_user_id.clone(),
                name: k.name.clone(),
                via: MatchedVia::Name,
            });
        }
        out
    }

    /// Members whose whole name occurs in `text` (any case), in order; a
    /// match inside a longer one is dropped.
    fn name_matches(&self, text: &str) -> Vec<&Known> {
        let Some(matcher) = &self.matcher else {
            return Vec::new();
        };
        let lower = text.to_lowercase();
        let word = |c: char| c.is_alphanumeric() || c == '_';
        let mut hits: Vec<(usize, usize, usize)> = matcher
            .find_overlapping_iter(&lower)
            .filter(|m| {
                let before = lower[..m.start()].chars().next_back();
                let after = lower[m.end()..].chars().next();
                !before.is_some_and(word) && !after.is_some_and(word)
            })
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
            .collect();
        hits.sort_by_key(|&(s, e, _)| (s, std::cmp::Reverse(e)));
        let mut out = Vec::new();
        let mut covered_until = 0;
        for (_, end, pattern) in hits {
            if end <= covered_until {
                continue;
            }
            covered_until = end;
            out.push(&self.names[pattern]);
        }
        out
    }
}

/// The Slack user ids of `<@U…>` / `<@W…>` mentions (`<@U…|label>` too):
/// upper-case letters, digits and `_` after the `U` / `W`.
fn slack_mentions(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("<@") {
        rest = &rest[at + 2..];
        let end = rest.find(['>', '|']).unwrap_or(rest.len());
        let id = &rest[..end];
        let closed = rest[end..].starts_with('>') || rest[end..].starts_with('|');
        if closed
            && id.len() >= 2
            && id.starts_with(['U', 'W'])
            && id
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
        {
            out.push(id);
        }
    }
    out
}

/// Who authored the sources a run consulted.
#[derive(Debug, Default)]
struct Authors {
    slack_users: HashSet<String>,
    members: HashSet<String>,
}

impl Authors {
    fn wrote(&self, m: &Mention) -> bool {
        m.slack_user_id
            .as_ref()
            .is_some_and(|s| self.slack_users.contains(s))
            || m.principal_id
                .is_some_and(|id| self.members.contains(&id.to_string()))
    }
}

/// What one sweep of a tenant did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MentionSweepReport {
    /// Outbound replies scanned.
    pub replies: usize,
    /// Rows inserted.
    pub inserted: usize,
    /// Rows whose `content_sourced` became true.
    pub upgraded: usize,
}

/// What one reply's scan wrote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recorded {
    /// Rows inserted.
    pub inserted: usize,
    /// Rows whose `content_sourced` became true.
    pub upgraded: usize,
}

/// Reply mention scans and the sweep. Cheap to clone.
#[derive(Clone)]
pub struct ReplyMentions {
    inner: Arc<Inner>,
}

struct Inner {
    store: RedbStore,
    clock: Arc<dyn Clock>,
    directories: Cache<Uuid, Arc<Directory>>,
    tasks: TaskTracker,
}

impl ReplyMentions {
    /// Scans over `store`, stamped by `clock`.
    pub fn new(store: RedbStore, clock: Arc<dyn Clock>) -> ReplyMentions {
        ReplyMentions {
            inner: Arc::new(Inner {
                store,
                clock,
                directories: Cache::builder()
                    .max_capacity(1_000)
                    .time_to_live(DIRECTORY_TTL)
                    .build(),
                tasks: TaskTracker::new(),
            }),
        }
    }

    /// Scan the logged reply `log` on its own task (the caller does not
    /// wait); `refs` = the run's sources when the caller has them (else
    /// they are read from `reply_source_usage`). Failures are logged.
    pub fn spawn_scan(&self, log: ConversationLog, refs: Option<Vec<SourceRef>>) {
        if log.direction != Direction::Outbound {
            return;
        }
        let this = self.clone();
        self.inner.tasks.spawn(async move {
            let directory = match this.directory(log.tenant_id).await {
                Ok(d) => d,
                Err(e) => {
                    tracing::warn!(tenant = %log.tenant_id, error = %e, "reply mentions: members not read");
                    return;
                }
            };
            match this.scan_reply(&directory, &log, refs).await {
                Ok(r) if r.inserted > 0 => {
                    tracing::debug!(log = %log.id, inserted = r.inserted, "reply mentions recorded")
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(tenant = %log.tenant_id, log = %log.id, error = %e, "reply mentions not recorded")
                }
            }
        });
    }

    /// Wait until every spawned scan has finished (tests, shutdown).
    pub async fn idle(&self) {
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
        self.inner.tasks.reopen();
    }

    /// Drop `tenant`'s cached directory (the tenant was deleted).
    pub fn forget(&self, tenant: Uuid) {
        self.inner.directories.invalidate(&tenant);
    }

    /// The tenant's directory (cached [`DIRECTORY_TTL`]).
    async fn directory(&self, tenant: Uuid) -> StorageResult<Arc<Directory>> {
        if let Some(d) = self.inner.directories.get(&tenant) {
            return Ok(d);
        }
        self.load_directory(tenant).await
    }

    /// Read the tenant's principals once into a fresh directory (cached).
    async fn load_directory(&self, tenant: Uuid) -> StorageResult<Arc<Directory>> {
        let principals: Vec<Principal> = self.inner.store.scan(Some(tenant), Scan::all()).await?;
        let directory = Arc::new(Directory::new(principals));
        self.inner.directories.insert(tenant, directory.clone());
        Ok(directory)
    }

    /// Scan one outbound log row and record its mentions (idempotent).
    pub async fn scan_reply(
        &self,
        directory: &Directory,
        log: &ConversationLog,
        refs: Option<Vec<SourceRef>>,
    ) -> StorageResult<Recorded> {
        let text = log.message_text.as_deref().unwrap_or_default();
        if log.direction != Direction::Outbound || text.trim().is_empty() {
            return Ok(Recorded::default());
        }
        let mentions = directory.find(text, log.principal_id, log.slack_user_id.as_deref());
        if mentions.is_empty() {
            return Ok(Recorded::default());
        }
        let tenant = log.tenant_id;
        let mut refs = refs.unwrap_or_default();
        if let Some(run_id) = run_id_of(log) {
            refs.extend(self.stored_refs(tenant, run_id).await?);
        }
        let authors = self.authors(tenant, refs).await?;
        let now = self.inner.clock.now();
        let rows: Vec<ReplyMention> = mentions
            .iter()
            .map(|m| ReplyMention {
                id: Uuid::new_v4(),
                tenant_id: tenant,
                conversation_log_id: Some(log.id),
                exchange_key: log.exchange_key.clone(),
                mentioned_principal_id: m.principal_id,
                mentioned_slack_user_id: m.slack_user_id.clone(),
                mentioned_name: m.name.clone(),
                matched_via: m.via,
                content_sourced: authors.wrote(m),
                message_at: log.message_at,
                created_at: now,
            })
            .collect();
        // Analytics rows: relaxed durability, like the source-usage hook.
        let (recorded, _) = self
            .inner
            .store
            .transact_relaxed(move |tx| {
                let mut r = Recorded::default();
                for row in rows {
                    match tx.insert(&row) {
                        Ok(()) => r.inserted += 1,
                        Err(StorageError::Conflict { .. }) => {
                            if !row.content_sourced {
                                continue;
                            }
                            let who = row
                                .mentioned_slack_user_id
                                .clone()
                                .or_else(|| row.mentioned_name.as_deref().map(lower))
                                .unwrap_or_default();
                            let stored: Vec<ReplyMention> = tx.scan(
                                Some(tenant),
                                Scan::index(
                                    ReplyMention::LOG_MENTION_KEY,
                                    key()
                                        .uuid(row.conversation_log_id.unwrap_or_default())
                                        .str(&who),
                                )
                                .limit(1),
                            )?;
                            if let Some(mut old) = stored.into_iter().next()
                                && !old.content_sourced
                            {
                                old.content_sourced = true;
                                tx.update(&old)?;
                                r.upgraded += 1;
                            }
                        }
                        Err(e) => return Err(e),
                    }
                }
                Ok(r)
            })
            .await?;
        Ok(recorded)
    }

    /// The run's stored source refs (`reply_source_usage`).
    async fn stored_refs(&self, tenant: Uuid, run_id: Uuid) -> StorageResult<Vec<SourceRef>> {
        let rows: Vec<ReplySourceUsage> = self
            .inner
            .store
            .scan(
                Some(tenant),
                Scan::index(ReplySourceUsage::RUN_SOURCE_KEY, key().uuid(run_id)),
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|r| (r.source_type, r.source_ref))
            .collect())
    }

    /// Who wrote the sources: Slack authors of the messages, member
    /// authors of the pages (`author_member_id` = `principals.id`), read
    /// in one snapshot.
    async fn authors(&self, tenant: Uuid, refs: Vec<SourceRef>) -> StorageResult<Authors> {
        if refs.is_empty() {
            return Ok(Authors::default());
        }
        let mut messages = Vec::new();
        let mut pages = Vec::new();
        for (kind, r) in refs {
            match kind {
                SourceUsageType::SlackMessage => {
                    if let Some((channel, ts)) = r.split_once(':') {
                        messages.push(key().str(channel).str(ts));
                    }
                }
                SourceUsageType::KnowledgePage => pages.push(key().str(&r)),
            }
        }
        self.inner
            .store
            .snapshot(move |s| {
                let mut authors = Authors::default();
                for m in s
                    .find_unique_many_projected::<SlackMessageText>(
                        Some(tenant),
                        ProcessedSlackMessage::MESSAGE_KEY,
                        &messages,
                    )?
                    .into_iter()
                    .flatten()
                {
                    authors.slack_users.extend(m.0.user_id);
                }
                for constraint in [KnowledgePage::SLUG_KEY, KnowledgePage::PUBLIC_ID_KEY] {
                    for p in s
                        .find_unique_many_projected::<KnowledgePageSummary>(
                            Some(tenant),
                            constraint,
                            &pages,
                        )?
                        .into_iter()
                        .flatten()
                    {
                        authors.members.extend(p.author_member_id);
                    }
                }
                Ok(authors)
            })
            .await
    }

    /// Re-scan the current tenant's outbound replies of the last
    /// [`RESCAN_WINDOW`] with a fresh directory.
    pub async fn rescan_recent(&self, tenant: Uuid) -> StorageResult<MentionSweepReport> {
        let now = self.inner.clock.now();
        let from = now.plus_micros(-(RESCAN_WINDOW.as_micros() as i64));
        let until = key().ts(now.plus_micros(1));
        let directory = self.load_directory(tenant).await?;
        let mut report = MentionSweepReport::default();
        let mut cursor: Ts = from;
        let mut done: HashSet<Uuid> = HashSet::new();
        loop {
            let page: Vec<ConversationLog> = self
                .inner
                .store
                .scan(
                    Some(tenant),
                    Scan::index(ConversationLog::MESSAGE_AT_IDX, key())
                        .between(Some(key().ts(cursor)), Some(until.clone()))
                        .limit(SWEEP_PAGE),
                )
                .await?;
            let full = page.len() == SWEEP_PAGE;
            let mut fresh = 0;
            for log in page {
                cursor = cursor.max(log.message_at);
                if !done.insert(log.id) {
                    continue;
                }
                fresh += 1;
                if log.direction != Direction::Outbound {
                    continue;
                }
                report.replies += 1;
                let r = self.scan_reply(&directory, &log, None).await?;
                report.inserted += r.inserted;
                report.upgraded += r.upgraded;
            }
            if !full || fresh == 0 {
                break;
            }
        }
        Ok(report)
    }
}

/// The agent run of a logged reply (`metadata.run_id`).
fn run_id_of(log: &ConversationLog) -> Option<Uuid> {
    log.metadata
        .0
        .get("run_id")
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
}

fn lower(s: &str) -> String {
    s.trim().to_lowercase()
}

/// The `reply-mention-sweep` handler: the tick fans out per tenant; a
/// tenant's job re-scans its last 48 h.
#[derive(Clone)]
pub struct ReplyMentionSweep {
    mentions: ReplyMentions,
    queues: Queues,
}

impl ReplyMentionSweep {
    /// The sweep over `mentions`; the tick fans out through `queues`.
    pub fn new(mentions: ReplyMentions, queues: Queues) -> Self {
        ReplyMentionSweep { mentions, queues }
    }
}

#[async_trait]
impl TypedJobHandler for ReplyMentionSweep {
    type Payload = ReplyMentionSweepTick;

    async fn run(&self, tick: ReplyMentionSweepTick, _ctx: &mut JobContext) -> HandlerResult {
        match tenancy::current() {
            Some(ctx) if ctx.tenant.status != TenantStatus::Active => Ok(None),
            Some(ctx) => {
                let report = self
                    .mentions
                    .rescan_recent(ctx.id())
                    .await
                    .map_err(|e| JobError::Retry(format!("reply mention sweep: {e}")))?;
                tracing::info!(tenant = %ctx.id(), ?report, "reply mention sweep");
                Ok(serde_json::to_value(report).ok())
            }
            None => {
                let queued = fan_out(&self.queues, &tick, tick.scheduled_for)
                    .await
                    .map_err(|e| JobError::Retry(format!("reply mention fan-out: {e}")))?;
                Ok(Some(serde_json::json!({ "tenants_queued": queued })))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str, slack: Option<&str>) -> Principal {
        Principal {
            id: Uuid::new_v4(),
            display_name: Some(name.into()),
            slack_user_id: slack.map(String::from),
            ..Principal::default()
        }
    }

    #[test]
    fn slack_mentions_are_parsed_with_or_without_a_label() {
        assert_eq!(
            slack_mentions("ask <@U0ABC> or <@W99|pat>, not <@here> or <#C1> or <@U1"),
            ["U0ABC", "W99"]
        );
        assert!(slack_mentions("no mentions").is_empty());
    }

    #[test]
    fn names_match_whole_words_in_any_case_longest_first() {
        let ada = member("Ada Lovelace", None);
        let short = member("Ada", None);
        let bo = member("Bo", Some("U_BO"));
        let grace = member("Grace", None);
        let d = Directory::new([ada.clone(), short.clone(), bo, grace.clone()]);
        let found = d.find(
            "ADA LOVELACE and ada both know; Bo too; Graceful is not Grace.",
            None,
            None,
        );
        let ids: Vec<_> = found.iter().map(|m| m.principal_id.unwrap()).collect();
        assert_eq!(ids, [ada.id, short.id, grace.id]);
        assert!(found.iter().all(|m| m.via == MatchedVia::Name));
    }

    #[test]
    fn shared_names_are_ambiguous_and_the_addressee_is_left_out() {
        let a = member("Sam Smith", None);
        let b = member("sam smith", None);
        let me = member("Pat Partner", Some("U_PAT"));
        let d = Directory::new([a, b, me.clone()]);
        assert!(d.find("Sam Smith knows", None, None).is_empty());
        assert!(
            d.find("Hi Pat Partner, see <@U_PAT>", Some(me.id), None)
                .is_empty()
        );
        assert!(
            d.find("Hi Pat Partner, see <@U_PAT>", None, Some("U_PAT"))
                .is_empty()
        );
    }

    #[test]
    fn a_member_named_both_ways_counts_once_as_a_slack_mention() {
        let ada = member("Ada Lovelace", Some("U_ADA"));
        let d = Directory::new([ada.clone()]);
        let found = d.find("<@U_ADA> (Ada Lovelace) and <@U_GONE>", None, None);
        assert_eq!(
            found,
            [
                Mention {
                    principal_id: Some(ada.id),
                    slack_user_id: Some("U_ADA".into()),
                    name: Some("Ada Lovelace".into()),
                    via: MatchedVia::SlackId,
                },
                Mention {
                    principal_id: None,
                    slack_user_id: Some("U_GONE".into()),
                    name: None,
                    via: MatchedVia::SlackId,
                },
            ]
        );
    }
}

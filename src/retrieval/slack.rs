//! Slack search (§10.3) and `who_knows`.
//!
//! Inner message search over `processed_slack_messages` (withdrawn rows are
//! never indexed and re-checked on read):
//! - vector lane: top 100 by cosine;
//! - text lane: top 100 by `ts × 4 + 1.25 (full-text LIKE) + 0.35 (channel
//!   LIKE) + 0.35 (user LIKE) + 0.9 (normalised-alphanumeric LIKE, query ≥ 4
//!   chars) + 0.18 per matched term (≤ 8)`, then newest first. `ts` is the
//!   BM25 score of the websearch-style query mapped like `ts_rank_cd(…, 32)`
//!   maps its rank: `s / (s + 1)`, into [0, 1) — so the spec's bonus weights
//!   keep the balance they were written for;
//! - recency lane: the union of both lanes' candidates, newest first, weight 0.4;
//! - fused text + vector + recency, k = 60.
//!
//! Artifact lane (`slack_thread_artifacts`): vector `max(limit, 30)` + text
//! (websearch, BM25) fused, first 15.
//!
//! Outer combiner: a Slack permalink in the query is resolved through a
//! [`PermalinkResolver`] and prepended with relevance 1 000 000; messages and
//! artifacts are fused (ids `kind:channel_id:ts`), capped at 2 per thread,
//! reranked over a window of 30, cut to the limit (≤ 50), and the top 10
//! replies get their parent's text (≤ 500 chars).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use async_trait::async_trait;
use index::corpus::Hit;
use index::rerank::{rerank_fail_open, truncate_chars};
use index::rrf::{Lane, cap_per_source, fuse};
use serde::Serialize;
use storage::{
    ArtifactKind, IndexCorpus, ProcessedSlackMessage, SlackMessageText, SlackThreadArtifact, Store,
    Ts, key,
};
use uuid::Uuid;

use super::docs::thread_key;
use super::params::{
    DEFAULT_LANE_WEIGHT, RRF_K, SLACK_MAX_PER_THREAD, SLACK_RECENCY_LANE_WEIGHT,
    SLACK_RERANK_WINDOW,
};
pub use super::params::{
    SLACK_ARTIFACT_LANE_LIMIT, SLACK_ARTIFACT_VECTOR_MIN, SLACK_CHANNEL_LIKE_BONUS,
    SLACK_FULLTEXT_LIKE_BONUS, SLACK_MAX_BONUS_TERMS, SLACK_MAX_RESULTS,
    SLACK_NORMALIZED_LIKE_BONUS, SLACK_NORMALIZED_MIN_CHARS, SLACK_PARENT_TEXT_CHARS,
    SLACK_PARENT_TEXT_TOP, SLACK_PERMALINK_SCORE, SLACK_TERM_BONUS, SLACK_TEXT_CANDIDATES,
    SLACK_TEXT_LANE_LIMIT, SLACK_TS_RANK_WEIGHT, SLACK_USER_LIKE_BONUS, SLACK_VECTOR_LANE_LIMIT,
    WHO_KNOWS_DEFAULT_LIMIT, WHO_KNOWS_EVIDENCE,
};
use super::{Retrieval, SearchError};
use crate::limits::caps::{MAX_SEARCH_QUERY_CHARS, cut_chars};
use crate::platform::tenancy::current_tenant_id;

/// Query embedding purpose.
pub const PURPOSE_SLACK_SEARCH: &str = "slack_search";

/// What a match is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SlackMatchKind {
    /// A Slack message.
    Message,
    /// A distilled thread (`kind = 'thread'`).
    ThreadSummary,
    /// A same-author burst (`kind = 'burst'`).
    AuthorBurst,
}

impl SlackMatchKind {
    fn id_prefix(self) -> &'static str {
        match self {
            SlackMatchKind::Message => "message",
            SlackMatchKind::ThreadSummary => "thread_summary",
            SlackMatchKind::AuthorBurst => "author_burst",
        }
    }
}

/// One Slack search result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SlackMatch {
    /// Message or artifact.
    pub kind: SlackMatchKind,
    /// `kind:channel_id:ts`.
    pub id: String,
    /// Channel id.
    pub channel_id: String,
    /// Channel name.
    pub channel_name: Option<String>,
    /// Author id (messages, bursts).
    pub user_id: Option<String>,
    /// Author name.
    pub user_name: Option<String>,
    /// Message ts (thread ts for summaries, burst ts for bursts).
    pub message_ts: String,
    /// Thread ts when the message is in a thread.
    pub thread_ts: Option<String>,
    /// Message text or artifact document.
    pub text: String,
    /// Slack permalink.
    pub permalink: Option<String>,
    /// When it was posted (artifacts: last distilled).
    pub date: Ts,
    /// Fused score (1 000 000 for a permalink match).
    pub relevance_score: f64,
    /// Rerank score when the rerank applied.
    pub rerank_score: Option<f64>,
    /// The thread parent's text (≤ 500 chars), for the top replies.
    pub parent_text: Option<String>,
}

impl SlackMatch {
    fn thread(&self) -> String {
        thread_key(
            &self.channel_id,
            self.thread_ts.as_deref(),
            &self.message_ts,
        )
    }

    fn is_reply(&self) -> bool {
        self.kind == SlackMatchKind::Message
            && self
                .thread_ts
                .as_deref()
                .is_some_and(|t| t != self.message_ts)
    }

    /// A message row as a match with `score`.
    pub fn from_message(m: &ProcessedSlackMessage, score: f64) -> Self {
        SlackMatch {
            kind: SlackMatchKind::Message,
            id: format!("message:{}:{}", m.channel_id, m.message_ts),
            channel_id: m.channel_id.clone(),
            channel_name: m.channel_name.clone(),
            user_id: m.user_id.clone(),
            user_name: m.user_name.clone(),
            message_ts: m.message_ts.clone(),
            thread_ts: m.thread_ts.clone(),
            text: m.message_text.clone(),
            permalink: m.permalink.clone(),
            date: m.message_date,
            relevance_score: score,
            rerank_score: None,
            parent_text: None,
        }
    }

    fn from_artifact(a: &SlackThreadArtifact, score: f64) -> Self {
        let (kind, ts) = match a.kind {
            ArtifactKind::Thread => (SlackMatchKind::ThreadSummary, a.thread_ts.clone()),
            ArtifactKind::Burst => (
                SlackMatchKind::AuthorBurst,
                a.burst_ts.clone().unwrap_or_else(|| a.thread_ts.clone()),
            ),
        };
        SlackMatch {
            kind,
            id: format!("{}:{}:{}", kind.id_prefix(), a.channel_id, ts),
            channel_id: a.channel_id.clone(),
            channel_name: a.channel_name.clone(),
            user_id: a.author_user_id.clone(),
            user_name: a.author_name.clone(),
            message_ts: ts,
            thread_ts: Some(a.thread_ts.clone()),
            text: a.document_text.clone(),
            permalink: a.permalink.clone(),
            date: a.updated_at,
            relevance_score: score,
            rerank_score: None,
            parent_text: None,
        }
    }
}

/// Resolves a Slack permalink found in a query to the message it names.
/// The Slack-API resolver arrives with the Slack channel; [`StoredPermalinks`]
/// answers from the indexed history meanwhile.
#[async_trait]
pub trait PermalinkResolver: Send + Sync {
    /// The message behind `link` (channel id + ts parsed from it), if any.
    async fn resolve(&self, link: &SlackPermalink) -> Option<SlackMatch>;
}

/// Resolves permalinks from `processed_slack_messages` of the current tenant.
pub struct StoredPermalinks(pub storage::RedbStore);

#[async_trait]
impl PermalinkResolver for StoredPermalinks {
    async fn resolve(&self, link: &SlackPermalink) -> Option<SlackMatch> {
        let tenant = current_tenant_id().ok()?;
        let m: ProcessedSlackMessage = self
            .0
            .find_unique(
                Some(tenant),
                ProcessedSlackMessage::MESSAGE_KEY,
                key().str(&link.channel_id).str(&link.message_ts),
            )
            .await
            .ok()??;
        (m.withdrawn_at.is_none()).then(|| SlackMatch::from_message(&m, SLACK_PERMALINK_SCORE))
    }
}

/// A Slack permalink: `https://<team>.slack.com/archives/<channel>/p<ts digits>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SlackPermalink {
    /// The link as found.
    pub url: String,
    /// Channel id.
    pub channel_id: String,
    /// Message ts (`1700000000.123456`).
    pub message_ts: String,
}

/// The first Slack permalink in `text`, if any.
pub fn find_permalink(text: &str) -> Option<SlackPermalink> {
    for word in text.split(|c: char| c.is_whitespace() || c == '<' || c == '>' || c == '|') {
        let Some(rest) = word
            .strip_prefix("https://")
            .or_else(|| word.strip_prefix("http://"))
        else {
            continue;
        };
        let Some((host, path)) = rest.split_once('/') else {
            continue;
        };
        if !(host == "slack.com" || host.ends_with(".slack.com")) {
            continue;
        }
        let mut parts = path.split('/');
        if parts.next() != Some("archives") {
            continue;
        }
        let (Some(channel), Some(p)) = (parts.next(), parts.next()) else {
            continue;
        };
        let digits: String = p
            .strip_prefix('p')
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        if digits.len() <= 6 || channel.is_empty() {
            continue;
        }
        let (secs, micros) = digits.split_at(digits.len() - 6);
        return Some(SlackPermalink {
            url: word.to_string(),
            channel_id: channel.to_string(),
            message_ts: format!("{secs}.{micros}"),
        });
    }
    None
}

/// A Slack search request.
#[derive(Clone, Debug, Default)]
pub struct SlackQuery {
    /// The member's words (may contain a permalink).
    pub query: String,
    /// Results wanted (default and maximum 50).
    pub limit: Option<usize>,
    /// Allow the LLM rerank (still subject to `SEARCH_LLM_RERANK`).
    pub rerank: bool,
}

/// The outcome of a Slack search.
#[derive(Clone, Debug, Serialize)]
pub struct SlackSearch {
    /// Matches, best first.
    pub matches: Vec<SlackMatch>,
    /// Whether the LLM rerank reordered them.
    pub reranked: bool,
}

/// One person `who_knows` suggests.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Expert {
    /// Slack user id.
    pub user_id: String,
    /// Display name.
    pub user_name: Option<String>,
    /// Sum of the fused relevance of their matching messages.
    pub score: f64,
    /// How many of the top matches are theirs.
    pub message_count: usize,
    /// Threads those messages are in.
    pub thread_count: usize,
    /// Their best matches (permalink, channel, excerpt).
    pub evidence: Vec<Evidence>,
}

/// A message that shows someone knows the topic.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Evidence {
    /// Slack permalink.
    pub permalink: Option<String>,
    /// Channel name.
    pub channel_name: Option<String>,
    /// First 200 chars.
    pub excerpt: String,
    /// When.
    pub date: Ts,
}

/// The text-lane score of §10.3 for one message.
pub fn text_lane_score(
    query: &str,
    bm25: Option<f32>,
    text: &str,
    channel: Option<&str>,
    user: Option<&str>,
) -> f64 {
    let q = query.trim().to_lowercase();
    let lower = text.to_lowercase();
    let ts = bm25.map_or(0.0, |s| {
        let s = f64::from(s.max(0.0));
        s / (s + 1.0)
    });
    let mut score = ts * SLACK_TS_RANK_WEIGHT;
    if !q.is_empty() && lower.contains(&q) {
        score += SLACK_FULLTEXT_LIKE_BONUS;
    }
    if !q.is_empty() && channel.is_some_and(|c| c.to_lowercase().contains(&q)) {
        score += SLACK_CHANNEL_LIKE_BONUS;
    }
    if !q.is_empty() && user.is_some_and(|u| u.to_lowercase().contains(&q)) {
        score += SLACK_USER_LIKE_BONUS;
    }
    let normalize = |s: &str| -> String { s.chars().filter(|c| c.is_alphanumeric()).collect() };
    let nq = normalize(&q);
    if nq.chars().count() >= SLACK_NORMALIZED_MIN_CHARS && normalize(&lower).contains(&nq) {
        score += SLACK_NORMALIZED_LIKE_BONUS;
    }
    score
        + SLACK_TERM_BONUS
            * bonus_terms(&q)
                .iter()
                .filter(|t| lower.contains(t.as_str()))
                .count() as f64
}

/// The query terms that can earn the per-term bonus: distinct lowercase
/// alphanumeric tokens of ≥ 2 chars, first 8.
pub fn bonus_terms(query: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for t in index::keyword::knowledge_query_tokens(query) {
        if !out.contains(&t) {
            out.push(t);
        }
        if out.len() == SLACK_MAX_BONUS_TERMS {
            break;
        }
    }
    out
}

impl Retrieval {
    /// The inner message search: fused text + vector + recency, with rows.
    async fn message_search(
        &self,
        tenant: Uuid,
        query: &str,
        qvec: Option<&[f32]>,
    ) -> Result<Vec<(ProcessedSlackMessage, f64)>, SearchError> {
        let (idx, lane) = self
            .index_and_vectors(tenant, IndexCorpus::SlackMessages)
            .await?;
        let text = query.to_string();
        let qv = qvec.map(<[f32]>::to_vec);
        let store = self.store.clone();
        let (vector, web, any, keys, rows) = super::run_blocking_here(move |_| {
            let vector = match qv {
                Some(v) => lane.search(&idx, &v, SLACK_VECTOR_LANE_LIMIT, None)?,
                None => Vec::new(),
            };
            let web = idx.keyword_search_web(&text, SLACK_TEXT_CANDIDATES)?;
            let any = idx.keyword_search_any(&text, SLACK_TEXT_CANDIDATES)?;
            // Rows of every candidate, one read snapshot.
            let mut rows_of: HashMap<u64, u128> = HashMap::new();
            for h in vector.iter().chain(&web).chain(&any) {
                rows_of.entry(h.key).or_insert(h.meta.row);
            }
            let keys: Vec<u64> = rows_of.keys().copied().collect();
            let pks: Vec<storage::Key> = keys
                .iter()
                .map(|k| key().uuid(Uuid::from_u128(rows_of[k])))
                .collect();
            // Without their embeddings: up to 200 rows, and search never uses the vectors.
            let rows: Vec<Option<ProcessedSlackMessage>> = store
                .snapshot_blocking(|s| {
                    s.get_many_projected::<SlackMessageText>(Some(tenant), &pks)
                })?
                .into_iter()
                .map(|r| r.map(|m| m.0))
                .collect();
            Ok((vector, web, any, keys, rows))
        })
        .await?;

        let rows: HashMap<u64, ProcessedSlackMessage> = keys
            .into_iter()
            .zip(rows)
            .filter_map(|(k, r)| r.filter(|m| m.withdrawn_at.is_none()).map(|m| (k, m)))
            .collect();

        // Text lane: every keyword candidate scored by the §10.3 formula.
        let bm25: HashMap<u64, f32> = web.iter().map(|h| (h.key, h.score)).collect();
        let mut text_lane: Vec<(u64, f64, i64)> = web
            .iter()
            .chain(&any)
            .map(|h| h.key)
            .collect::<HashSet<u64>>()
            .into_iter()
            .filter_map(|k| {
                let m = rows.get(&k)?;
                let s = text_lane_score(
                    query,
                    bm25.get(&k).copied(),
                    &m.message_text,
                    m.channel_name.as_deref(),
                    m.user_name.as_deref(),
                );
                Some((k, s, m.message_date.micros()))
            })
            .filter(|(_, s, _)| *s > 0.0)
            .collect();
        text_lane.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.2.cmp(&a.2)).then(a.0.cmp(&b.0)));
        text_lane.truncate(SLACK_TEXT_LANE_LIMIT);

        let vector_lane: Vec<u64> = vector
            .iter()
            .map(|h| h.key)
            .filter(|k| rows.contains_key(k))
            .collect();
        let mut recency: Vec<(u64, i64)> = text_lane
            .iter()
            .map(|(k, _, d)| (*k, *d))
            .chain(
                vector_lane
                    .iter()
                    .map(|k| (*k, rows[k].message_date.micros())),
            )
            .collect::<HashMap<u64, i64>>()
            .into_iter()
            .collect();
        recency.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));

        let hit = |k: u64| (k, ());
        let fused = fuse(
            RRF_K,
            vec![
                Lane::new(
                    DEFAULT_LANE_WEIGHT,
                    text_lane.iter().map(|(k, _, _)| hit(*k)).collect(),
                ),
                Lane::new(
                    DEFAULT_LANE_WEIGHT,
                    vector_lane.iter().map(|k| hit(*k)).collect(),
                ),
                Lane::new(
                    SLACK_RECENCY_LANE_WEIGHT,
                    recency.iter().map(|(k, _)| hit(*k)).collect(),
                ),
            ],
        )
        .map_err(|e| SearchError::Task(e.to_string()))?;
        let mut rows = rows;
        Ok(fused
            .into_iter()
            .filter_map(|f| rows.remove(&f.id).map(|m| (m, f.score)))
            .collect())
    }

    /// The artifact lane: vector + websearch text, fused, first 15.
    async fn artifact_search(
        &self,
        tenant: Uuid,
        query: &str,
        qvec: Option<&[f32]>,
        limit: usize,
    ) -> Result<Vec<(SlackThreadArtifact, f64)>, SearchError> {
        let (idx, lane) = self
            .index_and_vectors(tenant, IndexCorpus::SlackArtifacts)
            .await?;
        let text = query.to_string();
        let qv = qvec.map(<[f32]>::to_vec);
        let k = limit.max(SLACK_ARTIFACT_VECTOR_MIN);
        let store = self.store.clone();
        let (top, rows) = super::run_blocking_here(move |_| {
            let vector = match qv {
                Some(v) => lane.search(&idx, &v, k, None)?,
                None => Vec::new(),
            };
            let web = idx.keyword_search_web(&text, k)?;
            let lane = |hits: Vec<Hit>| hits.into_iter().map(|h| (h.key, h.meta.row)).collect();
            let fused = fuse(
                RRF_K,
                vec![
                    Lane::new(DEFAULT_LANE_WEIGHT, lane(vector)),
                    Lane::new(DEFAULT_LANE_WEIGHT, lane(web)),
                ],
            )
            .map_err(|e| SearchError::Task(e.to_string()))?;
            let top: Vec<_> = fused.into_iter().take(SLACK_ARTIFACT_LANE_LIMIT).collect();
            let pks: Vec<storage::Key> = top
                .iter()
                .map(|f| key().uuid(Uuid::from_u128(f.payload)))
                .collect();
            let rows: Vec<Option<SlackThreadArtifact>> =
                store.snapshot_blocking(|s| s.get_many(Some(tenant), &pks))?;
            Ok((top, rows))
        })
        .await?;
        Ok(top
            .into_iter()
            .zip(rows)
            .filter_map(|(f, r)| r.map(|a| (a, f.score)))
            .collect())
    }

    /// Search the tenant's Slack history (§10.3).
    pub async fn search_slack(
        &self,
        q: SlackQuery,
        permalinks: &dyn PermalinkResolver,
    ) -> Result<SlackSearch, SearchError> {
        let tenant = current_tenant_id()?;
        // Cut before the lanes, the query embedding and the rerank prompt.
        let query = cut_chars(q.query.trim(), MAX_SEARCH_QUERY_CHARS)
            .trim_end()
            .to_string();
        if query.is_empty() {
            return Err(SearchError::Invalid("query must not be empty".into()));
        }
        let limit = q.limit.unwrap_or(SLACK_MAX_RESULTS);
        if limit == 0 || limit > SLACK_MAX_RESULTS {
            return Err(SearchError::Invalid(format!(
                "limit must be between 1 and {SLACK_MAX_RESULTS}"
            )));
        }
        let pinned = match find_permalink(&query) {
            Some(link) => permalinks.resolve(&link).await,
            None => None,
        };
        let qvec = self.query_vector(&query, PURPOSE_SLACK_SEARCH).await;
        let messages = self.message_search(tenant, &query, qvec.as_deref()).await?;
        let artifacts = self
            .artifact_search(tenant, &query, qvec.as_deref(), limit)
            .await?;
        let as_lane = |items: Vec<SlackMatch>| {
            items
                .into_iter()
                .map(|m| (m.id.clone(), m))
                .collect::<Vec<_>>()
        };
        let fused = fuse(
            RRF_K,
            vec![
                Lane::new(
                    DEFAULT_LANE_WEIGHT,
                    as_lane(
                        messages
                            .iter()
                            .map(|(m, s)| SlackMatch::from_message(m, *s))
                            .collect(),
                    ),
                ),
                Lane::new(
                    DEFAULT_LANE_WEIGHT,
                    as_lane(
                        artifacts
                            .iter()
                            .map(|(a, s)| SlackMatch::from_artifact(a, *s))
                            .collect(),
                    ),
                ),
            ],
        )
        .map_err(|e| SearchError::Task(e.to_string()))?;
        let mut items: Vec<SlackMatch> = fused
            .into_iter()
            .map(|f| {
                let mut m = f.payload;
                m.relevance_score = f.score;
                m
            })
            .filter(|m| pinned.as_ref().is_none_or(|p| p.id != m.id))
            .collect();
        items = cap_per_source(items, SLACK_MAX_PER_THREAD, SlackMatch::thread);
        let outcome = rerank_fail_open(
            self.reranker.as_deref(),
            self.rerank_enabled && q.rerank,
            &query,
            items,
            SLACK_RERANK_WINDOW,
            |m| m.id.clone(),
            |m| m.text.as_str(),
        )
        .await;
        let reranked = outcome.applied();
        let mut matches: Vec<SlackMatch> = pinned
            .into_iter()
            .chain(
                outcome
                    .items
                    .into_iter()
                    .zip(outcome.scores)
                    .map(|(mut m, s)| {
                        m.rerank_score = s;
                        m
                    }),
            )
            .take(limit)
            .collect();
        self.attach_parents(tenant, &mut matches).await?;
        Ok(SlackSearch { matches, reranked })
    }

    /// Attach the parent message's text to the first replies.
    async fn attach_parents(
        &self,
        tenant: Uuid,
        matches: &mut [SlackMatch],
    ) -> Result<(), SearchError> {
        let wanted: Vec<usize> = matches
            .iter()
            .enumerate()
            .filter(|(_, m)| m.is_reply())
            .map(|(i, _)| i)
            .take(SLACK_PARENT_TEXT_TOP)
            .collect();
        if wanted.is_empty() {
            return Ok(());
        }
        let parents: Vec<Option<ProcessedSlackMessage>> = self
            .store
            .find_unique_many(
                Some(tenant),
                ProcessedSlackMessage::MESSAGE_KEY,
                wanted
                    .iter()
                    .map(|i| {
                        let m = &matches[*i];
                        key()
                            .str(&m.channel_id)
                            .str(m.thread_ts.as_deref().unwrap_or(""))
                    })
                    .collect(),
            )
            .await?;
        for (i, parent) in wanted.into_iter().zip(parents) {
            if let Some(p) = parent.filter(|p| p.withdrawn_at.is_none()) {
                matches[i].parent_text =
                    Some(truncate_chars(&p.message_text, SLACK_PARENT_TEXT_CHARS).to_string());
            }
        }
        Ok(())
    }

    /// `who_knows(topic, limit = 5)`: LLM-free expertise ranking. Runs the
    /// inner message search for the topic (no rerank), then ranks authors
    /// by the sum of the fused relevance of their matching messages; ties go
    /// to the person active in more distinct threads. Evidence = their best
    /// matches' permalinks.
    pub async fn who_knows(
        &self,
        topic: &str,
        limit: Option<usize>,
    ) -> Result<Vec<Expert>, SearchError> {
        let tenant = current_tenant_id()?;
        // Cut before the lanes and the embedding, like `search_slack` (L-6).
        let topic = cut_chars(topic.trim(), MAX_SEARCH_QUERY_CHARS).trim_end();
        if topic.is_empty() {
            return Err(SearchError::Invalid("topic must not be empty".into()));
        }
        let limit = limit.unwrap_or(WHO_KNOWS_DEFAULT_LIMIT);
        if limit == 0 || limit > SLACK_MAX_RESULTS {
            return Err(SearchError::Invalid(format!(
                "limit must be between 1 and {SLACK_MAX_RESULTS}"
            )));
        }
        let qvec = self.query_vector(topic, PURPOSE_SLACK_SEARCH).await;
        let messages = self.message_search(tenant, topic, qvec.as_deref()).await?;
        let mut people: HashMap<String, (Expert, HashSet<String>)> = HashMap::new();
        for (m, score) in messages {
            let Some(user) = m.user_id.clone() else {
                continue;
            };
            let entry = people.entry(user.clone()).or_insert_with(|| {
                (
                    Expert {
                        user_id: user,
                        user_name: m.user_name.clone(),
                        score: 0.0,
                        message_count: 0,
                        thread_count: 0,
                        evidence: Vec::new(),
                    },
                    HashSet::new(),
                )
            });
            entry.0.score += score;
            entry.0.message_count += 1;
            entry.1.insert(thread_key(
                &m.channel_id,
                m.thread_ts.as_deref(),
                &m.message_ts,
            ));
            if entry.0.evidence.len() < WHO_KNOWS_EVIDENCE {
                entry.0.evidence.push(Evidence {
                    permalink: m.permalink.clone(),
                    channel_name: m.channel_name.clone(),
                    excerpt: truncate_chars(&m.message_text, 200).to_string(),
                    date: m.message_date,
                });
            }
        }
        let mut experts: Vec<Expert> = people
            .into_values()
            .map(|(mut e, threads)| {
                e.thread_count = threads.len();
                e
            })
            .collect();
        experts.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then(b.thread_count.cmp(&a.thread_count))
                .then(a.user_id.cmp(&b.user_id))
        });
        experts.truncate(limit);
        Ok(experts)
    }
}

/// A resolver that never resolves (searches without permalink support).
pub struct NoPermalinks;

#[async_trait]
impl PermalinkResolver for NoPermalinks {
    async fn resolve(&self, _: &SlackPermalink) -> Option<SlackMatch> {
        None
    }
}

/// Shared handle type for resolvers.
pub type SharedResolver = Arc<dyn PermalinkResolver>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permalinks_parse_channel_and_ts() {
        let p = find_permalink(
            "what about <https://acme.slack.com/archives/C024BE91L/p1700000000123456?thread_ts=1.2|this>",
        )
        .unwrap();
        assert_eq!(p.channel_id, "C024BE91L");
        assert_eq!(p.message_ts, "1700000000.123456");
        assert!(find_permalink("https://example.com/archives/C1/p1700000000123456").is_none());
        assert!(find_permalink("no link here").is_none());
    }

    #[test]
    fn the_text_lane_score_is_the_spec_formula() {
        // No full-text match, no LIKE: nothing.
        assert_eq!(
            text_lane_score("zebra", None, "hello world", None, None),
            0.0
        );
        // Full-text LIKE (1.25) + normalised LIKE (0.9, "deploy" ≥ 4) + one term (0.18).
        let s = text_lane_score("deploy", None, "We deploy on Fridays", None, None);
        assert!((s - (1.25 + 0.9 + 0.18)).abs() < 1e-9, "{s}");
        // Channel and user LIKE, 0.35 each.
        let s = text_lane_score("ops", None, "nothing", Some("#devops"), Some("Ops Bot"));
        assert!((s - 0.70).abs() < 1e-9, "{s}");
        // ts part: BM25 s → s/(s+1) × 4.
        let s = text_lane_score("zebra", Some(1.0), "", None, None);
        assert!((s - 2.0).abs() < 1e-9, "{s}");
        // Terms are capped at 8.
        let q = "aa bb cc dd ee ff gg hh ii jj";
        let s = text_lane_score(q, None, "aa bb cc dd ee ff gg hh ii jj", None, None);
        assert!((s - (1.25 + 0.9 + 8.0 * 0.18)).abs() < 1e-9, "{s}");
        // Normalised LIKE needs ≥ 4 chars: "k8s" gets no 0.9.
        let s = text_lane_score("k8s", None, "k-8-s", None, None);
        assert!(s.abs() < 1e-9, "{s}");
        let s = text_lane_score("k8s-prod", None, "the k8sprod cluster", None, None);
        assert!((s - (0.9 + 0.18 * 2.0)).abs() < 1e-9, "{s}");
    }
}

//! Thread distillation, the retrieval half (§10.4): what a thread is made
//! of (its indexed messages), which threads are worth distilling, the
//! transcript the model reads, the `burst` candidates and their rare-term
//! gate, and the document texts both artifact kinds are searched by. The
//! queue job that drives it (debounce, the model call, the writes) is
//! `channels::slack::distill`.

use serde::Deserialize;
use storage::{ProcessedSlackMessage, Scan, SlackMessageText, SlackThreadArtifact, key};

use super::params::{
    BURST_MIN_CHARS, DISTILL_MAX_TOPICS, DISTILL_MIN_CHARS, DISTILL_MIN_MESSAGES,
    DISTILL_TRANSCRIPT_CHARS, RARE_TERM_DF_DIVISOR, RARE_TERM_DF_FLOOR, RARE_TERM_MIN_CORPUS,
    RARE_TERM_PROBES,
};
use super::{Retrieval, SearchError};
use crate::platform::tenancy::current_tenant_id;
use storage::{IndexCorpus, Store};

/// Shortest probed token (§10.4 `[a-z][a-z0-9\-_.]{3,}`: a letter and three more).
pub const PROBE_TOKEN_MIN_CHARS: usize = 4;

/// One indexed message of a thread.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ThreadMessage {
    /// Its ts.
    pub ts: String,
    /// The author's Slack id.
    pub user_id: Option<String>,
    /// The author's display name, when ingest learnt it.
    pub user_name: Option<String>,
    /// What was said.
    pub text: String,
    /// Its permalink, when ingest learnt it.
    pub permalink: Option<String>,
}

impl ThreadMessage {
    /// Who said it, for people: the name, else the id.
    pub fn author(&self) -> &str {
        self.user_name
            .as_deref()
            .or(self.user_id.as_deref())
            .unwrap_or("someone")
    }
}

/// A thread as the index holds it: the parent (when indexed) and its
/// replies, oldest first, withdrawn messages left out.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Thread {
    /// The channel.
    pub channel_id: String,
    /// The channel's name, when known.
    pub channel_name: Option<String>,
    /// The parent's ts.
    pub thread_ts: String,
    /// The messages, oldest first.
    pub messages: Vec<ThreadMessage>,
}

impl Thread {
    /// `#name` (or the id) for documents.
    pub fn channel_label(&self) -> String {
        format!(
            "#{}",
            self.channel_name.as_deref().unwrap_or(&self.channel_id)
        )
    }

    /// The parent's permalink (the thread's link), when the parent is indexed.
    pub fn permalink(&self) -> Option<String> {
        self.messages
            .iter()
            .find(|m| m.ts == self.thread_ts)
            .and_then(|m| m.permalink.clone())
    }

    /// Distinct authors' ids, first appearance first.
    pub fn participant_ids(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for id in self.messages.iter().filter_map(|m| m.user_id.as_ref()) {
            if !out.contains(id) {
                out.push(id.clone());
            }
        }
        out
    }

    /// Distinct authors' names (ids where unknown), first appearance first.
    pub fn participant_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for m in &self.messages {
            let a = m.author().to_string();
            if !out.contains(&a) {
                out.push(a);
            }
        }
        out
    }
}

/// §10.4: "Skip threads with <2 messages or <150 chars total".
pub fn worth_distilling(thread: &Thread) -> bool {
    let chars: usize = thread.messages.iter().map(|m| m.text.chars().count()).sum();
    thread.messages.len() >= DISTILL_MIN_MESSAGES && chars >= DISTILL_MIN_CHARS
}

/// The transcript the model reads (`Name: text` lines), at most
/// [`DISTILL_TRANSCRIPT_CHARS`]: a longer thread keeps its head (the
/// question) and its tail (where it ended), with the cut marked.
pub fn transcript(thread: &Thread) -> String {
    let full = thread
        .messages
        .iter()
        .map(|m| format!("{}: {}", m.author(), m.text.trim()))
        .collect::<Vec<_>>()
        .join("\n");
    let n = full.chars().count();
    if n <= DISTILL_TRANSCRIPT_CHARS {
        return full;
    }
    let marker = format!(
        "\n[… {} characters omitted …]\n",
        n - DISTILL_TRANSCRIPT_CHARS
    );
    let keep = DISTILL_TRANSCRIPT_CHARS.saturating_sub(marker.chars().count());
    let head_chars = keep / 2;
    let tail_chars = keep - head_chars;
    let head: String = full.chars().take(head_chars).collect();
    let tail: String = full.chars().skip(n - tail_chars).collect();
    format!("{head}{marker}{tail}")
}

/// What the model returns for a thread (§10.4 `{ question, summary,
/// resolution, topics }`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct ThreadDigest {
    /// The question or topic the thread is about.
    pub question: String,
    /// What was said.
    pub summary: String,
    /// The outcome, if the thread reached one.
    #[serde(default)]
    pub resolution: Option<String>,
    /// Short topic phrases (≤ 6 kept).
    #[serde(default)]
    pub topics: Vec<String>,
}

impl ThreadDigest {
    /// Trimmed, empty parts dropped, topics capped at [`DISTILL_MAX_TOPICS`].
    pub fn normalized(mut self) -> ThreadDigest {
        self.question = self.question.trim().to_string();
        self.summary = self.summary.trim().to_string();
        self.resolution = self
            .resolution
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty());
        let mut topics: Vec<String> = Vec::new();
        for t in self
            .topics
            .iter()
            .map(|t| t.trim())
            .filter(|t| !t.is_empty())
        {
            if !topics.iter().any(|k| k.eq_ignore_ascii_case(t)) {
                topics.push(t.to_string());
            }
        }
        topics.truncate(DISTILL_MAX_TOPICS);
        self.topics = topics;
        self
    }
}

/// A `kind='thread'` artifact's searchable text (§10.4: channel + question
/// + summary + resolution + topics + participants).
pub fn thread_document(thread: &Thread, d: &ThreadDigest) -> String {
    let mut lines = vec![
        thread.channel_label(),
        format!("Question: {}", d.question),
        format!("Summary: {}", d.summary),
    ];
    if let Some(r) = &d.resolution {
        lines.push(format!("Resolution: {r}"));
    }
    if !d.topics.is_empty() {
        lines.push(format!("Topics: {}", d.topics.join(", ")));
    }
    lines.push(format!(
        "Participants: {}",
        thread.participant_names().join(", ")
    ));
    lines.join("\n")
}

/// One author's consecutive run of messages (§10.4 `burst`).
#[derive(Clone, Debug, PartialEq)]
pub struct Burst {
    /// The run's first message's ts (the artifact's `burst_ts`).
    pub burst_ts: String,
    /// The author's id.
    pub author_user_id: Option<String>,
    /// The author as people know them.
    pub author_name: String,
    /// The run's messages, joined.
    pub text: String,
    /// How many messages it spans.
    pub message_count: usize,
    /// The first message's permalink.
    pub permalink: Option<String>,
}

/// Every run of one author's consecutive messages of at least
/// [`BURST_MIN_CHARS`], in thread order (before the rare-term gate and the
/// per-thread cap).
pub fn burst_candidates(thread: &Thread) -> Vec<Burst> {
    let mut out = Vec::new();
    let mut i = 0;
    let msgs = &thread.messages;
    while i < msgs.len() {
        let mut j = i + 1;
        while j < msgs.len() && msgs[j].user_id.is_some() && msgs[j].user_id == msgs[i].user_id {
            j += 1;
        }
        let run = &msgs[i..j];
        let text = run
            .iter()
            .map(|m| m.text.trim())
            .collect::<Vec<_>>()
            .join("\n");
        if text.chars().count() >= BURST_MIN_CHARS {
            out.push(Burst {
                burst_ts: run[0].ts.clone(),
                author_user_id: run[0].user_id.clone(),
                author_name: run[0].author().to_string(),
                text,
                message_count: run.len(),
                permalink: run[0].permalink.clone(),
            });
        }
        i = j;
    }
    out
}

/// The tokens of `text` probed for rarity (§10.4): matches of
/// `[a-z][a-z0-9\-_.]{3,}` in the lowercased text, trailing sentence
/// punctuation (`.`, `-`, `_`) trimmed, distinct, the
/// [`RARE_TERM_PROBES`] longest (ties: first seen first).
pub fn probe_tokens(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let allowed = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c);
    let mut found: Vec<String> = Vec::new();
    let mut push = |run: &str| {
        // The match starts at the run's first letter and is greedy.
        let Some(start) = run.find(|c: char| c.is_ascii_lowercase()) else {
            return;
        };
        let token = run[start..].trim_end_matches(['.', '-', '_']);
        if token.len() >= PROBE_TOKEN_MIN_CHARS && !found.iter().any(|t| t == token) {
            found.push(token.to_string());
        }
    };
    let mut run_start: Option<usize> = None;
    for (i, c) in lower.char_indices() {
        match (allowed(c), run_start) {
            (true, None) => run_start = Some(i),
            (false, Some(s)) => {
                push(&lower[s..i]);
                run_start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = run_start {
        push(&lower[s..]);
    }
    // Stable: equal lengths keep their order of appearance.
    found.sort_by_key(|t| std::cmp::Reverse(t.len()));
    found.truncate(RARE_TERM_PROBES);
    found
}

/// §10.4's rarity test for one term: in a corpus under
/// [`RARE_TERM_MIN_CORPUS`] documents everything is rare; otherwise a term
/// is rare when fewer than `max(5, ⌊total / 50⌋)` documents hold it. A term
/// with no lexeme (`df` `None`: stop words only) is never rare there.
pub fn is_rare(df: Option<u64>, total: u64) -> bool {
    if total < RARE_TERM_MIN_CORPUS {
        return true;
    }
    match df {
        Some(df) => df < RARE_TERM_DF_FLOOR.max(total / RARE_TERM_DF_DIVISOR),
        None => false,
    }
}

/// A `kind='burst'` artifact's searchable text (§10.4: header = channel +
/// thread question + author, then the run).
pub fn burst_document(thread: &Thread, question: &str, b: &Burst) -> String {
    format!(
        "{} — {} — {}\n\n{}",
        thread.channel_label(),
        question,
        b.author_name,
        b.text
    )
}

/// A Slack ts (`seconds.micros`) as a sort key (an unparsable one last).
pub fn ts_order(ts: &str) -> (u64, u64) {
    let (secs, frac) = ts.split_once('.').unwrap_or((ts, ""));
    let frac: String = frac.chars().chain(std::iter::repeat('0')).take(6).collect();
    match (secs.parse::<u64>(), frac.parse::<u64>()) {
        (Ok(s), Ok(f)) => (s, f),
        _ => (u64::MAX, u64::MAX),
    }
}

impl Retrieval {
    /// The current tenant's indexed thread `(channel, thread_ts)`: the
    /// parent (if indexed) and the replies, oldest first, withdrawn
    /// messages excluded — read without embeddings, in one snapshot.
    pub async fn slack_thread(
        &self,
        channel_id: &str,
        thread_ts: &str,
    ) -> Result<Thread, SearchError> {
        let tenant = current_tenant_id()?;
        let store = self.store.clone();
        let (channel, ts) = (channel_id.to_string(), thread_ts.to_string());
        let rows: Vec<ProcessedSlackMessage> = super::run_blocking_here(move |_| {
            let rows = store.snapshot_blocking(|s| {
                let parent = s.find_unique_many_projected::<SlackMessageText>(
                    Some(tenant),
                    ProcessedSlackMessage::MESSAGE_KEY,
                    &[key().str(&channel).str(&ts)],
                )?;
                let replies = s.scan_projected::<SlackMessageText>(
                    Some(tenant),
                    &Scan::index(
                        ProcessedSlackMessage::THREAD_IDX,
                        key().str(&channel).str(&ts),
                    ),
                    |_| true,
                )?;
                Ok(parent
                    .into_iter()
                    .flatten()
                    .chain(replies)
                    .map(|m| m.0)
                    .collect())
            })?;
            Ok(rows)
        })
        .await?;
        let channel_name = rows.iter().find_map(|m| m.channel_name.clone());
        let mut messages: Vec<((u64, u64), ThreadMessage)> = rows
            .into_iter()
            .filter(|m| m.withdrawn_at.is_none())
            .map(|m| {
                let order = ts_order(&m.message_ts);
                (
                    order,
                    ThreadMessage {
                        ts: m.message_ts,
                        user_id: m.user_id,
                        user_name: m.user_name,
                        text: m.message_text,
                        permalink: m.permalink,
                    },
                )
            })
            .collect();
        messages.sort_by_key(|(order, _)| *order);
        Ok(Thread {
            channel_id: channel_id.to_string(),
            channel_name,
            thread_ts: thread_ts.to_string(),
            messages: messages.into_iter().map(|(_, m)| m).collect(),
        })
    }

    /// The artifacts of one thread (its summary and its bursts).
    pub async fn thread_artifacts(
        &self,
        channel_id: &str,
        thread_ts: &str,
    ) -> Result<Vec<SlackThreadArtifact>, SearchError> {
        let tenant = current_tenant_id()?;
        Ok(self
            .store
            .scan(
                Some(tenant),
                Scan::index(
                    SlackThreadArtifact::ARTIFACT_KEY,
                    key().str(channel_id).str(thread_ts),
                ),
            )
            .await?)
    }

    /// For §10.4's rare-term gate: the number of messages in the current
    /// tenant's Slack index and, per token, how many of them hold it
    /// (`None`: the token has no lexeme).
    pub async fn slack_term_frequencies(
        &self,
        tokens: &[String],
    ) -> Result<(u64, Vec<Option<u64>>), SearchError> {
        let tenant = current_tenant_id()?;
        let handle = self
            .registry
            .get(tenant, IndexCorpus::SlackMessages)
            .await?;
        let idx = handle.index.clone();
        let tokens = tokens.to_vec();
        super::run_blocking_here(move |_| {
            let kw = idx.keyword();
            let total = kw.num_docs();
            let dfs = tokens
                .iter()
                .map(|t| kw.doc_count_all(t))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| SearchError::Task(e.to_string()))?;
            Ok((total, dfs))
        })
        .await
    }
}

#[cfg(test)]
#[path = "distill_test.rs"]
mod tests;

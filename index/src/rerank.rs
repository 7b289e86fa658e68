//! The LLM rerank contract and its fail-open rules (spec §10.1).
//!
//! After fusion, the head of the ranking may be re-ordered by a model that
//! scores each `(query, excerpt)` pair from 0 to 10. The model is an
//! optional refinement, never a dependency: whenever it is switched off,
//! unavailable or unconvincing, [`rerank_fail_open`] returns the fused order
//! unchanged, so search quality degrades to plain RRF instead of failing.
//!
//! This module holds the [`Reranker`] trait, the request constants and the
//! rules; the LLM-backed implementation lives with the LLM client.
//!
//! Flow: take the first `min(window, RERANK_MAX_CANDIDATES)` fused items →
//! truncate each text to [`RERANK_EXCERPT_CHARS`] → [`Reranker::score`] →
//! validate the scores (quorum of ⌈n/2⌉) → stable sort of the window by score
//! → append the untouched tail.

use std::collections::HashMap;

use async_trait::async_trait;

/// Hard cap on candidates sent to the model in one call (spec: "≤30 candidates").
pub const RERANK_MAX_CANDIDATES: usize = 30;

/// Each candidate's text is cut to this many characters (Unicode scalar
/// values) before it is sent, bounding the prompt size.
pub const RERANK_EXCERPT_CHARS: usize = 600;

/// Lowest score the model may give.
pub const RERANK_MIN_SCORE: f64 = 0.0;

/// Highest score the model may give.
pub const RERANK_MAX_SCORE: f64 = 10.0;

/// Score of a candidate the model did not (validly) score: below every valid
/// score, so unscored candidates sink to the end of the window.
pub const UNSCORED: f64 = -1.0;

/// Below this many candidates there is nothing to reorder.
pub const RERANK_MIN_CANDIDATES: usize = 2;

/// Why a [`Reranker`] call failed. Every variant leads to the fused order.
#[derive(Debug, thiserror::Error)]
pub enum RerankError {
    /// The backend (HTTP, provider, timeout, …) failed.
    #[error("rerank backend failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The backend answered, but the answer could not be understood.
    #[error("rerank response was invalid: {0}")]
    InvalidResponse(String),
}

/// One item sent to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RerankCandidate {
    /// Caller-defined id, echoed back by the model with its score.
    pub id: String,
    /// The text the model judges, at most [`RERANK_EXCERPT_CHARS`] characters
    /// when built with [`RerankCandidate::new`].
    pub excerpt: String,
}

impl RerankCandidate {
    /// A candidate whose excerpt is `text` truncated to [`RERANK_EXCERPT_CHARS`].
    pub fn new(id: impl Into<String>, text: &str) -> Self {
        Self {
            id: id.into(),
            excerpt: excerpt(text).to_owned(),
        }
    }
}

/// `text` cut to [`RERANK_EXCERPT_CHARS`] characters.
pub fn excerpt(text: &str) -> &str {
    truncate_chars(text, RERANK_EXCERPT_CHARS)
}

/// The longest prefix of `text` with at most `max_chars` characters (Unicode
/// scalar values). Never splits a UTF-8 sequence, unlike slicing by bytes.
pub fn truncate_chars(text: &str, max_chars: usize) -> &str {
    match text.char_indices().nth(max_chars) {
        Some((byte_end, _)) => &text[..byte_end],
        None => text,
    }
}

/// Scores candidates for relevance to a query.
#[async_trait]
pub trait Reranker: Send + Sync {
    /// Returns `(id, score)` pairs with scores in
    /// [`RERANK_MIN_SCORE`]..=[`RERANK_MAX_SCORE`]. Pairs may come in any order
    /// and may omit candidates; the caller validates and fails open, so an
    /// implementation should return what the model said rather than repair it.
    async fn score(
        &self,
        query: &str,
        candidates: &[RerankCandidate],
    ) -> Result<Vec<(String, f64)>, RerankError>;
}

/// Why the fused order was kept.
#[derive(Debug)]
pub enum RerankSkip {
    /// The kill switch is off (`SEARCH_LLM_RERANK=false`) or the caller opted
    /// out (e.g. the LLM-free MCP search tools).
    Disabled,
    /// Enabled, but no [`Reranker`] is configured.
    NoReranker,
    /// Fewer than [`RERANK_MIN_CANDIDATES`] candidates would be sent.
    TooFewCandidates {
        /// Candidates that would have been sent.
        sent: usize,
    },
    /// The reranker call returned an error.
    Failed(RerankError),
    /// Fewer than ⌈sent/2⌉ candidates came back with a valid score.
    TooFewScored {
        /// Candidates sent.
        sent: usize,
        /// Candidates that received a valid score.
        scored: usize,
        /// The quorum, ⌈sent/2⌉.
        required: usize,
    },
}

/// Whether the rerank reordered the results.
#[derive(Debug)]
pub enum RerankStatus {
    /// The window was reordered by the model's scores.
    Applied {
        /// Candidates sent.
        sent: usize,
        /// Candidates that received a valid score.
        scored: usize,
    },
    /// The fused order was kept.
    Skipped(RerankSkip),
}

/// The result of [`rerank_fail_open`].
#[derive(Debug)]
pub struct RerankOutcome<T> {
    /// Every input item, reranked window first, then the untouched tail.
    pub items: Vec<T>,
    /// Aligned with `items`: the rerank score of each item in the reranked
    /// window ([`UNSCORED`] for those the model skipped), `None` for the tail
    /// and for every item when the rerank was skipped.
    pub scores: Vec<Option<f64>>,
    /// Applied, or skipped and why (for logs and tests).
    pub status: RerankStatus,
}

impl<T> RerankOutcome<T> {
    /// True if the model's order was applied. Callers use this for rules that
    /// only hold after a successful rerank, such as knowledge search keeping
    /// `min(limit, 12)` (the caller's rerank keep).
    pub fn applied(&self) -> bool {
        matches!(self.status, RerankStatus::Applied { .. })
    }

    fn skipped(items: Vec<T>, reason: RerankSkip) -> Self {
        let scores = items.iter().map(|_| None).collect();
        Self {
            items,
            scores,
            status: RerankStatus::Skipped(reason),
        }
    }
}

/// Reranks the head of a fused ranking, falling back to the fused order.
///
/// The first `min(window, RERANK_MAX_CANDIDATES)` items are sent as
/// [`RerankCandidate`]s (`id_of`, and `text_of` truncated to
/// [`RERANK_EXCERPT_CHARS`]). The fused order is returned unchanged when
/// `enabled` is false, `reranker` is `None`, fewer than 2 candidates would be
/// sent, the call errors, or fewer than ⌈n/2⌉ of the n sent candidates get a
/// valid score. Otherwise the window is stably sorted by score descending
/// (unscored candidates get [`UNSCORED`]; ties keep fused order) and the items
/// beyond the window follow in fused order.
///
/// Validation of the response:
/// * ids that were not sent are ignored;
/// * scores that are NaN, infinite or outside 0..=10 are ignored (treated as
///   missing, not clamped): a model ignoring the scale says nothing reliable,
///   and if it does so for most candidates the quorum fails and the fused
///   order stands;
/// * if an id is scored twice, the first valid score counts;
/// * ids should be unique within the window; items sharing an id share its score.
pub async fn rerank_fail_open<T>(
    reranker: Option<&dyn Reranker>,
    enabled: bool,
    query: &str,
    fused: Vec<T>,
    window: usize,
    id_of: impl Fn(&T) -> String,
    text_of: impl Fn(&T) -> &str,
) -> RerankOutcome<T> {
    if !enabled {
        return RerankOutcome::skipped(fused, RerankSkip::Disabled);
    }
    let Some(reranker) = reranker else {
        return RerankOutcome::skipped(fused, RerankSkip::NoReranker);
    };
    let sent = fused.len().min(window).min(RERANK_MAX_CANDIDATES);
    if sent < RERANK_MIN_CANDIDATES {
        return RerankOutcome::skipped(fused, RerankSkip::TooFewCandidates { sent });
    }

    let candidates: Vec<RerankCandidate> = fused[..sent]
        .iter()
        .map(|item| RerankCandidate::new(id_of(item), text_of(item)))
        .collect();

    let returned = match reranker.score(query, &candidates).await {
        Ok(returned) => returned,
        Err(e) => return RerankOutcome::skipped(fused, RerankSkip::Failed(e)),
    };

    let mut valid: HashMap<&str, f64> = HashMap::new();
    for (id, score) in &returned {
        if (RERANK_MIN_SCORE..=RERANK_MAX_SCORE).contains(score) {
            // −0.0 is 0.0: `total_cmp` below would rank it lower and break a tie.
            let score = if *score == 0.0 { 0.0 } else { *score };
            valid.entry(id.as_str()).or_insert(score);
        }
    }
    let window_scores: Vec<Option<f64>> = candidates
        .iter()
        .map(|c| valid.get(c.id.as_str()).copied())
        .collect();
    let scored = window_scores.iter().filter(|s| s.is_some()).count();
    let required = sent.div_ceil(2);
    if scored < required {
        return RerankOutcome::skipped(
            fused,
            RerankSkip::TooFewScored {
                sent,
                scored,
                required,
            },
        );
    }

    let mut items = fused;
    let tail = items.split_off(sent);
    let mut head: Vec<(T, f64)> = items
        .into_iter()
        .zip(window_scores)
        .map(|(item, score)| (item, score.unwrap_or(UNSCORED)))
        .collect();
    // Stable: equal scores keep fused order. No NaN can reach here.
    head.sort_by(|a, b| b.1.total_cmp(&a.1));

    let mut scores: Vec<Option<f64>> = Vec::with_capacity(head.len() + tail.len());
    let mut items: Vec<T> = Vec::with_capacity(head.len() + tail.len());
    for (item, score) in head {
        items.push(item);
        scores.push(Some(score));
    }
    scores.extend(tail.iter().map(|_| None));
    items.extend(tail);

    RerankOutcome {
        items,
        scores,
        status: RerankStatus::Applied { sent, scored },
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    type Answer = Result<Vec<(String, f64)>, RerankError>;

    /// Returns canned answers and records what it was sent.
    struct Scripted {
        answer: Mutex<Option<Answer>>,
        seen: Mutex<Vec<RerankCandidate>>,
    }

    impl Scripted {
        fn ok(pairs: &[(&str, f64)]) -> Self {
            let pairs = pairs.iter().map(|(id, s)| (id.to_string(), *s)).collect();
            Self::with(Ok(pairs))
        }

        fn err() -> Self {
            Self::with(Err(RerankError::InvalidResponse("not json".into())))
        }

        fn with(answer: Answer) -> Self {
            Self {
                answer: Mutex::new(Some(answer)),
                seen: Mutex::new(Vec::new()),
            }
        }

        fn sent_ids(&self) -> Vec<String> {
            self.seen
                .lock()
                .unwrap()
                .iter()
                .map(|c| c.id.clone())
                .collect()
        }
    }

    #[async_trait]
    impl Reranker for Scripted {
        async fn score(
            &self,
            _query: &str,
            candidates: &[RerankCandidate],
        ) -> Result<Vec<(String, f64)>, RerankError> {
            self.seen.lock().unwrap().extend_from_slice(candidates);
            self.answer
                .lock()
                .unwrap()
                .take()
                .expect("reranker called more than once")
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    struct Doc {
        id: String,
        text: String,
    }

    fn docs(n: usize) -> Vec<Doc> {
        (0..n)
            .map(|i| Doc {
                id: format!("d{i}"),
                text: format!("text {i}"),
            })
            .collect()
    }

    // The application's windows (`root::retrieval::params`), as test values.
    const KNOWLEDGE_RERANK_WINDOW: usize = 20;
    const SLACK_RERANK_WINDOW: usize = 30;

    fn ids(items: &[Doc]) -> Vec<&str> {
        items.iter().map(|d| d.id.as_str()).collect()
    }

    async fn run(
        reranker: Option<&dyn Reranker>,
        enabled: bool,
        fused: Vec<Doc>,
    ) -> RerankOutcome<Doc> {
        rerank_fail_open(
            reranker,
            enabled,
            "q",
            fused,
            RERANK_MAX_CANDIDATES,
            |d| d.id.clone(),
            |d| d.text.as_str(),
        )
        .await
    }

    #[test]
    fn rerank_future_is_send_so_handlers_can_await_it() {
        fn assert_send<F: Send>(_: F) {}
        let r = Scripted::ok(&[]);
        assert_send(rerank_fail_open(
            Some(&r),
            true,
            "q",
            docs(2),
            SLACK_RERANK_WINDOW,
            |d| d.id.clone(),
            |d| d.text.as_str(),
        ));
    }

    #[test]
    fn constants_match_the_spec() {
        assert_eq!(RERANK_MAX_CANDIDATES, 30);
        assert_eq!(RERANK_EXCERPT_CHARS, 600);
        assert_eq!(
            (RERANK_MIN_SCORE, RERANK_MAX_SCORE, UNSCORED),
            (0.0, 10.0, -1.0)
        );
    }

    #[tokio::test]
    async fn a_negative_zero_ties_with_zero_and_keeps_fused_order() {
        let r = Scripted::ok(&[("d0", -0.0), ("d1", 0.0), ("d2", 0.0)]);
        let out = run(Some(&r), true, docs(3)).await;
        assert!(out.applied());
        assert_eq!(ids(&out.items), ["d0", "d1", "d2"]);
        assert!(
            out.scores
                .iter()
                .all(|s| s.is_some_and(|v| v == 0.0 && v.is_sign_positive()))
        );
    }

    #[tokio::test]
    async fn disabled_keeps_fused_order_without_calling_the_model() {
        let r = Scripted::ok(&[("d0", 0.0), ("d1", 10.0)]);
        let out = run(Some(&r), false, docs(3)).await;
        assert!(matches!(
            out.status,
            RerankStatus::Skipped(RerankSkip::Disabled)
        ));
        assert!(!out.applied());
        assert_eq!(ids(&out.items), ["d0", "d1", "d2"]);
        assert!(r.sent_ids().is_empty());
        assert_eq!(out.scores, vec![None; 3]);
    }

    #[tokio::test]
    async fn missing_reranker_keeps_fused_order() {
        let out = run(None, true, docs(3)).await;
        assert!(matches!(
            out.status,
            RerankStatus::Skipped(RerankSkip::NoReranker)
        ));
        assert_eq!(ids(&out.items), ["d0", "d1", "d2"]);
    }

    #[tokio::test]
    async fn fewer_than_two_candidates_keeps_fused_order_without_calling_the_model() {
        let r = Scripted::ok(&[("d0", 5.0)]);
        let out = run(Some(&r), true, docs(1)).await;
        assert!(matches!(
            out.status,
            RerankStatus::Skipped(RerankSkip::TooFewCandidates { sent: 1 })
        ));
        assert_eq!(ids(&out.items), ["d0"]);
        assert!(r.sent_ids().is_empty());

        let out = run(Some(&r), true, Vec::new()).await;
        assert!(out.items.is_empty() && !out.applied());
    }

    #[tokio::test]
    async fn window_of_one_counts_as_too_few_candidates() {
        let r = Scripted::ok(&[("d1", 9.0), ("d0", 1.0)]);
        let out = rerank_fail_open(
            Some(&r),
            true,
            "q",
            docs(5),
            1,
            |d| d.id.clone(),
            |d| d.text.as_str(),
        )
        .await;
        assert!(matches!(
            out.status,
            RerankStatus::Skipped(RerankSkip::TooFewCandidates { sent: 1 })
        ));
        assert_eq!(ids(&out.items), ["d0", "d1", "d2", "d3", "d4"]);
    }

    #[tokio::test]
    async fn call_error_keeps_fused_order_and_reports_the_error() {
        let r = Scripted::err();
        let out = run(Some(&r), true, docs(4)).await;
        assert!(matches!(
            out.status,
            RerankStatus::Skipped(RerankSkip::Failed(RerankError::InvalidResponse(_)))
        ));
        assert_eq!(ids(&out.items), ["d0", "d1", "d2", "d3"]);
        assert_eq!(r.sent_ids().len(), 4);
    }

    #[tokio::test]
    async fn one_short_of_half_scored_keeps_fused_order() {
        // n = 5 → quorum ⌈5/2⌉ = 3; only 2 scored.
        let r = Scripted::ok(&[("d4", 9.0), ("d3", 8.0)]);
        let out = run(Some(&r), true, docs(5)).await;
        assert!(matches!(
            out.status,
            RerankStatus::Skipped(RerankSkip::TooFewScored {
                sent: 5,
                scored: 2,
                required: 3
            })
        ));
        assert_eq!(ids(&out.items), ["d0", "d1", "d2", "d3", "d4"]);
    }

    #[tokio::test]
    async fn exactly_half_rounded_up_scored_applies_the_rerank() {
        let r = Scripted::ok(&[("d4", 9.0), ("d3", 8.0), ("d2", 7.0)]);
        let out = run(Some(&r), true, docs(5)).await;
        assert!(matches!(
            out.status,
            RerankStatus::Applied { sent: 5, scored: 3 }
        ));
        assert!(out.applied());
        assert_eq!(ids(&out.items), ["d4", "d3", "d2", "d0", "d1"]);
    }

    #[tokio::test]
    async fn unscored_candidates_score_minus_one_and_sink_in_fused_order() {
        let r = Scripted::ok(&[("d1", 0.0), ("d3", 2.0)]);
        let out = run(Some(&r), true, docs(4)).await;
        assert!(out.applied());
        assert_eq!(ids(&out.items), ["d3", "d1", "d0", "d2"]);
        assert_eq!(
            out.scores,
            vec![Some(2.0), Some(0.0), Some(UNSCORED), Some(UNSCORED)]
        );
    }

    #[tokio::test]
    async fn equal_scores_keep_fused_order() {
        let r = Scripted::ok(&[("d3", 5.0), ("d2", 5.0), ("d1", 5.0), ("d0", 1.0)]);
        let out = run(Some(&r), true, docs(4)).await;
        assert_eq!(ids(&out.items), ["d1", "d2", "d3", "d0"]);
    }

    #[tokio::test]
    async fn only_thirty_are_sent_and_the_tail_follows_in_fused_order() {
        let all: Vec<(String, f64)> = (0..35).map(|i| (format!("d{i}"), i as f64 / 4.0)).collect();
        let r = Scripted::with(Ok(all));
        let out = run(Some(&r), true, docs(35)).await;
        let sent = r.sent_ids();
        assert_eq!(sent.len(), RERANK_MAX_CANDIDATES);
        assert_eq!(sent.last().map(String::as_str), Some("d29"));
        // d29 scored 7.25 ... d0 scored 0; tail d30..d34 untouched although
        // the model "scored" them higher: they were never candidates.
        let got = ids(&out.items);
        assert_eq!(got[0], "d29");
        assert_eq!(got[29], "d0");
        assert_eq!(&got[30..], ["d30", "d31", "d32", "d33", "d34"]);
        assert_eq!(out.scores[30..], [None; 5]);
        assert!(matches!(
            out.status,
            RerankStatus::Applied {
                sent: 30,
                scored: 30
            }
        ));
    }

    #[tokio::test]
    async fn window_larger_than_thirty_is_capped_at_thirty() {
        let r = Scripted::ok(&[]);
        let _ = rerank_fail_open(
            Some(&r),
            true,
            "q",
            docs(40),
            100,
            |d| d.id.clone(),
            |d| d.text.as_str(),
        )
        .await;
        assert_eq!(r.sent_ids().len(), RERANK_MAX_CANDIDATES);
    }

    #[tokio::test]
    async fn knowledge_window_of_twenty_reranks_only_the_first_twenty() {
        let r = Scripted::ok(&[
            ("d19", 10.0),
            ("d0", 1.0),
            ("d1", 1.0),
            ("d2", 1.0),
            ("d3", 1.0),
            ("d4", 1.0),
            ("d5", 1.0),
            ("d6", 1.0),
            ("d7", 1.0),
            ("d8", 1.0),
        ]);
        let out = rerank_fail_open(
            Some(&r),
            true,
            "q",
            docs(25),
            KNOWLEDGE_RERANK_WINDOW,
            |d| d.id.clone(),
            |d| d.text.as_str(),
        )
        .await;
        assert_eq!(r.sent_ids().len(), 20);
        assert!(out.applied());
        let got = ids(&out.items);
        assert_eq!(got[0], "d19");
        assert_eq!(&got[20..], ["d20", "d21", "d22", "d23", "d24"]);
    }

    #[tokio::test]
    async fn unknown_ids_are_ignored_and_do_not_count_toward_the_quorum() {
        // n = 4 → quorum 2; only d2 is a real candidate.
        let r = Scripted::ok(&[("d2", 9.0), ("ghost", 10.0), ("d99", 10.0)]);
        let out = run(Some(&r), true, docs(4)).await;
        assert!(matches!(
            out.status,
            RerankStatus::Skipped(RerankSkip::TooFewScored {
                scored: 1,
                required: 2,
                ..
            })
        ));
        assert_eq!(ids(&out.items), ["d0", "d1", "d2", "d3"]);
    }

    #[tokio::test]
    async fn out_of_range_and_nan_scores_are_ignored_not_clamped() {
        // d0 NaN, d1 11, d2 -1: all invalid and left unscored. d3, d4 valid.
        let r = Scripted::ok(&[
            ("d0", f64::NAN),
            ("d1", 11.0),
            ("d2", -1.0),
            ("d3", 3.0),
            ("d4", 10.0),
            ("d5", f64::INFINITY),
        ]);
        let out = run(Some(&r), true, docs(5)).await;
        // quorum ⌈5/2⌉ = 3, only 2 valid → fused order.
        assert!(matches!(
            out.status,
            RerankStatus::Skipped(RerankSkip::TooFewScored { scored: 2, .. })
        ));

        let r = Scripted::ok(&[("d0", f64::NAN), ("d1", 11.0), ("d2", 0.0), ("d3", 3.0)]);
        let out = run(Some(&r), true, docs(4)).await;
        assert!(out.applied());
        // Had 11 been clamped to 10, d1 would lead.
        assert_eq!(ids(&out.items), ["d3", "d2", "d0", "d1"]);
        assert_eq!(out.scores[2..], [Some(UNSCORED), Some(UNSCORED)]);
    }

    #[tokio::test]
    async fn first_valid_score_wins_when_an_id_is_repeated() {
        let r = Scripted::ok(&[("d1", 42.0), ("d1", 1.0), ("d0", 2.0), ("d1", 9.0)]);
        let out = run(Some(&r), true, docs(2)).await;
        assert_eq!(ids(&out.items), ["d0", "d1"]);
        assert_eq!(out.scores, vec![Some(2.0), Some(1.0)]);
    }

    #[tokio::test]
    async fn candidates_carry_excerpts_of_at_most_six_hundred_chars() {
        let long = Doc {
            id: "long".into(),
            text: "é".repeat(700),
        };
        let r = Scripted::ok(&[]);
        let _ = run(Some(&r), true, vec![long, docs(1).remove(0)]).await;
        let seen = r.seen.lock().unwrap();
        assert_eq!(seen[0].excerpt.chars().count(), 600);
        assert_eq!(seen[1].excerpt, "text 0");
    }

    #[test]
    fn excerpt_truncates_on_char_boundaries_not_bytes() {
        // 2-, 3- and 4-byte characters: a byte cut at 600 would split one.
        for ch in ["é", "€", "🦀"] {
            let text = ch.repeat(650);
            let cut = excerpt(&text);
            assert_eq!(cut.chars().count(), RERANK_EXCERPT_CHARS);
            assert_eq!(cut.len(), RERANK_EXCERPT_CHARS * ch.len());
        }
        let mixed = format!("{}🦀tail", "a".repeat(599));
        assert_eq!(excerpt(&mixed), format!("{}🦀", "a".repeat(599)));
        assert_eq!(excerpt("short"), "short");
        assert_eq!(excerpt(&"x".repeat(600)).len(), 600);
        assert_eq!(truncate_chars("héllo", 0), "");
        assert_eq!(truncate_chars("héllo", 2), "hé");
    }

    #[test]
    fn candidate_new_truncates_the_text() {
        let c = RerankCandidate::new("id", &"ü".repeat(601));
        assert_eq!(c.excerpt, "ü".repeat(600));
    }
}

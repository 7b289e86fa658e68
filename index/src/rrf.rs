//! Reciprocal Rank Fusion (spec §10.1): merges the ranked lists of several
//! retrieval lanes (vector, keyword, recency, …) into one ranking.
//!
//! ```text
//! score(doc) = Σ_lanes  weight_lane / (k + rank_lane(doc))      ranks are 1-based
//! ```
//!
//! Only ranks fuse, never raw scores: cosine similarity, `ts_rank_cd`/BM25
//! and recency live on incomparable scales, and RRF is robust precisely
//! because it ignores them. A lane that does not contain a document adds
//! nothing for it. The constant `k`, the lane weights and the caps are the
//! caller's (the application's retrieval settings), passed in.
//!
//! Reference: G. V. Cormack, C. L. A. Clarke and S. Büttcher, "Reciprocal Rank
//! Fusion outperforms Condorcet and individual Rank Learning Methods",
//! SIGIR 2009, <https://plg.uwaterloo.ca/~gvcormac/cormacksigir09-rrf.pdf>.
//!
//! The output is fully deterministic (see [`fuse`] for the tie-break), so the
//! same lanes always produce the same ranking, and the eval harness (§10.6)
//! measures retrieval rather than hash-map iteration order. [`cap_per_source`]
//! is the spec's `capPerSource` diversity cap, applied after fusion.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::Hash;

/// Invalid input to [`fuse`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum FuseError {
    /// A lane weight was NaN, infinite or negative. A negative weight would
    /// turn "ranked in this lane" into a penalty, which RRF has no notion of.
    #[error("lane {lane} has invalid weight {weight}: weights must be finite and >= 0")]
    InvalidWeight {
        /// Index of the offending lane in the input.
        lane: usize,
        /// The rejected weight.
        weight: f64,
    },
}

/// One retrieval lane's ranked hits, best first.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane<K, P> {
    /// Multiplier of this lane's contributions; must be finite and `>= 0`.
    pub weight: f64,
    /// `(id, payload)` in rank order: index 0 is rank 1. Any score the lane
    /// computed belongs in the payload; fusion never reads it.
    pub hits: Vec<(K, P)>,
}

impl<K, P> Lane<K, P> {
    /// A lane with the given weight and hits (best first).
    pub fn new(weight: f64, hits: Vec<(K, P)>) -> Self {
        Self { weight, hits }
    }
}

/// One document of the fused ranking.
#[derive(Debug, Clone, PartialEq)]
pub struct Fused<K, P> {
    /// The document id shared by the lanes.
    pub id: K,
    /// The payload from the earliest lane (lowest lane index) that has the id.
    pub payload: P,
    /// The fused RRF score.
    pub score: f64,
    /// The 1-based rank of the document in each input lane (`None` where the
    /// lane does not contain it), indexed like the input lanes. Kept for
    /// logging and for the eval harness.
    pub lane_ranks: Vec<Option<usize>>,
}

/// Fuses ranked lanes with weighted RRF (see the module docs for the formula).
///
/// * **Collisions:** the payload of the earliest lane that contains an id
///   wins; later lanes only add to its score. Put the lane with the richest
///   payload first.
/// * **Duplicates within one lane** count once, at their best (first) rank;
///   later copies and their payloads are dropped, so a lane cannot vote twice.
/// * **Ties** in fused score are broken by lane 0's order, then lane 1's, and
///   so on (a document absent from a lane sorts after every document present
///   in it), then by id. Lane order is therefore meaningful: callers pass the
///   lane they trust most first. Scores are summed in a canonical order, so
///   documents with the same multiset of contributions tie exactly rather than
///   differing by float rounding.
/// * Every id of every lane appears exactly once in the output, including ids
///   that only occur in zero-weight lanes (they score 0).
///
/// # Errors
/// [`FuseError::InvalidWeight`] if any lane weight is NaN, infinite or negative.
pub fn fuse<K, P>(k: f64, lanes: Vec<Lane<K, P>>) -> Result<Vec<Fused<K, P>>, FuseError>
where
    K: Eq + Hash + Ord,
{
    for (lane, l) in lanes.iter().enumerate() {
        if !l.weight.is_finite() || l.weight < 0.0 {
            return Err(FuseError::InvalidWeight {
                lane,
                weight: l.weight,
            });
        }
    }

    let lane_count = lanes.len();
    let weights: Vec<f64> = lanes.iter().map(|l| l.weight).collect();

    // Accumulate per-document state in first-seen order; the map points each
    // id at its slot so ids need neither `Clone` nor a second lookup.
    let mut slot_of: HashMap<K, usize> = HashMap::new();
    let mut docs: Vec<(P, Vec<Option<usize>>)> = Vec::new();
    for (lane, l) in lanes.into_iter().enumerate() {
        for (position, (id, payload)) in l.hits.into_iter().enumerate() {
            let rank = position + 1;
            match slot_of.entry(id) {
                Entry::Occupied(e) => {
                    let ranks = &mut docs[*e.get()].1;
                    // Keep the best rank if a lane repeats an id.
                    ranks[lane].get_or_insert(rank);
                }
                Entry::Vacant(e) => {
                    e.insert(docs.len());
                    let mut ranks = vec![None; lane_count];
                    ranks[lane] = Some(rank);
                    docs.push((payload, ranks));
                }
            }
        }
    }

    let mut ids: Vec<Option<K>> = std::iter::repeat_with(|| None).take(docs.len()).collect();
    for (id, slot) in slot_of {
        ids[slot] = Some(id);
    }

    let mut fused: Vec<Fused<K, P>> = docs
        .into_iter()
        .zip(ids)
        .filter_map(|((payload, lane_ranks), id)| {
            let score = rrf_score(k, &lane_ranks, &weights);
            id.map(|id| Fused {
                id,
                payload,
                score,
                lane_ranks,
            })
        })
        .collect();

    // Ids are unique, so this order is total and an unstable sort is
    // deterministic.
    fused.sort_unstable_by(compare_fused);
    Ok(fused)
}

/// `Σ weight / (k + rank)` over the lanes that contain the document.
///
/// Contributions are summed smallest first: float addition is not
/// associative, and a fixed order makes equal contributions in different
/// lanes produce bit-identical sums, so genuine ties stay ties.
fn rrf_score(k: f64, lane_ranks: &[Option<usize>], weights: &[f64]) -> f64 {
    let mut contributions: Vec<f64> = lane_ranks
        .iter()
        .zip(weights)
        .filter_map(|(rank, &weight)| rank.map(|r| weight / (k + r as f64)))
        .collect();
    contributions.sort_unstable_by(f64::total_cmp);
    // `+ 0.0` turns a -0.0 (from a -0.0 weight) into 0.0.
    contributions.iter().sum::<f64>() + 0.0
}

/// Score descending, then each lane's rank in lane order (absent last), then id.
fn compare_fused<K: Ord, P>(a: &Fused<K, P>, b: &Fused<K, P>) -> Ordering {
    // Scores are sums of non-negative finite terms, so never NaN.
    b.score
        .partial_cmp(&a.score)
        .unwrap_or(Ordering::Equal)
        .then_with(|| {
            a.lane_ranks
                .iter()
                .zip(&b.lane_ranks)
                .map(|(ra, rb)| match (ra, rb) {
                    (Some(x), Some(y)) => x.cmp(y),
                    (Some(_), None) => Ordering::Less,
                    (None, Some(_)) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                })
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
        // Unreachable in practice (two ids never share a rank in one lane and
        // every id is in some lane); it makes the order total by construction.
        .then_with(|| a.id.cmp(&b.id))
}

/// Keeps at most `max_per_source` items per source, preserving order (the
/// spec's `capPerSource`). Run it on the fused ranking so each source keeps
/// its best items (3 chunks per page for knowledge, 2 results per thread for
/// Slack: the caller's settings).
///
/// `max_per_source == 0` returns an empty list (nothing is allowed per source).
pub fn cap_per_source<T, S>(
    items: Vec<T>,
    max_per_source: usize,
    source: impl Fn(&T) -> S,
) -> Vec<T>
where
    S: Eq + Hash,
{
    let mut seen: HashMap<S, usize> = HashMap::new();
    items
        .into_iter()
        .filter(|item| {
            let count = seen.entry(source(item)).or_insert(0);
            if *count < max_per_source {
                *count += 1;
                true
            } else {
                false
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    fn lane(weight: f64, ids: &[&'static str]) -> Lane<&'static str, ()> {
        Lane::new(weight, ids.iter().map(|id| (*id, ())).collect())
    }

    fn ids<P>(fused: &[Fused<&'static str, P>]) -> Vec<&'static str> {
        fused.iter().map(|f| f.id).collect()
    }

    fn score_of<P>(fused: &[Fused<&'static str, P>], id: &str) -> f64 {
        fused
            .iter()
            .find(|f| f.id == id)
            .map(|f| f.score)
            .expect("id present")
    }

    // The application's settings (`root::retrieval::params`), as test values.
    const RRF_K: f64 = 60.0;
    const DEFAULT_LANE_WEIGHT: f64 = 1.0;
    const SLACK_RECENCY_LANE_WEIGHT: f64 = 0.4;
    const KNOWLEDGE_MAX_CHUNKS_PER_PAGE: usize = 3;
    const SLACK_MAX_PER_THREAD: usize = 2;

    #[test]
    fn doc_ranked_first_and_third_scores_one_over_61_plus_one_over_63() {
        let fused = fuse(
            RRF_K,
            vec![lane(1.0, &["a", "x", "y"]), lane(1.0, &["z", "w", "a"])],
        )
        .unwrap();
        assert_eq!(score_of(&fused, "a"), 1.0 / 63.0 + 1.0 / 61.0);
        assert_eq!(score_of(&fused, "x"), 1.0 / 62.0);
        assert_eq!(score_of(&fused, "w"), 1.0 / 62.0);
        assert_eq!(fused[0].id, "a");
        assert_eq!(fused[0].lane_ranks, vec![Some(1), Some(3)]);
    }

    #[test]
    fn lane_weight_multiplies_the_reciprocal_rank() {
        let fused = fuse(
            RRF_K,
            vec![
                lane(DEFAULT_LANE_WEIGHT, &["t"]),
                lane(DEFAULT_LANE_WEIGHT, &["v"]),
                lane(SLACK_RECENCY_LANE_WEIGHT, &["r", "t"]),
            ],
        )
        .unwrap();
        assert_eq!(score_of(&fused, "r"), 0.4 / 61.0);
        assert_eq!(score_of(&fused, "t"), 0.4 / 62.0 + 1.0 / 61.0);
        assert_eq!(ids(&fused), vec!["t", "v", "r"]);
    }

    #[test]
    fn recency_lane_at_weight_point_four_cannot_outvote_a_full_weight_lane() {
        // "new" is first by recency only; "old" is second by text.
        let fused = fuse(
            RRF_K,
            vec![
                lane(1.0, &["x", "old"]),
                lane(SLACK_RECENCY_LANE_WEIGHT, &["new", "x"]),
            ],
        )
        .unwrap();
        assert_eq!(ids(&fused), vec!["x", "old", "new"]);
    }

    #[test]
    fn only_ranks_fuse_never_the_lane_scores_in_payloads() {
        let a = Lane::new(1.0, vec![("p", 0.99_f64), ("q", 0.01)]);
        let b = Lane::new(1.0, vec![("q", 1000.0), ("p", 999.0)]);
        let fused = fuse(RRF_K, vec![a, b]).unwrap();
        assert_eq!(fused[0].score, fused[1].score);
    }

    #[test]
    fn earliest_lane_payload_wins_on_id_collision() {
        let vector = Lane::new(1.0, vec![("d", "from vector")]);
        let keyword = Lane::new(1.0, vec![("e", "e kw"), ("d", "from keyword")]);
        let fused = fuse(RRF_K, vec![vector, keyword]).unwrap();
        let d = fused.iter().find(|f| f.id == "d").unwrap();
        assert_eq!(d.payload, "from vector");

        let vector = Lane::new(1.0, vec![("d", "from vector")]);
        let keyword = Lane::new(1.0, vec![("d", "from keyword")]);
        let fused = fuse(RRF_K, vec![keyword, vector]).unwrap();
        assert_eq!(fused[0].payload, "from keyword");
    }

    #[test]
    fn equal_scores_are_broken_in_favour_of_lane_zeros_order() {
        // a: ranks (1, 2); b: ranks (2, 1) -> identical scores.
        let fused = fuse(RRF_K, vec![lane(1.0, &["a", "b"]), lane(1.0, &["b", "a"])]).unwrap();
        assert_eq!(fused[0].score, fused[1].score);
        assert_eq!(ids(&fused), vec!["a", "b"]);

        let fused = fuse(RRF_K, vec![lane(1.0, &["b", "a"]), lane(1.0, &["a", "b"])]).unwrap();
        assert_eq!(ids(&fused), vec!["b", "a"]);
    }

    #[test]
    fn three_lane_permuted_ranks_tie_exactly_and_follow_lane_zero() {
        // z has ranks (1, 7, 2) and a has (2, 1, 7): the same contributions in
        // another lane order. Left-to-right summation rounds z one ulp below a;
        // canonical summation makes them tie, and lane 0 then puts z first.
        let fused = fuse(
            RRF_K,
            vec![
                lane(1.0, &["z", "a"]),
                lane(1.0, &["a", "f1", "f2", "f3", "f4", "f5", "z"]),
                lane(1.0, &["f6", "z", "f7", "f8", "f9", "f10", "a"]),
            ],
        )
        .unwrap();
        assert_eq!(score_of(&fused, "z"), score_of(&fused, "a"));
        assert_eq!(&ids(&fused)[..2], &["z", "a"]);
    }

    #[test]
    fn tie_falls_through_to_the_next_lane_when_absent_from_lane_zero() {
        // m and n are only in lanes 1 and 2, with mirrored ranks: lane 0 has
        // neither, so lane 1's order decides.
        let fused = fuse(
            RRF_K,
            vec![
                lane(1.0, &["other"]),
                lane(1.0, &["m", "n"]),
                lane(1.0, &["n", "m"]),
            ],
        )
        .unwrap();
        assert_eq!(ids(&fused), vec!["m", "n", "other"]);

        let fused = fuse(
            RRF_K,
            vec![
                lane(1.0, &["other"]),
                lane(1.0, &["n", "m"]),
                lane(1.0, &["m", "n"]),
            ],
        )
        .unwrap();
        assert_eq!(ids(&fused), vec!["n", "m", "other"]);
    }

    #[test]
    fn tie_puts_documents_present_in_a_lane_before_absent_ones() {
        // p is rank 2 in lane 0 only; q is rank 2 in lane 1 only: equal scores,
        // p is present in lane 0 and q is not.
        let fused = fuse(RRF_K, vec![lane(1.0, &["x", "p"]), lane(1.0, &["y", "q"])]).unwrap();
        assert_eq!(ids(&fused), vec!["x", "y", "p", "q"]);
    }

    #[test]
    fn duplicate_id_within_a_lane_counts_once_at_its_best_rank() {
        let fused = fuse(
            RRF_K,
            vec![Lane::new(1.0, vec![("a", 1), ("b", 2), ("a", 3)])],
        )
        .unwrap();
        assert_eq!(fused.len(), 2);
        assert_eq!(score_of(&fused, "a"), 1.0 / 61.0);
        assert_eq!(fused[0].payload, 1);
        assert_eq!(score_of(&fused, "b"), 1.0 / 62.0);
    }

    #[test]
    fn zero_weight_lane_contributes_nothing_but_keeps_its_ids() {
        let fused = fuse(RRF_K, vec![lane(1.0, &["a"]), lane(0.0, &["b", "a"])]).unwrap();
        assert_eq!(score_of(&fused, "a"), 1.0 / 61.0);
        assert_eq!(score_of(&fused, "b"), 0.0);
        assert_eq!(ids(&fused), vec!["a", "b"]);
    }

    #[test]
    fn invalid_weights_are_rejected_with_the_lane_index() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, -0.5] {
            let err = fuse(RRF_K, vec![lane(1.0, &["a"]), lane(bad, &["b"])]).unwrap_err();
            assert!(
                matches!(err, FuseError::InvalidWeight { lane: 1, .. }),
                "{bad}"
            );
        }
    }

    #[test]
    fn no_lanes_or_empty_lanes_fuse_to_nothing() {
        assert!(fuse::<&str, ()>(RRF_K, vec![]).unwrap().is_empty());
        assert!(
            fuse(RRF_K, vec![lane(1.0, &[]), lane(0.4, &[])])
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn cap_per_source_keeps_the_first_items_of_each_source_in_order() {
        let items = vec![
            ("p1", 0),
            ("p1", 1),
            ("p2", 2),
            ("p1", 3),
            ("p1", 4),
            ("p2", 5),
            ("p3", 6),
        ];
        let capped = cap_per_source(items, KNOWLEDGE_MAX_CHUNKS_PER_PAGE, |(page, _)| *page);
        let order: Vec<i32> = capped.iter().map(|(_, i)| *i).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 5, 6]);
    }

    #[test]
    fn cap_per_source_keeps_two_per_slack_thread() {
        let items = vec!["C1:100", "C1:100", "C1:100", "C2:100", "C2:100", "C2:100"];
        let capped = cap_per_source(items, SLACK_MAX_PER_THREAD, |t| *t);
        assert_eq!(capped, vec!["C1:100", "C1:100", "C2:100", "C2:100"]);
    }

    #[test]
    fn cap_per_source_of_zero_keeps_nothing() {
        assert!(cap_per_source(vec![1, 2, 3], 0, |x| *x).is_empty());
    }

    proptest! {
        #[test]
        fn fuse_yields_each_id_once_sorted_by_score_and_is_deterministic(
            lanes in prop::collection::vec(
                (0.0f64..2.0, prop::collection::vec(0u8..40, 0..30)),
                0..5,
            )
        ) {
            let build = || -> Vec<Lane<u8, ()>> {
                lanes
                    .iter()
                    .map(|(w, hits)| Lane::new(*w, hits.iter().map(|id| (*id, ())).collect()))
                    .collect()
            };
            let fused = fuse(RRF_K, build()).unwrap();

            let expected: HashSet<u8> = lanes.iter().flat_map(|(_, h)| h.iter().copied()).collect();
            let got: Vec<u8> = fused.iter().map(|f| f.id).collect();
            let got_set: HashSet<u8> = got.iter().copied().collect();
            prop_assert_eq!(got.len(), got_set.len());
            prop_assert_eq!(got_set, expected);

            prop_assert!(fused.windows(2).all(|w| w[0].score >= w[1].score));
            prop_assert!(fused.iter().all(|f| f.score.is_finite() && f.score >= 0.0));

            let again: Vec<u8> = fuse(RRF_K, build()).unwrap().iter().map(|f| f.id).collect();
            prop_assert_eq!(got, again);
        }

        #[test]
        fn cap_per_source_is_an_order_preserving_subsequence_within_the_cap(
            items in prop::collection::vec(0u8..6, 0..60),
            cap in 0usize..4,
        ) {
            let capped = cap_per_source(items.clone(), cap, |x| *x);
            let mut counts = HashMap::new();
            for x in &capped {
                *counts.entry(*x).or_insert(0usize) += 1;
            }
            prop_assert!(counts.values().all(|c| *c <= cap));
            for (x, c) in &counts {
                let available = items.iter().filter(|y| *y == x).count();
                prop_assert_eq!(*c, available.min(cap));
            }
            // Subsequence check.
            let mut it = items.iter();
            prop_assert!(capped.iter().all(|x| it.any(|y| y == x)));
        }
    }
}

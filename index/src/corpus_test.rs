//! Unit tests of `corpus.rs`.

use super::*;

const DIMS: usize = 8;

fn cfg() -> VectorConfig {
    VectorConfig::for_tests(DIMS)
}

fn unit(hot: usize) -> Vec<f32> {
    let mut v = vec![0.0; DIMS];
    v[hot % DIMS] = 1.0;
    v
}

fn doc(row: u128, text: &str, hot: Option<usize>) -> Change {
    Change::Upsert(IndexDoc {
        row,
        group: format!("page-{}", row / 10),
        ordinal: (row % 10) as i64,
        tag: if row.is_multiple_of(2) {
            "even".into()
        } else {
            "odd".into()
        },
        text: text.into(),
        aux: String::new(),
        vector: hot.map(unit),
    })
}

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[test]
fn a_new_directory_opens_empty_and_asks_for_a_rebuild() {
    let dir = tmp();
    let (idx, opened) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    assert!(matches!(opened, Opened::Empty { .. }));
    assert!(idx.is_empty());
}

#[test]
fn both_lanes_answer_and_a_snapshot_survives_a_reopen_with_stable_keys() {
    let dir = tmp();
    let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    idx.apply(vec![
        doc(11, "reverse a list with reversed", Some(1)),
        doc(12, "dictionaries map keys to values", Some(2)),
        doc(21, "not embedded yet about lists", None),
    ])
    .unwrap();
    idx.commit(3).unwrap();
    idx.snapshot(3).unwrap();
    let v = idx.vector_search(&unit(1), 2).unwrap();
    assert_eq!(v[0].meta.row, 11);
    assert!((v[0].score - 1.0).abs() < 1e-3);
    assert_eq!(v[0].meta.group.as_ref(), "page-1");
    assert_eq!(idx.vector_len(), 2, "the unembedded row is keyword-only");
    let k = idx.keyword_search_any("lists", 10).unwrap();
    let mut rows: Vec<u128> = k.iter().map(|h| h.meta.row).collect();
    rows.sort();
    assert_eq!(rows, vec![11, 21]);
    let key_11 = idx.meta_of_row(11).unwrap().0;
    drop(idx);

    let (idx, opened) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    assert_eq!(
        opened,
        Opened::Loaded {
            snapshot_seq: 3,
            keyword_seq: 3
        }
    );
    assert_eq!(idx.len(), 3);
    assert_eq!(idx.meta_of_row(11).unwrap().0, key_11);
    // An update keeps the key; a new row gets a new one.
    idx.apply(vec![
        doc(11, "reverse iteration", Some(3)),
        doc(13, "new", Some(4)),
    ])
    .unwrap();
    assert_eq!(idx.meta_of_row(11).unwrap().0, key_11);
    assert_ne!(idx.meta_of_row(13).unwrap().0, key_11);
    assert_eq!(idx.vector_search(&unit(3), 1).unwrap()[0].meta.row, 11);
}

#[test]
fn a_batch_applies_like_its_changes_one_by_one() {
    let dir = tmp();
    let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    let mut changes: Vec<Change> = (1..=40)
        .map(|r| doc(r, "alpha", Some(r as usize)))
        .collect();
    changes.push(doc(3, "alpha", Some(7))); // replaced within the batch
    changes.push(Change::Remove(5)); // removed within the batch
    changes.push(doc(6, "alpha", None)); // loses its vector within the batch
    changes.push(doc(5, "alpha", Some(2))); // and comes back
    idx.apply(changes).unwrap();
    idx.commit(1).unwrap();
    assert_eq!(idx.vector_len(), 39);
    assert_eq!(idx.len(), 40);
    let hits = idx.vector_search(&unit(7), 40).unwrap();
    assert!(
        hits.iter()
            .any(|h| h.meta.row == 3 && (h.score - 1.0).abs() < 1e-3),
        "{hits:?}"
    );
    assert!(hits.iter().all(|h| h.meta.row != 6));
    let hits = idx.vector_search(&unit(2), 40).unwrap();
    assert!(
        hits.iter()
            .any(|h| h.meta.row == 5 && (h.score - 1.0).abs() < 1e-3)
    );
    assert!(!idx.meta_of_row(6).unwrap().1.has_vector);
}

#[test]
fn tag_filters_restrict_both_lanes() {
    let dir = tmp();
    let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    // Rows 1..=6 all say "alpha"; even rows are tagged "even".
    idx.apply((1..=6).map(|r| doc(r, "alpha", Some(r as usize))).collect())
        .unwrap();
    idx.commit(6).unwrap();
    let even = ["even".to_string()];
    let rows = |hits: Vec<Hit>| {
        let mut r: Vec<u128> = hits.iter().map(|h| h.meta.row).collect();
        r.sort();
        r
    };
    assert_eq!(
        rows(
            idx.keyword_search_any_tagged("alpha", 10, Some(&even))
                .unwrap()
        ),
        vec![2, 4, 6]
    );
    assert_eq!(
        rows(idx.vector_search_tagged(&unit(1), 3, Some(&even)).unwrap()),
        vec![2, 4, 6]
    );
    assert!(
        idx.keyword_search_any_tagged("alpha", 10, Some(&[]))
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        idx.keyword_search_any_tagged("alpha", 10, None)
            .unwrap()
            .len(),
        6
    );
}

#[test]
fn removal_takes_a_row_out_of_both_lanes() {
    let dir = tmp();
    let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    idx.apply(vec![
        doc(1, "alpha", Some(1)),
        doc(2, "alpha beta", Some(2)),
    ])
    .unwrap();
    idx.apply(vec![Change::Remove(1), Change::Remove(99)])
        .unwrap();
    idx.commit(2).unwrap();
    assert_eq!(
        idx.keyword_search_any("alpha", 5)
            .unwrap()
            .iter()
            .map(|h| h.meta.row)
            .collect::<Vec<_>>(),
        vec![2]
    );
    assert!(
        idx.vector_search(&unit(1), 5)
            .unwrap()
            .iter()
            .all(|h| h.meta.row != 1)
    );
    assert_eq!(idx.len(), 1);
}

#[test]
fn a_replayed_change_never_leaves_a_stale_keyword_copy() {
    // Snapshot at seq 1; later changes reach only the keyword lane
    // before a "crash"; the replay after reopen re-applies them.
    let dir = tmp();
    {
        let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
        idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
        idx.commit(1).unwrap();
        idx.snapshot(1).unwrap();
        idx.apply(vec![doc(2, "gamma", Some(2)), doc(3, "gamma", Some(3))])
            .unwrap();
        idx.apply(vec![Change::Remove(2)]).unwrap();
        idx.commit(4).unwrap();
    }
    let (idx, opened) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    assert_eq!(
        opened,
        Opened::Loaded {
            snapshot_seq: 1,
            keyword_seq: 4
        }
    );
    // Replay seq 2..4 from the store's current state: row 2 is gone, row 3 exists.
    idx.apply(vec![
        Change::Remove(2),
        doc(3, "gamma", Some(3)),
        Change::Remove(2),
    ])
    .unwrap();
    idx.commit(4).unwrap();
    let hits = idx.keyword_search_any("gamma", 10).unwrap();
    assert_eq!(hits.len(), 1, "{hits:?}");
    assert_eq!(hits[0].meta.row, 3);
    assert_eq!(idx.keyword().num_docs(), 2);
}

#[test]
fn corrupt_or_inconsistent_files_open_empty() {
    let dir = tmp();
    {
        let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
        idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
        idx.commit(1).unwrap();
        idx.snapshot(1).unwrap();
    }
    std::fs::write(dir.path().join("docs-1.bin"), b"garbage").unwrap();
    let (idx, opened) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    assert!(
        matches!(&opened, Opened::Empty { reason } if reason.contains("docs-1.bin")),
        "{opened:?}"
    );
    assert!(idx.is_empty());
    assert_eq!(idx.keyword().num_docs(), 0, "the directory was wiped");

    // Missing vector file.
    idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
    idx.commit(1).unwrap();
    idx.snapshot(1).unwrap();
    drop(idx);
    std::fs::remove_file(dir.path().join("vectors-1.usearch")).unwrap();
    let (_, opened) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    assert!(matches!(opened, Opened::Empty { .. }), "{opened:?}");
}

#[test]
fn a_keyword_lane_behind_the_snapshot_is_rebuilt() {
    let dir = tmp();
    {
        let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
        idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
        idx.commit(1).unwrap();
        idx.snapshot(5).unwrap();
    }
    let (_, opened) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    assert!(
        matches!(&opened, Opened::Empty { reason } if reason.contains("behind")),
        "{opened:?}"
    );
}

#[test]
fn snapshots_replace_older_generations_and_reset_empties_everything() {
    let dir = tmp();
    let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
    idx.commit(1).unwrap();
    idx.snapshot(1).unwrap();
    idx.snapshot(1).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        vec!["CURRENT", "docs-2.bin", "keyword", "vectors-2.usearch"]
    );
    let old_key = idx.meta_of_row(1).unwrap().0;
    idx.reset().unwrap();
    idx.commit(1).unwrap();
    assert!(idx.is_empty());
    assert!(idx.vector_search(&unit(1), 3).unwrap().is_empty());
    assert!(idx.keyword_search_any("alpha", 3).unwrap().is_empty());
    idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
    assert!(
        idx.meta_of_row(1).unwrap().0 > old_key,
        "keys are never reused"
    );
}

#[test]
fn the_key_map_codec_round_trips_and_rejects_truncation() {
    let mut map = DocMap {
        next_key: 9,
        ..Default::default()
    };
    for (k, row) in [(3u64, 30u128), (8, 80)] {
        map.by_row.insert(row, k);
        map.by_key.insert(
            k,
            DocMeta {
                row,
                group: format!("g{k}").into(),
                ordinal: -(k as i64),
                tag: "t".into(),
                has_vector: k == 3,
            },
        );
    }
    let bytes = map.encode(42);
    let (seq, back) = DocMap::decode(&bytes).unwrap();
    assert_eq!(seq, 42);
    assert_eq!(back.next_key, 9);
    assert_eq!(back.by_key, map.by_key);
    assert_eq!(back.by_row, map.by_row);
    assert!(DocMap::decode(&bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn a_reopened_index_serves_a_mapped_file_until_its_first_write() {
    let dir = tmp();
    {
        let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
        idx.apply(vec![doc(1, "alpha", Some(1)), doc(2, "beta", Some(2))])
            .unwrap();
        idx.commit(2).unwrap();
        idx.snapshot(2).unwrap();
        assert!(!idx.vectors_mapped(), "a fresh index is in memory");
    }
    let (idx, opened) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    assert!(matches!(
        opened,
        Opened::Loaded {
            snapshot_seq: 2,
            ..
        }
    ));
    assert!(idx.vectors_mapped());
    assert_eq!(idx.vector_search(&unit(2), 1).unwrap()[0].meta.row, 2);
    // The first write loads the file and goes on in memory.
    idx.apply(vec![doc(3, "gamma", Some(3)), Change::Remove(1)])
        .unwrap();
    assert!(!idx.vectors_mapped());
    assert_eq!(idx.vector_len(), 2);
    assert_eq!(idx.vector_search(&unit(3), 1).unwrap()[0].meta.row, 3);
    idx.commit(4).unwrap();
    idx.snapshot(4).unwrap();
    drop(idx);
    let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    let mut rows: Vec<u128> = idx
        .vector_search(&unit(2), 5)
        .unwrap()
        .iter()
        .map(|h| h.meta.row)
        .collect();
    rows.sort();
    assert_eq!(rows, vec![2, 3]);
}

#[test]
fn a_directory_of_the_previous_format_opens_empty_for_a_rebuild() {
    let dir = tmp();
    {
        let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
        idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
        idx.commit(1).unwrap();
        idx.snapshot(1).unwrap();
    }
    // What a v1 (f16 graph) directory's CURRENT says.
    std::fs::write(
        dir.path().join("CURRENT"),
        "root-index corpus v1\ngen 1\nseq 1\n",
    )
    .unwrap();
    let (idx, opened) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    assert!(
        matches!(&opened, Opened::Empty { reason } if reason.contains("header")),
        "{opened:?}"
    );
    assert!(idx.is_empty());
}

#[test]
fn an_index_saved_with_another_quantisation_opens_empty_for_a_rebuild() {
    let dir = tmp();
    let i8_cfg = VectorConfig {
        quantization: Quantization::I8,
        ..cfg()
    };
    let b1_cfg = VectorConfig {
        quantization: Quantization::B1,
        ..cfg()
    };
    {
        let (idx, _) = CorpusIndex::open(dir.path(), i8_cfg).unwrap();
        idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
        idx.commit(1).unwrap();
        idx.snapshot(1).unwrap();
    }
    let current = std::fs::read_to_string(dir.path().join("CURRENT")).unwrap();
    assert!(
        current.starts_with("root-index corpus v2 i8\n"),
        "{current}"
    );
    let (idx, opened) = CorpusIndex::open(dir.path(), b1_cfg).unwrap();
    assert!(
        matches!(&opened, Opened::Empty { reason } if reason.contains("header")),
        "an i8 graph is not read as sign bits: {opened:?}"
    );
    assert!(idx.is_empty());
    idx.apply(vec![doc(1, "alpha", Some(1))]).unwrap();
    idx.commit(1).unwrap();
    idx.snapshot(1).unwrap();
    drop(idx);
    let (idx, opened) = CorpusIndex::open(dir.path(), b1_cfg).unwrap();
    assert!(
        matches!(
            opened,
            Opened::Loaded {
                snapshot_seq: 1,
                ..
            }
        ),
        "{opened:?}"
    );
    assert_eq!(idx.len(), 1);
}

/// Lossless vectors kept beside the index, as the caller's store would.
struct Lossless(std::collections::HashMap<u128, Vec<u8>>);

impl Lossless {
    fn put(&mut self, row: u128, v: &[f32]) {
        let bytes = v
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect();
        self.0.insert(row, bytes);
    }
}

impl ExactVectors for Lossless {
    fn similarities(&self, query: &[f32], rows: &[u128]) -> Result<Vec<Option<f32>>, String> {
        let mut s = crate::exact::ExactScorer::new(query);
        Ok(rows
            .iter()
            .map(|r| self.0.get(r).and_then(|b| s.cosine_f16_le(b)))
            .collect())
    }
}

#[test]
fn exact_rescoring_reorders_by_the_lossless_vectors() {
    let dir = tmp();
    let (idx, _) = CorpusIndex::open(dir.path(), cfg()).unwrap();
    // Graph order for the query unit(0): 1 (1.0), 2 (0.8), 3 (0.6), 4 (0.0).
    let mix = |a: f32| {
        let mut v = vec![0.0; DIMS];
        v[0] = a;
        v[1] = (1.0 - a * a).sqrt();
        v
    };
    let with = |row: u128, v: Vec<f32>| {
        Change::Upsert(IndexDoc {
            vector: Some(v),
            ..match doc(row, "text", None) {
                Change::Upsert(d) => d,
                Change::Remove(_) => unreachable!(),
            }
        })
    };
    idx.apply(vec![
        with(1, mix(1.0)),
        with(2, mix(0.8)),
        with(3, mix(0.6)),
        with(4, mix(0.0)),
    ])
    .unwrap();
    let mut store = Lossless(Default::default());
    // The lossless copy disagrees with the graph for row 3 (it is the best),
    // and row 1 has lost its vector.
    store.put(2, &mix(0.8));
    store.put(3, &mix(0.95));
    store.put(4, &mix(0.0));
    let q = unit(0);
    let hits = idx.vector_search_exact(&q, 3, 6, None, &store).unwrap();
    let got: Vec<(u128, f32)> = hits.iter().map(|h| (h.meta.row, h.score)).collect();
    // Row 1 keeps its graph score (the caller's row read drops it).
    assert_eq!(got.len(), 3);
    assert_eq!(
        (got[0].0, got[1].0, got[2].0),
        (1, 3, 2),
        "rescored: {got:?}"
    );
    assert!((got[1].1 - 0.95).abs() < 2e-3, "exact score: {got:?}");
    assert!((got[2].1 - 0.8).abs() < 2e-3);
    // With k = 2 and 2 candidates row 3 (graph rank 3) is never seen;
    // 4 candidates reach it.
    let narrow = idx.vector_search_exact(&q, 2, 2, None, &store).unwrap();
    assert_eq!(
        narrow.iter().map(|h| h.meta.row).collect::<Vec<_>>(),
        vec![1, 2]
    );
    let wide = idx.vector_search_exact(&q, 2, 4, None, &store).unwrap();
    assert_eq!(
        wide.iter().map(|h| h.meta.row).collect::<Vec<_>>(),
        vec![1, 3]
    );
    // Tags restrict the candidates before rescoring (even rows only).
    let even = vec!["even".to_string()];
    let tagged = idx
        .vector_search_exact(&q, 3, 6, Some(&even), &store)
        .unwrap();
    assert_eq!(
        tagged.iter().map(|h| h.meta.row).collect::<Vec<_>>(),
        vec![2, 4]
    );
    struct Failing;
    impl ExactVectors for Failing {
        fn similarities(&self, _: &[f32], _: &[u128]) -> Result<Vec<Option<f32>>, String> {
            Err("store down".into())
        }
    }
    assert!(matches!(
        idx.vector_search_exact(&q, 2, 4, None, &Failing),
        Err(CorpusError::Rescore(m)) if m == "store down"
    ));
}

/// The sign-bit graph end to end: its coarse candidate list, rescored
/// against the lossless vectors, gives the exact top k with exact cosine
/// scores (what the lanes' floors are written in), also with a tag filter.
#[test]
fn a_sign_bit_graph_rescored_gives_the_exact_top_k() {
    const D: usize = 64;
    let dir = tmp();
    let b1 = VectorConfig {
        quantization: Quantization::B1,
        ..VectorConfig::for_tests(D)
    };
    let (idx, _) = CorpusIndex::open(dir.path(), b1).unwrap();
    let mut next = crate::vector::test_noise(0x9e37_79b9_7f4a_7c15);
    let mut store = Lossless(Default::default());
    let mut vectors = Vec::new();
    let mut changes = Vec::new();
    for row in 0..300u128 {
        let v: Vec<f32> = (0..D).map(|_| next()).collect();
        store.put(row, &v);
        changes.push(Change::Upsert(IndexDoc {
            row,
            group: format!("g{}", row % 7),
            ordinal: 0,
            tag: if row % 2 == 0 { "even" } else { "odd" }.into(),
            text: format!("doc {row}"),
            aux: String::new(),
            vector: Some(v.clone()),
        }));
        vectors.push((row, v));
    }
    idx.apply(changes).unwrap();
    let q: Vec<f32> = (0..D).map(|_| next()).collect();
    let cosine = |v: &[f32]| {
        let mut s = crate::exact::ExactScorer::new(&q);
        let bytes: Vec<u8> = v
            .iter()
            .flat_map(|x| half::f16::from_f32(*x).to_le_bytes())
            .collect();
        s.cosine_f16_le(&bytes).unwrap()
    };
    let exact_top = |keep: &dyn Fn(u128) -> bool| {
        let mut all: Vec<(u128, f32)> = vectors
            .iter()
            .filter(|(r, _)| keep(*r))
            .map(|(r, v)| (*r, cosine(v)))
            .collect();
        all.sort_by(|a, b| b.1.total_cmp(&a.1));
        all.truncate(5);
        all
    };
    // Every row is a candidate here, so the answer must be exactly the
    // brute-force top 5, scores included.
    let hits = idx.vector_search_exact(&q, 5, 300, None, &store).unwrap();
    let got: Vec<(u128, f32)> = hits.iter().map(|h| (h.meta.row, h.score)).collect();
    assert_eq!(got, exact_top(&|_| true));
    let even = vec!["even".to_string()];
    let hits = idx
        .vector_search_exact(&q, 5, 300, Some(&even), &store)
        .unwrap();
    let got: Vec<(u128, f32)> = hits.iter().map(|h| (h.meta.row, h.score)).collect();
    assert_eq!(got, exact_top(&|r| r % 2 == 0));
    // The graph alone scores by the angle its Hamming distance estimates,
    // cos(π · d / dims), not by the exact cosine.
    let q_bits = crate::vector::sign_bits(&q);
    let graph = idx.vector_search(&q, 5).unwrap();
    assert_eq!(graph.len(), 5);
    for h in &graph {
        let v = &vectors[h.meta.row as usize].1;
        let d: u32 = crate::vector::sign_bits(v)
            .iter()
            .zip(&q_bits)
            .map(|(a, b)| (a ^ b).count_ones())
            .sum();
        let estimate = (std::f32::consts::PI * d as f32 / D as f32).cos();
        assert!((h.score - estimate).abs() < 1e-5, "{h:?} vs {estimate}");
    }
}

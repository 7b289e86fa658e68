//! Unit tests of `vector.rs`.

use super::*;

fn cfg(dims: usize) -> VectorConfig {
    VectorConfig::for_tests(dims)
}

fn unit(dims: usize, hot: usize) -> Vec<f32> {
    let mut v = vec![0.0; dims];
    v[hot % dims] = 1.0;
    v
}

#[test]
fn cosine_similarity_orders_results_and_upsert_replaces() {
    let idx = VectorIndex::new(cfg(8)).unwrap();
    idx.upsert(1, &unit(8, 0)).unwrap();
    idx.upsert(2, &unit(8, 1)).unwrap();
    let mut mixed = unit(8, 0);
    mixed[1] = 1.0;
    idx.upsert(3, &mixed).unwrap();
    let hits = idx.search(&unit(8, 0), 3).unwrap();
    assert_eq!(hits[0].0, 1);
    assert!(
        (hits[0].1 - 1.0).abs() < 1e-3,
        "identical vector: similarity 1"
    );
    assert_eq!(hits[1].0, 3);
    assert!((hits[1].1 - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-2);
    assert!(hits[2].1.abs() < 1e-3, "orthogonal: similarity 0");
    idx.upsert(1, &unit(8, 5)).unwrap();
    assert_eq!(idx.len(), 3);
    assert_ne!(idx.search(&unit(8, 0), 1).unwrap()[0].0, 1, "replaced");
    idx.remove(1).unwrap();
    idx.remove(99).unwrap();
    assert_eq!(idx.len(), 2);
}

#[test]
fn parallel_batches_insert_and_replace_every_key() {
    let idx = VectorIndex::new(cfg(16)).unwrap();
    let vec_of = |i: u64| {
        let mut v = vec![0.01; 16];
        v[(i % 16) as usize] = 1.0 + i as f32 / 100.0;
        v
    };
    let items: Vec<(u64, Vec<f32>)> = (0..300).map(|i| (i, vec_of(i))).collect();
    idx.upsert_batch_parallel(&items, 3).unwrap();
    assert_eq!(idx.len(), 300);
    // Replace ten keys with the one vector pointing the other way.
    let again: Vec<(u64, Vec<f32>)> = (100..110).map(|i| (i, vec![-1.0; 16])).collect();
    idx.upsert_batch_parallel(&again, 3).unwrap();
    assert_eq!(idx.len(), 300, "replaced, not duplicated");
    let mut keys: Vec<u64> = idx
        .exact_search(&[-1.0; 16], 10)
        .unwrap()
        .into_iter()
        .inspect(|(_, sim)| assert!((sim - 1.0).abs() < 1e-3))
        .map(|(k, _)| k)
        .collect();
    keys.sort_unstable();
    assert_eq!(keys, (100..110).collect::<Vec<u64>>());
    assert!(matches!(
        idx.upsert_batch_parallel(&[(1, vec![1.0; 3]), (2, vec![1.0; 16])], 2),
        Err(VectorError::Dimensions { .. })
    ));
}

#[test]
fn wrong_dimensions_are_an_error_not_a_panic() {
    let idx = VectorIndex::new(cfg(8)).unwrap();
    assert!(matches!(
        idx.upsert(1, &[1.0; 7]),
        Err(VectorError::Dimensions {
            expected: 8,
            got: 7
        })
    ));
    assert!(idx.search(&[1.0; 9], 1).is_err());
    assert!(idx.search(&[1.0; 8], 1).unwrap().is_empty(), "empty index");
}

#[test]
fn capacity_grows_geometrically_past_the_first_reservation() {
    let idx = VectorIndex::new(cfg(16)).unwrap();
    for i in 0..500u64 {
        let mut v = vec![0.01; 16];
        v[(i % 16) as usize] = 1.0 + i as f32 / 100.0;
        idx.upsert(i, &v).unwrap();
    }
    assert_eq!(idx.len(), 500);
    assert!(idx.contains(499));
}

#[test]
fn saved_indexes_load_and_view_with_the_same_answers() {
    let dir = std::env::temp_dir().join(format!("vec-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("knowledge.usearch");
    let idx = VectorIndex::new(cfg(8)).unwrap();
    for i in 0..8 {
        idx.upsert(i as u64 + 10, &unit(8, i)).unwrap();
    }
    idx.save(&path).unwrap();
    let loaded = VectorIndex::load(&path, cfg(8)).unwrap();
    assert_eq!(loaded.search(&unit(8, 3), 1).unwrap()[0].0, 13);
    loaded.upsert(99, &unit(8, 3)).unwrap();
    let viewed = VectorIndex::view(&path, cfg(8)).unwrap();
    assert_eq!(viewed.search(&unit(8, 4), 1).unwrap()[0].0, 14);
    assert!(matches!(
        viewed.upsert(1, &unit(8, 1)),
        Err(VectorError::ReadOnly)
    ));
    assert!(VectorIndex::load(&dir.join("missing.usearch"), cfg(8)).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn i8_quantisation_keeps_cosine_and_uses_the_whole_range() {
    let mut next = test_noise(0x9e37_79b9_7f4a_7c15);
    let v: Vec<f32> = (0..DIMENSIONS).map(|_| next() * 0.03).collect();
    let q = quantize_i8(&v);
    assert_eq!(q.iter().map(|x| x.unsigned_abs()).max(), Some(127));
    let dot: f32 = v.iter().zip(&q).map(|(a, b)| a * f32::from(*b)).sum();
    let nv = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    let nq = q.iter().map(|x| f32::from(*x).powi(2)).sum::<f32>().sqrt();
    assert!(dot / (nv * nq) > 0.999, "cosine {}", dot / (nv * nq));
    assert_eq!(quantize_i8(&[0.0; 4]), vec![0; 4]);
    assert_eq!(
        quantize_i8(&[f32::NAN, 1.0]),
        vec![0, 127],
        "NaN reads as 0"
    );
}

#[test]
fn sign_bits_pack_positive_components_eight_per_byte() {
    let v = [1.0, -1.0, 0.0, 0.5, f32::NAN, -0.1, 2.0, 0.0, 3.0];
    assert_eq!(sign_bits(&v), vec![0b0100_1001, 0b0000_0001]);
    assert_eq!(
        sign_bits(&[0.2; DIMENSIONS]).len(),
        384,
        "3072 dims: 384 bytes"
    );
    assert_eq!("b1".parse::<Quantization>(), Ok(Quantization::B1));
    assert!("b2".parse::<Quantization>().is_err());
}

/// The sign-bit graph walks by Hamming distance and reports the angle
/// it estimates: identical → 1, opposite → −1, half the bits → 0.
#[test]
fn a_sign_bit_graph_scores_by_the_estimated_angle() {
    let cfg = VectorConfig {
        quantization: Quantization::B1,
        ..cfg(64)
    };
    let idx = VectorIndex::new(cfg).unwrap();
    let base: Vec<f32> = (0..64)
        .map(|i| if i % 3 == 0 { 1.0 } else { -1.0 })
        .collect();
    let opposite: Vec<f32> = base.iter().map(|x| -x).collect();
    let half: Vec<f32> = base
        .iter()
        .enumerate()
        .map(|(i, x)| if i < 32 { *x } else { -x })
        .collect();
    let mut near = base.clone();
    near[1] = 1.0;
    idx.upsert(1, &base).unwrap();
    idx.upsert(2, &opposite).unwrap();
    idx.upsert(3, &half).unwrap();
    idx.upsert(4, &near).unwrap();
    let hits = idx.search(&base, 4).unwrap();
    let keys: Vec<u64> = hits.iter().map(|h| h.0).collect();
    assert_eq!(keys, vec![1, 4, 3, 2], "{hits:?}");
    assert!((hits[0].1 - 1.0).abs() < 1e-6, "{hits:?}");
    let one_bit = (std::f32::consts::PI / 64.0).cos();
    assert!((hits[1].1 - one_bit).abs() < 1e-6, "{hits:?}");
    assert!(hits[2].1.abs() < 1e-6, "{hits:?}");
    assert!((hits[3].1 + 1.0).abs() < 1e-6, "{hits:?}");
    let odd = idx.filtered_search(&base, 2, |k| k % 2 == 0).unwrap();
    assert_eq!(odd.iter().map(|h| h.0).collect::<Vec<_>>(), vec![4, 2]);
    assert_eq!(idx.exact_search(&base, 1).unwrap()[0].0, 1);
}

/// More concurrent callers than the index has thread contexts wait for
/// one instead of failing ("Reserve capacity ahead of searches!").
#[test]
fn callers_beyond_the_reserved_contexts_wait_instead_of_failing() {
    let cfg = VectorConfig {
        threads: 2,
        ..cfg(8)
    };
    let idx = VectorIndex::new(cfg).unwrap();
    for i in 0..8 {
        idx.upsert(i as u64, &unit(8, i)).unwrap();
    }
    let start = std::sync::Barrier::new(16);
    std::thread::scope(|s| {
        for t in 0..16 {
            let (idx, start) = (&idx, &start);
            s.spawn(move || {
                start.wait();
                for i in 0..300 {
                    let hot = (t + i) % 8;
                    assert_eq!(idx.search(&unit(8, hot), 1).unwrap()[0].0, hot as u64);
                }
            });
        }
    });
}

#[test]
fn a_mapped_index_searches_concurrently_and_loads_on_first_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("v.usearch");
    let idx = VectorIndex::new(cfg(8)).unwrap();
    for i in 0..8 {
        idx.upsert(i as u64, &unit(8, i)).unwrap();
    }
    idx.save(&path).unwrap();
    let mapped = VectorIndex::map(&path, cfg(8)).unwrap();
    assert!(mapped.is_mapped());
    // More concurrent searches than the machine has cores: a view must
    // have a search context for each (cfg.threads), not one per core.
    let start = std::sync::Barrier::new(16);
    std::thread::scope(|s| {
        for t in 0..16 {
            let m = &mapped;
            let start = &start;
            s.spawn(move || {
                start.wait();
                for i in 0..300 {
                    let hot = (t + i) % 8;
                    assert_eq!(m.search(&unit(8, hot), 1).unwrap()[0].0, hot as u64);
                }
            });
        }
    });
    mapped.upsert(3, &unit(8, 5)).unwrap();
    assert!(!mapped.is_mapped());
    assert_eq!(mapped.len(), 8);
    let hits = mapped.search(&unit(8, 5), 2).unwrap();
    let mut keys: Vec<u64> = hits.iter().map(|h| h.0).collect();
    keys.sort();
    assert_eq!(keys, vec![3, 5]);
}

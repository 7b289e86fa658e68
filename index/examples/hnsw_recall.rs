//! Recall@10 of an i8 HNSW graph alone against exact search. Root's lanes
//! walk a sign-bit graph and rescore its candidates exactly;
//! `root bench retrieval` measures that (`--quantization`, `--rescore-sweep`).
//!
//! Corpus: the shared golden KB set embedded by `embed_corpus.py` (real
//! MiniLM vectors mapped to 3072 dims), plus a synthetic clustered corpus to
//! see behaviour at a larger size.
//!
//! ```sh
//! python3 index/examples/embed_corpus.py ../shared/eval/kb-golden.json /tmp/kb-vectors
//! cargo run --release -p root-index --example hnsw_recall -- /tmp/kb-vectors [synthetic_n]
//! ```

use std::time::Instant;

use index::vector::{DIMENSIONS, Quantization, VectorConfig, VectorIndex};

fn recall(idx: &VectorIndex, queries: &[Vec<f32>], k: usize) -> (f64, f64, f64) {
    let mut hit = 0usize;
    let mut total = 0usize;
    let (mut ann_t, mut exact_t) = (0f64, 0f64);
    for q in queries {
        let t = Instant::now();
        let ann = idx.search(q, k).unwrap();
        ann_t += t.elapsed().as_secs_f64();
        let t = Instant::now();
        let exact = idx.exact_search(q, k).unwrap();
        exact_t += t.elapsed().as_secs_f64();
        let truth: std::collections::HashSet<u64> = exact.iter().map(|h| h.0).collect();
        hit += ann.iter().filter(|h| truth.contains(&h.0)).count();
        total += truth.len();
    }
    let n = queries.len() as f64;
    (
        hit as f64 / total.max(1) as f64,
        ann_t / n * 1e3,
        exact_t / n * 1e3,
    )
}

fn xorshift(state: &mut u64) -> f32 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    (*state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
}

fn normalise(v: &mut [f32]) {
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-12);
    v.iter_mut().for_each(|x| *x /= n);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // Root's values (`root::retrieval::params::HNSW_*`): this example
    // measures them.
    let cfg = VectorConfig {
        dimensions: DIMENSIONS,
        connectivity: 16,
        expansion_add: 128,
        expansion_search: 40,
        threads: 64,
        quantization: Quantization::I8,
    };
    println!(
        "HNSW M={} ef_construction={} ef_search={} dims={}",
        cfg.connectivity, cfg.expansion_add, cfg.expansion_search, cfg.dimensions
    );
    if let Some(prefix) = args.get(1).filter(|a| *a != "-") {
        let meta: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(format!("{prefix}.json")).unwrap())
                .unwrap();
        let bytes = std::fs::read(format!("{prefix}.f32")).unwrap();
        let floats: Vec<f32> = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let vecs: Vec<&[f32]> = floats.chunks_exact(DIMENSIONS).collect();
        let n_docs = meta["ids"].as_array().unwrap().len();
        let idx = VectorIndex::new(cfg).unwrap();
        idx.upsert_batch(
            vecs[..n_docs]
                .iter()
                .enumerate()
                .map(|(i, v)| (i as u64, *v)),
        )
        .unwrap();
        let queries: Vec<Vec<f32>> = vecs[n_docs..].iter().map(|v| v.to_vec()).collect();
        for ef in [16, 32, 40, 64, 128] {
            idx.set_expansion_search(ef);
            let (r, ann_ms, exact_ms) = recall(&idx, &queries, 10);
            println!(
                "golden KB corpus: {n_docs} vectors, {} queries, ef_search={ef}: recall@10 {r:.4}, mean ANN {ann_ms:.3} ms, exact {exact_ms:.3} ms",
                queries.len()
            );
        }
    }
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20_000);
    // Clustered synthetic vectors: 200 centres, points = centre + noise.
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let centres: Vec<Vec<f32>> = (0..200)
        .map(|_| (0..DIMENSIONS).map(|_| xorshift(&mut s)).collect())
        .collect();
    let point = |s: &mut u64| {
        let c = &centres[(xorshift(s).abs() * 400.0) as usize % centres.len()];
        let mut v: Vec<f32> = c.iter().map(|x| x + 0.6 * xorshift(s)).collect();
        normalise(&mut v);
        v
    };
    let idx = VectorIndex::new(cfg).unwrap();
    let t = Instant::now();
    let docs: Vec<Vec<f32>> = (0..n).map(|_| point(&mut s)).collect();
    for chunk in docs.chunks(1000).enumerate() {
        idx.upsert_batch(
            chunk
                .1
                .iter()
                .enumerate()
                .map(|(i, v)| ((chunk.0 * 1000 + i) as u64, v.as_slice())),
        )
        .unwrap();
    }
    println!(
        "synthetic: built {n} vectors in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let queries: Vec<Vec<f32>> = (0..200).map(|_| point(&mut s)).collect();
    for ef in [32, 40, 64, 128, 256] {
        idx.set_expansion_search(ef);
        let (r, ann_ms, exact_ms) = recall(&idx, &queries, 10);
        println!(
            "synthetic clustered: {n} vectors, ef_search={ef}: recall@10 {r:.4}, mean ANN {ann_ms:.3} ms, exact {exact_ms:.3} ms"
        );
    }
}

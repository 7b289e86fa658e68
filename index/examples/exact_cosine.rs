//! Time the exact rescoring kernel: `ExactScorer::cosine_f16_le` over
//! stored f16 vectors (3072 dims), as the vector lanes run it per
//! candidate. Prints ns per vector (median of 7 passes).
//!
//! ```text
//! cargo run --release -p root-index --example exact_cosine
//! ```

use std::time::Instant;

use index::exact::ExactScorer;
use index::vector::DIMENSIONS;

fn main() {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
    };
    let rows: Vec<Vec<u8>> = (0..512)
        .map(|_| {
            (0..DIMENSIONS)
                .flat_map(|_| half::f16::from_f32(next() * 0.05).to_le_bytes())
                .collect()
        })
        .collect();
    let query: Vec<f32> = (0..DIMENSIONS).map(|_| next()).collect();
    let mut scorer = ExactScorer::new(&query);
    let mut passes = Vec::new();
    let mut sink = 0.0f32;
    for _ in 0..7 {
        let t = Instant::now();
        for _ in 0..20 {
            for r in &rows {
                sink += scorer.cosine_f16_le(r).unwrap_or(0.0);
            }
        }
        passes.push(t.elapsed().as_nanos() as f64 / (20 * rows.len()) as f64);
    }
    passes.sort_by(f64::total_cmp);
    println!(
        "cosine_f16_le, {DIMENSIONS} dims: {:.0} ns per stored vector (median of 7; checksum {sink:.3})",
        passes[3]
    );
}

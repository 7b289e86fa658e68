//! Exact rescoring of vector-lane candidates against the lossless copy of
//! each vector (little-endian f16, as the caller stores it): the HNSW graph
//! walks quantised vectors, this gives the candidates their exact cosine
//! similarity and order.

use half::f16;
use half::slice::HalfFloatSliceExt;

/// The lossless vectors of the rows a vector lane indexes (Root: the
/// embeddings in redb).
pub trait ExactVectors {
    /// The exact cosine similarity of `query` with the stored vector of each
    /// of `rows`, in `rows` order; `None` for a row that no longer has a
    /// usable vector (deleted, re-embedded by another model, …): that
    /// candidate keeps its graph score.
    fn similarities(&self, query: &[f32], rows: &[u128]) -> Result<Vec<Option<f32>>, String>;
}

/// A query prepared for exact cosine similarity with stored f16 vectors
/// (reuses its conversion buffers across candidates).
pub struct ExactScorer {
    query: Vec<f32>,
    halves: Vec<f16>,
    floats: Vec<f32>,
}

const LANES: usize = 16;

/// `(q·v, v·v)` in one pass, in 16 independent accumulators (vectorised).
fn dot_and_norm(q: &[f32], v: &[f32]) -> (f32, f32) {
    let mut dot = [0.0f32; LANES];
    let mut nn = [0.0f32; LANES];
    let (qc, qr) = q.split_at(q.len() - q.len() % LANES);
    let (vc, vr) = v.split_at(qc.len());
    for (a, b) in qc.chunks_exact(LANES).zip(vc.chunks_exact(LANES)) {
        for i in 0..LANES {
            dot[i] += a[i] * b[i];
            nn[i] += b[i] * b[i];
        }
    }
    let mut d: f32 = dot.iter().sum();
    let mut n: f32 = nn.iter().sum();
    for (a, b) in qr.iter().zip(vr) {
        d += a * b;
        n += b * b;
    }
    (d, n)
}

impl ExactScorer {
    /// Prepare `query` (normalised here; a zero query scores 0 everywhere).
    pub fn new(query: &[f32]) -> Self {
        let norm = query.iter().map(|x| x * x).sum::<f32>().sqrt();
        let query = if norm > 0.0 && norm.is_finite() {
            query.iter().map(|x| x / norm).collect()
        } else {
            vec![0.0; query.len()]
        };
        ExactScorer {
            halves: Vec::with_capacity(query.len()),
            floats: Vec::with_capacity(query.len()),
            query,
        }
    }

    /// Cosine similarity with a stored vector given as little-endian f16
    /// bytes; `None` when its length differs from the query's. A zero
    /// stored vector scores 0.
    pub fn cosine_f16_le(&mut self, stored: &[u8]) -> Option<f32> {
        if stored.len() != self.query.len() * 2 {
            return None;
        }
        self.halves.clear();
        self.halves.extend(
            stored
                .chunks_exact(2)
                .map(|c| f16::from_bits(u16::from_le_bytes([c[0], c[1]]))),
        );
        self.floats.resize(self.query.len(), 0.0);
        self.halves.convert_to_f32_slice(&mut self.floats);
        let (dot, nn) = dot_and_norm(&self.query, &self.floats);
        if nn > 0.0 && nn.is_finite() {
            Some(dot / nn.sqrt())
        } else {
            Some(0.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f16_bytes(v: &[f32]) -> Vec<u8> {
        v.iter()
            .flat_map(|x| f16::from_f32(*x).to_le_bytes())
            .collect()
    }

    #[test]
    fn cosine_of_stored_halves_matches_f32_cosine() {
        let a: Vec<f32> = (0..37).map(|i| ((i * 7 % 11) as f32 - 5.0) / 3.0).collect();
        let b: Vec<f32> = (0..37).map(|i| ((i * 5 % 13) as f32 - 6.0) / 4.0).collect();
        let exact = {
            let d: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
            let na: f32 = a.iter().map(|x| x * x).sum::<f32>().sqrt();
            let nb: f32 = b.iter().map(|x| x * x).sum::<f32>().sqrt();
            d / (na * nb)
        };
        let mut s = ExactScorer::new(&a);
        let got = s.cosine_f16_le(&f16_bytes(&b)).unwrap();
        assert!((got - exact).abs() < 2e-3, "{got} vs {exact}");
        assert!((s.cosine_f16_le(&f16_bytes(&a)).unwrap() - 1.0).abs() < 1e-3);
        assert_eq!(s.cosine_f16_le(&f16_bytes(&b[..36])), None, "wrong length");
        assert_eq!(s.cosine_f16_le(&f16_bytes(&[0.0; 37])), Some(0.0));
        let mut zero = ExactScorer::new(&[0.0; 37]);
        assert_eq!(zero.cosine_f16_le(&f16_bytes(&b)), Some(0.0));
    }
}

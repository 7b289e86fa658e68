//! The pgvector anchor corpus as `root bench retrieval` reads it: the
//! `.npy` matrices (vectors, query vectors, exact ground truth), the
//! queries, and the chunks grouped into one page per anchor document.
//! Pure file reading, apart from Root, so the criterion bench and the
//! command read the same rows.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Deserialize;

// ───────────────────────────── npy files ─────────────────────────────

/// A parsed `.npy` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpyHeader {
    /// numpy dtype string, e.g. `<f2`, `<i8`.
    pub descr: String,
    /// Array shape.
    pub shape: Vec<usize>,
}

/// Read a `.npy` (v1–v3) header; the reader is left at the first data byte.
pub fn read_npy_header(r: &mut impl Read) -> anyhow::Result<NpyHeader> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)?;
    if &magic[..6] != b"\x93NUMPY" {
        bail!("not a .npy file");
    }
    let len = if magic[6] == 1 {
        let mut b = [0u8; 2];
        r.read_exact(&mut b)?;
        u16::from_le_bytes(b) as usize
    } else {
        let mut b = [0u8; 4];
        r.read_exact(&mut b)?;
        u32::from_le_bytes(b) as usize
    };
    let mut header = vec![0u8; len];
    r.read_exact(&mut header)?;
    let header = String::from_utf8_lossy(&header);
    let field = |name: &str| npy_field(&header, name);
    let descr = field("descr")?
        .trim_start_matches('\'')
        .split('\'')
        .next()
        .unwrap_or_default()
        .to_string();
    if field("fortran_order")?.starts_with("True") {
        bail!("fortran-order arrays are not supported");
    }
    let shape_text = field("shape")?;
    let shape_text = &shape_text[1..shape_text.find(')').context("npy shape")?];
    let shape = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<Result<Vec<_>, _>>()
        .context("npy shape")?;
    Ok(NpyHeader { descr, shape })
}

fn npy_field<'a>(header: &'a str, name: &str) -> anyhow::Result<&'a str> {
    let at = header
        .find(&format!("'{name}'"))
        .with_context(|| format!("npy header has no {name}: {header}"))?;
    Ok(header[at + name.len() + 2..].trim_start_matches([':', ' ']))
}

/// The first `rows` rows of a 2-d little-endian f16 `.npy` file as f32.
pub fn read_f16_matrix(path: &Path, rows: usize) -> anyhow::Result<(usize, Vec<f32>)> {
    let mut r = BufReader::with_capacity(
        1 << 20,
        File::open(path).with_context(|| path.display().to_string())?,
    );
    let h = read_npy_header(&mut r)?;
    if h.descr != "<f2" || h.shape.len() != 2 {
        bail!("{}: expected a 2-d <f2 array, got {h:?}", path.display());
    }
    if rows > h.shape[0] {
        bail!(
            "{} has {} rows, {rows} requested",
            path.display(),
            h.shape[0]
        );
    }
    let dims = h.shape[1];
    let mut bytes = vec![0u8; rows * dims * 2];
    r.read_exact(&mut bytes)?;
    let out = bytes
        .chunks_exact(2)
        .map(|b| half::f16::from_le_bytes([b[0], b[1]]).to_f32())
        .collect();
    Ok((dims, out))
}

/// A 2-d little-endian i64 (`<i8`) `.npy` file (the anchor's ground truth ids).
pub fn read_i64_matrix(path: &Path) -> anyhow::Result<Vec<Vec<u64>>> {
    let mut r = BufReader::new(File::open(path).with_context(|| path.display().to_string())?);
    let h = read_npy_header(&mut r)?;
    if h.descr != "<i8" || h.shape.len() != 2 {
        bail!("{}: expected a 2-d <i8 array, got {h:?}", path.display());
    }
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes)?;
    let cols = h.shape[1];
    Ok(bytes
        .chunks_exact(8 * cols)
        .map(|row| {
            row.chunks_exact(8)
                .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")) as u64)
                .collect()
        })
        .collect())
}

// ───────────────────────────── the anchor corpus ─────────────────────────────

/// One query of the anchor.
#[derive(Clone, Debug)]
pub struct AnchorQuery {
    /// Position in `queries.jsonl`.
    pub qid: usize,
    /// The chunk the query was made from.
    pub source_id: u64,
    /// The keyword lane's words (OR-ed).
    pub tokens: Vec<String>,
    /// The query vector (f16 values as f32).
    pub vector: Vec<f32>,
}

impl AnchorQuery {
    /// The member's words as Root receives them: the tokens, space-separated
    /// (Root's keyword lane ORs the tokens of the query, like the anchor's
    /// `to_tsquery('tok1 | tok2 | …')`).
    pub fn text(&self) -> String {
        self.tokens.join(" ")
    }
}

/// One anchor document = one knowledge page.
#[derive(Clone, Debug)]
pub struct AnchorPage {
    /// Anchor `doc_id`.
    pub doc_id: u64,
    /// Anchor id of its first chunk (chunk `i` of the page is `first_id + i`).
    pub first_id: u64,
    /// Document title.
    pub title: String,
    /// `(text, vector)` per chunk, in row order.
    pub chunks: Vec<(String, Vec<f32>)>,
}

impl AnchorPage {
    /// The page slug: encodes the first chunk's anchor id.
    pub fn slug(&self) -> String {
        slug_for(self.first_id)
    }
}

/// Slug of the page whose first chunk has anchor id `first_id`.
pub fn slug_for(first_id: u64) -> String {
    format!("c{first_id}")
}

/// Inverse of [`slug_for`].
pub fn first_id_of_slug(slug: &str) -> Option<u64> {
    slug.strip_prefix('c')?.parse().ok()
}

#[derive(Deserialize)]
struct ChunkLine {
    id: u64,
    doc_id: u64,
    title: String,
    text: String,
}

#[derive(Deserialize)]
struct QueryLine {
    qid: usize,
    source_id: u64,
    tokens: Vec<String>,
}

/// The anchor corpus directory, its queries and (if cached) ground truth.
pub struct Anchor {
    /// The corpus directory.
    pub dir: PathBuf,
    /// Rows used (the first `n`).
    pub n: usize,
    /// All queries.
    pub queries: Vec<AnchorQuery>,
    /// Exact cosine top-100 anchor ids per query over the first `n` rows
    /// (`gt_<n>.npy`), when present.
    pub ground_truth: Option<Vec<Vec<u64>>>,
    /// sha256 of `chunks.jsonl` from `manifest.json`.
    pub chunks_sha256: String,
}

impl Anchor {
    /// Open `dir` for its first `n` rows (queries and ground truth; chunks
    /// are read by [`read_pages`](Self::read_pages)).
    pub fn open(dir: &Path, n: usize) -> anyhow::Result<Anchor> {
        let manifest: serde_json::Value =
            serde_json::from_reader(File::open(dir.join("manifest.json")).with_context(|| {
                format!("{}/manifest.json (run gen_corpus.py)", dir.display())
            })?)?;
        let have = manifest["n"].as_u64().unwrap_or(0) as usize;
        if n > have {
            bail!(
                "the corpus in {} has {have} rows, {n} requested",
                dir.display()
            );
        }
        let chunks_sha256 = manifest["files"]["chunks.jsonl"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let lines: Vec<QueryLine> = BufReader::new(File::open(dir.join("queries.jsonl"))?)
            .lines()
            .map(|l| -> anyhow::Result<QueryLine> { Ok(serde_json::from_str(&l?)?) })
            .collect::<anyhow::Result<_>>()?;
        let (dims, qv) = read_f16_matrix(&dir.join("queries.f16.npy"), lines.len())?;
        if dims != index::vector::DIMENSIONS {
            bail!("query vectors have {dims} dimensions");
        }
        let queries = lines
            .into_iter()
            .enumerate()
            .map(|(i, q)| AnchorQuery {
                qid: q.qid,
                source_id: q.source_id,
                tokens: q.tokens,
                vector: qv[i * dims..(i + 1) * dims].to_vec(),
            })
            .collect();
        let gt_path = dir.join(format!("gt_{n}.npy"));
        let ground_truth = gt_path
            .exists()
            .then(|| read_i64_matrix(&gt_path))
            .transpose()?;
        Ok(Anchor {
            dir: dir.to_path_buf(),
            n,
            queries,
            ground_truth,
            chunks_sha256,
        })
    }

    /// The first `n` chunks with their vectors, grouped into pages by
    /// `doc_id` (a document's chunks are contiguous rows in the anchor).
    pub fn read_pages(&self) -> anyhow::Result<Vec<AnchorPage>> {
        let (dims, vectors) = read_f16_matrix(&self.dir.join("vectors.f16.npy"), self.n)?;
        if dims != index::vector::DIMENSIONS {
            bail!("chunk vectors have {dims} dimensions");
        }
        let reader = BufReader::with_capacity(1 << 20, File::open(self.dir.join("chunks.jsonl"))?);
        let mut pages: Vec<AnchorPage> = Vec::new();
        for (i, line) in reader.lines().take(self.n).enumerate() {
            let c: ChunkLine = serde_json::from_str(&line?)?;
            if c.id != i as u64 {
                bail!("chunks.jsonl row {i} has id {}", c.id);
            }
            let v = vectors[i * dims..(i + 1) * dims].to_vec();
            match pages.last_mut() {
                Some(p) if p.doc_id == c.doc_id => p.chunks.push((c.text, v)),
                _ => pages.push(AnchorPage {
                    doc_id: c.doc_id,
                    first_id: c.id,
                    title: c.title,
                    chunks: vec![(c.text, v)],
                }),
            }
        }
        Ok(pages)
    }

    /// Warm-up and measured query indexes (`0..warmup`, `warmup..warmup+measured`).
    pub fn split(
        &self,
        warmup: usize,
        measured: usize,
    ) -> anyhow::Result<(Vec<usize>, Vec<usize>)> {
        if warmup + measured > self.queries.len() {
            bail!(
                "{} queries available, {warmup} + {measured} requested",
                self.queries.len()
            );
        }
        Ok(((0..warmup).collect(), (warmup..warmup + measured).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_headers_parse() {
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        let header = "{'descr': '<f2', 'fortran_order': False, 'shape': (3, 2), }";
        let pad = 64 - (10 + header.len() + 1) % 64;
        let header = format!("{header}{}\n", " ".repeat(pad));
        bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        let h = read_npy_header(&mut bytes.as_slice()).unwrap();
        assert_eq!(
            h,
            NpyHeader {
                descr: "<f2".into(),
                shape: vec![3, 2]
            }
        );
    }

    #[test]
    fn slugs_round_trip() {
        assert_eq!(first_id_of_slug(&slug_for(12_345)), Some(12_345));
        assert_eq!(first_id_of_slug("x1"), None);
    }
}

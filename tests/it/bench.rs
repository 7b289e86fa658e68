//! Smoke runs of `root bench sandbox`, `root bench retrieval` and `root
//! bench backup` at tiny sizes through the real binary: the table and the JSON report carry
//! every figure, and the figures are positive. No timing is asserted
//! (the benchmarks are commands; their numbers live in docs/benchmarks).

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn root() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_root"));
    c.env_clear()
        .env("RUST_LOG", "warn")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c
}

/// Run `root bench <args>`; stdout and the JSON written to `out`.
fn bench(args: &[&str], out: &Path) -> (String, Value) {
    let run = root()
        .arg("bench")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .expect("runs");
    let stdout = String::from_utf8_lossy(&run.stdout).into_owned();
    assert!(
        run.status.success(),
        "failed: {stdout}\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let json = serde_json::from_slice(&std::fs::read(out).expect("JSON written")).expect("JSON");
    (stdout, json)
}

fn positive(v: &Value, field: &str) -> f64 {
    let x = v[field]
        .as_f64()
        .unwrap_or_else(|| panic!("{field} missing in {v}"));
    assert!(x > 0.0, "{field} = {x} in {v}");
    x
}

#[test]
fn bench_sandbox_reports_every_series_with_positive_times() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, r) = bench(
        &["sandbox", "--iterations", "3", "--warmup", "1"],
        &dir.path().join("sandbox.json"),
    );
    let series = r["series"].as_array().expect("series");
    let names: Vec<&str> = series.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["spawn", "engine", "trivial", "duty-roster"], "{r}");
    for s in series {
        assert_eq!(s["n"], 3, "{s}");
        for f in ["p50_ms", "p90_ms", "p99_ms", "max_ms", "mean_ms"] {
            positive(s, f);
        }
        assert!(s["p50_ms"].as_f64() <= s["max_ms"].as_f64(), "{s}");
        assert!(stdout.contains(s["name"].as_str().unwrap()), "{stdout}");
    }
    positive(&r["phases"], "spawn_ms");
    assert!(r["phases"]["engine_init_ms"].is_number(), "{r}");
    assert!(r["phases"]["call_ms"].is_number(), "{r}");
    assert_eq!(r["target_p50_ms"], 30.0);
    assert!(r["target_met"].is_boolean(), "{r}");
    assert_eq!(r["warmup"], 1);
    positive(&r, "binary_bytes");
    assert!(r["load_before"].as_str().unwrap().contains("load1"), "{r}");
    assert!(stdout.contains("trivial call p50"), "{stdout}");
    assert!(stdout.contains("target < 30 ms"), "{stdout}");
}

#[test]
fn bench_backup_measures_searches_and_backups_and_reuses_its_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let args = |chunks: &'static str| {
        vec![
            "backup",
            "--data-dir",
            data.to_str().unwrap(),
            "--chunks",
            chunks,
            "--clients",
            "2",
            "--queries",
            "40",
            "--backups",
            "2",
        ]
    };
    let (stdout, r) = bench(&args("300"), &dir.path().join("first.json"));
    assert_eq!(r["chunks"], 300);
    assert_eq!(r["loaded_now"], true, "{r}");
    positive(&r, "ingest_seconds");
    assert_eq!(r["clients"], 2);
    assert_eq!(r["unloaded"]["n"], 40, "{r}");
    for phase in ["unloaded", "loaded"] {
        for f in ["n", "p50_ms", "p99_ms", "max_ms", "qps"] {
            positive(&r[phase], f);
        }
    }
    let backups = r["backups"].as_array().expect("backups");
    assert_eq!(backups.len(), 2, "{r}");
    for b in backups {
        for f in ["seconds", "bytes", "mb_per_s"] {
            positive(b, f);
        }
    }
    positive(&r, "backup_seconds_p50");
    positive(&r, "backup_mb_per_s_p50");
    positive(&r, "p99_ratio");
    assert_eq!(r["target_ratio"], 2.0);
    assert!(r["target_met"].is_boolean(), "{r}");
    for needle in ["unloaded", "during backups", "MB/s", "target < 2×"] {
        assert!(stdout.contains(needle), "{needle}: {stdout}");
    }
    // The backups were removed; the data dir stays loaded.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A second run reuses the corpus: no ingest, same figures present.
    let (stdout, again) = bench(&args("300"), &dir.path().join("second.json"));
    assert_eq!(again["loaded_now"], false, "{again}");
    assert!(again["ingest_seconds"].is_null(), "{again}");
    assert!(stdout.contains("reusing"), "{stdout}");
    positive(&again["loaded"], "p99_ms");

    // A different size is refused with a clear message, not silently mixed.
    let run = root()
        .arg("bench")
        .args(args("500"))
        .output()
        .expect("runs");
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("holds a corpus of 300 chunks"), "{err}");
}

/// A tiny anchor corpus in the layout of `gen_corpus.py`: `n` chunks in
/// pages of 4, `q` queries made from chunks, 3072-dim f16 vectors.
fn tiny_anchor(dir: &Path, n: usize, q: usize) {
    use sha2::{Digest, Sha256};
    const DIMS: usize = 3072;
    let vector = |seed: usize| -> Vec<f32> {
        let mut s = (seed as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (0..DIMS)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    };
    let npy = |rows: &[Vec<f32>]| -> Vec<u8> {
        let mut header = format!(
            "{{'descr': '<f2', 'fortran_order': False, 'shape': ({}, {DIMS}), }}",
            rows.len()
        );
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut out = b"\x93NUMPY\x01\x00".to_vec();
        out.extend((header.len() as u16).to_le_bytes());
        out.extend(header.as_bytes());
        for r in rows {
            for x in r {
                out.extend(half::f16::from_f32(*x).to_le_bytes());
            }
        }
        out
    };
    let words = [
        "backup", "restore", "redb", "index", "tenant", "search", "vector", "page",
    ];
    let text = |i: usize| format!("{} {} chunk {i}", words[i % 8], words[(i / 8) % 8]);
    let chunks: String = (0..n)
        .map(|i| {
            serde_json::json!({"id": i, "doc_id": i / 4, "title": format!("doc {}", i / 4), "text": text(i)})
                .to_string()
                + "\n"
        })
        .collect();
    let queries: String = (0..q)
        .map(|k| {
            let src = k * 3 % n;
            serde_json::json!({"qid": k, "source_id": src, "tokens": [words[src % 8], words[(src / 8) % 8]]})
                .to_string()
                + "\n"
        })
        .collect();
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("chunks.jsonl"), &chunks).unwrap();
    std::fs::write(dir.join("queries.jsonl"), &queries).unwrap();
    let vectors: Vec<Vec<f32>> = (0..n).map(vector).collect();
    std::fs::write(dir.join("vectors.f16.npy"), npy(&vectors)).unwrap();
    let qv: Vec<Vec<f32>> = (0..q).map(|k| vectors[k * 3 % n].clone()).collect();
    std::fs::write(dir.join("queries.f16.npy"), npy(&qv)).unwrap();
    let sha = hex::encode(Sha256::digest(chunks.as_bytes()));
    let manifest = serde_json::json!({"n": n, "files": {"chunks.jsonl": sha}});
    std::fs::write(dir.join("manifest.json"), manifest.to_string()).unwrap();
}

#[test]
fn bench_retrieval_keeps_an_anchor_data_dir_that_bench_backup_serves() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = dir.path().join("corpus");
    tiny_anchor(&corpus, 40, 12);
    let data = dir.path().join("anchor-data");
    let (stdout, r) = bench(
        &[
            "retrieval",
            "--corpus",
            corpus.to_str().unwrap(),
            "--n",
            "40",
            "--data",
            data.to_str().unwrap(),
            "--keep",
            "--warmup",
            "2",
            "--measured",
            "8",
            "--rounds",
            "1",
            "--per-client",
            "8",
            "--ef-sweep",
            "40",
        ],
        &dir.path().join("retrieval.json"),
    );
    assert!(stdout.contains("root bench retrieval"), "{stdout}");
    assert!(data.join("anchor-loaded.json").exists(), "{stdout}");
    assert!(r.is_object(), "{r}");

    let backup = |with_corpus: bool| {
        let mut a = vec![
            "backup",
            "--data-dir",
            data.to_str().unwrap(),
            "--clients",
            "2",
            "--queries",
            "20",
            "--backups",
            "1",
        ];
        if with_corpus {
            a.extend(["--corpus", corpus.to_str().unwrap()]);
        }
        a
    };
    let (stdout, b) = bench(&backup(true), &dir.path().join("backup.json"));
    assert_eq!(b["corpus"], "anchor", "{b}");
    assert_eq!(b["chunks"], 40, "{b}");
    assert_eq!(b["loaded_now"], false, "{b}");
    assert_eq!(b["unloaded"]["n"], 20, "{b}");
    positive(&b["loaded"], "p99_ms");
    positive(&b["backups"][0], "bytes");
    assert!(stdout.contains("anchor corpus, 40 chunks"), "{stdout}");

    // Without --corpus the anchor dir is refused with the fix named.
    let run = root()
        .arg("bench")
        .args(backup(false))
        .output()
        .expect("runs");
    assert!(!run.status.success());
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(err.contains("pass --corpus"), "{err}");
}

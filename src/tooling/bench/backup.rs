//! `root bench backup`: a backup (§15.4, `ops::backup::backup_store`) of a
//! large knowledge database while the server keeps answering searches
//! (issue 22: "searches' p99 stays < 2× unloaded"). A real server over
//! `--data-dir` holds either a synthetic corpus (see [`super::synthetic`]:
//! built through the normal ingest path on the first run, reused
//! afterwards) or the anchor corpus of a `root bench retrieval --keep`
//! data dir (tenant `anchor`, searched with the anchor's query words,
//! `--corpus`); K clients send `POST /api/v1/kb/search` unloaded, then
//! again while backups of the live store run back to back. Reported: search
//! p50/p99 of both phases and their p99 ratio against 2×, and per backup its
//! seconds, bytes and MB/s. Build with `--release`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use super::retrieval::{Anchor, LOADED_MARKER, TENANT_SLUG as ANCHOR_TENANT, load_snapshot};
use super::synthetic::{BenchServer, Target, Words, percentile_ms};
use crate::ops::backup::{backup_store, manifest_path};

/// The bound on p99(loaded) / p99(unloaded).
pub const TARGET_RATIO: f64 = 2.0;
/// The file a loaded data dir is marked with.
const MARKER: &str = "root-bench-backup.json";
/// Chunks per synthetic page.
const CHUNKS_PER_PAGE: usize = 10;

/// Options of `root bench backup`.
#[derive(Clone, Debug)]
pub struct BackupBenchOptions {
    /// Data directory (loaded on the first run, reused when it holds
    /// the same corpus; default: a temp dir, removed afterwards).
    pub data_dir: Option<PathBuf>,
    /// Chunks in the synthetic corpus.
    pub chunks: usize,
    /// The anchor corpus directory, when `data_dir` was loaded by `root
    /// bench retrieval --keep` (its query words are searched).
    pub corpus: Option<PathBuf>,
    /// Concurrent search clients.
    pub clients: usize,
    /// Searches of the unloaded phase (all clients together).
    pub queries: usize,
    /// Backups taken back to back in the loaded phase.
    pub backups: usize,
    /// Write the report as JSON to this file.
    pub out: Option<PathBuf>,
}

impl Default for BackupBenchOptions {
    fn default() -> Self {
        BackupBenchOptions {
            data_dir: None,
            chunks: 100_000,
            corpus: None,
            clients: 2,
            queries: 2_000,
            backups: 3,
            out: None,
        }
    }
}

/// What a data dir was loaded with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Marker {
    chunks: usize,
    chunks_per_page: usize,
}

/// Search latency of one phase.
#[derive(Clone, Debug, Serialize)]
pub struct SearchPhase {
    /// Searches answered.
    pub n: usize,
    /// Median, ms.
    pub p50_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Slowest, ms.
    pub max_ms: f64,
    /// Searches per second, all clients.
    pub qps: f64,
}

/// One backup of the loaded phase.
#[derive(Clone, Debug, Serialize)]
pub struct BackupRun {
    /// Wall time, copy + fsync + SHA-256 + manifest.
    pub seconds: f64,
    /// The backup file's size.
    pub bytes: u64,
    /// bytes / seconds, in MB/s (10^6).
    pub mb_per_s: f64,
}

/// What `root bench backup` measured.
#[derive(Clone, Debug, Serialize)]
pub struct BackupBenchReport {
    /// `synthetic` or `anchor`.
    pub corpus: String,
    /// Chunks in the database.
    pub chunks: usize,
    /// The corpus was loaded by this run (else reused).
    pub loaded_now: bool,
    /// Seconds the load took (when loaded now).
    pub ingest_seconds: Option<f64>,
    /// Search clients.
    pub clients: usize,
    /// Load average and CPU pressure before the phases.
    pub load_before: String,
    /// The same after.
    pub load_after: String,
    /// Searches alone.
    pub unloaded: SearchPhase,
    /// Searches while backups run.
    pub loaded: SearchPhase,
    /// The backups.
    pub backups: Vec<BackupRun>,
    /// Median backup seconds.
    pub backup_seconds_p50: f64,
    /// Median backup MB/s.
    pub backup_mb_per_s_p50: f64,
    /// p99(loaded) / p99(unloaded).
    pub p99_ratio: f64,
    /// [`TARGET_RATIO`].
    pub target_ratio: f64,
    /// The ratio is under the target.
    pub target_met: bool,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn phase(mut lat: Vec<Duration>, took: Duration) -> SearchPhase {
    lat.sort();
    SearchPhase {
        n: lat.len(),
        p50_ms: round3(percentile_ms(&lat, 0.5)),
        p99_ms: round3(percentile_ms(&lat, 0.99)),
        max_ms: round3(percentile_ms(&lat, 1.0)),
        qps: round3(lat.len() as f64 / took.as_secs_f64().max(1e-9)),
    }
}

/// `clients` tasks search round-robin over `queries` until `limit`
/// searches are done or `stop` is set (whichever is given).
async fn search_phase(
    target: &Target,
    queries: &Arc<Vec<String>>,
    clients: usize,
    limit: Option<usize>,
    stop: Option<Arc<AtomicBool>>,
) -> anyhow::Result<SearchPhase> {
    let started = Instant::now();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let target = target.clone();
        let queries = queries.clone();
        let stop = stop.clone();
        let own = limit.map(|l| l / clients + usize::from(c < l % clients));
        tasks.spawn(async move {
            let mut lat = Vec::new();
            let mut i = c;
            loop {
                if own.is_some_and(|n| lat.len() >= n)
                    || stop.as_ref().is_some_and(|s| s.load(Ordering::Relaxed))
                {
                    break;
                }
                let q = &queries[i % queries.len()];
                let t = Instant::now();
                target.search(false, q, i as u64).await?;
                lat.push(t.elapsed());
                i += clients;
            }
            anyhow::Ok(lat)
        });
    }
    let mut all = Vec::new();
    while let Some(r) = tasks.join_next().await {
        all.extend(r??);
    }
    Ok(phase(all, started.elapsed()))
}

/// Take `n` backups of the live store back to back into `dir`, removing
/// each after it is measured.
async fn backups(server: &BenchServer, dir: &Path, n: usize) -> anyhow::Result<Vec<BackupRun>> {
    let mut runs = Vec::with_capacity(n);
    for i in 0..n {
        let file = dir.join(format!("bench-{i}.redb"));
        let t = Instant::now();
        let manifest = backup_store(&server.state.store, &file, server.state.clock.now()).await?;
        let seconds = t.elapsed().as_secs_f64();
        let _ = std::fs::remove_file(&file);
        let _ = std::fs::remove_file(manifest_path(&file));
        eprintln!(
            "  backup {}: {} bytes in {seconds:.2} s",
            i + 1,
            manifest.bytes
        );
        runs.push(BackupRun {
            seconds: round3(seconds),
            bytes: manifest.bytes,
            mb_per_s: round3(manifest.bytes as f64 / 1e6 / seconds.max(1e-9)),
        });
    }
    Ok(runs)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// The server, corpus and queries a run searches.
struct Prepared {
    server: BenchServer,
    corpus: &'static str,
    chunks: usize,
    ingest_seconds: Option<f64>,
    queries: Vec<String>,
}

/// The anchor corpus when `data_dir` was loaded by `root bench retrieval
/// --keep`: its marker's row count, opened over `corpus` for the queries.
fn anchor_dir(data_dir: &Path, corpus: Option<&Path>) -> anyhow::Result<Option<Anchor>> {
    let marker = data_dir.join(LOADED_MARKER);
    let Ok(raw) = std::fs::read(&marker) else {
        if let Some(c) = corpus {
            bail!(
                "--corpus {} is given but {} was not loaded by `root bench retrieval --keep`",
                c.display(),
                data_dir.display()
            );
        }
        return Ok(None);
    };
    let Some(corpus) = corpus else {
        bail!(
            "{} holds the anchor corpus (`root bench retrieval --keep`); pass --corpus <anchor corpus dir> for its queries",
            data_dir.display()
        );
    };
    let v: serde_json::Value = serde_json::from_slice(&raw)
        .with_context(|| format!("{} is not valid", marker.display()))?;
    let n = v["n"]
        .as_u64()
        .with_context(|| format!("{} has no row count", marker.display()))?;
    let anchor = Anchor::open(corpus, n as usize)?;
    if v["chunks_sha256"].as_str() != Some(anchor.chunks_sha256.as_str()) {
        bail!(
            "{} was loaded from another corpus than {}",
            data_dir.display(),
            corpus.display()
        );
    }
    Ok(Some(anchor))
}

/// Serve a `bench retrieval` data dir: tenant `anchor`, the anchor's
/// query words (embedded by the server, as a member's search would be).
async fn prepare_anchor(data_dir: &Path, anchor: Anchor) -> anyhow::Result<Prepared> {
    let server = BenchServer::start(data_dir, ANCHOR_TENANT, "bench-backup").await?;
    println!(
        "serving the anchor corpus in {} ({} chunks): no ingest figures in this run",
        data_dir.display(),
        anchor.n
    );
    Ok(Prepared {
        server,
        corpus: "anchor",
        chunks: anchor.n,
        ingest_seconds: None,
        queries: anchor.queries.iter().take(500).map(|q| q.text()).collect(),
    })
}

/// Serve the synthetic corpus, loading it when `data_dir` is new.
async fn prepare_synthetic(data_dir: &Path, chunks: usize) -> anyhow::Result<Prepared> {
    let want = Marker {
        chunks,
        chunks_per_page: CHUNKS_PER_PAGE,
    };
    let marker_path = data_dir.join(MARKER);
    let reuse = match std::fs::read(&marker_path) {
        Ok(raw) => {
            let had: Marker = serde_json::from_slice(&raw)
                .with_context(|| format!("{} is not valid", marker_path.display()))?;
            if had != want {
                bail!(
                    "{} holds a corpus of {} chunks, not {}; pass --chunks {} or a new directory",
                    data_dir.display(),
                    had.chunks,
                    chunks,
                    had.chunks
                );
            }
            true
        }
        Err(_) => {
            let empty = std::fs::read_dir(data_dir).map_or(true, |mut d| d.next().is_none());
            if !empty {
                bail!(
                    "{} is not empty and was not loaded by `root bench backup`; pass a new directory",
                    data_dir.display()
                );
            }
            false
        }
    };
    let server = BenchServer::start(data_dir, "root", "bench-backup").await?;
    let mut words = Words::new(0xbac0, 4096);
    let ingest_seconds = if reuse {
        println!(
            "reusing {} ({chunks} chunks): no ingest figures in this run",
            data_dir.display()
        );
        None
    } else {
        let took = server.load(&mut words, chunks, CHUNKS_PER_PAGE).await?;
        std::fs::write(&marker_path, serde_json::to_vec(&want)?)?;
        println!(
            "ingest: {chunks} chunks searchable after {:.1} s into {}",
            took.as_secs_f64(),
            data_dir.display()
        );
        Some(round3(took.as_secs_f64()))
    };
    // Queries come from a fixed seed so a reused corpus sees the same ones.
    let mut qwords = Words::new(0x9e7, 4096);
    Ok(Prepared {
        server,
        corpus: "synthetic",
        chunks,
        ingest_seconds,
        queries: (0..500).map(|_| qwords.sentence(5)).collect(),
    })
}

/// Run the benchmark, print a table and return the report.
pub async fn run_backup_bench(opts: BackupBenchOptions) -> anyhow::Result<BackupBenchReport> {
    if opts.chunks == 0 || opts.clients == 0 || opts.queries == 0 || opts.backups == 0 {
        bail!("chunks, clients, queries and backups must be positive");
    }
    let temp = tempfile::tempdir()?;
    let data_dir = opts
        .data_dir
        .clone()
        .unwrap_or_else(|| temp.path().join("data"));
    let Prepared {
        server,
        corpus,
        chunks,
        ingest_seconds,
        queries,
    } = match anchor_dir(&data_dir, opts.corpus.as_deref())? {
        Some(anchor) => prepare_anchor(&data_dir, anchor).await?,
        None => prepare_synthetic(&data_dir, opts.chunks).await?,
    };
    let queries = Arc::new(queries);
    let load_before = load_snapshot();
    println!(
        "root bench backup — {corpus} corpus, {chunks} chunks, {} clients, {} unloaded searches, {} backups under load ({load_before})",
        opts.clients, opts.queries, opts.backups
    );
    // Warm-up: page cache and index.
    search_phase(
        &server.target,
        &queries,
        opts.clients,
        Some(opts.queries / 10 + 1),
        None,
    )
    .await?;
    let unloaded = search_phase(
        &server.target,
        &queries,
        opts.clients,
        Some(opts.queries),
        None,
    )
    .await?;
    let stop = Arc::new(AtomicBool::new(false));
    let searching = {
        let target = server.target.clone();
        let queries = queries.clone();
        let stop = stop.clone();
        let clients = opts.clients;
        tokio::spawn(
            async move { search_phase(&target, &queries, clients, None, Some(stop)).await },
        )
    };
    let backup_dir = tempfile::tempdir_in(data_dir.parent().unwrap_or(temp.path()))
        .or_else(|_| tempfile::tempdir())?;
    let runs = backups(&server, backup_dir.path(), opts.backups).await;
    stop.store(true, Ordering::Relaxed);
    let loaded = searching.await??;
    let runs = runs?;
    server.stop().await?;
    let p99_ratio = round3(loaded.p99_ms / unloaded.p99_ms.max(1e-9));
    let report = BackupBenchReport {
        corpus: corpus.to_string(),
        chunks,
        loaded_now: ingest_seconds.is_some(),
        ingest_seconds,
        clients: opts.clients,
        load_before,
        load_after: load_snapshot(),
        backup_seconds_p50: round3(median(runs.iter().map(|r| r.seconds).collect())),
        backup_mb_per_s_p50: round3(median(runs.iter().map(|r| r.mb_per_s).collect())),
        backups: runs,
        unloaded,
        loaded,
        p99_ratio,
        target_ratio: TARGET_RATIO,
        target_met: p99_ratio < TARGET_RATIO,
    };
    print_table(&report);
    if let Some(path) = &opts.out {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
        println!("results written to {}", path.display());
    }
    Ok(report)
}

fn print_table(r: &BackupBenchReport) {
    println!(
        "{:<26} {:>7} {:>9} {:>9} {:>9} {:>9}",
        "searches", "n", "p50 ms", "p99 ms", "max ms", "q/s"
    );
    for (name, p) in [("unloaded", &r.unloaded), ("during backups", &r.loaded)] {
        println!(
            "{:<26} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.0}",
            name, p.n, p.p50_ms, p.p99_ms, p.max_ms, p.qps
        );
    }
    println!("{:<26} {:>14} {:>9} {:>9}", "backup", "bytes", "s", "MB/s");
    for (i, b) in r.backups.iter().enumerate() {
        println!(
            "{:<26} {:>14} {:>9.2} {:>9.1}",
            format!("#{}", i + 1),
            b.bytes,
            b.seconds,
            b.mb_per_s
        );
    }
    println!(
        "backup p50 {:.2} s, {:.1} MB/s; search p99 during backups / unloaded = {:.2}× (target < {:.0}×) — {}; {}",
        r.backup_seconds_p50,
        r.backup_mb_per_s_p50,
        r.p99_ratio,
        r.target_ratio,
        if r.target_met { "met" } else { "missed" },
        r.load_after
    );
}

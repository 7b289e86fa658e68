//! The cold start of `root bench retrieval`: the parent spawns
//! `root bench retrieval-open` on the closed data directory (optionally
//! evicted from the page cache first) and reads what the child reports:
//! store and index open times, the first answer, and its memory.

use std::path::Path;
use std::time::Instant;

use anyhow::{Context, bail};

use super::RetrievalBenchOptions;
use super::corpus::Anchor;
use super::report::{ColdStart, memory_split, memory_status, mib, round3};
use super::runner::{RootInstance, Tuning, measure_async};

pub(super) async fn cold_start(
    data_dir: &Path,
    opts: &RetrievalBenchOptions,
    evict: bool,
) -> anyhow::Result<ColdStart> {
    use tokio::io::AsyncBufReadExt;
    if evict {
        evict_page_cache(data_dir)?;
    }
    let mut cmd = tokio::process::Command::new(std::env::current_exe()?);
    cmd.arg("bench")
        .arg("retrieval-open")
        .arg("--data")
        .arg(data_dir)
        .arg("--corpus")
        .arg(&opts.corpus)
        .arg("--n")
        .arg(opts.n.to_string())
        .arg("--queries")
        .arg(opts.measured.to_string());
    if let Some(ef) = opts.ef_search {
        cmd.arg("--ef-search").arg(ef.to_string());
    }
    if let Some(mb) = opts.redb_cache_mb {
        cmd.arg("--redb-cache-mb").arg(mb.to_string());
    }
    if let Some(q) = opts.quantization {
        cmd.arg("--quantization").arg(q.name());
    }
    cmd.stdout(std::process::Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd.spawn()?;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let mut first = None;
    let mut result: Option<ColdStart> = None;
    while let Some(line) = lines.next_line().await? {
        if line.starts_with("FIRST_ANSWER") && first.is_none() {
            first = Some(t0.elapsed());
        } else if let Some(json) = line.strip_prefix("RESULT ") {
            result = Some(serde_json::from_str(json)?);
        }
    }
    let status = child.wait().await?;
    if !status.success() {
        bail!("cold-start process failed: {status}");
    }
    let mut r = result.context("the cold-start process printed no result")?;
    r.spawn_to_first_answer_ms = round3(first.unwrap_or_default().as_secs_f64() * 1e3);
    println!(
        "cold start{} (new process; store open {:.1} ms + index open {:.1} ms + first query {:.1} ms): first answer {:.1} ms after spawn",
        if evict {
            ", data files evicted from the page cache"
        } else {
            ", page cache warm"
        },
        r.store_open_ms,
        r.index_open_ms,
        r.first_query_ms,
        r.spawn_to_first_answer_ms
    );
    println!(
        "  serving process after {} more fused queries: peak RSS {:.0} MiB, RSS {:.0} MiB = anonymous {:.0} + mapped files {:.0} (RSS after the first answer {:.0} MiB); their latency {}",
        r.queries_after,
        mib(r.vm_hwm_bytes),
        mib(r.vm_rss_bytes),
        mib(r.rss_anon_bytes),
        mib(r.rss_file_bytes),
        mib(r.rss_after_first_bytes),
        r.latency_after
    );
    Ok(r)
}

/// Drop the page-cache pages of every file under `dir` (GNU `dd
/// iflag=nocache count=0` per file; affects only these files).
pub fn evict_page_cache(dir: &Path) -> anyhow::Result<()> {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)?.flatten() {
            let path = e.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let status = std::process::Command::new("dd")
                    .arg(format!("if={}", path.display()))
                    .args(["iflag=nocache", "count=0", "status=none"])
                    .status()?;
                if !status.success() {
                    bail!("dd could not evict {}", path.display());
                }
            }
        }
    }
    Ok(())
}

/// `root bench retrieval-open`: the cold-start child. Opens the data
/// directory, answers the first query (prints `FIRST_ANSWER`), answers
/// `queries` more, and prints `RESULT <json>` with its timings and memory.
pub async fn run_cold_open(
    data_dir: &Path,
    corpus: &Path,
    n: usize,
    queries: usize,
    tuning: Tuning,
) -> anyhow::Result<()> {
    // The queries are read before the clock starts (a client brings them).
    let anchor = Anchor::open(corpus, n)?;
    let t0 = Instant::now();
    let inst = RootInstance::open(data_dir, tuning).await?;
    let store_open = t0.elapsed();
    let t1 = Instant::now();
    inst.handle().await?;
    let index_open = t1.elapsed();
    let t2 = Instant::now();
    let (first_ids, _) = inst.fused(&anchor.queries[0]).await?;
    let first_query = t2.elapsed();
    let open_to_first = t0.elapsed();
    {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        writeln!(out, "FIRST_ANSWER {} results", first_ids.len())?;
        out.flush()?;
    }
    let rss_after_first = memory_status().1;
    let idx: Vec<usize> = (1..=queries).map(|i| i % anchor.queries.len()).collect();
    let (latency_after, _) = measure_async(&[], &idx, 1, |i| {
        let q = &anchor.queries[i];
        let inst = &inst;
        async move { inst.fused(q).await }
    })
    .await?;
    let (hwm, rss) = memory_status();
    let (anon, file) = memory_split();
    let r = ColdStart {
        spawn_to_first_answer_ms: 0.0,
        store_open_ms: round3(store_open.as_secs_f64() * 1e3),
        index_open_ms: round3(index_open.as_secs_f64() * 1e3),
        first_query_ms: round3(first_query.as_secs_f64() * 1e3),
        open_to_first_answer_ms: round3(open_to_first.as_secs_f64() * 1e3),
        rss_after_first_bytes: rss_after_first,
        queries_after: idx.len(),
        latency_after,
        vm_hwm_bytes: hwm,
        vm_rss_bytes: rss,
        rss_anon_bytes: anon,
        rss_file_bytes: file,
    };
    println!("RESULT {}", serde_json::to_string(&r)?);
    // Leave the files as they are: no snapshot is due (nothing changed).
    inst.close().await;
    Ok(())
}

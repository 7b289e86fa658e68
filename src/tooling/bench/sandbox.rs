//! `root bench sandbox`: what one community-build tool call costs (§15.1,
//! issue 22). Every run is a cold child — the current `root` binary
//! re-executed as `root sandbox-run` through [`SandboxRunner`], exactly as
//! production does — timed from the parent, spawn to exit. Four series:
//!
//! - `spawn`: the child with an empty stdin (it answers "request not
//!   valid" before any JavaScript exists) — process creation, exec,
//!   dynamic loading, argument parsing, one result line;
//! - `engine`: a module that does not parse — the above plus the QuickJS
//!   runtime and context, the bootstrap glue, and the parse attempt;
//! - `trivial`: a tiny inline build whose tool echoes its argument;
//! - `duty-roster`: `who_is_on_duty` of `examples/community-builds/duty-roster`
//!   (no network).
//!
//! The phase split is read off the medians (engine − spawn, trivial −
//! engine): nothing is instrumented in the child. Build with `--release`.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use serde::Serialize;
use serde_json::{Value, json};

use super::retrieval::load_snapshot;
use super::synthetic::percentile_ms;
use crate::builds::sandbox::{SandboxRunner, ToolCall};
use crate::outbound::OutboundPolicy;

/// The target for the trivial call's median.
pub const TARGET_P50_MS: f64 = 30.0;

/// The tiny inline build: one tool that echoes its argument.
const TRIVIAL_MODULE: &str =
    "export function invoke(tool, params, ctx) { return { tool, echo: params.text }; }\n";
/// A module QuickJS cannot parse (the `engine` series).
const BROKEN_MODULE: &str = "export function invoke(\n";
/// The duty-roster example build's module.
const DUTY_ROSTER_MODULE: &str =
    include_str!("../../../examples/community-builds/duty-roster/index.js");

/// Options of `root bench sandbox`.
#[derive(Clone, Debug)]
pub struct SandboxBenchOptions {
    /// Timed runs per series.
    pub iterations: usize,
    /// Untimed runs per series first.
    pub warmup: usize,
    /// The binary the children execute (default: this one).
    pub binary: Option<PathBuf>,
    /// Write the report as JSON to this file.
    pub out: Option<PathBuf>,
}

impl Default for SandboxBenchOptions {
    fn default() -> Self {
        SandboxBenchOptions {
            iterations: 200,
            warmup: 10,
            binary: None,
            out: None,
        }
    }
}

/// Wall time of one series, in ms.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    /// `spawn`, `engine`, `trivial` or `duty-roster`.
    pub name: String,
    /// Timed runs.
    pub n: usize,
    /// Median.
    pub p50_ms: f64,
    /// 90th percentile.
    pub p90_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Slowest run.
    pub max_ms: f64,
    /// Mean.
    pub mean_ms: f64,
}

impl Series {
    fn of(name: &str, mut samples: Vec<Duration>) -> Series {
        samples.sort();
        let mean =
            samples.iter().map(Duration::as_secs_f64).sum::<f64>() / samples.len().max(1) as f64;
        Series {
            name: name.into(),
            n: samples.len(),
            p50_ms: round3(percentile_ms(&samples, 0.5)),
            p90_ms: round3(percentile_ms(&samples, 0.9)),
            p99_ms: round3(percentile_ms(&samples, 0.99)),
            max_ms: round3(percentile_ms(&samples, 1.0)),
            mean_ms: round3(mean * 1e3),
        }
    }
}

/// Where the trivial call's median goes (from the series' medians).
#[derive(Clone, Debug, Serialize)]
pub struct Phases {
    /// Process spawn, exec, loading and exit (`spawn` p50).
    pub spawn_ms: f64,
    /// QuickJS runtime, context and bootstrap (`engine` − `spawn`).
    pub engine_init_ms: f64,
    /// Module evaluation and the call itself (`trivial` − `engine`).
    pub call_ms: f64,
}

/// What `root bench sandbox` measured.
#[derive(Clone, Debug, Serialize)]
pub struct SandboxBenchReport {
    /// The child binary.
    pub binary: String,
    /// Its size in bytes.
    pub binary_bytes: u64,
    /// Load average and CPU pressure before the runs.
    pub load_before: String,
    /// The same after.
    pub load_after: String,
    /// Untimed runs per series.
    pub warmup: usize,
    /// The four series.
    pub series: Vec<Series>,
    /// The trivial call's median, split.
    pub phases: Phases,
    /// [`TARGET_P50_MS`].
    pub target_p50_ms: f64,
    /// The trivial call's p50 is under the target.
    pub target_met: bool,
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

fn call(module: &str, tool: &str, params: Value, config: Value) -> Box<ToolCall> {
    Box::new(ToolCall {
        module_source: module.into(),
        tool: tool.into(),
        params,
        config,
        principal: json!({"id": "bench"}),
        channel: "web".into(),
        timeout: Duration::from_secs(10),
        tenant: None,
    })
}

/// One bare child: empty stdin, same environment and directory rules as
/// the runner; it must answer with a failed result line.
async fn bare_child(binary: &PathBuf) -> anyhow::Result<Duration> {
    let dir = tempfile::tempdir()?;
    let started = Instant::now();
    let out = tokio::process::Command::new(binary)
        .arg("sandbox-run")
        .env_clear()
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output()
        .await
        .context("spawning the sandbox child")?;
    let took = started.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    ensure!(
        text.contains("\"type\":\"result\"") && text.contains("\"ok\":false"),
        "the bare child did not answer with a failed result: {text:?}"
    );
    Ok(took)
}

/// What a series runs.
enum Run {
    Bare,
    Tool {
        call: Box<ToolCall>,
        expect_ok: bool,
    },
}

async fn once(runner: &SandboxRunner, binary: &PathBuf, run: &Run) -> anyhow::Result<Duration> {
    match run {
        Run::Bare => bare_child(binary).await,
        Run::Tool { call, expect_ok } => {
            let out = runner.run_tool(call, &mut |_| {}).await;
            if out.ok != *expect_ok {
                bail!(
                    "tool {}: expected ok = {expect_ok}, got {:?} / {:?}",
                    call.tool,
                    out.result,
                    out.error
                );
            }
            if !out.ok && !out.error.as_deref().unwrap_or("").contains("SyntaxError") {
                bail!("the broken module failed otherwise: {:?}", out.error);
            }
            Ok(out.duration)
        }
    }
}

/// Run the benchmark, print a table and return the report.
pub async fn run_sandbox_bench(opts: SandboxBenchOptions) -> anyhow::Result<SandboxBenchReport> {
    if opts.iterations == 0 {
        bail!("iterations must be positive");
    }
    let binary = match &opts.binary {
        Some(b) => b.clone(),
        None => std::env::current_exe().context("locating the root binary")?,
    };
    let policy = OutboundPolicy {
        allow_private: false,
        require_https: true,
    };
    let runner = SandboxRunner::new(binary.clone(), policy);
    let roster_config = json!({"duty": "kitchen duty", "people": ["Ana", "Ben", "Chloé"],
        "start_date": "2026-01-05", "period_days": 7});
    let series: Vec<(&str, Run)> = vec![
        ("spawn", Run::Bare),
        (
            "engine",
            Run::Tool {
                call: call(BROKEN_MODULE, "echo", json!({}), json!({})),
                expect_ok: false,
            },
        ),
        (
            "trivial",
            Run::Tool {
                call: call(TRIVIAL_MODULE, "echo", json!({"text": "hi"}), json!({})),
                expect_ok: true,
            },
        ),
        (
            "duty-roster",
            Run::Tool {
                call: call(
                    DUTY_ROSTER_MODULE,
                    "who_is_on_duty",
                    json!({"date": "2026-03-01"}),
                    roster_config,
                ),
                expect_ok: true,
            },
        ),
    ];
    let load_before = load_snapshot();
    println!(
        "root bench sandbox — {} cold runs per series after {} warm-up, child {} ({})",
        opts.iterations,
        opts.warmup,
        binary.display(),
        load_before
    );
    let mut results = Vec::new();
    for (name, run) in &series {
        for _ in 0..opts.warmup {
            once(&runner, &binary, run).await?;
        }
        // Interleaving would mix the series' caches; each runs alone.
        let mut samples = Vec::with_capacity(opts.iterations);
        for _ in 0..opts.iterations {
            samples.push(once(&runner, &binary, run).await?);
        }
        results.push(Series::of(name, samples));
    }
    let p50 = |n: &str| {
        results
            .iter()
            .find(|s| s.name == n)
            .map_or(0.0, |s| s.p50_ms)
    };
    let phases = Phases {
        spawn_ms: p50("spawn"),
        engine_init_ms: round3(p50("engine") - p50("spawn")),
        call_ms: round3(p50("trivial") - p50("engine")),
    };
    let trivial = p50("trivial");
    let report = SandboxBenchReport {
        binary: binary.display().to_string(),
        binary_bytes: std::fs::metadata(&binary).map(|m| m.len()).unwrap_or(0),
        load_before,
        load_after: load_snapshot(),
        warmup: opts.warmup,
        series: results,
        phases,
        target_p50_ms: TARGET_P50_MS,
        target_met: trivial < TARGET_P50_MS,
    };
    print_table(&report);
    if let Some(path) = &opts.out {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)?;
        println!("results written to {}", path.display());
    }
    Ok(report)
}

fn print_table(r: &SandboxBenchReport) {
    println!(
        "{:<12} {:>6} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "series", "n", "p50 ms", "p90 ms", "p99 ms", "max ms", "mean ms"
    );
    for s in &r.series {
        println!(
            "{:<12} {:>6} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            s.name, s.n, s.p50_ms, s.p90_ms, s.p99_ms, s.max_ms, s.mean_ms
        );
    }
    println!(
        "trivial call p50 split: spawn {:.3} ms + engine init {:.3} ms + module and call {:.3} ms",
        r.phases.spawn_ms, r.phases.engine_init_ms, r.phases.call_ms
    );
    let trivial = r
        .series
        .iter()
        .find(|s| s.name == "trivial")
        .map_or(0.0, |s| s.p50_ms);
    println!(
        "trivial call p50 {trivial:.3} ms (target < {:.0} ms) — {}; {}",
        r.target_p50_ms,
        if r.target_met { "met" } else { "missed" },
        r.load_after
    );
}

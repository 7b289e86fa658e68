//! `root bench slack`: the Slack ingress under load (issue 15's benchmark).
//!
//! A real server over a temp data dir, a loopback stand-in for the Slack Web
//! API (every method answers `ok`) and a deliberately slow model. Phase 1
//! fires N signed DM events at once from distinct members and measures the
//! ack latency of each (Slack's 3 s deadline must never wait for the model),
//! then waits for every reply and checks none was lost or doubled (one status
//! line and one answer per event). Phase 2 queues M public-channel messages
//! and measures how fast `slack-knowledge-ingest` writes them into both
//! search lanes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::app::App;
use crate::config::Config;
use crate::platform::clock::{Clock, SystemClock};
use crate::queue::WorkerConfig;
use crate::slack::signature::sign;

/// `root bench slack` options.
#[derive(Clone, Debug)]
pub struct SlackBenchOptions {
    /// Concurrent signed DM events.
    pub events: usize,
    /// How long the fake model takes per call, in ms.
    pub llm_delay_ms: u64,
    /// Public messages ingested in phase 2.
    pub ingest: usize,
}

const SECRET: &str = "bench-signing-secret";

fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

/// Per-path and per-channel counts of what the fake Slack received.
#[derive(Default)]
struct SlackLog {
    by_method: HashMap<String, usize>,
    updates_by_channel: HashMap<String, usize>,
}

async fn fake_slack(log: Arc<Mutex<SlackLog>>) -> std::io::Result<String> {
    let respond = move |path: &str, body: Value| {
        let method = path.trim_start_matches("/api/").to_string();
        if let Ok(mut l) = log.lock() {
            *l.by_method.entry(method.clone()).or_default() += 1;
            if method == "chat.update"
                && let Some(c) = body["channel"].as_str()
            {
                *l.updates_by_channel.entry(c.to_string()).or_default() += 1;
            }
        }
        json!({
            "ok": true, "ts": "1700000000.000100", "team_id": "TBENCH", "user_id": "UBOT",
            "user": {"id": "U1", "is_bot": false, "profile": {"display_name": "Member"}},
            "channel": {"id": "CBENCH", "name": "bench"}, "messages": [],
            "permalink": "https://bench.slack.com/archives/CBENCH/p1",
        })
    };
    let addr =
        crate::web::loopback::serve_any(Arc::new(respond), Arc::new(|_: &str| Duration::ZERO))
            .await?;
    Ok(format!("http://{addr}/api"))
}

async fn slow_model(delay: Duration) -> std::io::Result<String> {
    let respond = |path: &str, body: Value| {
        if path.ends_with("/embeddings") {
            let n = body["input"].as_array().map_or(1, Vec::len);
            let data: Vec<Value> = (0..n)
                .map(|i| {
                    let mut v = vec![0.0f32; 3072];
                    v[i % 3072] = 1.0;
                    json!({"index": i, "embedding": v})
                })
                .collect();
            return json!({"data": data, "usage": {"prompt_tokens": 8, "total_tokens": 8}});
        }
        // Structured calls: the DM intent gate (a new request) and the
        // reply review (a confident, grounded answer).
        let schema = body["response_format"]["json_schema"]["name"].as_str();
        let content = if schema == Some("reply_confidence") {
            json!({"score": 0.9, "is_safe_for_proactive_reply": true,
                "unsupported_claims": [], "reasoning": "bench"})
            .to_string()
        } else if body.get("response_format").is_some() {
            json!({"intent": "new_request", "nicety_reply": null}).to_string()
        } else {
            "Parking is on level 2 (bench answer).".to_string()
        };
        json!({
            "id": "gen-bench", "model": "bench/model",
            "choices": [{"index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": 900, "completion_tokens": 20, "total_tokens": 920}
        })
    };
    // Only chat completions are slow: embeddings answer at once, so the
    // ingest phase measures Root, not the stand-in model.
    let delay_for = move |path: &str| {
        if path.ends_with("/chat/completions") {
            delay
        } else {
            Duration::ZERO
        }
    };
    let addr = crate::web::loopback::serve_any(Arc::new(respond), Arc::new(delay_for)).await?;
    Ok(format!("http://{addr}/api/v1"))
}

fn event(
    kind: &str,
    user: &str,
    channel: &str,
    channel_type: &str,
    ts: &str,
    text: &str,
) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "type": "event_callback", "team_id": "TBENCH",
        "event": {"type": kind, "user": user, "text": text, "ts": ts,
            "channel": channel, "channel_type": channel_type},
        "authorizations": [{"user_id": "UBOT", "is_bot": true}],
    }))
    .unwrap_or_default()
}

/// Unix seconds now, as Slack's timestamp header carries them.
fn unix_now() -> String {
    crate::integrations::signing::unix_secs(SystemClock.now()).to_string()
}

/// Run both phases and print the figures.
pub async fn run_slack_bench(opts: SlackBenchOptions) -> anyhow::Result<()> {
    let log = Arc::new(Mutex::new(SlackLog::default()));
    let slack_url = fake_slack(log.clone()).await?;
    let model_url = slow_model(Duration::from_millis(opts.llm_delay_ms)).await?;
    let dir = tempfile::tempdir()?;
    let big = "1000000".to_string();
    let vars: Vec<(String, String)> = [
        ("PORT", "0"),
        ("ROOT_BIND", "127.0.0.1"),
        (
            "ROOT_DATA_DIR",
            &dir.path().join("data").display().to_string(),
        ),
        ("ROOT_ALLOW_PRIVATE_FETCH", "true"),
        ("ROOT_RUN_WORKERS", "false"),
        ("SLACK_API_BASE_URL", &slack_url),
        ("SLACK_BOT_TOKEN", "xoxb-bench"),
        ("SLACK_SIGNING_SECRET", SECRET),
        ("OPENROUTER_BASE_URL", &model_url),
        ("OPENROUTER_API_KEY", "sk-bench"),
        ("ROOT_AGENT_TURNS_PER_TENANT_PER_MINUTE", &big),
        ("ROOT_AGENT_TURNS_BURST", &big),
        ("ROOT_AGENT_TURNS_PER_TENANT_CONCURRENT", &big),
        ("ROOT_AGENT_TURNS_GLOBAL_CONCURRENT", &big),
        ("ROOT_SLACK_INGEST_PER_TENANT_PER_MINUTE", &big),
        ("ROOT_SLACK_INGEST_GLOBAL_PER_MINUTE", &big),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let app = App::build(Config::from_vars(vars)?).await?;
    let base = format!("http://{}", app.local_addr());
    let state = app.state().clone();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stop_rx.await;
    }));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(opts.events)
        .build()?;

    // Phase 1: N concurrent signed DM events from distinct members.
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(opts.events);
    for i in 0..opts.events {
        let client = client.clone();
        let url = format!("{base}/slack/events/root");
        let body = event(
            "message",
            &format!("UB{i:05}"),
            &format!("DB{i:05}"),
            "im",
            &format!("1700000000.{i:06}"),
            "Where do visitors park?",
        );
        tasks.push(tokio::spawn(async move {
            let ts = unix_now();
            let t = Instant::now();
            let resp = client
                .post(url)
                .header("x-slack-request-timestamp", &ts)
                .header("x-slack-signature", sign(SECRET, &ts, &body))
                .body(body)
                .send()
                .await;
            (t.elapsed(), resp.map(|r| r.status().as_u16()).unwrap_or(0))
        }));
    }
    let mut acks = Vec::with_capacity(opts.events);
    let mut not_ok = 0usize;
    for t in tasks {
        let (d, status) = t.await?;
        if status != 200 {
            not_ok += 1;
        }
        acks.push(d);
    }
    let all_acked = started.elapsed();
    state.slack.idle().await;
    let all_replied = started.elapsed();
    acks.sort();
    let (replied, doubled) = {
        let l = log.lock().map_err(|_| anyhow::anyhow!("log poisoned"))?;
        let replied = l.updates_by_channel.len();
        let doubled = l.updates_by_channel.values().filter(|n| **n > 1).count();
        (replied, doubled)
    };
    println!(
        "slack ack latency, {} concurrent signed DM events, model {} ms/call: p50 {:.2} ms · p95 {:.2} ms · p99 {:.2} ms · max {:.2} ms (all acked after {:.0} ms; non-200: {not_ok})",
        opts.events,
        opts.llm_delay_ms,
        percentile_ms(&acks, 0.50),
        percentile_ms(&acks, 0.95),
        percentile_ms(&acks, 0.99),
        percentile_ms(&acks, 1.0),
        all_acked.as_secs_f64() * 1e3,
    );
    println!(
        "replies: {replied} of {} events answered, {doubled} answered twice, {} lost (all replies after {:.1} s)",
        opts.events,
        opts.events.saturating_sub(replied),
        all_replied.as_secs_f64(),
    );

    // Phase 2: public messages through slack-knowledge-ingest.
    for i in 0..opts.ingest {
        let body = event(
            "message",
            &format!("UI{:05}", i % 50),
            "CBENCH",
            "channel",
            &format!("1700001000.{i:06}"),
            &format!("Message number {i} about parking, dues and the spring meetup schedule"),
        );
        let ts = unix_now();
        client
            .post(format!("{base}/slack/events/root"))
            .header("x-slack-request-timestamp", &ts)
            .header("x-slack-signature", sign(SECRET, &ts, &body))
            .body(body)
            .send()
            .await?;
    }
    state.slack.idle().await;
    let workers = crate::app::build_workers(&state, WorkerConfig::default());
    let t = Instant::now();
    let ran = workers
        .run_until_idle(Some(crate::queue::registry::SLACK_KNOWLEDGE_INGEST))
        .await?;
    let took = t.elapsed();
    println!(
        "ingest: {} public messages indexed in {:.2} s = {:.0} messages/s (names, permalink and embedding per message; sequential runner)",
        ran.len(),
        took.as_secs_f64(),
        ran.len() as f64 / took.as_secs_f64().max(1e-9),
    );
    let _ = stop_tx.send(());
    server.await??;
    Ok(())
}

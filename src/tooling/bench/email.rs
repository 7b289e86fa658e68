//! `root bench email`: inbound mail acknowledgement (issue 16's benchmark).
//!
//! A real server over a temp data dir (real fsyncs), the root tenant set up
//! as a BYO tenant, and C concurrent senders posting N distinct raw MIME
//! mails to its inbound URL. Each 202 means the `email-inbound` job is
//! durably stored (workers are off: this measures ingress, not replies).
//! Reports the ack latency percentiles and the sustained accepted mails/s,
//! and checks every mail became exactly one queued job.

use std::time::{Duration, Instant};

use serde_json::json;
use storage::{
    ChannelStatus, ChannelType, JobQueue, Json, ROOT_TENANT_ID, Redacted, Store, TenantChannel,
};
use uuid::Uuid;

use crate::app::App;
use crate::config::Config;
use crate::platform::clock::{Clock, SystemClock};

/// `root bench email` options.
#[derive(Clone, Debug)]
pub struct EmailBenchOptions {
    /// Mails posted in all.
    pub mails: usize,
    /// Concurrent senders.
    pub senders: usize,
}

const TOKEN: &str = "bench-inbound-token-0123456789abcdef";

fn percentile_ms(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

fn mime(i: usize) -> Vec<u8> {
    format!(
        "From: Member {i} <member{i}@example.org>\r\nTo: hello@community.example\r\n\
         Subject: Question {i}\r\nMessage-ID: <bench-{i}@example.org>\r\n\
         Date: Tue, 01 Dec 2026 10:00:00 +0000\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n\
         Hello, where do visitors park on Saturdays? ({i})\r\n"
    )
    .into_bytes()
}

/// Run the benchmark and print its figures.
pub async fn run_email_bench(opts: EmailBenchOptions) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let vars: Vec<(String, String)> = [
        ("PORT", "0"),
        ("ROOT_BIND", "127.0.0.1"),
        (
            "ROOT_DATA_DIR",
            &dir.path().join("data").display().to_string(),
        ),
        ("ROOT_RUN_WORKERS", "false"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let app = App::build(Config::from_vars(vars)?).await?;
    let state = app.state().clone();
    let now = SystemClock.now();
    state
        .store
        .insert(TenantChannel {
            id: Uuid::new_v4(),
            tenant_id: ROOT_TENANT_ID,
            channel_type: ChannelType::Email,
            config: Json(json!({"mode": "byo_webhook",
                "outbound_webhook_url": "https://replies.example.org/hook"})),
            secrets: Redacted::new(Json(json!({"inbound_token": TOKEN,
                "outbound_signing_secret": "bench-secret"}))),
            status: ChannelStatus::Active,
            created_at: now,
            updated_at: now,
        })
        .await?;
    let url = format!("http://{}/channels/email/inbound/{TOKEN}", app.local_addr());
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(app.run_until(async {
        let _ = stop_rx.await;
    }));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(opts.senders)
        .build()?;
    // Warm-up: one mail (opens the directory snapshot and the queue tables).
    client
        .post(&url)
        .header("content-type", "message/rfc822")
        .body(mime(usize::MAX))
        .send()
        .await?;

    let senders = opts.senders.max(1);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(senders);
    for s in 0..senders {
        let client = client.clone();
        let url = url.clone();
        let mine: Vec<usize> = (0..opts.mails).filter(|i| i % senders == s).collect();
        tasks.push(tokio::spawn(async move {
            let mut out = Vec::with_capacity(mine.len());
            for i in mine {
                let t = Instant::now();
                let status = client
                    .post(&url)
                    .header("content-type", "message/rfc822")
                    .body(mime(i))
                    .send()
                    .await
                    .map(|r| r.status().as_u16())
                    .unwrap_or(0);
                out.push((t.elapsed(), status));
            }
            out
        }));
    }
    let mut acks = Vec::with_capacity(opts.mails);
    let mut not_202 = 0usize;
    for t in tasks {
        for (d, status) in t.await? {
            if status != 202 {
                not_202 += 1;
            }
            acks.push(d);
        }
    }
    let elapsed = started.elapsed();
    acks.sort();
    let waiting = state
        .store
        .stats(crate::queue::registry::EMAIL_INBOUND, SystemClock.now())
        .await?
        .waiting;
    println!(
        "email ack latency, {} mails from {senders} concurrent senders (durable enqueue, fsync): p50 {:.2} ms · p95 {:.2} ms · p99 {:.2} ms · max {:.2} ms; non-202: {not_202}",
        opts.mails,
        percentile_ms(&acks, 0.50),
        percentile_ms(&acks, 0.95),
        percentile_ms(&acks, 0.99),
        percentile_ms(&acks, 1.0),
    );
    println!(
        "throughput: {:.0} accepted mails/s ({} in {:.2} s); queued jobs: {waiting} (expected {})",
        opts.mails as f64 / elapsed.as_secs_f64(),
        opts.mails,
        elapsed.as_secs_f64(),
        opts.mails + 1,
    );
    let _ = stop_tx.send(());
    let _ = server.await;
    Ok(())
}

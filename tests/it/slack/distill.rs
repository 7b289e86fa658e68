//! §10.4 thread distillation end to end (§17 #4): replies ingested through
//! the real route start a coalesced ten-minute timer; after it (a manual
//! clock) the thread becomes a `thread_summary` artifact that Slack search
//! returns, rare long runs become `author_burst`s, and a re-distill drops
//! bursts that no longer qualify.

use std::sync::Arc;

use root::platform::clock::ManualClock;
use root::platform::tenancy::{self, TenantContext};
use root::retrieval::slack::{NoPermalinks, SlackMatchKind, SlackQuery};
use storage::{ArtifactKind, Ts};

use super::*;

const PARENT: &str = "1700000100.000100";
const LONG_REPLY: &str = "1700000100.000200";
const THANKS: &str = "1700000100.000300";

/// A channel message by `user` (optionally in `PARENT`'s thread).
fn by(user: &str, text: &str, ts: &str, in_thread: bool) -> Vec<u8> {
    let body = channel_event("message", text, ts, in_thread.then_some(PARENT));
    let mut v: Value = serde_json::from_slice(&body).unwrap();
    v["event"]["user"] = json!(user);
    serde_json::to_vec(&v).unwrap()
}

fn long_reply_text() -> String {
    "Rotate it with pgbouncer in front: pause the pool, swap the secret in the \
     vault, then resume. Clients queue for a second instead of failing, so there \
     is no downtime at all. We do this every quarter for staging and production."
        .to_string()
}

fn digest() -> Vec<u8> {
    completion(
        &json!({
            "question": "How do we rotate the staging database credentials without downtime?",
            "summary": "Pause pgbouncer, swap the secret, resume; the quarterly runbook.",
            "resolution": "Use the pgbouncer pause/resume runbook.",
            "topics": ["databases", "credentials", "pgbouncer"],
        })
        .to_string(),
    )
}

fn clock_now(clock: &ManualClock) -> i64 {
    use root::platform::clock::Clock;
    clock.now().micros()
}

async fn distill_world(extra: &[(&str, &str)]) -> (World, ManualClock) {
    let clock = ManualClock::new(Ts::now());
    let w = world_on(extra, Arc::new(clock.clone())).await;
    w.slack
        .reply(
            "/api/conversations.info",
            200,
            json!({"ok": true, "channel": {"id": "C0123", "name": "infra"}}),
        )
        .reply(
            "/api/chat.getPermalink",
            200,
            json!({"ok": true, "permalink": "https://x.slack.com/archives/C0123/p1"}),
        )
        .reply(
            "/api/conversations.replies",
            200,
            json!({"ok": true, "messages": [
                {"ts": PARENT, "user": "U1", "text": "q",
                 "reactions": [{"name": "eyes", "count": 2}]},
                {"ts": LONG_REPLY, "user": "U2", "text": "a",
                 "reactions": [{"name": "pray", "count": 3}, {"name": "+1", "count": 1}]},
            ]}),
        );
    (w, clock)
}

impl World {
    async fn in_root<T>(&self, f: impl std::future::Future<Output = T>) -> T {
        let tenant = self
            .app
            .state
            .tenants
            .by_slug("root")
            .await
            .unwrap()
            .unwrap();
        tenancy::scope(TenantContext { tenant }, f).await
    }

    async fn deliver_thread(&self, long_reply: &str) {
        for body in [
            by(
                "U1",
                "How do we rotate the staging database credentials without downtime?",
                PARENT,
                false,
            ),
            by("U2", long_reply, LONG_REPLY, true),
            by("U1", "thanks, that worked for us", THANKS, true),
        ] {
            assert_eq!(self.deliver(&body).await.0, 200);
        }
        self.settle().await;
    }
}

#[tokio::test]
async fn slack_thread_becomes_a_thread_summary_after_the_debounce() {
    let (w, clock) = distill_world(&[]).await;
    w.deliver_thread(&long_reply_text()).await;
    let ingested = crate::support::drain_jobs(&w.app.state, "slack-knowledge-ingest").await;
    assert_eq!(ingested.len(), 3, "{ingested:?}");

    // Two replies, one coalesced job — not due before ten minutes.
    assert!(
        crate::support::drain_jobs(&w.app.state, "slack-thread-distill")
            .await
            .is_empty()
    );
    clock.advance_ms(9 * 60 * 1000);
    assert!(
        crate::support::drain_jobs(&w.app.state, "slack-thread-distill")
            .await
            .is_empty()
    );
    clock.advance_ms(60 * 1000);
    w.llm.json(digest());
    let ran = crate::support::drain_jobs(&w.app.state, "slack-thread-distill").await;
    assert_eq!(ran.len(), 1, "one job for the whole thread: {ran:?}");

    // The model read the transcript, names and all.
    let bodies = w.llm.bodies();
    let prompt = bodies.last().unwrap()["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(prompt.contains("Channel: #infra"), "{prompt}");
    assert!(
        prompt.contains("Ann: thanks, that worked for us"),
        "{prompt}"
    );

    let artifacts = w
        .in_root(w.app.state.retrieval.thread_artifacts("C0123", PARENT))
        .await
        .unwrap();
    let summary = artifacts
        .iter()
        .find(|a| a.kind == ArtifactKind::Thread)
        .expect("a thread artifact");
    assert_eq!(summary.message_count, 3);
    assert_eq!(summary.reaction_count, 6);
    assert_eq!(summary.participant_user_ids, vec!["U1", "U2"]);
    assert_eq!(
        summary.topics,
        vec!["databases", "credentials", "pgbouncer"]
    );
    assert!(
        summary.document_text.starts_with(
            "#infra\nQuestion: How do we rotate the staging database credentials without downtime?"
        ),
        "{}",
        summary.document_text
    );
    // The corpus is tiny, so the long run is rare: a burst.
    let bursts: Vec<_> = artifacts
        .iter()
        .filter(|a| a.kind == ArtifactKind::Burst)
        .collect();
    assert_eq!(bursts.len(), 1, "{artifacts:?}");
    assert_eq!(bursts[0].burst_ts.as_deref(), Some(LONG_REPLY));
    assert_eq!(bursts[0].author_user_id.as_deref(), Some("U2"));

    // Slack search surfaces the summary (only it says "runbook").
    let found = w
        .in_root(w.app.state.retrieval.search_slack(
            SlackQuery {
                query: "quarterly runbook".into(),
                ..Default::default()
            },
            &NoPermalinks,
        ))
        .await
        .unwrap();
    let hit = found
        .matches
        .iter()
        .find(|m| m.kind == SlackMatchKind::ThreadSummary)
        .unwrap_or_else(|| panic!("no thread_summary: {found:?}"));
    assert_eq!(hit.id, format!("thread_summary:C0123:{PARENT}"));
    assert_eq!(hit.channel_name.as_deref(), Some("infra"));
}

#[tokio::test]
async fn slack_redistill_drops_bursts_that_no_longer_qualify() {
    let (w, clock) = distill_world(&[]).await;
    w.deliver_thread(&long_reply_text()).await;
    crate::support::drain_jobs(&w.app.state, "slack-knowledge-ingest").await;
    clock.advance_ms(10 * 60 * 1000);
    w.llm.json(digest());
    assert_eq!(
        crate::support::drain_jobs(&w.app.state, "slack-thread-distill")
            .await
            .len(),
        1
    );

    // The long reply is edited down: the thread is re-distilled and its
    // burst goes; the summary is replaced in place.
    let edited = serde_json::to_vec(&json!({
        "type": "event_callback", "team_id": "T043DB835ML",
        "event": {"type": "message", "subtype": "message_changed", "channel": "C0123",
            "channel_type": "channel", "ts": "1700000100.000900", "hidden": true,
            "message": {"type": "message", "user": "U2", "ts": LONG_REPLY, "thread_ts": PARENT,
                "text": "Use pgbouncer pause/resume, then swap the vault secret. Zero downtime."}},
        "authorizations": [{"user_id": BOT, "is_bot": true}],
    }))
    .unwrap();
    let before = w
        .in_root(w.app.state.retrieval.thread_artifacts("C0123", PARENT))
        .await
        .unwrap();
    // Signed at the app's (advanced) time.
    let at = (clock_now(&clock) / 1_000_000).to_string();
    assert_eq!(w.deliver_signed(&edited, SECRET, &at, None).await.0, 200);
    w.settle().await;
    crate::support::drain_jobs(&w.app.state, "slack-knowledge-ingest").await;
    clock.advance_ms(10 * 60 * 1000);
    w.llm.json(digest());
    crate::support::drain_jobs(&w.app.state, "slack-thread-distill").await;
    let after = w
        .in_root(w.app.state.retrieval.thread_artifacts("C0123", PARENT))
        .await
        .unwrap();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].kind, ArtifactKind::Thread);
    let old_summary = before
        .iter()
        .find(|a| a.kind == ArtifactKind::Thread)
        .unwrap();
    assert_eq!(after[0].id, old_summary.id, "updated in place");
}

#[tokio::test]
async fn slack_thread_artifacts_kill_switch_queues_nothing() {
    let (w, clock) = distill_world(&[("SLACK_THREAD_ARTIFACTS", "false")]).await;
    w.deliver_thread(&long_reply_text()).await;
    assert_eq!(
        crate::support::drain_jobs(&w.app.state, "slack-knowledge-ingest")
            .await
            .len(),
        3
    );
    clock.advance_ms(60 * 60 * 1000);
    assert!(
        crate::support::drain_jobs(&w.app.state, "slack-thread-distill")
            .await
            .is_empty()
    );
    assert!(w.llm.bodies().is_empty(), "no model call");
}

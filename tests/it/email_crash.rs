//! §17 #7: a worker killed (SIGKILL) after the prepared reply was saved and
//! while it was being sent resends the *same* reply from the checkpoint on
//! the retry — the model (and so any tool) is not asked again. The fakes
//! (model, BYO webhook) run in this process, so they count the child's
//! requests too. `cargo test email_crash` selects it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use root::platform::clock::ManualClock;
use serde_json::json;
use storage::{
    ChannelStatus, ChannelType, ConversationLog, Direction, Json, ROOT_TENANT_ID, Redacted, Scan,
    Store, TenantChannel, Ts,
};
use uuid::Uuid;

use crate::support::TestApp;
use crate::support::fake_http::{FakeHttp, Reply};
use crate::support::fake_llm::{FakeLlm, completion};

const CHILD_ENV: &str = "ROOT_EMAIL_CRASH_CHILD_DIR";
const TOKEN: &str = "crash-inbound-token-0123456789";
const MIME: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/email/mime/08_talon_yahoo_plain_reply_in_reply_to.eml"
));

/// The settings both processes run with (the fakes' URLs), stored in the
/// data dir's parent for the child.
fn vars_file(dir: &std::path::Path) -> PathBuf {
    dir.join("vars.json")
}

fn read_vars(dir: &std::path::Path) -> Vec<(String, String)> {
    serde_json::from_slice(&std::fs::read(vars_file(dir)).unwrap()).unwrap()
}

/// Child entry point: a no-op unless started by the crash test. Runs the
/// queued mail's job, which hangs in the send (the webhook never answers).
#[tokio::test]
async fn email_crash_child_worker() {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let vars = read_vars(&dir);
    let extra: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let config = crate::support::test_config(&dir.join("data"), &extra);
    let app = root::app::App::build(config).await.unwrap();
    let workers = root::app::build_workers(app.state(), root::queue::WorkerConfig::default());
    let out = workers.run_one_job(Some("email-inbound")).await;
    panic!("the child should hang while sending, got {out:?}");
}

#[tokio::test]
async fn email_crash_sigkill_while_sending_resends_the_checkpointed_reply_without_a_second_turn() {
    let llm = FakeLlm::start().await;
    let hook = FakeHttp::start().await;
    let dir = tempfile::tempdir().unwrap();
    let root_dir = dir.path().to_path_buf();
    // The first delivery never gets an answer (and tells the test it came);
    // later ones are accepted.
    let seen = Arc::new(AtomicUsize::new(0));
    let never = Arc::new(tokio::sync::Semaphore::new(0));
    {
        let (seen, marker) = (seen.clone(), root_dir.join("sending"));
        hook.route("POST", "/email-reply", move |_| {
            if seen.fetch_add(1, Ordering::SeqCst) == 0 {
                std::fs::write(&marker, b"1").unwrap();
                Reply::gated(never.clone(), Reply::status(200))
            } else {
                Reply::json(200, &json!({"id": "hook-1"}))
            }
        });
    }
    llm.json(completion("Here is your answer, prepared once."));
    let vars: Vec<(String, String)> = vec![
        ("OPENROUTER_BASE_URL".into(), llm.base_url.clone()),
        ("OPENROUTER_API_KEY".into(), "sk-or-test".into()),
        ("ROOT_RUN_WORKERS".into(), "false".into()),
    ];
    std::fs::write(vars_file(&root_dir), serde_json::to_vec(&vars).unwrap()).unwrap();
    let extra: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();

    // Configure the channel and accept one mail (202), then stop.
    let app = TestApp::spawn_in(dir, &extra).await;
    let now = app.state.clock.now();
    app.state
        .store
        .insert(TenantChannel {
            id: Uuid::new_v4(),
            tenant_id: ROOT_TENANT_ID,
            channel_type: ChannelType::Email,
            config: Json(json!({"mode": "byo_webhook",
                "outbound_webhook_url": hook.url("/email-reply")})),
            secrets: Redacted::new(Json(json!({"inbound_token": TOKEN,
                "outbound_signing_secret": "crash-secret"}))),
            status: ChannelStatus::Active,
            created_at: now,
            updated_at: now,
        })
        .await
        .unwrap();
    let resp = app
        .client
        .post(app.url(&format!("/channels/email/inbound/{TOKEN}")))
        .header("content-type", "message/rfc822")
        .body(MIME.to_vec())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 202);
    let dir = app.stop_keep_dir().await;

    // The child prepares (one model call), saves the reply, starts sending
    // — and is killed while the webhook holds the request.
    crate::support::run_child_until_marker_then_sigkill(
        "email_crash::email_crash_child_worker",
        CHILD_ENV,
        &root_dir,
        "sending",
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(llm.bodies().len(), 1, "the child ran the turn once");

    // A new process, its clock past the dead worker's 30 s lease.
    let clock = ManualClock::new(Ts::now().plus_micros(31_000_000));
    let app = TestApp::spawn_on(dir, &extra, Arc::new(clock)).await;
    let ran = crate::support::drain_jobs(&app.state, "email-inbound").await;
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert!(
        matches!(ran[0], root::queue::Outcome::Completed { .. }),
        "{ran:?}"
    );
    assert_eq!(
        llm.bodies().len(),
        1,
        "no second turn: the reply came from the checkpoint"
    );
    let sends = hook.requests_to("/email-reply");
    assert_eq!(sends.len(), 2, "the unanswered send, then the resend");
    assert_eq!(sends[0].raw, sends[1].raw, "the same prepared reply");
    assert_eq!(
        sends[0].header("idempotency-key"),
        sends[1].header("idempotency-key"),
        "the receiver can drop the copy"
    );
    assert!(
        sends[1].body["text"]
            .as_str()
            .unwrap()
            .contains("prepared once")
    );
    assert!(
        crate::support::drain_jobs(&app.state, "email-inbound")
            .await
            .is_empty()
    );
    let logs: Vec<ConversationLog> = app
        .state
        .store
        .scan(Some(ROOT_TENANT_ID), Scan::all())
        .await
        .unwrap();
    let out = logs
        .iter()
        .filter(|l| l.direction == Direction::Outbound)
        .count();
    let inbound = logs
        .iter()
        .filter(|l| l.direction == Direction::Inbound)
        .count();
    assert_eq!((inbound, out), (1, 1), "{logs:#?}");
}

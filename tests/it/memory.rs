//! Conversation memory and work-saved (§6, §13): every exchange queues a
//! per-member `conversation-memory` job 5 s later (a burst coalesces into
//! one) and, on a live tenant, a `conversation-work-saved` job; compaction
//! is a rolling summary with bookkeeping that never re-reads what it
//! covered nor anything before a reset, fails whole, and feeds the next
//! turn's system prompt; estimates are clamped and upserted per exchange.

use std::sync::Arc;

use serde_json::{Value, json};
use storage::{
    ConversationLog, ConversationWorkSaved, Direction, JobQueue, Principal, Scan, Store, Tenant,
    TenantStore, Ts, key,
};

use root::ai::chat::CHAT_JSON_MAX_REPAIRS;
use root::memory::{compaction, work_saved};
use root::platform::api_keys::{KeyKind, mint_for_slug};
use root::platform::clock::{Clock, ManualClock, SystemClock};
use root::prompts::system::MEMBER_MEMORY_HEADING;
use root::queue::Outcome;

use crate::support::fake_llm::{FakeLlm, completion};
use crate::support::tenants::T0_SECS;
use crate::support::{TestApp, drain_jobs};

const MEMORY: &str = "conversation-memory";
const WORK_SAVED: &str = "conversation-work-saved";
const WORK_SAVED_MODEL: &str = "acme/work-saved-model";

struct World {
    app: TestApp,
    llm: FakeLlm,
    clock: ManualClock,
    key: String,
    tenant: Tenant,
    member: Principal,
}

async fn world(kind: KeyKind) -> World {
    let llm = FakeLlm::start().await;
    let clock = ManualClock::new(Ts::from_secs(T0_SECS));
    let app = TestApp::spawn_with_clock(
        &[
            ("ROOT_RUN_WORKERS", "false"),
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("SEARCH_LLM_RERANK", "false"),
            ("LLM_MODEL_WORK_SAVED", WORK_SAVED_MODEL),
        ],
        Arc::new(clock.clone()),
    )
    .await;
    // `example.org` addresses are trusted members (web chat visitors too).
    let mut t = Tenant::new("acme", "Acme");
    t.settings = storage::Json(json!({"access": {"email_domains": ["example.org"]}}));
    app.state.store.create_tenant(t).await.unwrap();
    let (tenant, minted) = mint_for_slug(&app.state.store, "acme", "test", kind)
        .await
        .unwrap();
    let member = add_member(&app, &tenant, "member-1", "Ada").await;
    World {
        app,
        llm,
        clock,
        key: minted.raw,
        tenant,
        member,
    }
}

async fn add_member(app: &TestApp, tenant: &Tenant, ref_: &str, name: &str) -> Principal {
    let mut p = Principal::new(tenant.id, ref_);
    p.display_name = Some(name.into());
    p.tier = "member".into();
    app.state.store.insert(p).await.unwrap()
}

/// One REST agent turn as `principal` answered with `reply`; the clock then
/// moves on a second (each exchange has its own time).
async fn turn_as(w: &World, principal: &str, message: &str, reply: &str) -> Value {
    w.llm.json(completion(reply));
    let r = w
        .app
        .post_json(
            "/api/v1/agent/turns",
            Some(&w.key),
            &json!({"message": message, "principal": principal}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["response"], reply, "{v}");
    w.clock.advance_ms(1_000);
    v
}

async fn turn(w: &World, message: &str, reply: &str) -> Value {
    turn_as(w, "member-1", message, reply).await
}

async fn principal(w: &World) -> Principal {
    w.app
        .state
        .store
        .get(Some(w.tenant.id), key().uuid(w.member.id))
        .await
        .unwrap()
        .expect("the member's row")
}

async fn logs(w: &World) -> Vec<ConversationLog> {
    let mut rows: Vec<ConversationLog> = w
        .app
        .state
        .store
        .scan(Some(w.tenant.id), Scan::all())
        .await
        .unwrap();
    rows.sort_by_key(|r| (r.message_at, r.direction == Direction::Outbound));
    rows
}

async fn work_saved_rows(w: &World) -> Vec<ConversationWorkSaved> {
    w.app
        .state
        .store
        .scan(Some(w.tenant.id), Scan::all())
        .await
        .unwrap()
}

/// (waiting + delayed) jobs of `queue`.
async fn pending(w: &World, queue: &str) -> u64 {
    let s = w.app.state.store.stats(queue, w.clock.now()).await.unwrap();
    s.waiting + s.delayed
}

fn completed(outcomes: &[Outcome]) -> usize {
    outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Completed { .. }))
        .count()
}

/// The (system, user) messages of chat-completion request `i`.
fn request(w: &World, i: usize) -> (String, String) {
    let body = &w.llm.bodies()[i];
    let text = |role: &str| {
        body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["role"] == role)
            .map(|m| m["content"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
            .join("\n")
    };
    (text("system"), text("user"))
}

fn memory_answer(memory: &str) -> Vec<u8> {
    completion(&json!({ "memory": memory }).to_string())
}

#[tokio::test]
async fn memory_each_member_gets_one_coalesced_job_five_seconds_after_their_last_exchange() {
    let w = world(KeyKind::Live).await;
    let start = w.clock.now();
    turn(&w, "Hi", "Hello!").await;
    turn(&w, "Where is the meetup?", "In Oakland.").await;
    let job_id = compaction::job_id(w.tenant.id, w.member.id);
    let job = w.app.state.store.job(MEMORY, &job_id).await.unwrap();
    let job = job.expect("one job per member, under its id");
    assert_eq!(
        job.run_at,
        start.plus_micros(1_000_000 + 5_000_000),
        "5 s after the last exchange (the burst restarted the timer)"
    );
    assert_eq!(job.payload.0, json!({"principal_id": w.member.id}));
    assert_eq!(pending(&w, MEMORY).await, 1, "a burst is one job");

    // Another member has their own job; a caller without a principal row
    // has no memory to keep.
    add_member(&w.app, &w.tenant, "member-2", "Grace").await;
    turn_as(&w, "member-2", "Hi", "Hello Grace!").await;
    turn_as(&w, "nobody-known", "Hi", "Hello there!").await;
    assert_eq!(pending(&w, MEMORY).await, 2);
    // Every exchange of the live tenant is estimated.
    assert_eq!(pending(&w, WORK_SAVED).await, 4);

    // The token-only web test chat names any address: its exchanges are
    // estimated but never feed that member's memory (security review M-1).
    let token =
        root::channels::web::rotate_web_token(&w.app.state.store, &SystemClock, w.tenant.id)
            .await
            .unwrap();
    for (message, reply) in [("hi", "Hello from Root."), ("again", "Still here.")] {
        w.llm.json(completion(reply));
        let r = w
            .app
            .post_json(
                &format!("/web/acme/messages?token={token}"),
                None,
                &json!({"message": message, "email": "visitor@example.org"}),
            )
            .await;
        assert_eq!(r.status(), 200);
        w.clock.advance_ms(1_000);
    }
    assert_eq!(pending(&w, MEMORY).await, 2);
    assert_eq!(pending(&w, WORK_SAVED).await, 6);
}

#[tokio::test]
async fn memory_compaction_summarises_new_messages_once_and_feeds_the_next_prompt() {
    let w = world(KeyKind::Live).await;
    turn(&w, "I run the Oakland meetup.", "Nice to meet you!").await;
    turn(&w, "Keep answers short please.", "Will do.").await;
    let (first_system, _) = request(&w, 0);
    assert!(!first_system.contains(MEMBER_MEMORY_HEADING));

    w.clock.advance_ms(5_000);
    let remembered = "- Runs the Oakland meetup\n- Prefers short answers";
    w.llm.json(memory_answer(remembered));
    assert_eq!(completed(&drain_jobs(&w.app.state, MEMORY).await), 1);
    let (system, user) = request(&w, 2);
    assert!(
        system.starts_with("You maintain a short memory of one community member"),
        "{system}"
    );
    let lines: Vec<&str> = user.lines().collect();
    assert_eq!(
        lines[..4],
        [
            "CURRENT MEMORY:",
            "(empty)",
            "",
            "NEW MESSAGES (oldest first):"
        ]
    );
    let said: Vec<&str> = lines[4..]
        .iter()
        .map(|l| l.split_once("] ").unwrap().1)
        .collect();
    assert_eq!(
        said,
        [
            "Member (api): I run the Oakland meetup.",
            "Assistant (api): Nice to meet you!",
            "Member (api): Keep answers short please.",
            "Assistant (api): Will do.",
        ]
    );
    let after = principal(&w).await;
    let newest = logs(&w).await.last().unwrap().message_at;
    assert_eq!(after.conversation_memory.as_deref(), Some(remembered));
    assert_eq!(after.conversation_memory_source_count, 4);
    assert_eq!(after.conversation_memory_version, 2);
    assert_eq!(after.conversation_memory_updated_at, Some(newest));
    assert_eq!(
        after.conversation_memory_last_attempted_at,
        Some(w.clock.now())
    );
    assert_eq!(after.conversation_memory_last_error, None);

    // Again over the same logs: no LLM call, nothing changes.
    compaction::enqueue(&w.app.state.queues, w.tenant.id, w.member.id)
        .await
        .unwrap();
    w.clock.advance_ms(5_000);
    assert_eq!(completed(&drain_jobs(&w.app.state, MEMORY).await), 1);
    assert_eq!(w.llm.bodies().len(), 3, "nothing new, no call");
    assert_eq!(principal(&w).await, after);

    // The next turn's system prompt carries the memory; its compaction
    // sends the memory and only the new exchange.
    turn(&w, "What time does it start?", "At 6 pm.").await;
    let (system, _) = request(&w, 3);
    assert!(
        system.contains(&format!("{MEMBER_MEMORY_HEADING}\n{remembered}\n")),
        "{system}"
    );
    w.clock.advance_ms(5_000);
    w.llm
        .json(memory_answer("- Runs the Oakland meetup (starts 6 pm)"));
    assert_eq!(completed(&drain_jobs(&w.app.state, MEMORY).await), 1);
    let (_, user) = request(&w, 4);
    assert!(
        user.starts_with(&format!("CURRENT MEMORY:\n{remembered}\n\nNEW MESSAGES")),
        "{user}"
    );
    // Header (memory of two lines) and the one new exchange.
    assert_eq!(user.lines().count(), 5 + 2, "{user}");
    assert!(user.ends_with("Assistant (api): At 6 pm."), "{user}");
    let last = principal(&w).await;
    assert_eq!(last.conversation_memory_source_count, 6);
    assert_eq!(last.conversation_memory_version, 3);
}

#[tokio::test]
async fn memory_never_summarises_what_came_before_a_reset() {
    let w = world(KeyKind::Live).await;
    turn(&w, "My secret project is Falcon.", "Noted.").await;
    let mut p = principal(&w).await;
    p.conversation_memory_reset_at = Some(w.clock.now());
    w.app.state.store.update(p).await.unwrap();
    w.clock.advance_ms(1_000);
    turn(&w, "Where is the meetup?", "In Oakland.").await;
    w.clock.advance_ms(5_000);
    w.llm.json(memory_answer("- Asked where the meetup is"));
    assert_eq!(completed(&drain_jobs(&w.app.state, MEMORY).await), 1);
    let (_, user) = request(&w, 2);
    assert!(
        user.contains("Member (api): Where is the meetup?"),
        "{user}"
    );
    assert!(!user.contains("Falcon"), "{user}");
    assert!(!user.contains("Noted."), "{user}");
    let after = principal(&w).await;
    assert_eq!(after.conversation_memory_source_count, 2);
    assert_eq!(
        after.conversation_memory.as_deref(),
        Some("- Asked where the meetup is")
    );
}

#[tokio::test]
async fn memory_a_malformed_answer_is_retried_and_never_half_written() {
    let w = world(KeyKind::Live).await;
    let mut p = principal(&w).await;
    p.conversation_memory = Some("- Old note".into());
    w.app.state.store.update(p).await.unwrap();
    let before = principal(&w).await;
    turn(&w, "I moved to Berlin.", "Good luck with the move!").await;
    w.clock.advance_ms(5_000);
    for _ in 0..=CHAT_JSON_MAX_REPAIRS {
        w.llm.json(completion("Sure! Here is the memory: Berlin"));
    }
    let outcomes = drain_jobs(&w.app.state, MEMORY).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Retrying { .. }]),
        "{outcomes:?}"
    );
    let failed = principal(&w).await;
    assert_eq!(failed.conversation_memory.as_deref(), Some("- Old note"));
    assert_eq!(
        failed.conversation_memory_version,
        before.conversation_memory_version
    );
    assert_eq!(failed.conversation_memory_source_count, 0);
    assert_eq!(failed.conversation_memory_updated_at, None);
    assert_eq!(
        failed.conversation_memory_last_attempted_at,
        Some(w.clock.now())
    );
    let error = failed.conversation_memory_last_error.unwrap();
    assert!(error.starts_with("memory compaction failed:"), "{error}");

    // The retry (exp 5 s) succeeds and clears the error.
    w.clock.advance_ms(5_000);
    w.llm.json(memory_answer("- Old note\n- Moved to Berlin"));
    assert_eq!(completed(&drain_jobs(&w.app.state, MEMORY).await), 1);
    let after = principal(&w).await;
    assert_eq!(
        after.conversation_memory.as_deref(),
        Some("- Old note\n- Moved to Berlin")
    );
    assert_eq!(after.conversation_memory_last_error, None);
    assert_eq!(after.conversation_memory_source_count, 2);
}

#[tokio::test]
async fn memory_job_of_a_deleted_member_ends_quietly() {
    let w = world(KeyKind::Live).await;
    turn(&w, "Hi", "Hello!").await;
    let deleted = w
        .app
        .state
        .store
        .delete::<Principal>(Some(w.tenant.id), key().uuid(w.member.id))
        .await
        .unwrap();
    assert!(deleted);
    w.clock.advance_ms(5_000);
    assert_eq!(completed(&drain_jobs(&w.app.state, MEMORY).await), 1);
    assert_eq!(w.llm.bodies().len(), 1, "no compaction call");
}

#[tokio::test]
async fn work_saved_is_estimated_per_live_exchange_clamped_and_upserted() {
    let w = world(KeyKind::Live).await;
    turn(
        &w,
        "How do I export my data?",
        "Settings → Export, then pick CSV.",
    )
    .await;
    let exchange_key = logs(&w).await[0].exchange_key.clone().unwrap();

    // Not yet due; then a malformed answer fails the attempt, no row.
    assert!(
        drain_jobs(&w.app.state, WORK_SAVED)
            .await
            .iter()
            .all(|o| matches!(o, Outcome::Idle))
    );
    w.clock.advance_ms(30_000);
    for _ in 0..=CHAT_JSON_MAX_REPAIRS {
        w.llm
            .json(completion(r#"{"estimated_minutes": "a while"}"#));
    }
    let outcomes = drain_jobs(&w.app.state, WORK_SAVED).await;
    assert!(
        matches!(outcomes.as_slice(), [Outcome::Retrying { .. }]),
        "{outcomes:?}"
    );
    assert!(work_saved_rows(&w).await.is_empty());

    // The retry (exp 10 s): out-of-range numbers are clamped.
    w.clock.advance_ms(10_000);
    w.llm.json(completion(
        &json!({"estimated_minutes": 912.4, "confidence": 1.3, "rationale": "Found the export steps."})
            .to_string(),
    ));
    assert_eq!(completed(&drain_jobs(&w.app.state, WORK_SAVED).await), 1);
    let calls = w.llm.bodies();
    let last = calls.last().unwrap();
    assert_eq!(last["model"], WORK_SAVED_MODEL);
    let (system, user) = request(&w, calls.len() - 1);
    assert!(
        system.starts_with("You estimate how much human work"),
        "{system}"
    );
    assert_eq!(
        user,
        "CHANNEL: api\n\nMEMBER MESSAGE:\nHow do I export my data?\n\nASSISTANT REPLY:\nSettings → Export, then pick CSV."
    );
    let rows = work_saved_rows(&w).await;
    assert_eq!(rows.len(), 1);
    let first = rows[0].clone();
    assert_eq!(first.exchange_key, exchange_key);
    assert_eq!(first.principal_id, Some(w.member.id));
    assert_eq!(first.estimated_minutes, 480);
    assert_eq!(first.confidence, 1.0);
    assert_eq!(first.model.as_deref(), Some(WORK_SAVED_MODEL));
    assert_eq!(first.rationale.as_deref(), Some("Found the export steps."));

    // A rerun replaces the estimate in place: one row per exchange.
    work_saved::enqueue(&w.app.state.queues, w.tenant.id, &exchange_key)
        .await
        .unwrap();
    w.clock.advance_ms(30_000);
    w.llm.json(completion(
        &json!({"estimated_minutes": 12.6, "confidence": 0.75, "rationale": "A quick lookup."})
            .to_string(),
    ));
    assert_eq!(completed(&drain_jobs(&w.app.state, WORK_SAVED).await), 1);
    let rows = work_saved_rows(&w).await;
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].id, first.id);
    assert_eq!(rows[0].created_at, first.created_at);
    assert_eq!(rows[0].estimated_minutes, 13);
    assert_eq!(rows[0].confidence, 0.75);
    assert_eq!(rows[0].rationale.as_deref(), Some("A quick lookup."));
}

#[tokio::test]
async fn work_saved_is_never_estimated_on_a_dev_shadow() {
    let w = world(KeyKind::Dev).await;
    assert!(
        w.tenant.live_tenant_id.is_some(),
        "the key's tenant is the dev shadow"
    );
    turn(&w, "How do I export my data?", "Settings → Export.").await;
    assert_eq!(pending(&w, WORK_SAVED).await, 0, "not queued");
    assert_eq!(
        pending(&w, MEMORY).await,
        1,
        "memory is kept on every tenant"
    );
    // A job that reaches a dev shadow anyway does nothing.
    let exchange_key = logs(&w).await[0].exchange_key.clone().unwrap();
    work_saved::enqueue(&w.app.state.queues, w.tenant.id, &exchange_key)
        .await
        .unwrap();
    w.clock.advance_ms(30_000);
    assert_eq!(completed(&drain_jobs(&w.app.state, WORK_SAVED).await), 1);
    assert_eq!(w.llm.bodies().len(), 1, "no estimate call");
    assert!(work_saved_rows(&w).await.is_empty());
}

//! §17 #6 end to end: a member DMs Root, the model calls
//! `create_follow_up("in 2 minutes")`, and the 60 s `follow-up-sweep` runs
//! the instruction as an internal turn and DMs the result to the creator —
//! once. Then the sweep's faults: a cancel mid-run delivers nothing, a
//! stale claim is taken back without a second DM, the kill switch skips.

use std::sync::Arc;

use root::platform::clock::{Clock, ManualClock};
use root::queue::registry::{self, FOLLOW_UP_SWEEP};
use serde_json::json;
use storage::{
    FollowUp, FollowUpRun, FollowUpRunStatus, FollowUpStatus, Json, Principal, Scan, ScheduleType,
    Store, Ts, key,
};
use uuid::Uuid;

use super::{World, completion, fixture, gate, world_on};
use crate::support::drain_jobs;
use crate::support::fake_http::Reply;
use crate::support::fake_llm::tool_calls;

const MINUTE_MS: i64 = 60_000;

async fn world_at_now() -> (World, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(Ts::now()));
    let w = world_on(&[("SEARCH_LLM_RERANK", "false")], clock.clone()).await;
    w.slack.reply(
        "/api/conversations.open",
        200,
        json!({"ok": true, "channel": {"id": "D0FOLLOWUP"}}),
    );
    (w, clock)
}

async fn root_id(w: &World) -> Uuid {
    w.app
        .state
        .tenants
        .by_slug("root")
        .await
        .unwrap()
        .unwrap()
        .id
}

async fn follow_ups(w: &World) -> Vec<FollowUp> {
    let t = root_id(w).await;
    w.app.state.store.scan(Some(t), Scan::all()).await.unwrap()
}

async fn runs(w: &World) -> Vec<FollowUpRun> {
    let t = root_id(w).await;
    w.app.state.store.scan(Some(t), Scan::all()).await.unwrap()
}

/// DMs that carry a follow-up's result (not the turn's own reply).
fn follow_up_dms(w: &World) -> Vec<serde_json::Value> {
    w.all_posts()
        .into_iter()
        .filter(|p| p["channel"] == "D0FOLLOWUP")
        .collect()
}

#[tokio::test]
async fn slack_follow_up_fires_via_the_sweep_as_a_dm_to_its_creator() {
    let (w, clock) = world_at_now().await;
    let created_at = clock.now();
    w.llm
        .json(gate("new_request", None))
        .json(tool_calls(
            None,
            &[(
                "c1",
                "create_follow_up",
                r#"{"instruction":"Check the workshop calendar for new sessions","when":"in 2 minutes"}"#,
            )],
        ))
        .json(completion("Done — I'll DM you in 2 minutes."));
    let (s, _) = w.deliver(&fixture("message_im.slack-web.json")).await;
    assert_eq!(s, 200);
    w.settle().await;
    let rows = follow_ups(&w).await;
    assert_eq!(rows.len(), 1, "{rows:#?}");
    assert_eq!(rows[0].status, FollowUpStatus::Active);
    assert_eq!(
        rows[0].next_run_at.unwrap().micros(),
        created_at.micros() + 2 * MINUTE_MS * 1_000
    );
    let llm_calls_before = w.llm.bodies().len();

    // A minute later nothing is due: the sweep does nothing.
    clock.advance_ms(MINUTE_MS);
    let report = w.app.state.follow_ups.sweep().await.unwrap();
    assert_eq!(report, Default::default());
    assert_eq!(w.llm.bodies().len(), llm_calls_before, "no turn ran");

    // Past the due time the queued tick runs it and DMs the creator.
    w.llm.json(completion(
        "Two new workshops were added: **Rust 101** and **Async in practice**.",
    ));
    clock.advance_ms(2 * MINUTE_MS);
    let spec = registry::spec(FOLLOW_UP_SWEEP).unwrap();
    root::queue::scheduler::enqueue_tick(&w.app.state.queues, spec, clock.now())
        .await
        .unwrap();
    let outcomes = drain_jobs(&w.app.state, FOLLOW_UP_SWEEP).await;
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(
        matches!(outcomes[0], root::queue::Outcome::Completed { .. }),
        "{outcomes:?}"
    );
    let open = w.slack.requests_to("/api/conversations.open");
    assert_eq!(open.len(), 1);
    assert!(
        String::from_utf8_lossy(&open[0].raw).contains("U043H11ES4V"),
        "a DM with the creator"
    );
    let dms = follow_up_dms(&w);
    assert_eq!(dms.len(), 1, "{dms:#?}");
    assert_eq!(
        dms[0]["text"], "Two new workshops were added: *Rust 101* and *Async in practice*.",
        "Slack mrkdwn"
    );
    // The internal turn: the framed instruction, at most 6 rounds offered
    // the creator's tools.
    let turn = w.llm.bodies().last().unwrap().to_string();
    assert!(
        turn.contains("Check the workshop calendar for new sessions"),
        "{turn}"
    );
    assert!(turn.contains("This is a scheduled follow-up"), "{turn}");
    assert!(
        turn.contains("PLANNING PHASE (round 1 of 6)"),
        "maxIterations 6"
    );
    let row = &follow_ups(&w).await[0];
    assert_eq!(row.status, FollowUpStatus::Completed);
    assert_eq!(row.next_run_at, None);
    assert_eq!(row.last_run_at, Some(clock.now()));
    let r = runs(&w).await;
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].status, FollowUpRunStatus::Sent);
    assert_eq!(
        r[0].response_text.as_deref(),
        Some("Two new workshops were added: **Rust 101** and **Async in practice**.")
    );
    assert_eq!(r[0].missing_capabilities.0, json!([]));

    // Idempotent: another tick delivers nothing more.
    clock.advance_ms(MINUTE_MS);
    let again = w.app.state.follow_ups.sweep().await.unwrap();
    assert_eq!(again, Default::default());
    assert_eq!(follow_up_dms(&w).len(), 1);
}

/// A member with a due one-time follow-up, stored directly.
async fn due_follow_up(w: &World, clock: &ManualClock, schedule: ScheduleType) -> FollowUp {
    let t = root_id(w).await;
    let member = w
        .app
        .state
        .store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: t,
            ref_: "U0ANN".into(),
            tier: "member".into(),
            slack_user_id: Some("U0ANN".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let now = clock.now();
    w.app
        .state
        .store
        .insert(FollowUp {
            id: Uuid::new_v4(),
            tenant_id: t,
            member_id: member.id,
            instruction: "Tell me the gym hours".into(),
            schedule_type: schedule,
            next_run_at: Some(now),
            recurrence_spec: (schedule == ScheduleType::Recurring).then(|| {
                Json(root::follow_ups::schedule::Recurrence::Daily { hour: 9, minute: 0 }.to_spec())
            }),
            status: FollowUpStatus::Active,
            capability_snapshot: Json(json!(["search_knowledge_base", "send_invoice"])),
            delivery: Json(json!({"kind": "slack_dm", "slack_user_id": "U0ANN"})),
            created_at: now,
            updated_at: now,
            ..Default::default()
        })
        .await
        .unwrap()
}

#[tokio::test]
async fn slack_follow_up_cancelled_while_it_runs_delivers_nothing() {
    let (w, clock) = world_at_now().await;
    let row = due_follow_up(&w, &clock, ScheduleType::Once).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    w.llm.then(Reply::gated(
        gate.clone(),
        Reply::raw_json(200, completion("The gym is open 6am to 10pm.")),
    ));
    let sweep = w.app.state.follow_ups.clone();
    let running = tokio::spawn(async move { sweep.sweep().await.unwrap() });
    // While the turn waits on the model, the member cancels.
    let store = w.app.state.store.clone();
    let t = row.tenant_id;
    loop {
        let f: FollowUp = store
            .get(Some(t), key().uuid(row.id))
            .await
            .unwrap()
            .unwrap();
        if f.status == FollowUpStatus::Processing {
            break;
        }
        tokio::task::yield_now().await;
    }
    let mut f: FollowUp = store
        .get(Some(t), key().uuid(row.id))
        .await
        .unwrap()
        .unwrap();
    f.status = FollowUpStatus::Cancelled;
    store.update(f).await.unwrap();
    gate.add_permits(1);
    let report = running.await.unwrap();
    assert_eq!(report.cancelled, 1, "{report:?}");
    assert!(follow_up_dms(&w).is_empty(), "nothing delivered");
    let r = runs(&w).await;
    assert_eq!(r[0].status, FollowUpRunStatus::Cancelled);
    // Missing capabilities: what the snapshot had and the run was not offered.
    assert_eq!(r[0].missing_capabilities.0, json!(["send_invoice"]));
    let f: FollowUp = store
        .get(Some(t), key().uuid(row.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(f.status, FollowUpStatus::Cancelled, "the cancel stands");
}

#[tokio::test]
async fn slack_follow_up_stale_claims_are_taken_back_without_a_second_dm() {
    let (w, clock) = world_at_now().await;
    let store = w.app.state.store.clone();
    // Claim A died mid-delivery (its reply is on record); claim B died
    // before the model answered.
    let a = due_follow_up(&w, &clock, ScheduleType::Once).await;
    let t = a.tenant_id;
    let mut b = a.clone();
    b.id = Uuid::new_v4();
    store.insert(b.clone()).await.unwrap();
    let claimed_at = clock.now();
    for id in [a.id, b.id] {
        let mut f: FollowUp = store.get(Some(t), key().uuid(id)).await.unwrap().unwrap();
        f.status = FollowUpStatus::Processing;
        f.updated_at = claimed_at;
        store.update(f).await.unwrap();
    }
    store
        .insert(FollowUpRun {
            id: Uuid::new_v4(),
            tenant_id: t,
            follow_up_id: a.id,
            status: FollowUpRunStatus::Processing,
            response_text: Some("already sent, maybe".into()),
            started_at: claimed_at,
            ..Default::default()
        })
        .await
        .unwrap();
    // Within the lease nothing is touched.
    clock.advance_ms(5 * MINUTE_MS);
    assert_eq!(
        w.app.state.follow_ups.sweep().await.unwrap(),
        Default::default()
    );
    // Past it: A is closed without a resend, B runs again and is delivered.
    w.llm.json(completion("The gym is open 6am to 10pm."));
    clock.advance_ms(11 * MINUTE_MS);
    let report = w.app.state.follow_ups.sweep().await.unwrap();
    assert_eq!((report.recovered, report.sent), (2, 1), "{report:?}");
    let dms = follow_up_dms(&w);
    assert_eq!(dms.len(), 1, "only B's result: {dms:#?}");
    let fa: FollowUp = store.get(Some(t), key().uuid(a.id)).await.unwrap().unwrap();
    let fb: FollowUp = store.get(Some(t), key().uuid(b.id)).await.unwrap().unwrap();
    assert_eq!(fa.status, FollowUpStatus::Completed);
    assert_eq!(fb.status, FollowUpStatus::Completed);
    let a_runs: Vec<FollowUpRun> = runs(&w)
        .await
        .into_iter()
        .filter(|r| r.follow_up_id == a.id)
        .collect();
    assert_eq!(a_runs.len(), 1);
    assert_eq!(a_runs[0].status, FollowUpRunStatus::Failed);
    assert_eq!(
        a_runs[0].error.as_deref(),
        Some("interrupted while delivering; not sent again")
    );
}

#[tokio::test]
async fn slack_follow_ups_turned_off_are_skipped_not_run() {
    let (w, clock) = world_at_now().await;
    let once = due_follow_up(&w, &clock, ScheduleType::Once).await;
    let mut daily = once.clone();
    daily.id = Uuid::new_v4();
    daily.schedule_type = ScheduleType::Recurring;
    daily.recurrence_spec = Some(Json(
        root::follow_ups::schedule::Recurrence::Daily { hour: 9, minute: 0 }.to_spec(),
    ));
    w.app.state.store.insert(daily.clone()).await.unwrap();
    crate::support::set_setting(
        &w.app.state,
        "root",
        "runtime.follow_ups_enabled",
        json!(false),
    )
    .await;
    let report = w.app.state.follow_ups.sweep().await.unwrap();
    assert_eq!(report.skipped, 2, "{report:?}");
    assert!(w.llm.bodies().is_empty(), "no turn ran");
    assert!(follow_up_dms(&w).is_empty());
    let t = once.tenant_id;
    let f: FollowUp = w
        .app
        .state
        .store
        .get(Some(t), key().uuid(once.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        f.status,
        FollowUpStatus::Paused,
        "a one-time follow-up waits"
    );
    let d: FollowUp = w
        .app
        .state
        .store
        .get(Some(t), key().uuid(daily.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(d.status, FollowUpStatus::Active);
    assert!(
        d.next_run_at.unwrap() > clock.now(),
        "moved to its next day"
    );
    assert!(
        runs(&w)
            .await
            .iter()
            .all(|r| r.status == FollowUpRunStatus::Skipped)
    );
}

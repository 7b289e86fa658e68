//! Follow-up tools (§5.1) through `TurnTools`: the CRUD cycle with exact
//! `next_run_at` values on a manual clock in the tenant zone
//! (America/Los_Angeles), creator-only access, the private-DM destination
//! and the `runtime.follow_ups_enabled` switch.

use std::sync::Arc;

use serde_json::{Value, json};
use storage::{FollowUp, Json, Principal, Scan, Store, TenantStore, Ts, key};
use uuid::Uuid;

use root::agent::AgentTools;
use root::platform::clock::ManualClock;
use root::platform::tenancy::TenantContext;
use root::tools::{CoreTools, Surface, ToolServices, TurnContext, TurnPrincipal, TurnTools};

use crate::support::TestApp;
use crate::tools::{exec, principal, surface, tenant_ctx};

/// Tuesday, March 17, 2026, 1:00 PM PDT.
fn start() -> Ts {
    ts("2026-03-17T20:00:00Z")
}

fn ts(s: &str) -> Ts {
    Ts(s.parse::<jiff::Timestamp>().unwrap().as_microsecond())
}

/// A member's Slack-DM turn whose handlers read `clock`.
fn tools_at(app: &TestApp, tenant: Uuid, who: TurnPrincipal, clock: &ManualClock) -> TurnTools {
    TurnTools::new(
        surface(Some("member"), &[]),
        CoreTools::platform(),
        None,
        Default::default(),
        TurnContext {
            tenant_id: tenant,
            principal: who,
            surface: Surface::Slack,
            channel_id: Some("D0123".into()),
            user_message: "remind me".into(),
            knowledge_source_types: None,
            surface_tools: Vec::new(),
            services: ToolServices {
                clock: Arc::new(clock.clone()),
                ..app.state.tools.clone()
            },
            delivery: Default::default(),
            email_delegation: None,
        },
    )
}

fn id_of(v: &Value) -> String {
    v["follow_up_id"].as_str().unwrap().to_string()
}

async fn row(app: &TestApp, tenant: Uuid, id: &str) -> FollowUp {
    app.state
        .store
        .get(Some(tenant), key().uuid(id.parse().unwrap()))
        .await
        .unwrap()
        .unwrap()
}

#[tokio::test]
async fn follow_ups_crud_cycle_with_exact_next_runs() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let clock = ManualClock::new(start());
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let tools = tools_at(&app, ctx.id(), ann.clone(), &clock);
    let steer = tools
        .definitions()
        .iter()
        .find(|d| d.name == "create_follow_up")
        .unwrap()
        .description
        .clone();
    assert!(steer.contains("use create_action_alert instead"), "{steer}");

    let once = exec(
        &ctx,
        &tools,
        "create_follow_up",
        json!({"instruction": "Check the events calendar for new workshops", "when": "tomorrow at 9am"}),
    )
    .await;
    assert!(once.success, "{once:?}");
    let once = once.data.unwrap();
    assert_eq!(once["next_run_at"], "2026-03-18T16:00:00Z");
    assert_eq!(once["schedule_type"], "once");
    assert_eq!(once["status"], "active");
    assert_eq!(
        once["message"],
        "I'll send you a private DM at Wednesday, March 18, 2026, 9:00 AM PDT."
    );
    let once_id = id_of(&once);
    let stored = row(&app, ctx.id(), &once_id).await;
    assert_eq!(stored.member_id, ann.id.unwrap());
    assert_eq!(
        stored.delivery.0,
        json!({"kind": "slack_dm", "slack_user_id": "U0ANN"}),
        "the creator's private DM, recorded at creation"
    );
    let offered: Vec<String> = tools.surface().names().map(str::to_string).collect();
    assert_eq!(stored.capability_snapshot.0, json!(offered));
    assert!(offered.contains(&"create_follow_up".to_string()));

    let weekly = exec(
        &ctx,
        &tools,
        "create_follow_up",
        json!({"instruction": "Summarize this week's new job posts", "when": "every monday at 10:00"}),
    )
    .await
    .data
    .unwrap();
    assert_eq!(weekly["next_run_at"], "2026-03-23T17:00:00Z");
    assert_eq!(weekly["schedule"], "every monday at 10:00");
    let weekly_id = id_of(&weekly);
    assert_eq!(
        row(&app, ctx.id(), &weekly_id)
            .await
            .recurrence_spec
            .unwrap()
            .0,
        json!({"kind": "weekly", "weekday": "monday", "hour": 10, "minute": 0})
    );

    let listed = exec(&ctx, &tools, "list_follow_ups", json!({})).await;
    let listed = listed.data.unwrap();
    assert_eq!(listed["count"], json!(2));
    assert_eq!(
        listed["follow_ups"][0]["follow_up_id"],
        json!(once_id),
        "soonest first"
    );

    // Update: a new when, measured from the injected clock.
    clock.advance_ms(3_600_000);
    let updated = exec(
        &ctx,
        &tools,
        "update_follow_up",
        json!({"follow_up_id": once_id, "when": "in 30 minutes", "instruction": "Check workshops"}),
    )
    .await;
    assert!(updated.success, "{updated:?}");
    let updated = updated.data.unwrap();
    assert_eq!(updated["next_run_at"], "2026-03-17T21:30:00Z");
    assert_eq!(updated["instruction"], "Check workshops");
    let bad = exec(
        &ctx,
        &tools,
        "update_follow_up",
        json!({"follow_up_id": once_id, "when": "whenever"}),
    )
    .await;
    assert!(
        bad.error
            .as_deref()
            .unwrap()
            .starts_with("Could not understand when=\"whenever\" — use e.g."),
        "{bad:?}"
    );
    assert_eq!(
        row(&app, ctx.id(), &once_id).await.next_run_at,
        Some(ts("2026-03-17T21:30:00Z")),
        "a refused update changes nothing"
    );

    // Pause / resume: a recurring one continues at its next slot after now.
    let paused = exec(
        &ctx,
        &tools,
        "pause_follow_up",
        json!({"follow_up_id": weekly_id}),
    )
    .await;
    assert_eq!(paused.data.unwrap()["status"], "paused");
    let again = exec(
        &ctx,
        &tools,
        "pause_follow_up",
        json!({"follow_up_id": weekly_id}),
    )
    .await;
    assert_eq!(
        again.error.as_deref(),
        Some("That follow-up is already paused.")
    );
    clock.set(ts("2026-03-24T00:00:00Z"));
    let resumed = exec(
        &ctx,
        &tools,
        "resume_follow_up",
        json!({"follow_up_id": weekly_id}),
    )
    .await;
    assert!(resumed.success, "{resumed:?}");
    let resumed = resumed.data.unwrap();
    assert_eq!(resumed["status"], "active");
    assert_eq!(resumed["next_run_at"], "2026-03-30T17:00:00Z");

    // A one-time follow-up whose moment passed while paused must be re-timed.
    exec(
        &ctx,
        &tools,
        "pause_follow_up",
        json!({"follow_up_id": once_id}),
    )
    .await;
    let stale = exec(
        &ctx,
        &tools,
        "resume_follow_up",
        json!({"follow_up_id": once_id}),
    )
    .await;
    assert!(
        stale.error.as_deref().unwrap().contains("has passed"),
        "{stale:?}"
    );
    let past = exec(
        &ctx,
        &tools,
        "create_follow_up",
        json!({"instruction": "x", "when": "2020-01-01T00:00:00Z"}),
    )
    .await;
    assert!(past.error.unwrap().contains("is in the past"));

    // Cancel.
    let cancelled = exec(
        &ctx,
        &tools,
        "cancel_follow_up",
        json!({"follow_up_id": once_id}),
    )
    .await;
    assert_eq!(cancelled.data.unwrap()["status"], "cancelled");
    let twice = exec(
        &ctx,
        &tools,
        "cancel_follow_up",
        json!({"follow_up_id": once_id}),
    )
    .await;
    assert_eq!(
        twice.error.as_deref(),
        Some("That follow-up is already cancelled.")
    );
    let listed = exec(&ctx, &tools, "list_follow_ups", json!({})).await;
    let listed = listed.data.unwrap();
    assert_eq!(listed["count"], json!(1));
    assert_eq!(listed["follow_ups"][0]["follow_up_id"], json!(weekly_id));
}

#[tokio::test]
async fn follow_ups_are_creator_only_and_need_a_private_destination() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let clock = ManualClock::new(start());
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let bob = principal(&app, ctx.id(), "U0BOB").await;
    let ann_t = tools_at(&app, ctx.id(), ann, &clock);
    let bob_t = tools_at(&app, ctx.id(), bob, &clock);
    let created = exec(
        &ctx,
        &ann_t,
        "create_follow_up",
        json!({"instruction": "Ping me about the retreat", "when": "every weekday at 9am"}),
    )
    .await
    .data
    .unwrap();
    assert_eq!(created["next_run_at"], "2026-03-18T16:00:00Z");
    let id = id_of(&created);

    let bob_list = exec(&ctx, &bob_t, "list_follow_ups", json!({})).await;
    assert_eq!(bob_list.data.unwrap()["count"], json!(0));
    for (tool, args) in [
        ("cancel_follow_up", json!({"follow_up_id": id})),
        ("pause_follow_up", json!({"follow_up_id": id})),
        ("resume_follow_up", json!({"follow_up_id": id})),
        (
            "update_follow_up",
            json!({"follow_up_id": id, "instruction": "mine now"}),
        ),
    ] {
        let r = exec(&ctx, &bob_t, tool, args).await;
        assert_eq!(
            r.error.as_deref(),
            Some("No such follow-up of yours was found."),
            "{tool}"
        );
    }
    let untouched = row(&app, ctx.id(), &id).await;
    assert_eq!(untouched.status.as_str(), "active");
    assert_eq!(untouched.instruction, "Ping me about the retreat");

    // No principal row: refused.
    let anon = tools_at(&app, ctx.id(), TurnPrincipal::default(), &clock);
    let r = exec(
        &ctx,
        &anon,
        "create_follow_up",
        json!({"instruction": "x", "when": "in 2 hours"}),
    )
    .await;
    assert_eq!(
        r.error.as_deref(),
        Some("Follow-ups are only available to a recognized community member.")
    );

    // A member with neither a Slack id nor an email has no private DM.
    let now = Ts::now();
    let ghost = app
        .state
        .store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: ctx.id(),
            ref_: "ext-42".into(),
            tier: "member".into(),
            created_at: now,
            updated_at: now,
            ..Principal::default()
        })
        .await
        .unwrap();
    let mut who = TurnPrincipal {
        id: Some(ghost.id),
        principal_ref: "ext-42".into(),
        tier: root::platform::tiers::Tier::member(),
        ..TurnPrincipal::default()
    };
    let r = exec(
        &ctx,
        &tools_at(&app, ctx.id(), who.clone(), &clock),
        "create_follow_up",
        json!({"instruction": "x", "when": "in 2 hours"}),
    )
    .await;
    assert!(
        r.error
            .as_deref()
            .unwrap()
            .starts_with("Follow-ups are delivered only as a private DM to you"),
        "{r:?}"
    );
    // With an email address the DM is a private email.
    who.email = Some("ghost@example.org".into());
    let r = exec(
        &ctx,
        &tools_at(&app, ctx.id(), who, &clock),
        "create_follow_up",
        json!({"instruction": "x", "when": "in 2 hours"}),
    )
    .await;
    let data = r.data.unwrap();
    assert_eq!(data["delivery"], "private email to you");
    assert_eq!(
        row(&app, ctx.id(), &id_of(&data)).await.delivery.0,
        json!({"kind": "email", "email": "ghost@example.org"})
    );
    let all: Vec<FollowUp> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(all.len(), 2, "refused calls wrote nothing");
}

#[tokio::test]
async fn follow_ups_disabled_tenant_refuses_create_and_resume() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let clock = ManualClock::new(start());
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let tools = tools_at(&app, ctx.id(), ann, &clock);
    let created = exec(
        &ctx,
        &tools,
        "create_follow_up",
        json!({"instruction": "Weekly digest", "when": "every 2 days"}),
    )
    .await
    .data
    .unwrap();
    assert_eq!(created["next_run_at"], "2026-03-19T20:00:00Z");
    let id = id_of(&created);
    exec(&ctx, &tools, "pause_follow_up", json!({"follow_up_id": id})).await;

    let mut tenant = (*ctx.tenant).clone();
    tenant.settings = Json(json!({"runtime": {"follow_ups_enabled": false}}));
    let tenant = app.state.store.save_tenant(tenant).await.unwrap();
    let off = TenantContext {
        tenant: Arc::new(tenant),
    };
    let create = exec(
        &off,
        &tools,
        "create_follow_up",
        json!({"instruction": "x", "when": "in 2 hours"}),
    )
    .await;
    assert_eq!(
        create.error.as_deref(),
        Some("Follow-ups are turned off for this community.")
    );
    let resume = exec(
        &off,
        &tools,
        "resume_follow_up",
        json!({"follow_up_id": id}),
    )
    .await;
    assert_eq!(
        resume.error.as_deref(),
        Some("Follow-ups are turned off for this community.")
    );
    assert_eq!(row(&app, ctx.id(), &id).await.status.as_str(), "paused");
    // Members can still see and cancel what they have.
    let listed = exec(&off, &tools, "list_follow_ups", json!({})).await;
    assert_eq!(listed.data.unwrap()["count"], json!(1));
    let cancel = exec(
        &off,
        &tools,
        "cancel_follow_up",
        json!({"follow_up_id": id}),
    )
    .await;
    assert!(cancel.success, "{cancel:?}");
}

/// Without Slack and without an address for the member, the sweep runs the
/// follow-up but records why nothing was delivered (never a fake success).
#[tokio::test]
async fn follow_up_sweep_without_a_way_to_reach_the_member_records_why() {
    use root::platform::clock::Clock;
    use storage::{FollowUpRun, FollowUpRunStatus, FollowUpStatus, ScheduleType};
    let llm = crate::support::fake_llm::FakeLlm::start().await;
    llm.json(crate::support::fake_llm::completion(
        "The gym opens at 6am.",
    ));
    let clock = Arc::new(ManualClock::new(start()));
    let app = TestApp::spawn_with_clock(
        &[
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("ROOT_RUN_WORKERS", "false"),
        ],
        clock.clone(),
    )
    .await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let row = app
        .state
        .store
        .insert(FollowUp {
            id: Uuid::new_v4(),
            tenant_id: ctx.id(),
            member_id: ann.id.unwrap(),
            instruction: "Tell me when the gym opens".into(),
            schedule_type: ScheduleType::Once,
            next_run_at: Some(clock.now()),
            status: FollowUpStatus::Active,
            delivery: Json(json!({"kind": "slack_dm", "slack_user_id": "U0ANN"})),
            created_at: clock.now(),
            updated_at: clock.now(),
            ..FollowUp::default()
        })
        .await
        .unwrap();
    let report = app.state.follow_ups.sweep().await.unwrap();
    assert_eq!(report.failed, 1, "{report:?}");
    let runs: Vec<FollowUpRun> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(runs[0].status, FollowUpRunStatus::Failed);
    assert_eq!(
        runs[0].error.as_deref(),
        Some(
            "not delivered: Slack is not set up for this community and the member has no email address"
        )
    );
    assert_eq!(
        runs[0].response_text.as_deref(),
        Some("The gym opens at 6am.")
    );
    let f = self::row(&app, ctx.id(), &row.id.to_string()).await;
    assert_eq!(f.status, FollowUpStatus::Failed);
}

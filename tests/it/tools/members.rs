//! The member tools: interventions, mistake reports, preferences, action
//! alerts, and their rows staying in their tenant.

use super::*;

#[tokio::test]
async fn tools_interventions_are_persisted_listed_and_cancelled_by_their_owner_only() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let bob = principal(&app, ctx.id(), "U0BOB").await;
    let ann_tools = turn_tools(&app, ctx.id(), ann.clone(), Some("member"));
    let bob_tools = turn_tools(&app, ctx.id(), bob.clone(), Some("member"));
    let esc = exec(
        &ctx,
        &ann_tools,
        "escalate_to_admin",
        json!({"escalation_reason": "billing dispute", "user_request_summary": "Refund my event ticket"}),
    )
    .await;
    assert!(esc.success, "{esc:?}");
    let req = exec(
        &ctx,
        &ann_tools,
        "request_human_intervention",
        json!({"title": "Add me to the mentors list"}),
    )
    .await;
    let req_id = req.data.unwrap()["intervention_id"]
        .as_str()
        .unwrap()
        .to_string();

    let rows: Vec<HumanIntervention> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 2, "persisted");
    let esc_row = rows
        .iter()
        .find(|r| r.category.as_str() == "escalation")
        .unwrap();
    assert_eq!(esc_row.principal_id, ann.id);
    assert_eq!(esc_row.metadata.0["escalation_reason"], "billing dispute");

    let listed = exec(&ctx, &ann_tools, "list_my_human_interventions", json!({})).await;
    assert_eq!(listed.data.as_ref().unwrap()["count"], json!(2));
    let bob_list = exec(&ctx, &bob_tools, "list_my_human_interventions", json!({})).await;
    assert_eq!(bob_list.data.unwrap()["count"], json!(0), "only your own");

    // Bob cannot cancel Ann's request; Ann can, once.
    let denied = exec(
        &ctx,
        &bob_tools,
        "cancel_human_intervention",
        json!({"intervention_id": req_id}),
    )
    .await;
    assert_eq!(
        denied.error.as_deref(),
        Some("No such request of yours was found.")
    );
    let ok = exec(
        &ctx,
        &ann_tools,
        "cancel_human_intervention",
        json!({"intervention_id": req_id}),
    )
    .await;
    assert!(ok.success);
    assert_eq!(ok.data.unwrap()["status"], "cancelled");
    let again = exec(
        &ctx,
        &ann_tools,
        "cancel_human_intervention",
        json!({"intervention_id": req_id}),
    )
    .await;
    assert_eq!(
        again.error.as_deref(),
        Some("That request is already cancelled.")
    );
    let open_only = exec(&ctx, &ann_tools, "list_my_human_interventions", json!({})).await;
    assert_eq!(open_only.data.unwrap()["count"], json!(1));
    let all = exec(
        &ctx,
        &ann_tools,
        "list_my_human_interventions",
        json!({"include_closed": true}),
    )
    .await;
    assert_eq!(all.data.unwrap()["count"], json!(2));
}

#[tokio::test]
async fn tools_report_root_mistake_attaches_the_trace_id() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let tools = turn_tools(&app, ctx.id(), ann, Some("member"));
    let tracer = app.state.tracer.clone();
    let (result, trace_id) = tenancy::scope(ctx.clone(), async {
        tracer
            .run(root::trace::TraceStart::default(), async {
                let r = tools
                    .execute(
                        "report_root_mistake",
                        json!({"user_complaint": "wrong hours", "mistake_summary": "Said 9am, it is 10am",
                               "correct_information": "Doors open at 10am"}),
                        &ToolCaller::default(),
                    )
                    .await;
                (r, root::trace::current_trace_id())
            })
            .await
    })
    .await;
    assert!(result.success);
    let trace_id = trace_id.expect("tracing on");
    let rows: Vec<HumanIntervention> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows[0].category.as_str(), "mistake_report");
    assert_eq!(rows[0].metadata.0["trace_id"], json!(trace_id));
}

#[tokio::test]
async fn tools_tenant_rows_stay_in_their_tenant() {
    let app = TestApp::spawn().await;
    let a = tenant_ctx(&app, "acme").await;
    let b = tenant_ctx(&app, "other").await;
    let ann = principal(&app, a.id(), "U0ANN").await;
    let tools = turn_tools(&app, a.id(), ann, Some("member"));
    let r = tenancy::scope(
        a.clone(),
        tools.execute(
            "request_human_intervention",
            json!({"title": "x"}),
            &ToolCaller::default(),
        ),
    )
    .await;
    assert!(r.success);
    let in_b: Vec<HumanIntervention> = app
        .state
        .store
        .scan(Some(b.id()), Scan::all())
        .await
        .unwrap();
    assert!(in_b.is_empty());
}

#[tokio::test]
async fn tools_preferences_are_per_member_and_forget_deactivates() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let bob = principal(&app, ctx.id(), "U0BOB").await;
    let ann_t = turn_tools(&app, ctx.id(), ann.clone(), Some("member"));
    let bob_t = turn_tools(&app, ctx.id(), bob, Some("member"));
    let saved = exec(
        &ctx,
        &ann_t,
        "remember_user_preference",
        json!({"instructions": "Call me Annie", "preference_type": "nickname_alias",
               "trigger_phrase": "Annie", "canonical_value": "Ann Example"}),
    )
    .await;
    assert!(saved.success, "{saved:?}");
    let id = saved.data.unwrap()["preference_id"]
        .as_str()
        .unwrap()
        .to_string();
    let bad = exec(
        &ctx,
        &ann_t,
        "remember_user_preference",
        json!({"instructions": "x", "preference_type": "favourite_colour"}),
    )
    .await;
    assert!(!bad.success, "unknown preference_type is rejected");
    let listed = exec(&ctx, &ann_t, "list_user_preferences", json!({})).await;
    assert_eq!(listed.data.unwrap()["count"], json!(1));
    let bob_list = exec(&ctx, &bob_t, "list_user_preferences", json!({})).await;
    assert_eq!(bob_list.data.unwrap()["count"], json!(0));
    let bob_forget = exec(
        &ctx,
        &bob_t,
        "forget_user_preference",
        json!({"preference_id": id}),
    )
    .await;
    assert!(!bob_forget.success, "not Bob's");
    let forget = exec(
        &ctx,
        &ann_t,
        "forget_user_preference",
        json!({"preference_id": id}),
    )
    .await;
    assert!(forget.success);
    let row: Option<storage::MemberPreference> = app
        .state
        .store
        .get(Some(ctx.id()), storage::key().uuid(id.parse().unwrap()))
        .await
        .unwrap();
    assert!(!row.unwrap().active, "deactivated, not deleted");
    let style = exec(
        &ctx,
        &ann_t,
        "set_dm_reply_style",
        json!({"style": "thread"}),
    )
    .await;
    assert!(style.success);
    let auto = exec(
        &ctx,
        &ann_t,
        "set_auto_reply_preference",
        json!({"mode": "low"}),
    )
    .await;
    assert!(auto.success);
    let p: Principal = app
        .state
        .store
        .get(Some(ctx.id()), storage::key().uuid(ann.id.unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(p.preferences.0["dm_reply_style"], "thread");
    assert_eq!(p.preferences.0["auto_reply"], "low");
    // An unresolved caller cannot save preferences.
    let anon = turn_tools(&app, ctx.id(), TurnPrincipal::default(), Some("member"));
    let r = exec(
        &ctx,
        &anon,
        "remember_user_preference",
        json!({"instructions": "x"}),
    )
    .await;
    assert_eq!(
        r.error.as_deref(),
        Some("Preferences can only be saved for a recognized community member.")
    );
}

#[tokio::test]
async fn tools_action_alert_member_rules_and_admin_rules() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let mut boss = principal(&app, ctx.id(), "U0BOSS").await;
    boss.is_admin = true;
    let ann_t = turn_tools(&app, ctx.id(), ann.clone(), Some("member"));
    let boss_t = turn_tools(&app, ctx.id(), boss, Some("member"));

    // Members: self-notify only, only tools on their surface, never '*'.
    let other = exec(
        &ctx,
        &ann_t,
        "create_action_alert",
        json!({"instruction": "x", "watch_tool_names": ["who_knows"], "notify_slack_id": "U0BOB"}),
    )
    .await;
    assert!(
        other
            .error
            .unwrap()
            .contains("only create alerts that notify themselves")
    );
    let star = exec(
        &ctx,
        &ann_t,
        "create_action_alert",
        json!({"instruction": "x", "watch_tool_names": ["*"]}),
    )
    .await;
    assert_eq!(
        star.error.as_deref(),
        Some("Members can only watch tools available to them; * is not one of them.")
    );
    let foreign = exec(
        &ctx,
        &ann_t,
        "create_action_alert",
        json!({"instruction": "x", "watch_tool_names": ["send_slack_dm_admin"]}),
    )
    .await;
    assert!(!foreign.success, "admin tool not on a member's surface");
    let mine = exec(
        &ctx,
        &ann_t,
        "create_action_alert",
        json!({"instruction": "tell me when someone asks who knows Rust", "watch_tool_names": ["who_knows"]}),
    )
    .await;
    assert!(mine.success, "{mine:?}");
    let mine = mine.data.unwrap();
    assert_eq!(mine["notify_slack_id"], "U0ANN");

    // Admins: any tool or '*', any recipient.
    let admin = exec(
        &ctx,
        &boss_t,
        "create_action_alert",
        json!({"instruction": "any booking", "watch_tool_names": ["*"], "notify_slack_id": "U0BOB"}),
    )
    .await;
    assert!(admin.success, "{admin:?}");
    assert_eq!(admin.data.unwrap()["notify_slack_id"], "U0BOB");

    let ann_list = exec(&ctx, &ann_t, "list_action_alerts", json!({})).await;
    assert_eq!(ann_list.data.unwrap()["count"], json!(1));
    let boss_list = exec(&ctx, &boss_t, "list_action_alerts", json!({})).await;
    assert_eq!(boss_list.data.unwrap()["count"], json!(2));
    // Admins may cancel a member's alert; members cannot cancel the admin's.
    let admin_alert = exec(&ctx, &boss_t, "list_action_alerts", json!({}))
        .await
        .data
        .unwrap()["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["watch_tool_names"] == json!(["*"]))
        .unwrap()["alert_id"]
        .clone();
    let denied = exec(
        &ctx,
        &ann_t,
        "cancel_action_alert",
        json!({"alert_id": admin_alert}),
    )
    .await;
    assert_eq!(
        denied.error.as_deref(),
        Some("No such active alert of yours was found.")
    );
    let ok = exec(
        &ctx,
        &boss_t,
        "cancel_action_alert",
        json!({"alert_id": mine["alert_id"]}),
    )
    .await;
    assert_eq!(ok.data.unwrap()["status"], "cancelled");
}

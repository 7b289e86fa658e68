//! The tool surface (§5): what a turn is offered (acceptance 10), the
//! dispatch gate, and the first core handlers against the real server state.

use std::sync::Arc;

use serde_json::{Value, json};
use storage::{HumanIntervention, Principal, Scan, Store, TenantStore};
use uuid::Uuid;

use root::agent::{AgentTools, ToolCaller};
use root::platform::tenancy::{self, TenantContext};
use root::tools::catalog::UNRESOLVED_CORE_TOOLS;
use root::tools::{
    CoreTools, GateInput, Surface, TierDeclaration, TurnContext, TurnPrincipal, TurnTools,
    allowed_tools,
};

use crate::kb::{key_for, put_page};
use crate::support::TestApp;

pub(crate) fn surface(level: Option<&str>, decls: &[TierDeclaration]) -> root::tools::ToolSurface {
    allowed_tools(&GateInput {
        surface: Surface::Slack,
        access_level: level,
        is_admin: false,
        dashboard_admin: false,
        tier_declarations: decls,
        integration_tools: &[],
    })
}

pub(crate) fn turn_tools(
    app: &TestApp,
    tenant: Uuid,
    principal: TurnPrincipal,
    level: Option<&str>,
) -> TurnTools {
    turn_tools_on(
        app,
        tenant,
        principal,
        surface(level, &[]),
        Some("D0123"),
        None,
    )
}

/// A turn's tools over `s`, in conversation `channel_id`.
pub(crate) fn turn_tools_on(
    app: &TestApp,
    tenant: Uuid,
    principal: TurnPrincipal,
    s: root::tools::ToolSurface,
    channel_id: Option<&str>,
    invoker: Option<Arc<dyn root::tools::IntegrationInvoker>>,
) -> TurnTools {
    let knowledge_source_types = s.knowledge_source_types.clone();
    TurnTools::new(
        s,
        CoreTools::platform(),
        invoker,
        TurnContext {
            tenant_id: tenant,
            principal,
            surface: Surface::Slack,
            channel_id: channel_id.map(str::to_string),
            user_message: "hello".into(),
            knowledge_source_types,
            surface_tools: Vec::new(),
            services: app.state.tools.clone(),
        },
    )
}

fn offered(tools: &TurnTools) -> Vec<String> {
    tools.definitions().iter().map(|d| d.name.clone()).collect()
}

pub(crate) async fn tenant_ctx(app: &TestApp, slug: &str) -> TenantContext {
    key_for(app, slug).await;
    let t = app.state.store.tenant_by_slug(slug).await.unwrap().unwrap();
    TenantContext {
        tenant: Arc::new(t),
    }
}

#[tokio::test]
async fn tools_unresolved_slack_user_is_offered_exactly_the_reserved_set() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let tools = turn_tools(&app, ctx.id(), TurnPrincipal::default(), None);
    assert_eq!(offered(&tools), UNRESOLVED_CORE_TOOLS.to_vec());
    assert!(tools.surface().degraded.is_some());
    // Every offered definition carries a generated object schema.
    for d in tools.definitions() {
        assert_eq!(d.parameters["type"], "object", "{}", d.name);
    }
}

#[tokio::test]
async fn tools_manifest_core_tools_restrict_exactly_to_the_allowlist() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let decls = [TierDeclaration {
        name: "partner".into(),
        core_tools: Some(vec!["who_knows".into(), "search_knowledge_base".into()]),
        knowledge_source_types: Some(vec!["faq".into()]),
        object_form: true,
    }];
    let s = surface(Some("partner"), &decls);
    let tools = turn_tools_on(&app, ctx.id(), TurnPrincipal::default(), s, None, None);
    assert_eq!(
        offered(&tools),
        vec!["search_knowledge_base", "who_knows", "escalate_to_admin"]
    );
}

#[tokio::test]
async fn tools_dispatch_gate_refuses_a_tool_outside_the_surface() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let tools = turn_tools(&app, ctx.id(), TurnPrincipal::default(), None);
    let result = tenancy::scope(
        ctx.clone(),
        tools.execute(
            "request_human_intervention",
            json!({"title": "sneaky"}),
            &ToolCaller::default(),
        ),
    )
    .await;
    assert!(!result.success);
    assert_eq!(
        result.error.as_deref(),
        Some("The tool request_human_intervention is not available in this conversation.")
    );
    // Nothing was written: the handler never ran.
    let rows: Vec<HumanIntervention> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert!(rows.is_empty());
}

#[tokio::test]
async fn tools_knowledge_search_finds_a_page_and_guides_when_empty() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "parking", "title": "Parking", "content_html":
            "<p>Members park in lot B behind the main building after 6pm.</p>"}),
    )
    .await;
    let ctx = tenant_ctx(&app, "acme").await;
    let tools = turn_tools(&app, ctx.id(), TurnPrincipal::default(), Some("member"));
    let hit = tenancy::scope(
        ctx.clone(),
        tools.execute(
            "search_knowledge_base",
            json!({"query": "where do members park"}),
            &ToolCaller::default(),
        ),
    )
    .await;
    assert!(hit.success, "{hit:?}");
    let data = hit.data.unwrap();
    assert_eq!(data["results"][0]["slug"], "parking");
    let miss = tenancy::scope(
        ctx.clone(),
        tools.execute(
            "search_knowledge_base",
            json!({"query": "zebra husbandry regulations"}),
            &ToolCaller::default(),
        ),
    )
    .await;
    let data = miss.data.unwrap();
    assert_eq!(data["count"], json!(0), "{data}");
    assert!(data["guidance"].as_str().is_some_and(|g| !g.is_empty()));
    // Invalid arguments: a clear failed result, no panic.
    let bad = tenancy::scope(
        ctx,
        tools.execute(
            "search_knowledge_base",
            json!({"q": 1}),
            &ToolCaller::default(),
        ),
    )
    .await;
    assert!(!bad.success);
    assert!(
        bad.error
            .unwrap()
            .starts_with("Invalid arguments for search_knowledge_base")
    );
}

pub(crate) async fn exec(
    ctx: &TenantContext,
    tools: &TurnTools,
    name: &str,
    args: Value,
) -> root::agent::ToolResult {
    tenancy::scope(
        ctx.clone(),
        tools.execute(name, args, &ToolCaller::default()),
    )
    .await
}

pub(crate) async fn principal(app: &TestApp, tenant: Uuid, slack: &str) -> TurnPrincipal {
    let now = storage::Ts::now();
    let p = app
        .state
        .store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: tenant,
            ref_: slack.into(),
            display_name: Some(format!("Member {slack}")),
            tier: "member".into(),
            slack_user_id: Some(slack.into()),
            created_at: now,
            updated_at: now,
            ..Principal::default()
        })
        .await
        .unwrap();
    TurnPrincipal {
        id: Some(p.id),
        principal_ref: p.ref_.clone(),
        display_name: p.display_name.clone(),
        tier: root::platform::tiers::Tier::member(),
        slack_user_id: p.slack_user_id.clone(),
        ..TurnPrincipal::default()
    }
}

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

#[tokio::test]
async fn tools_page_links_public_bare_private_principal_bound() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "open-hours", "title": "Open hours", "is_public": true, "public_id": "kb_hours",
               "content_html": "<p>We open at 10am every day of the week.</p>"}),
    )
    .await;
    put_page(
        &app,
        &key,
        json!({"slug": "door-codes", "title": "Door codes",
               "content_html": "<p>Members get the door code from the front desk.</p>"}),
    )
    .await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let tools = turn_tools(&app, ctx.id(), ann.clone(), Some("member"));
    let base = app
        .state
        .config
        .platform_base_url
        .trim_end_matches('/')
        .to_string();

    let public = exec(
        &ctx,
        &tools,
        "get_knowledge_page_link",
        json!({"slug_or_url": "open-hours"}),
    )
    .await;
    assert_eq!(
        public.data.unwrap()["url"],
        format!("{base}/kb/acme/kb_hours")
    );

    let private = exec(
        &ctx,
        &tools,
        "get_knowledge_page_link",
        json!({"slug_or_url": "door-codes"}),
    )
    .await;
    let data = private.data.unwrap();
    let url = data["url"].as_str().unwrap();
    let page: storage::KnowledgePage = app
        .state
        .store
        .find_unique(
            Some(ctx.id()),
            storage::KnowledgePage::SLUG_KEY,
            storage::key().str("door-codes"),
        )
        .await
        .unwrap()
        .unwrap();
    let public_id = page.public_id.unwrap();
    assert!(
        url.starts_with(&format!("{base}/kb/acme/{public_id}?token=")),
        "{url}"
    );
    let token = url.rsplit('=').next().unwrap();
    let rows: Vec<storage::WebLinkToken> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(
        rows[0].principal_id,
        ann.id.unwrap(),
        "bound to the requester"
    );
    assert_ne!(rows[0].token_hash, token, "only the hash is stored");
    let days = (rows[0].expires_at.0 - rows[0].created_at.0) / 86_400_000_000;
    assert_eq!(days, 30);

    // An unresolved caller gets no private link.
    let anon = turn_tools(&app, ctx.id(), TurnPrincipal::default(), Some("member"));
    let r = exec(
        &ctx,
        &anon,
        "get_knowledge_page_link",
        json!({"slug_or_url": "door-codes"}),
    )
    .await;
    assert_eq!(
        r.error.as_deref(),
        Some("This page is private; a personal link can only be issued to a recognized member.")
    );
    let rows: Vec<storage::WebLinkToken> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "no token issued to the unresolved caller");
}

#[tokio::test]
async fn tools_save_knowledge_entry_is_dm_only_author_owned_and_searchable() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let bob = principal(&app, ctx.id(), "U0BOB").await;
    let ann_dm = turn_tools(&app, ctx.id(), ann.clone(), Some("member"));
    let saved = exec(
        &ctx,
        &ann_dm,
        "save_knowledge_entry",
        json!({"title": "Kiln schedule", "content": "The ceramics kiln fires every Thursday night.", "category": "studio"}),
    )
    .await;
    assert!(saved.success, "{saved:?}");
    let slug = saved.data.unwrap()["slug"].as_str().unwrap().to_string();
    let page: storage::KnowledgePage = app
        .state
        .store
        .find_unique(
            Some(ctx.id()),
            storage::KnowledgePage::SLUG_KEY,
            storage::key().str(&slug),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(page.author_member_id, Some(ann.id.unwrap().to_string()));
    let found = exec(
        &ctx,
        &ann_dm,
        "search_knowledge_base",
        json!({"query": "when does the kiln fire"}),
    )
    .await;
    assert_eq!(found.data.unwrap()["results"][0]["slug"], json!(slug));

    // Bob cannot update Ann's entry.
    let bob_dm = turn_tools(&app, ctx.id(), bob, Some("member"));
    let r = exec(
        &ctx,
        &bob_dm,
        "save_knowledge_entry",
        json!({"title": "x", "content": "y", "update_slug": slug}),
    )
    .await;
    assert_eq!(
        r.error.as_deref(),
        Some(format!("No entry {slug:?} of yours was found to update.").as_str())
    );
    // Outside a DM: refused.
    let s = surface(Some("member"), &[]);
    let in_channel = turn_tools_on(&app, ctx.id(), ann, s, Some("C0GENERAL"), None);
    let r = exec(
        &ctx,
        &in_channel,
        "save_knowledge_entry",
        json!({"title": "x", "content": "y"}),
    )
    .await;
    assert_eq!(
        r.error.as_deref(),
        Some("Knowledge entries can only be saved from a direct message.")
    );
}

/// Acceptance 2 minus the HTTP route: a manifest tier's surface from the
/// stub backend, a parallel batch of two integration tools, signed invokes
/// round-trip, the answer cites tool data; audit, trace and usage rows.
#[tokio::test]
async fn tools_integration_tools_materialize_and_run_signed_in_a_parallel_batch() {
    use crate::fake_llm::{FakeLlm, completion, tool_calls};
    use root::agent::AgentInput;
    use root::tools::integration::{PrimedInvoker, integration_offers, tier_declarations};
    use testkit::stub::StubBackend;

    let fake = FakeLlm::start().await;
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", fake.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
    ])
    .await;
    let ctx = tenant_ctx(&app, "acme").await;
    let stub = StubBackend::start("stub-secret-0123456789").await.unwrap();
    crate::support::register_stub(&app, &ctx, &stub, "stub-secret-0123456789").await;
    let integrations = app.state.integrations.clone();
    let primed = tenancy::scope(ctx.clone(), async { integrations.prime().await.unwrap() }).await;
    let decls = tier_declarations(&primed);
    let offers = integration_offers(&primed);
    let s = allowed_tools(&GateInput {
        surface: Surface::Slack,
        access_level: Some("member"),
        is_admin: false,
        dashboard_admin: false,
        tier_declarations: &decls,
        integration_tools: &offers,
    });
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let tools = turn_tools_on(
        &app,
        ctx.id(),
        ann,
        s,
        Some("D0123"),
        Some(Arc::new(PrimedInvoker::new(
            integrations.clone(),
            Arc::new(primed),
        ))),
    );
    // The member tier's core_tools allowlist, then the member's integration tools.
    assert_eq!(
        offered(&tools),
        vec![
            "search_knowledge_base",
            "escalate_to_admin",
            "lookup_member",
            "book_room",
            "generate_report"
        ]
    );

    fake.json(tool_calls(
        Some("Booking and looking up."),
        &[
            ("c1", "lookup_member", r#"{"query":"Ada"}"#),
            ("c2", "book_room", r#"{"room":"Garden"}"#),
        ],
    ))
    .json(completion(
        "Booked the Garden room (confirmation BK-1001). Ada Lovelace is in the 2024 cohort.",
    ));
    let run = tenancy::scope(
        ctx.clone(),
        app.state.agent.run(
            AgentInput {
                system_prompt: "You are an AI assistant for this community.".into(),
                history: vec![],
                user_message: root::ai::chat::ChatMessage::user(
                    "Book the Garden room and tell me who Ada is",
                ),
                caller: ToolCaller::default(),
            },
            &tools,
            root::agent::AgentOptions::default(),
        ),
    )
    .await;
    assert!(run.success, "{run:?}");
    assert!(run.text.contains("BK-1001"));
    // Both invokes were signed and reached the backend (the stub verifies).
    assert_eq!(
        stub.requests_to("/integration/tools/lookup_member").len(),
        1
    );
    let booked = stub.requests_to("/integration/tools/book_room");
    assert_eq!(booked.len(), 1);
    assert!(booked[0].header("x-root-signature").is_some());
    assert_eq!(booked[0].json()["params"], json!({"room": "Garden"}));
    assert_eq!(booked[0].json()["principal"]["ref"], "U0ANN");
    // The second round saw both results.
    let bodies = fake.bodies();
    let results: Vec<Value> = bodies[1]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| serde_json::from_str(m["content"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(results[1]["data"]["confirmation"], "BK-1001");
    // Audit rows, a trace and usage rows were written.
    let audit: Vec<storage::IntegrationToolCall> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(audit.len(), 2);
    assert!(audit.iter().all(|a| a.success));
    let trace_id = run.trace_id.expect("traced");
    app.state.tracer.flush().await;
    let view = tenancy::scope(ctx.clone(), app.state.tracer.get(trace_id))
        .await
        .unwrap()
        .unwrap();
    assert!(view.span("tool:book_room").is_some());
    let usage: Vec<storage::LlmTokenUsage> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(usage.len(), 2);
}

#[tokio::test]
async fn tools_api_lists_who_can_call_what() {
    use testkit::stub::StubBackend;

    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let ctx = tenant_ctx(&app, "acme").await;
    let stub = StubBackend::start("stub-secret-0123456789").await.unwrap();
    crate::support::register_stub(&app, &ctx, &stub, "stub-secret-0123456789").await;
    let resp = app.get("/api/v1/tools", Some(&key)).await;
    assert_eq!(resp.status(), 200);
    let v: Value = resp.json().await.unwrap();
    let row = |name: &str| -> Value {
        v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .unwrap_or_else(|| panic!("{name} listed"))
            .clone()
    };
    assert_eq!(
        v["audiences"],
        json!(["unresolved", "public", "member", "partner", "admin"])
    );
    // Reserved set: who_knows yes, interventions no, for the unresolved tier.
    assert!(row("who_knows")["allowed"]["unresolved"]["slack"].is_string());
    assert!(
        row("request_human_intervention")["allowed"]
            .get("unresolved")
            .is_none()
    );
    // The manifest's member allowlist: knowledge search + escalation only.
    assert!(row("search_knowledge_base")["allowed"]["member"]["slack"].is_string());
    assert!(row("who_knows")["allowed"].get("member").is_none());
    // Public: escalation only.
    assert!(row("escalate_to_admin")["allowed"]["public"]["slack"].is_string());
    assert!(
        row("search_knowledge_base")["allowed"]
            .get("public")
            .is_none()
    );
    // Integration tools with their schema; admin-only stays with admins.
    let book = row("book_room");
    assert_eq!(book["source"], json!({"integration": "stub"}));
    assert_eq!(book["input_schema"]["required"], json!(["room"]));
    assert!(book["allowed"]["member"]["slack"].is_string());
    assert!(book["allowed"].get("unresolved").is_none());
    assert!(row("admin_stats")["allowed"]["admin"]["slack"].is_string());
    assert!(row("admin_stats")["allowed"].get("member").is_none());
    // Catalogued but not built yet: listed, not implemented, offered to nobody.
    let post = row("find_channel_for_community_post");
    assert_eq!(post["implemented"], json!(false));
    assert_eq!(post["allowed"], json!({}));
    // Core tools carry their generated schema.
    assert_eq!(
        row("who_knows")["input_schema"]["required"],
        json!(["topic"])
    );
    // Without a key: 401.
    assert_eq!(app.get("/api/v1/tools", None).await.status(), 401);
}

#[tokio::test]
async fn tools_api_execute_goes_through_the_dispatch_gate_and_is_metered() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let ctx = tenant_ctx(&app, "acme").await;
    principal(&app, ctx.id(), "U0ANN").await;
    // A known member: the full core set on the API surface.
    let ok = app
        .post_json(
            "/api/v1/tools/request_human_intervention/execute",
            Some(&key),
            &json!({"principal": "U0ANN", "args": {"title": "New badge please"}}),
        )
        .await;
    assert_eq!(ok.status(), 200);
    let v: Value = ok.json().await.unwrap();
    assert_eq!(v["result"]["success"], json!(true), "{v}");
    assert_eq!(v["usage"]["llm_calls"], json!(0));
    // An unknown principal is unresolved: the reserved set only.
    let refused = app
        .post_json(
            "/api/v1/tools/request_human_intervention/execute",
            Some(&key),
            &json!({"principal": {"ref": "stranger"}, "args": {"title": "x"}}),
        )
        .await;
    let v: Value = refused.json().await.unwrap();
    assert_eq!(v["result"]["success"], json!(false));
    assert_eq!(
        v["result"]["error"],
        "The tool request_human_intervention is not available in this conversation."
    );
    let rows: Vec<HumanIntervention> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1, "the refused call wrote nothing");
    let usage: Vec<storage::ApiRequestUsage> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(usage.len(), 2);
    assert!(
        usage
            .iter()
            .all(|u| u.surface.as_str() == "rest_tool_execute")
    );
    // A bad body is a 400.
    let bad = app
        .post_json(
            "/api/v1/tools/who_knows/execute",
            Some(&key),
            &json!({"args": {}}),
        )
        .await;
    assert_eq!(bad.status(), 400);
}

/// Register the stub backend as the tenant's integration and make it active.
async fn active_stub(app: &TestApp, ctx: &TenantContext) -> testkit::stub::StubBackend {
    use testkit::stub::StubBackend;
    let stub = StubBackend::start("stub-secret-0123456789").await.unwrap();
    crate::support::register_stub(app, ctx, &stub, "stub-secret-0123456789").await;
    let integrations = app.state.integrations.clone();
    tenancy::scope(ctx.clone(), async move {
        assert_eq!(integrations.prime().await.unwrap().len(), 1, "active");
    })
    .await;
    stub
}

#[tokio::test]
async fn tools_escalation_reaches_the_integration_webhook_signed() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let stub = active_stub(&app, &ctx).await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let tools = turn_tools(&app, ctx.id(), ann, Some("member"));
    let esc = exec(
        &ctx,
        &tools,
        "escalate_to_admin",
        json!({"escalation_reason": "billing dispute", "user_request_summary": "Refund my event ticket",
               "what_was_checked": "the refunds page"}),
    )
    .await;
    assert!(esc.success, "{esc:?}");
    let id = esc.data.unwrap()["intervention_id"].clone();
    app.state.interventions.idle().await;
    let posted = stub.requests_to("/integration/escalations");
    assert_eq!(posted.len(), 1);
    assert!(
        posted[0].signature_valid,
        "signed with the integration secret"
    );
    assert!(posted[0].header("x-root-signature").is_some());
    assert_eq!(
        stub.escalations(),
        vec![json!({
            "type": "escalation", "tenant_id": ctx.id(), "intervention_id": id,
            "principal_ref": "U0ANN", "user_name": "Member U0ANN", "channel": "slack",
            "tier": "member", "escalation_reason": "billing dispute",
            "user_request_summary": "Refund my event ticket", "what_was_checked": "the refunds page",
            "title": "Refund my event ticket",
            "details": "Refund my event ticket\n\nReason: billing dispute\nChecked: the refunds page",
            "created_at": stub.escalations()[0]["created_at"], "channel_id": "D0123",
        })]
    );
    // Other categories use the same endpoint with their own type.
    let r = exec(
        &ctx,
        &tools,
        "report_root_mistake",
        json!({"user_complaint": "wrong hours", "mistake_summary": "Said 9am, it is 10am"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    app.state.interventions.idle().await;
    let all = stub.escalations();
    assert_eq!(all.len(), 2);
    assert_eq!(all[1]["type"], "mistake_report");
    assert_eq!(all[1]["mistake_summary"], "Said 9am, it is 10am");
}

#[tokio::test]
async fn tools_escalation_succeeds_and_is_stored_when_the_webhook_is_down() {
    use testkit::stub::StubFailure;
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let stub = active_stub(&app, &ctx).await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let tools = turn_tools(&app, ctx.id(), ann, Some("member"));
    let escalate = |summary: &'static str| {
        exec(
            &ctx,
            &tools,
            "escalate_to_admin",
            json!({"escalation_reason": "needs a human", "user_request_summary": summary}),
        )
    };
    // The backend answers 500.
    stub.fail_next("/integration/escalations", 1, StubFailure::Status(500));
    let r = escalate("First request").await;
    assert!(r.success, "{r:?}");
    app.state.interventions.idle().await;
    assert_eq!(stub.requests_to("/integration/escalations").len(), 1);
    assert!(stub.escalations().is_empty());
    // The backend is gone (connection refused).
    let store = app.state.store.clone();
    let mut row: storage::Integration = store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap()
        .pop()
        .unwrap();
    row.base_url = crate::support::closed_port_url().await;
    store.update(row).await.unwrap();
    let r = escalate("Second request").await;
    assert!(r.success, "{r:?}");
    assert_eq!(
        r.data.unwrap()["message"],
        "Passed to the community's admins as an open escalation."
    );
    app.state.interventions.idle().await;
    let rows: Vec<HumanIntervention> = store.scan(Some(ctx.id()), Scan::all()).await.unwrap();
    let mut titles: Vec<&str> = rows.iter().map(|r| r.title.as_str()).collect();
    titles.sort();
    assert_eq!(
        titles,
        vec!["First request", "Second request"],
        "both stored"
    );
    assert_eq!(
        stub.requests_to("/integration/escalations").len(),
        1,
        "nothing reached the old address"
    );
}

/// A stub backend registered as integration `name`, serving only
/// `lookup_member` as `tool` declares it (active after one prime).
async fn stub_named(
    app: &TestApp,
    ctx: &TenantContext,
    name: &str,
    tool: Value,
) -> testkit::stub::StubBackend {
    use root::integrations::registry::NewIntegration;
    use testkit::stub::StubBackend;
    let stub = StubBackend::start("stub-secret-0123456789").await.unwrap();
    stub.set_manifest(json!({"protocol": "root-int/1", "tools": [tool]}));
    let integrations = app.state.integrations.clone();
    let new = NewIntegration {
        name: name.into(),
        base_url: stub.base_url().into(),
        signing_secret: Some("stub-secret-0123456789".into()),
        endpoint_paths: None,
    };
    tenancy::scope(ctx.clone(), async move {
        integrations.register(new).await.unwrap();
    })
    .await;
    stub
}

/// H3: two integrations declare `lookup_member` — alpha for admins only,
/// beta for members. Each caller is offered and runs exactly the
/// integration the gate admitted; the catalog lists both.
#[tokio::test]
async fn tools_a_shared_tool_name_runs_on_the_integration_the_gate_admitted() {
    use root::tools::integration::{PrimedInvoker, integration_offers, tier_declarations};
    use root::tools::{IntegrationInvoker, ToolSource};

    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let ctx = tenant_ctx(&app, "acme").await;
    let params = json!({"type": "object", "properties": {"query": {"type": "string"}}});
    let alpha = stub_named(
        &app,
        &ctx,
        "alpha",
        json!({"name": "lookup_member", "description": "Alpha admin lookup.",
               "parameters": params, "admin_only": true, "tiers": ["__admin__"]}),
    )
    .await;
    let beta = stub_named(
        &app,
        &ctx,
        "beta",
        json!({"name": "lookup_member", "description": "Beta member lookup.",
               "parameters": params, "tiers": ["member"]}),
    )
    .await;
    let integrations = app.state.integrations.clone();
    let primed = tenancy::scope(ctx.clone(), async { integrations.prime().await.unwrap() }).await;
    assert_eq!(primed.len(), 2);
    let decls = tier_declarations(&primed);
    let offers = integration_offers(&primed);
    let invoker: Arc<PrimedInvoker> =
        Arc::new(PrimedInvoker::new(integrations.clone(), Arc::new(primed)));
    let gate = |is_admin: bool| {
        allowed_tools(&GateInput {
            surface: Surface::Slack,
            access_level: Some("member"),
            is_admin,
            dashboard_admin: false,
            tier_declarations: &decls,
            integration_tools: &offers,
        })
    };
    let lookup = |tools: &TurnTools| {
        let defs: Vec<_> = tools
            .definitions()
            .iter()
            .filter(|d| d.name == "lookup_member")
            .cloned()
            .collect();
        assert_eq!(defs.len(), 1, "one lookup_member offered");
        defs[0].description.clone()
    };
    let tool_path = "/integration/tools/lookup_member";

    // A member: beta's tool is offered and runs; alpha never hears a thing.
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let member_tools = turn_tools_on(
        &app,
        ctx.id(),
        ann.clone(),
        gate(false),
        Some("D0123"),
        Some(invoker.clone()),
    );
    assert_eq!(lookup(&member_tools), "Beta member lookup.");
    let r = exec(
        &ctx,
        &member_tools,
        "lookup_member",
        json!({"query": "Ada"}),
    )
    .await;
    assert!(r.success, "{r:?}");
    assert_eq!(beta.requests_to(tool_path).len(), 1);
    assert!(beta.requests_to(tool_path)[0].signature_valid);
    assert!(alpha.requests_to(tool_path).is_empty());

    // An admin: both admit; alpha is first in name order, beta is shadowed.
    let admin_surface = gate(true);
    assert_eq!(
        admin_surface.admit("lookup_member").unwrap().source,
        ToolSource::Integration {
            integration: "alpha".into()
        }
    );
    assert_eq!(
        admin_surface.shadowed[0].reason,
        "shadowed by integration alpha"
    );
    let admin = TurnPrincipal {
        is_admin: true,
        ..ann.clone()
    };
    let admin_tools = turn_tools_on(
        &app,
        ctx.id(),
        admin,
        admin_surface,
        Some("D0123"),
        Some(invoker.clone()),
    );
    assert_eq!(lookup(&admin_tools), "Alpha admin lookup.");
    let r = exec(&ctx, &admin_tools, "lookup_member", json!({"query": "Ada"})).await;
    assert!(r.success, "{r:?}");
    assert_eq!(alpha.requests_to(tool_path).len(), 1);
    assert_eq!(
        beta.requests_to(tool_path).len(),
        1,
        "beta not called again"
    );

    // Defence in depth: asked directly for alpha's tool on a member's
    // turn, the invoker re-checks alpha's declaration and refuses.
    let member_ctx = TurnContext {
        tenant_id: ctx.id(),
        principal: ann,
        surface: Surface::Slack,
        channel_id: Some("D0123".into()),
        user_message: "hello".into(),
        knowledge_source_types: None,
        surface_tools: Vec::new(),
        services: app.state.tools.clone(),
    };
    let refused = tenancy::scope(
        ctx.clone(),
        invoker.invoke("alpha", "lookup_member", json!({}), &member_ctx),
    )
    .await;
    assert!(!refused.success);
    assert_eq!(
        refused.error.as_deref(),
        Some("The tool lookup_member is not available in this conversation.")
    );
    assert_eq!(
        alpha.requests_to(tool_path).len(),
        1,
        "alpha saw no request"
    );

    // The catalog lists each integration's tool on its own row.
    let v: Value = app
        .get("/api/v1/tools", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    let rows: Vec<&Value> = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "lookup_member")
        .collect();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["source"], json!({"integration": "alpha"}));
    assert_eq!(rows[0]["description"], "Alpha admin lookup.");
    assert!(rows[0]["allowed"]["admin"]["slack"].is_string());
    assert!(rows[0]["allowed"].get("member").is_none());
    assert_eq!(rows[1]["source"], json!({"integration": "beta"}));
    assert_eq!(rows[1]["description"], "Beta member lookup.");
    assert!(rows[1]["allowed"]["member"]["slack"].is_string());
    // Admins get alpha's wherever admin counts; on the API (admin forced
    // off) alpha refuses them and beta's is the one offered.
    assert!(rows[1]["allowed"]["admin"].get("slack").is_none());
    assert!(rows[1]["allowed"]["admin"]["api"].is_string());
    assert!(rows[0]["allowed"]["admin"].get("api").is_none());
    assert_eq!(
        rows[1]["shadowed"]["admin"]["slack"],
        "shadowed by integration alpha"
    );
}

/// L3: a tier scoped to `faq` pages gets no link to a `policy` page — by
/// slug or public id, public or private — the answer is the missing-page
/// one; an in-scope page still links.
#[tokio::test]
async fn tools_page_links_follow_the_tiers_knowledge_scoping() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "fees", "title": "Fees", "is_public": true, "public_id": "kb_fees",
               "source_type": "policy", "content_html": "<p>Fees are due in January.</p>"}),
    )
    .await;
    put_page(
        &app,
        &key,
        json!({"slug": "board-minutes", "title": "Board minutes", "source_type": "policy",
               "content_html": "<p>The board met on Monday.</p>"}),
    )
    .await;
    put_page(
        &app,
        &key,
        json!({"slug": "hours", "title": "Hours", "is_public": true, "source_type": "faq",
               "content_html": "<p>We open at ten.</p>"}),
    )
    .await;
    let ctx = tenant_ctx(&app, "acme").await;
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let decls = [TierDeclaration {
        name: "member".into(),
        core_tools: Some(vec![
            "search_knowledge_base".into(),
            "get_knowledge_page_link".into(),
        ]),
        knowledge_source_types: Some(vec!["faq".into()]),
        object_form: true,
    }];
    let s = surface(Some("member"), &decls);
    assert_eq!(s.knowledge_source_types, Some(vec!["faq".to_string()]));
    let tools = turn_tools_on(&app, ctx.id(), ann, s, Some("D0123"), None);
    for r in ["fees", "kb_fees", "board-minutes"] {
        let out = exec(
            &ctx,
            &tools,
            "get_knowledge_page_link",
            json!({"slug_or_url": r}),
        )
        .await;
        assert!(!out.success, "{r}");
        assert_eq!(
            out.error.unwrap(),
            format!(
                "No knowledge page {r:?} was found. Search the knowledge base for the right slug."
            )
        );
    }
    let tokens: Vec<storage::WebLinkToken> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert!(tokens.is_empty(), "no link was issued");
    let ok = exec(
        &ctx,
        &tools,
        "get_knowledge_page_link",
        json!({"slug_or_url": "hours"}),
    )
    .await;
    assert!(ok.success, "{ok:?}");
}

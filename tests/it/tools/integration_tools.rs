//! Integration tools in a turn: materialized from the stub backend's
//! manifest, signed parallel batches, escalation webhooks, and a tool name
//! shared by two integrations.

use super::*;

/// Acceptance 2 minus the HTTP route: a manifest tier's surface from the
/// stub backend, a parallel batch of two integration tools, signed invokes
/// round-trip, the answer cites tool data; audit, trace and usage rows.
#[tokio::test]
async fn tools_integration_tools_materialize_and_run_signed_in_a_parallel_batch() {
    use crate::support::fake_llm::{FakeLlm, completion, tool_calls};
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
        dashboard_chat: false,
        tier_declarations: &decls,
        integration_tools: &offers,
        build_tools: &[],
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
            dashboard_chat: false,
            tier_declarations: &decls,
            integration_tools: &offers,
            build_tools: &[],
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
        delivery: Default::default(),
        email_delegation: None,
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

/// §7.3 / §8.2: an integration tool's NDJSON progress lines reach the
/// turn's progress sink (the Slack "working…" line) and the invocation
/// carries the Slack thread the reply goes to.
#[tokio::test]
async fn tools_integration_progress_and_thread_reach_the_turn_delivery() {
    use root::tools::integration::PrimedInvoker;
    use root::tools::{Delivery, IntegrationInvoker};

    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let stub = active_stub(&app, &ctx).await;
    let integrations = app.state.integrations.clone();
    let primed = tenancy::scope(ctx.clone(), async { integrations.prime().await.unwrap() }).await;
    let invoker = PrimedInvoker::new(app.state.integrations.clone(), Arc::new(primed));
    let ann = principal(&app, ctx.id(), "U0ANN").await;
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let turn = TurnContext {
        tenant_id: ctx.id(),
        principal: ann,
        surface: Surface::Slack,
        channel_id: Some("C0123".into()),
        user_message: "weekly report please".into(),
        knowledge_source_types: None,
        surface_tools: Vec::new(),
        services: app.state.tools.clone(),
        delivery: Delivery {
            thread_ts: Some("1700000000.000100".into()),
            progress: Some(tx),
            events: None,
        },
        email_delegation: None,
    };
    let r = tenancy::scope(
        ctx.clone(),
        invoker.invoke("stub", "generate_report", json!({}), &turn),
    )
    .await;
    assert!(r.success, "{r:?}");
    drop(turn);
    let mut progress = Vec::new();
    while let Some(m) = rx.recv().await {
        progress.push(m);
    }
    assert_eq!(progress, ["Collecting member data", "Rendering the report"]);
    let sent = stub.requests_to("/integration/tools/generate_report");
    assert_eq!(sent.len(), 1);
    let body: Value = serde_json::from_slice(&sent[0].body).unwrap();
    assert_eq!(body["thread_ts"], "1700000000.000100");
}

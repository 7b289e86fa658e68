//! The shared turn runner over HTTP (§8.1, §8.5, §12.2): acceptance 2 through
//! `POST /dev/simulate-message`, conversation logs and history, degraded
//! identity, secure links at delivery, and `POST /api/v1/agent/turns`.

use serde_json::{Value, json};
use storage::{
    ApiRequestUsage, ApiSurface, ConversationLog, Direction, IntegrationToolCall, LlmTokenUsage,
    Scan, Store, Tenant, TenantStore,
};

use root::platform::api_keys::{self, KeyKind};
use root::platform::tenancy::{self, TenantContext};
use testkit::stub::StubBackend;

use crate::support::TestApp;
use crate::support::fake_llm::{FakeLlm, completion, tool_calls};

const SECRET: &str = "stub-secret-0123456789";

struct World {
    app: TestApp,
    /// A live API key of the tenant (the dev harness needs one).
    key: String,
    llm: FakeLlm,
    stub: StubBackend,
    ctx: TenantContext,
}

async fn world(settings: Value) -> World {
    world_with(settings, &[]).await
}

async fn world_with(settings: Value, extra: &[(&str, &str)]) -> World {
    let llm = FakeLlm::start().await;
    let mut vars = vec![
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("ROOT_DEV_HARNESS", "true"),
    ];
    vars.extend_from_slice(extra);
    let app = TestApp::spawn_with(&vars).await;
    let mut t = Tenant::new("acme", "Acme");
    t.settings = storage::Json(settings);
    let t = app.state.store.create_tenant(t).await.unwrap();
    let key = api_keys::mint(
        &app.state.store,
        &t,
        "dev harness",
        KeyKind::Live,
        app.state.clock.now(),
    )
    .await
    .unwrap()
    .raw;
    let ctx = TenantContext {
        tenant: std::sync::Arc::new(t),
    };
    let stub = StubBackend::start(SECRET).await.unwrap();
    crate::support::register_stub(&app, &ctx, &stub, SECRET).await;
    World {
        app,
        key,
        llm,
        stub,
        ctx,
    }
}

async fn simulate(w: &World, body: &Value) -> (u16, Value) {
    simulate_as(&w.app, Some(&w.key), body).await
}

async fn simulate_as(app: &TestApp, key: Option<&str>, body: &Value) -> (u16, Value) {
    let r = app.post_json("/dev/simulate-message", key, body).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn agent_turn(app: &TestApp, key: Option<&str>, body: &Value) -> (u16, Value) {
    let r = app.post_json("/api/v1/agent/turns", key, body).await;
    let status = r.status().as_u16();
    (status, r.json().await.unwrap_or(Value::Null))
}

async fn logs(w: &World) -> Vec<ConversationLog> {
    let mut rows: Vec<ConversationLog> = w
        .app
        .state
        .store
        .scan(Some(w.ctx.id()), Scan::all())
        .await
        .unwrap();
    rows.sort_by_key(|r| (r.message_at, r.direction == Direction::Outbound));
    rows
}

fn messages(body: &Value) -> Vec<(String, String)> {
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap_or("").to_string(),
                m["content"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// The conversation without system messages (prompt, phase instructions).
fn dialogue(body: &Value) -> Vec<(String, String)> {
    messages(body)
        .into_iter()
        .filter(|(role, _)| role != "system")
        .collect()
}

fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|t| {
            t.iter()
                .map(|t| t["function"]["name"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Acceptance 2: identity resolve against the stub → manifest tools
/// materialize → a parallel batch → signed invokes round-trip → the forced
/// answer cites tool data; trace, usage and conversation rows written.
#[tokio::test]
async fn turns_simulate_message_runs_a_full_turn_acceptance_2() {
    let w = world(json!({})).await;
    w.llm
        .json(tool_calls(
            Some("Looking Ada up and booking the room."),
            &[
                ("c1", "lookup_member", r#"{"query":"Ada"}"#),
                ("c2", "book_room", r#"{"room":"Garden"}"#),
            ],
        ))
        .json(tool_calls(
            Some("Checking the room rules."),
            &[("c3", "search_knowledge_base", r#"{"query":"Garden room rules"}"#)],
        ))
        .json(completion(
            "Done: the Garden room is booked (confirmation BK-1001), and Ada is in the 2024 cohort.",
        ));
    let (status, v) = simulate(
        &w,
        &json!({"tenant": "acme", "message": "Book the Garden room and tell me about Ada",
                "slack_user_id": "u_member", "user_name": "ada"}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert!(v["response"].as_str().unwrap().contains("BK-1001"), "{v}");
    assert_eq!(v["success"], json!(true));
    assert_eq!(v["principal"]["tier"], "member");
    assert_eq!(v["principal"]["ref"], "member-1");
    assert_eq!(v["principal"]["tier_source"], "integration");
    assert!(v["degraded"].is_null());
    let calls = v["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 3);
    assert!(
        calls[..2]
            .iter()
            .all(|c| c["success"] == json!(true) && c["round"] == json!(1))
    );
    assert_eq!(calls[1]["result"]["data"]["confirmation"], "BK-1001");
    assert_eq!(calls[2]["name"], "search_knowledge_base");
    assert_eq!(calls[2]["round"], json!(2));
    assert_eq!(v["thread_key"], "slack:u_member");
    assert_eq!(v["usage"]["llm_calls"], json!(3));

    // Identity was resolved against the integration, on the Slack channel.
    let asked = w.stub.requests_to("/integration/identity/resolve");
    assert_eq!(asked[0].json()["slack_user_id"], "u_member");
    // The planner saw exactly the member tier's allowlist + its integration
    // tools; the forced answer round saw no tools, and both results.
    let bodies = w.llm.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(
        offered(&bodies[0]),
        vec![
            "search_knowledge_base",
            "escalate_to_admin",
            "lookup_member",
            "book_room",
            "generate_report"
        ]
    );
    assert_eq!(offered(&bodies[1]), offered(&bodies[0]));
    assert!(bodies[2].get("tools").is_none());
    let answer_saw: Vec<String> = bodies[2]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(answer_saw.len(), 3);
    assert!(answer_saw[1].contains("BK-1001"));
    let system = &messages(&bodies[0])[0];
    assert_eq!(system.0, "system");
    assert!(
        system
            .1
            .contains("Members can book the Garden and Library rooms")
    );
    assert!(
        system
            .1
            .contains("You are responding to: Ada Lovelace (member)")
    );
    // Both invokes were signed and carried the resolved principal.
    let booked = w.stub.requests_to("/integration/tools/book_room");
    assert_eq!(booked.len(), 1);
    assert!(booked[0].header("x-root-signature").is_some());
    assert_eq!(booked[0].json()["principal"]["ref"], "member-1");
    assert_eq!(booked[0].json()["channel"], "slack");
    assert_eq!(
        w.stub.requests_to("/integration/tools/lookup_member").len(),
        1
    );

    // Trace, usage, audit rows.
    let trace_id: uuid::Uuid = v["trace_id"].as_str().unwrap().parse().unwrap();
    w.app.state.tracer.flush().await;
    let trace = tenancy::scope(w.ctx.clone(), w.app.state.tracer.get(trace_id))
        .await
        .unwrap()
        .expect("trace stored");
    assert!(trace.span("tool:book_room").is_some());
    assert!(trace.span("tool:lookup_member").is_some());
    let usage: Vec<LlmTokenUsage> = w
        .app
        .state
        .store
        .scan(Some(w.ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(usage.len(), 3);
    let audit: Vec<IntegrationToolCall> = w
        .app
        .state
        .store
        .scan(Some(w.ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(audit.len(), 2);

    // Inbound and outbound rows of one exchange.
    let rows = logs(&w).await;
    assert_eq!(rows.len(), 2);
    let x = v["exchange_key"].as_str().unwrap();
    assert_eq!(rows[0].direction, Direction::Inbound);
    assert_eq!(
        rows[0].dedupe_key.as_deref(),
        Some(format!("{x}:in").as_str())
    );
    assert_eq!(
        rows[1].dedupe_key.as_deref(),
        Some(format!("{x}:out").as_str())
    );
    assert!(rows.iter().all(|r| r.exchange_key.as_deref() == Some(x)
        && r.thread_key.as_deref() == Some("slack:u_member")
        && r.channel == storage::Channel::Slack
        && r.member_id.as_deref() == Some("member-1")
        && r.principal_id.is_some()));
    assert_eq!(rows[1].message_text.as_deref(), v["response"].as_str());
    assert_eq!(rows[1].metadata.0["trace_id"], v["trace_id"]);
}

#[tokio::test]
async fn turns_history_is_the_last_20_logs_of_the_thread() {
    // Fourteen turns back to back: more than the default burst of 10.
    let w = world(json!({"limits": {"agent_turns_burst": 14}})).await;
    for i in 0..12 {
        w.llm.json(completion(&format!("answer {i}")));
        let (status, v) = simulate(
            &w,
            &json!({"tenant": "acme", "message": format!("question {i}"), "slack_user_id": "u_member",
                    "thread_key": "1700000000.000100"}),
        )
        .await;
        assert_eq!(status, 200, "{v}");
        assert_eq!(v["thread_key"], "slack:u_member:1700000000.000100");
    }
    let bodies = w.llm.bodies();
    // The second turn saw the first exchange as history.
    let second = dialogue(&bodies[1]);
    assert_eq!(second[0], ("user".into(), "question 0".into()));
    assert_eq!(second[1], ("assistant".into(), "answer 0".into()));
    assert_eq!(second.last().unwrap().1, "question 1");
    // The twelfth turn: 22 earlier rows exist, the last 20 are history.
    let last = dialogue(&bodies[11]);
    assert_eq!(last.len(), 21);
    assert_eq!(last[0], ("user".into(), "question 1".into()));
    assert_eq!(last[19], ("assistant".into(), "answer 10".into()));
    assert_eq!(last[20], ("user".into(), "question 11".into()));
    // Another thread starts empty, and so does a message without a thread
    // key (§8.1 loads history only for a named thread).
    for body in [
        json!({"tenant": "acme", "message": "new topic", "slack_user_id": "u_member",
               "thread_key": "1700000999.000100"}),
        json!({"tenant": "acme", "message": "new topic", "slack_user_id": "u_member"}),
    ] {
        w.llm.json(completion("fresh"));
        simulate(&w, &body).await;
        let fresh = dialogue(w.llm.bodies().last().unwrap());
        assert_eq!(fresh, vec![("user".to_string(), "new topic".to_string())]);
    }
}

#[tokio::test]
async fn turns_unresolved_slack_user_gets_the_reserved_set_and_a_degraded_reason() {
    let w = world(json!({"access": {"slack": "integration"}})).await;
    w.llm
        .json(completion("I can search the knowledge base for you."));
    let (status, v) = simulate(
        &w,
        &json!({"tenant": "acme", "message": "hi", "slack_user_id": "u_stranger"}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["principal"]["tier"], "unresolved");
    assert_eq!(v["principal"]["tier_source"], "unresolved");
    assert!(v["degraded"].as_str().is_some_and(|r| !r.is_empty()), "{v}");
    let mut got = offered(&w.llm.bodies()[0]);
    got.sort();
    assert_eq!(
        got,
        vec![
            "escalate_to_admin",
            "search_current_events",
            "search_knowledge_base",
            "search_slack_messages",
            "who_knows"
        ]
    );
    // No principal row: the log rows carry the Slack id as the member.
    let rows = logs(&w).await;
    assert!(
        rows.iter()
            .all(|r| r.principal_id.is_none() && r.member_id.as_deref() == Some("u_stranger"))
    );
}

#[tokio::test]
async fn turns_secure_links_get_a_fresh_token_in_dms_only() {
    let w = world(json!({})).await;
    w.llm
        .json(completion(
            "Open /dashboard?token=made-up to see your bookings.",
        ))
        .json(completion("Open /dashboard to see your bookings."));
    let (_, dm) = simulate(
        &w,
        &json!({"tenant": "acme", "message": "where are my bookings?", "slack_user_id": "u_member"}),
    )
    .await;
    assert_eq!(
        dm["response"],
        "Open https://members.example.org/go/dashboard?principal=member-1 to see your bookings."
    );
    let system = &messages(&w.llm.bodies()[0])[0].1;
    assert!(
        system.contains("- Member dashboard: /dashboard — bookings, profile and membership status")
    );
    assert!(system.contains("A fresh secure token is attached"));
    // In a public channel the guidance says DM only, and nothing is issued.
    let (_, public) = simulate(
        &w,
        &json!({"tenant": "acme", "message": "where are my bookings?", "slack_user_id": "u_member",
                "channel_id": "C0PUBLIC"}),
    )
    .await;
    assert_eq!(public["response"], "Open /dashboard to see your bookings.");
    let system = &messages(&w.llm.bodies()[1])[0].1;
    assert!(system.contains("only issued inside a direct message"));
    assert_eq!(w.stub.requests_to("/integration/links/issue").len(), 1);
}

#[tokio::test]
async fn turns_simulate_rejects_bad_input() {
    let w = world(json!({})).await;
    let (status, _) = simulate(&w, &json!({"tenant": "acme", "message": "   "})).await;
    assert_eq!(status, 400);
    let (status, _) = simulate(&w, &json!({"tenant": "acme"})).await;
    assert_eq!(status, 400);
    let (status, _) = simulate(&w, &json!({"tenant": "acme", "message": "x", "bogus": 1})).await;
    assert_eq!(status, 400);
    // A suspended tenant runs no turns.
    let mut t = (*w.ctx.tenant).clone();
    t.status = storage::TenantStatus::Suspended;
    w.app.state.store.save_tenant(t.clone()).await.unwrap();
    w.app.state.tenants.invalidate(&t);
    let (status, _) = simulate(&w, &json!({"tenant": "acme", "message": "hi"})).await;
    assert_eq!(status, 403);
    assert!(w.llm.bodies().is_empty(), "no model call for bad input");
    assert!(logs(&w).await.is_empty(), "nothing logged for bad input");
}

/// C1: the harness runs turns as any Slack user, so it needs an API key,
/// runs in the key's tenant only, and refuses foreign `Host` names.
#[tokio::test]
async fn turns_simulate_needs_a_key_of_the_tenant_it_runs_in() {
    let w = world(json!({})).await;
    let other = w
        .app
        .state
        .store
        .create_tenant(Tenant::new("other", "Other"))
        .await
        .unwrap();
    let other_key = api_keys::mint(
        &w.app.state.store,
        &other,
        "k",
        KeyKind::Live,
        w.app.state.clock.now(),
    )
    .await
    .unwrap()
    .raw;
    let body = json!({"tenant": "acme", "message": "hi", "slack_user_id": "u_admin"});
    // No key, or a bad key: 401, nothing runs.
    let (status, v) = simulate_as(&w.app, None, &body).await;
    assert_eq!(status, 401, "{v}");
    let (status, _) = simulate_as(&w.app, Some("rpk_live_nope"), &body).await;
    assert_eq!(status, 401);
    // Another tenant's key cannot name this tenant…
    let (status, v) = simulate_as(&w.app, Some(&other_key), &body).await;
    assert_eq!(status, 403, "{v}");
    assert_eq!(
        v["error"]["message"],
        "the tenant field must name the API key's tenant"
    );
    let (status, _) = simulate(&w, &json!({"tenant": "other", "message": "hi"})).await;
    assert_eq!(status, 403);
    let (status, _) = simulate(
        &w,
        &json!({"tenant": other.id.to_string(), "message": "hi"}),
    )
    .await;
    assert_eq!(status, 403);
    assert!(
        w.llm.bodies().is_empty(),
        "no model call for a refused turn"
    );
    assert!(logs(&w).await.is_empty());
    // …and without a tenant field a key runs in its own tenant only.
    w.llm.json(completion("hello from other"));
    let (status, v) = simulate_as(&w.app, Some(&other_key), &json!({"message": "hi"})).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["response"], "hello from other");
    assert!(
        logs(&w).await.is_empty(),
        "acme saw nothing of other's turn"
    );
    // The tenant's id works like its slug.
    w.llm.json(completion("hello acme"));
    let (status, _) = simulate(
        &w,
        &json!({"tenant": w.ctx.tenant.id.to_string(), "message": "hi"}),
    )
    .await;
    assert_eq!(status, 200);

    // DNS rebinding: a browser sent here by evil.example carries its Host.
    let r = w
        .app
        .client
        .post(w.app.url("/dev/simulate-message"))
        .header("host", "evil.example")
        .bearer_auth(&w.key)
        .json(&json!({"message": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 421);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["error"]["code"], "misdirected_request");
    assert_eq!(w.llm.bodies().len(), 2, "the refused request ran no turn");
}

#[tokio::test]
async fn turns_simulate_is_not_mounted_unless_opted_in() {
    // Default development server: no harness, whatever the key.
    let app = TestApp::spawn().await;
    let key = api_keys::mint_for_slug(&app.state.store, "root", "k", KeyKind::Live)
        .await
        .unwrap()
        .1
        .raw;
    let body = json!({"message": "hi"});
    let (status, _) = simulate_as(&app, Some(&key), &body).await;
    assert_eq!(status, 404);
    let (status, _) = simulate_as(&app, None, &body).await;
    assert_eq!(status, 404);
    // Production never mounts it (config refuses the opt-in there).
    let prod = TestApp::spawn_with(&[("NODE_ENV", "production")]).await;
    let (status, _) = simulate_as(&prod, Some(&key), &body).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn turns_rest_agent_turn_runs_as_the_principal_and_is_metered() {
    let w = world(json!({})).await;
    let key = root::platform::api_keys::mint_for_slug(
        &w.app.state.store,
        "acme",
        "test",
        root::platform::api_keys::KeyKind::Live,
    )
    .await
    .unwrap()
    .1
    .raw;
    w.llm
        .json(tool_calls(
            None,
            &[("c1", "book_room", r#"{"room":"Library"}"#)],
        ))
        .json(completion("Booked the Library (BK-1001)."))
        .json(completion("You booked the Library earlier."));
    let (status, v) = agent_turn(
        &w.app,
        Some(&key),
        &json!({"message": "Book the Library", "principal": {"email": "Ada@example.org"},
                "thread_key": "support-42"}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["response"], "Booked the Library (BK-1001).");
    assert_eq!(v["tool_calls"][0]["name"], "book_room");
    assert_eq!(v["thread_key"], "api:ada@example.org:support-42");
    assert_eq!(v["principal"]["ref"], "member-1");
    assert!(v["trace_id"].is_string());
    assert_eq!(v["usage"]["llm_calls"], json!(2));
    let booked = w.stub.requests_to("/integration/tools/book_room");
    assert_eq!(booked[0].json()["channel"], "api");
    assert_eq!(booked[0].json()["principal"]["is_admin"], json!(false));

    // Continue the thread: the history comes from the logs.
    let (status, v2) = agent_turn(
        &w.app,
        Some(&key),
        &json!({"message": "What did I book?", "principal": {"email": "ada@example.org"},
                "thread_key": "support-42"}),
    )
    .await;
    assert_eq!(status, 200, "{v2}");
    assert_eq!(v2["response"], "You booked the Library earlier.");
    assert_eq!(v2["thread_key"], v["thread_key"]);
    let third = dialogue(&w.llm.bodies()[2]);
    assert_eq!(third[0], ("user".into(), "Book the Library".into()));
    assert_eq!(
        third[1],
        ("assistant".into(), "Booked the Library (BK-1001).".into())
    );

    // One metering row per turn.
    let usage: Vec<ApiRequestUsage> = w
        .app
        .state
        .store
        .scan(Some(w.ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(usage.len(), 2);
    assert!(usage.iter().all(|u| u.surface == ApiSurface::RestAgentTurn));
    assert_eq!(usage.iter().map(|u| u.llm_calls).sum::<i64>(), 3);

    // Bad bodies are 400s; no key is 401.
    for bad in [
        json!({"message": "hi"}),
        json!({"message": "hi", "principal": {}}),
        json!({"message": "", "principal": "member-1"}),
        json!({"message": "hi", "principal": "member-1", "history": [{"role": "system", "content": "x"}]}),
    ] {
        let (status, v) = agent_turn(&w.app, Some(&key), &bad).await;
        assert_eq!(status, 400, "{bad}: {v}");
    }
    let (status, _) = agent_turn(&w.app, None, &json!({"message": "hi", "principal": "x"})).await;
    assert_eq!(status, 401);
}

/// The JSON answer of a REST agent turn with one tool call, pinned (trace
/// id, exchange key and timings redacted).
#[tokio::test]
async fn turns_rest_agent_turn_body_matches_its_snapshot() {
    let w = world(json!({})).await;
    let key = crate::support::mint_key(
        &w.app.state.store,
        "acme",
        root::platform::api_keys::KeyKind::Live,
    )
    .await;
    w.llm
        .json(tool_calls(
            None,
            &[("c1", "book_room", r#"{"room":"Library"}"#)],
        ))
        .json(completion("Booked the Library (BK-1001)."));
    let (status, v) = agent_turn(
        &w.app,
        Some(&key),
        &json!({"message": "Book the Library", "principal": {"email": "ada@example.org"},
                "thread_key": "support-42"}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    insta::assert_json_snapshot!("agent_turn_with_one_tool_call", v, {
        ".trace_id" => "[trace id]",
        ".exchange_key" => "[exchange key]",
        ".**.duration_ms" => "[ms]",
        ".**.latency_ms" => "[ms]",
        ".**.elapsed_ms" => "[ms]",
    });
}

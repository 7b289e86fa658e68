//! `/api/v1/tools`: who can call what, and execution through the gate.

use super::*;

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
    // Slack-only tools: a full-core tier on Slack only (the member tier's
    // allowlist leaves them out); admin messaging: admins on Slack.
    let post = row("find_channel_for_community_post");
    assert_eq!(post["implemented"], json!(true));
    assert!(post["allowed"]["partner"]["slack"].is_string(), "{post}");
    assert!(post["allowed"]["partner"].get("api").is_none());
    assert!(post["allowed"]["partner"].get("email").is_none());
    assert!(post["allowed"].get("member").is_none());
    let dm = row("send_slack_dm_admin");
    assert_eq!(dm["source"], "admin_messaging");
    assert!(dm["allowed"]["admin"]["slack"].is_string(), "{dm}");
    assert!(dm["allowed"].get("partner").is_none());
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

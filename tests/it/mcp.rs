//! The MCP server at `POST /api/mcp` (§12.3, acceptance 9) through rmcp's
//! own Streamable-HTTP client against the real server: handshake, the six
//! tools, an agent turn, LLM-free search, the dispatch gate, bearer auth and
//! tenant isolation.

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use storage::{
    ApiRequestUsage, Channel, ConversationLog, HumanIntervention, Principal, Scan, Store,
    TenantStatus, TenantStore,
};

use root::platform::api_keys::KeyKind;
use root::platform::tenancy::TenantContext;

use crate::kb::{key_for, put_page};
use crate::support::fake_llm::{FakeLlm, completion};
use crate::support::{TestApp, mint_key};

type Client = RunningService<RoleClient, ()>;

/// An initialized MCP client of `app` authenticating with `key`.
async fn connect(app: &TestApp, key: &str) -> Client {
    let config =
        StreamableHttpClientTransportConfig::with_uri(app.url("/api/mcp")).auth_header(key);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .expect("MCP handshake")
}

async fn call(client: &Client, name: &str, args: Value) -> CallToolResult {
    let Value::Object(args) = args else {
        panic!("arguments must be an object")
    };
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(args as JsonObject))
        .await
        .expect("tools/call answered")
}

/// The single text content of `r`.
fn text(r: &CallToolResult) -> String {
    let v = serde_json::to_value(&r.content).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(1), "{v}");
    v[0]["text"].as_str().expect("text content").to_string()
}

fn json_of(r: &CallToolResult) -> Value {
    serde_json::from_str(&text(r)).expect("JSON text content")
}

async fn tenant_ctx(app: &TestApp, slug: &str) -> TenantContext {
    let t = app.state.store.tenant_by_slug(slug).await.unwrap().unwrap();
    TenantContext {
        tenant: std::sync::Arc::new(t),
    }
}

async fn llm_app(llm: &FakeLlm) -> TestApp {
    TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        // Rerank on for the platform: MCP search must still not call it.
        ("SEARCH_LLM_RERANK", "true"),
    ])
    .await
}

#[tokio::test]
async fn mcp_initialize_names_the_server_and_lists_the_six_tools() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let client = connect(&app, &key).await;
    let info = client.peer_info().expect("server info");
    assert_eq!(
        info.server_info.as_ref().map(|i| i.name.as_str()),
        Some("root")
    );
    assert!(info.capabilities.tools.is_some());
    let tools = client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "ask_agent",
            "list_tools",
            "call_tool",
            "search_knowledge",
            "search_slack",
            "who_knows"
        ]
    );
    let ask = &tools[0].input_schema;
    assert!(ask["properties"]["principal_email"].is_object(), "{ask:?}");
    assert!(ask["properties"]["thread_key"].is_object());

    // list_tools is the /api/v1/tools catalog.
    let catalog = json_of(&call(&client, "list_tools", json!({})).await);
    let rest: Value = app
        .get("/api/v1/tools", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(catalog, rest);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_ask_agent_runs_an_api_turn_and_meters_it() {
    let llm = FakeLlm::start().await;
    llm.json(completion("The library opens at nine."));
    let app = llm_app(&llm).await;
    let key = key_for(&app, "acme").await;
    let ctx = tenant_ctx(&app, "acme").await;
    let client = connect(&app, &key).await;

    let r = call(
        &client,
        "ask_agent",
        json!({"message": "When does the library open?",
               "principal_email": "ada@example.org", "thread_key": "mcp-1"}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let v = json_of(&r);
    assert_eq!(v["response"], "The library opens at nine.");
    assert_eq!(v["thread_key"], "api:ada@example.org:mcp-1");
    assert_eq!(v["usage"]["llm_calls"], json!(1));
    assert_eq!(llm.bodies().len(), 1);

    let logs: Vec<ConversationLog> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(logs.len(), 2, "the inbound and the answer are logged");
    assert!(logs.iter().all(|l| l.channel == Channel::Api));
    let usage: Vec<ApiRequestUsage> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0].surface.as_str(), "mcp_ask_agent");
    assert_eq!(usage[0].llm_calls, 1);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_ask_agent_without_a_principal_is_a_tool_error() {
    let llm = FakeLlm::start().await;
    let app = llm_app(&llm).await;
    let key = key_for(&app, "acme").await;
    let client = connect(&app, &key).await;
    let r = call(&client, "ask_agent", json!({"message": "hi"})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        text(&r),
        "ask_agent needs principal_email or principal_slack_user_id"
    );
    // Blank values count as missing; unknown arguments are refused too.
    let r = call(
        &client,
        "ask_agent",
        json!({"message": "hi", "principal_email": "  "}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let r = call(&client, "ask_agent", json!({"msg": "hi"})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).starts_with("invalid arguments for ask_agent"),
        "{}",
        text(&r)
    );
    let r = call(&client, "no_such_tool", json!({})).await;
    assert_eq!(r.is_error, Some(true));
    assert!(llm.bodies().is_empty(), "no turn ran");
    client.cancel().await.unwrap();
}

/// Acceptance 9: fused hybrid results with no chat call (rerank disabled
/// for MCP even where the platform reranks).
#[tokio::test]
async fn mcp_search_knowledge_is_fused_and_llm_free() {
    let llm = FakeLlm::start().await;
    llm.serve_embeddings();
    let app = llm_app(&llm).await;
    let key = key_for(&app, "acme").await;
    put_page(
        &app,
        &key,
        json!({"slug": "library-hours", "title": "Library hours",
               "content_html": "<p>The community library opens at nine every weekday.</p>"}),
    )
    .await;
    put_page(
        &app,
        &key,
        json!({"slug": "library-cards", "title": "Library cards",
               "content_html": "<p>A library card is free: ask at the library desk.</p>"}),
    )
    .await;
    put_page(
        &app,
        &key,
        json!({"slug": "parking", "title": "Parking",
               "content_html": "<p>Bicycles go in the yard behind the hall.</p>"}),
    )
    .await;
    let client = connect(&app, &key).await;
    let r = call(
        &client,
        "search_knowledge",
        json!({"query": "when does the library open", "limit": 5}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let v = json_of(&r);
    let slugs: Vec<&str> = v["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter_map(|r| r["slug"].as_str())
        .collect();
    // Two candidates at least: enough for the platform's rerank to run.
    assert_eq!(slugs[0], "library-hours", "{v}");
    assert!(slugs.contains(&"library-cards"), "{v}");
    assert_eq!(v["reranked"], json!(false));
    assert!(
        llm.bodies().is_empty(),
        "no chat completion: {:?}",
        llm.bodies()
    );
    let embedded = llm.http.requests_to("/api/v1/embeddings");
    assert!(!embedded.is_empty(), "the vector lane ran");

    // Slack search and who_knows answer from the same LLM-free path.
    let r = call(&client, "search_slack", json!({"query": "library"})).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(json_of(&r)["matches"], json!([]));
    let r = call(&client, "who_knows", json!({"topic": "library"})).await;
    assert_eq!(json_of(&r), json!({"experts": [], "count": 0}));
    let r = call(&client, "who_knows", json!({"topic": "  "})).await;
    assert_eq!(r.is_error, Some(true));
    assert_eq!(text(&r), "topic must not be empty");
    assert!(llm.bodies().is_empty());
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_call_tool_goes_through_the_gate_and_is_metered() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    let ctx = tenant_ctx(&app, "acme").await;
    let now = storage::Ts::now();
    app.state
        .store
        .insert(Principal {
            id: uuid::Uuid::new_v4(),
            tenant_id: ctx.id(),
            ref_: "U0ANN".into(),
            tier: "member".into(),
            slack_user_id: Some("U0ANN".into()),
            created_at: now,
            updated_at: now,
            ..Principal::default()
        })
        .await
        .unwrap();
    let client = connect(&app, &key).await;
    // Outside the surface: the unresolved tier lacks the tool; never executed.
    let r = call(
        &client,
        "call_tool",
        json!({"name": "request_human_intervention", "principal_ref": "stranger",
               "args": {"title": "x"}}),
    )
    .await;
    assert_eq!(r.is_error, Some(true));
    let v = json_of(&r);
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
    assert!(rows.is_empty(), "the refused call wrote nothing");
    // A member may.
    let r = call(
        &client,
        "call_tool",
        json!({"name": "request_human_intervention", "principal_ref": "U0ANN",
               "args": {"title": "New badge please"}}),
    )
    .await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(json_of(&r)["result"]["success"], json!(true));
    let rows: Vec<HumanIntervention> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    let usage: Vec<ApiRequestUsage> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(usage.len(), 2);
    assert!(usage.iter().all(|u| u.surface.as_str() == "mcp_call_tool"));
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_rate_limits_are_tool_errors_with_the_wait() {
    let app = TestApp::spawn_with(&[("ROOT_KB_SEARCH_PER_KEY_PER_MINUTE", "1")]).await;
    let key = key_for(&app, "acme").await;
    let client = connect(&app, &key).await;
    let first = call(&client, "who_knows", json!({"topic": "library"})).await;
    assert_ne!(first.is_error, Some(true), "{}", text(&first));
    let second = call(&client, "who_knows", json!({"topic": "library"})).await;
    assert_eq!(second.is_error, Some(true));
    let t = text(&second);
    assert!(t.starts_with("rate_limited: "), "{t}");
    assert!(t.contains("(retry after "), "{t}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn mcp_without_a_key_is_401_and_an_inactive_tenant_403() {
    let app = TestApp::spawn().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}});
    let post = |key: Option<String>| {
        let mut req = app
            .client
            .post(app.url("/api/mcp"))
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        req.send()
    };
    assert_eq!(post(None).await.unwrap().status(), 401);
    assert_eq!(
        post(Some("rpk_live_nope".into())).await.unwrap().status(),
        401
    );
    let key = mint_key(&app.state.store, "root", KeyKind::Live).await;
    assert_eq!(post(Some(key.clone())).await.unwrap().status(), 200);
    let mut t = app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    t.status = TenantStatus::Suspended;
    app.state.store.update(t.clone()).await.unwrap();
    app.state.tenants.invalidate(&t);
    let refused = post(Some(key)).await.unwrap();
    assert_eq!(refused.status(), 403);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden");
}

/// rmcp's DNS-rebinding check allows `PLATFORM_BASE_URL`'s host (a proxy
/// keeping the public name) and loopback, nothing else.
#[tokio::test]
async fn mcp_host_must_be_the_public_name_or_loopback() {
    let app = TestApp::spawn_with(&[("PLATFORM_BASE_URL", "https://root.example.org")]).await;
    let key = mint_key(&app.state.store, "root", KeyKind::Live).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "1"}}});
    let post = |host: &'static str| {
        app.client
            .post(app.url("/api/mcp"))
            .header("accept", "application/json, text/event-stream")
            .header("host", host)
            .bearer_auth(&key)
            .json(&init)
            .send()
    };
    assert_eq!(post("root.example.org").await.unwrap().status(), 200);
    assert_eq!(post("localhost:8080").await.unwrap().status(), 200);
    assert_eq!(post("evil.example").await.unwrap().status(), 403);
}

#[tokio::test]
async fn mcp_a_dev_key_never_sees_the_live_tenants_pages() {
    let app = TestApp::spawn().await;
    let live = key_for(&app, "acme").await;
    let dev = mint_key(&app.state.store, "acme", KeyKind::Dev).await;
    put_page(
        &app,
        &live,
        json!({"slug": "secret-handshake", "title": "Secret handshake",
               "content_html": "<p>The secret handshake is two taps and a wave.</p>"}),
    )
    .await;
    let query = json!({"query": "secret handshake"});
    let live_client = connect(&app, &live).await;
    let found = json_of(&call(&live_client, "search_knowledge", query.clone()).await);
    assert_eq!(found["results"][0]["slug"], "secret-handshake", "{found}");
    let dev_client = connect(&app, &dev).await;
    let r = call(&dev_client, "search_knowledge", query).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let v = json_of(&r);
    assert_eq!(v["results"], json!([]), "{v}");
    live_client.cancel().await.unwrap();
    dev_client.cancel().await.unwrap();
}

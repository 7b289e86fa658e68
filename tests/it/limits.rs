//! Limits on cost and size (security finding M1) over real HTTP: rate limits
//! per tenant and per API key on a manual clock, the in-flight cap with a
//! model that blocks, the daily LLM budget, and the size caps.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use serde_json::{Value, json};
use storage::{LlmTokenUsage, Store, Tenant, TenantStore, Ts};
use uuid::Uuid;

use root::app::{AppState, open_store};
use root::platform::api_keys::{self, KeyKind};
use root::platform::clock::{Clock, ManualClock};
use root::platform::notify::{AdminNotice, NotificationSink};
use root::platform::tenancy::{self, TenantContext};

use crate::support::fake_llm::{FakeLlm, Reply, completion, tool_calls};
use crate::support::test_config;

/// 2026-03-17 12:00:00 UTC: twelve hours before the next UTC day.
const NOON: i64 = 1_773_748_800;

#[derive(Clone, Default)]
struct Notices(Arc<Mutex<Vec<AdminNotice>>>);

#[async_trait]
impl NotificationSink for Notices {
    async fn notify(&self, notice: AdminNotice) {
        self.0.lock().unwrap().push(notice);
    }
}

impl Notices {
    fn kinds(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|n| n.kind.clone())
            .collect()
    }
}

/// The real router over an `AppState` on a manual clock, with a scripted
/// model and recorded admin notices.
struct World {
    base: String,
    state: AppState,
    clock: ManualClock,
    llm: FakeLlm,
    notices: Notices,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

async fn world(extra: &[(&str, &str)]) -> World {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut vars = vec![
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("ROOT_RUN_WORKERS", "false"),
        ("ROOT_DEV_HARNESS", "true"),
    ];
    vars.extend_from_slice(extra);
    let config = test_config(&dir.path().join("data"), &vars);
    let store = open_store(&config).await.unwrap();
    let clock = ManualClock::new(Ts::from_secs(NOON));
    let notices = Notices::default();
    let state = AppState::with_admin_sink(
        config,
        store,
        Arc::new(clock.clone()),
        Arc::new(notices.clone()),
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = root::web::router(state.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    World {
        base,
        state,
        clock,
        llm,
        notices,
        client: reqwest::Client::new(),
        _dir: dir,
    }
}

impl World {
    async fn tenant(&self, slug: &str, settings: Value) -> Tenant {
        let mut t = Tenant::new(slug, slug);
        t.settings = storage::Json(settings);
        self.state.store.create_tenant(t).await.unwrap()
    }

    async fn key(&self, slug: &str) -> String {
        api_keys::mint_for_slug(&self.state.store, slug, "test", KeyKind::Live)
            .await
            .unwrap()
            .1
            .raw
    }

    async fn post(
        &self,
        path: &str,
        key: Option<&str>,
        body: &Value,
    ) -> (u16, Option<String>, Value) {
        let mut req = self.client.post(format!("{}{path}", self.base)).json(body);
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        let r = req.send().await.unwrap();
        let status = r.status().as_u16();
        let retry = r
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap().to_string());
        (status, retry, r.json().await.unwrap_or(Value::Null))
    }

    /// `POST /dev/simulate-message` with a fresh API key of `body.tenant`.
    async fn simulate(&self, body: &Value) -> (u16, Option<String>, Value) {
        let key = self.key(body["tenant"].as_str().unwrap()).await;
        self.post("/dev/simulate-message", Some(&key), body).await
    }

    async fn turn(&self, key: &str, message: &str) -> (u16, Option<String>, Value) {
        self.post(
            "/api/v1/agent/turns",
            Some(key),
            &json!({"message": message, "principal": "api-user"}),
        )
        .await
    }
}

fn assert_429(got: &(u16, Option<String>, Value), code: &str, retry_after: &str) {
    let (status, retry, body) = got;
    assert_eq!(*status, 429, "{body}");
    assert_eq!(retry.as_deref(), Some(retry_after), "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(
        body["error"]["retry_after_secs"],
        retry_after.parse::<u64>().unwrap()
    );
}

#[tokio::test]
async fn limits_a_flood_of_agent_turns_is_429_with_retry_after_and_other_tenants_go_on() {
    let w = world(&[]).await;
    w.tenant(
        "acme",
        json!({"limits": {"agent_turns_per_tenant_per_minute": 3, "agent_turns_burst": 3}}),
    )
    .await;
    w.tenant("other", json!({})).await;
    let (acme, other) = (w.key("acme").await, w.key("other").await);
    for i in 0..5 {
        w.llm
            .json(completion(&format!("Answer number {i} for you.")));
    }
    for i in 0..3 {
        let (status, _, v) = w.turn(&acme, "hello").await;
        assert_eq!(status, 200, "turn {i}: {v}");
    }
    // 3 a minute ⇒ one every 20 s once the burst is spent.
    assert_429(&w.turn(&acme, "hello").await, "rate_limited", "20");
    // The dev harness shares the tenant's turn limiter.
    assert_429(
        &w.simulate(&json!({"tenant": "acme", "message": "hi", "slack_user_id": "U1"}))
            .await,
        "rate_limited",
        "20",
    );
    let (status, _, v) = w.turn(&other, "hello").await;
    assert_eq!(status, 200, "another tenant is unaffected: {v}");
    assert_eq!(
        w.llm.bodies().len(),
        4,
        "refused turns never reach the model"
    );
    w.clock.advance_ms(20_000);
    let (status, _, v) = w.turn(&acme, "hello again").await;
    assert_eq!(status, 200, "{v}");
}

#[tokio::test]
async fn limits_tool_executes_have_a_per_key_limit_distinct_from_the_tenant_one() {
    let w = world(&[]).await;
    w.tenant(
        "acme",
        json!({"limits": {"tool_execute_per_tenant_per_minute": 4, "tool_execute_per_key_per_minute": 2}}),
    )
    .await;
    w.tenant("other", json!({})).await;
    let (a, b, c) = (
        w.key("acme").await,
        w.key("acme").await,
        w.key("acme").await,
    );
    let other = w.key("other").await;
    let exec = |key: String| {
        let w = &w;
        async move {
            w.post(
                "/api/v1/tools/search_knowledge_base/execute",
                Some(&key),
                &json!({"principal": "nobody", "args": {"query": "parking"}}),
            )
            .await
        }
    };
    for _ in 0..2 {
        assert_eq!(exec(a.clone()).await.0, 200);
    }
    // Key A's own 2/min is spent (one every 30 s); the tenant has room.
    assert_429(&exec(a.clone()).await, "rate_limited", "30");
    for _ in 0..2 {
        assert_eq!(exec(b.clone()).await.0, 200, "key B has its own budget");
    }
    // Now the tenant's 4/min is spent too: a fresh key waits 15 s.
    assert_429(&exec(c.clone()).await, "rate_limited", "15");
    assert_eq!(exec(other).await.0, 200, "another tenant is unaffected");
}

#[tokio::test]
async fn limits_kb_searches_and_writes_are_rate_limited_per_tenant() {
    let w = world(&[]).await;
    w.tenant(
        "acme",
        json!({"limits": {"kb_search_per_tenant_per_minute": 2, "kb_writes_per_tenant_per_minute": 1}}),
    )
    .await;
    w.tenant("other", json!({})).await;
    let (acme, other) = (w.key("acme").await, w.key("other").await);
    let search = json!({"query": "parking"});
    for _ in 0..2 {
        let (status, _, v) = w.post("/api/v1/kb/search", Some(&acme), &search).await;
        assert_eq!(status, 200, "{v}");
    }
    assert_429(
        &w.post("/api/v1/kb/search", Some(&acme), &search).await,
        "rate_limited",
        "30",
    );
    assert_eq!(
        w.post("/api/v1/kb/search", Some(&other), &search).await.0,
        200
    );
    let page = json!({"slug": "parking", "title": "Parking", "content_html": "<p>Park in lot B behind the hall.</p>"});
    let (status, _, v) = w.post("/api/v1/kb/pages", Some(&acme), &page).await;
    assert_eq!(status, 201, "{v}");
    assert_429(
        &w.post("/api/v1/kb/pages", Some(&acme), &page).await,
        "rate_limited",
        "60",
    );
    // Deletes are writes too.
    let r = w
        .client
        .delete(format!("{}/api/v1/kb/pages/parking", w.base))
        .bearer_auth(&acme)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 429);
    assert_eq!(r.headers()["retry-after"], "60");
    w.clock.advance_ms(60_000);
    let (status, _, v) = w.post("/api/v1/kb/search", Some(&acme), &search).await;
    assert_eq!(status, 200, "{v}");
}

#[tokio::test]
async fn limits_the_extra_turn_is_refused_while_the_tenants_cap_is_in_flight() {
    let w = world(&[]).await;
    w.tenant(
        "acme",
        json!({"limits": {"agent_turns_per_tenant_concurrent": 2}}),
    )
    .await;
    let key = w.key("acme").await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    for i in 0..2 {
        w.llm.then(Reply::gated(
            gate.clone(),
            Reply::raw_json(200, completion(&format!("Blocked answer number {i}."))),
        ));
    }
    let spawn_turn = || {
        let (client, base, key) = (w.client.clone(), w.base.clone(), key.clone());
        tokio::spawn(async move {
            client
                .post(format!("{base}/api/v1/agent/turns"))
                .bearer_auth(key)
                .json(&json!({"message": "hello", "principal": "api-user"}))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        })
    };
    let first = spawn_turn();
    let second = spawn_turn();
    w.llm.wait_for_requests(2).await;
    assert_eq!(w.state.limits.turns().in_flight(Uuid::nil()).0, 2);
    let refused = w.turn(&key, "one more").await;
    assert_429(&refused, "concurrency_limited", "5");
    assert_eq!(
        w.llm.bodies().len(),
        2,
        "the extra turn never reached the model"
    );
    gate.add_permits(2);
    assert_eq!(first.await.unwrap(), 200);
    assert_eq!(second.await.unwrap(), 200);
    assert_eq!(w.state.limits.turns().in_flight(Uuid::nil()).0, 0);
    w.llm.json(completion("A place was free again."));
    assert_eq!(w.turn(&key, "now?").await.0, 200);
}

#[tokio::test]
async fn limits_the_process_wide_cap_refuses_a_turn_of_any_tenant() {
    let w = world(&[("ROOT_AGENT_TURNS_GLOBAL_CONCURRENT", "1")]).await;
    w.tenant("acme", json!({})).await;
    w.tenant("other", json!({})).await;
    let (acme, other) = (w.key("acme").await, w.key("other").await);
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    w.llm.then(Reply::gated(
        gate.clone(),
        Reply::raw_json(200, completion("The only answer in flight.")),
    ));
    let (client, base) = (w.client.clone(), w.base.clone());
    let blocked = tokio::spawn(async move {
        client
            .post(format!("{base}/api/v1/agent/turns"))
            .bearer_auth(acme)
            .json(&json!({"message": "hello", "principal": "api-user"}))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    });
    w.llm.wait_for_requests(1).await;
    let (status, retry, v) = w.turn(&other, "hello").await;
    assert_eq!((status, retry.as_deref()), (429, Some("5")), "{v}");
    assert!(
        v["error"]["message"]
            .as_str()
            .unwrap()
            .contains("on this server"),
        "{v}"
    );
    gate.add_permits(1);
    assert_eq!(blocked.await.unwrap(), 200);
}

async fn seed_usage(w: &World, tenant: Uuid, at: Ts, tokens: i64, cost: Option<f64>) {
    w.state
        .store
        .insert(LlmTokenUsage {
            id: Uuid::new_v4(),
            tenant_id: tenant,
            purpose: "agent".into(),
            model: "acme/model-x".into(),
            prompt_tokens: tokens,
            completion_tokens: 0,
            total_tokens: tokens,
            cost_usd: cost,
            created_at: at,
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn limits_over_the_daily_budget_turns_are_refused_before_the_model_and_admins_told_once() {
    let w = world(&[]).await;
    let acme = w
        .tenant("acme", json!({"limits": {"daily_llm_budget_usd": 1.0}}))
        .await;
    let key = w.key("acme").await;
    let midnight = Ts::from_secs(NOON - 12 * 3600);
    seed_usage(&w, acme.id, midnight.plus_micros(-1), 10, Some(50.0)).await;
    seed_usage(&w, acme.id, midnight, 1_000, Some(0.6)).await;
    seed_usage(&w, acme.id, w.clock.now(), 1_000, Some(0.45)).await;

    // A channel member gets the refusal as the reply.
    let (status, _, v) = w
        .simulate(&json!({"tenant": "acme", "message": "Where do I park?", "slack_user_id": "U1"}))
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["success"], json!(false));
    assert_eq!(v["refused"], "llm_budget_exhausted");
    assert_eq!(
        v["response"],
        "This community's assistant has used up its AI usage budget for today, so it is paused \
         until midnight UTC. The community's admins can raise the limit."
    );
    // The API gets a 429 that lasts until 00:00 UTC (12 h from noon).
    let refused = w.turn(&key, "Where do I park?").await;
    assert_429(&refused, "llm_budget_exhausted", "43200");
    assert!(
        refused.2["error"]["message"]
            .as_str()
            .unwrap()
            .contains("paused until 00:00 UTC")
    );
    assert!(w.llm.bodies().is_empty(), "no model call was made");
    assert_eq!(
        w.notices.kinds(),
        vec!["llm.daily_budget_exhausted"],
        "exactly one notice for the day"
    );
    let notice = w.notices.0.lock().unwrap()[0].clone();
    assert!(notice.body.contains(&acme.id.to_string()), "{notice:?}");

    // The next UTC day starts from zero.
    w.clock.set(Ts::from_secs(NOON + 12 * 3600));
    w.llm.json(completion("Park in lot B behind the hall."));
    let (status, _, v) = w.turn(&key, "Where do I park?").await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(w.notices.kinds().len(), 1);
}

#[tokio::test]
async fn limits_each_turns_usage_counts_toward_the_budget_without_rereading() {
    let w = world(&[]).await;
    // The fake's completion reports 120 tokens.
    w.tenant("acme", json!({"limits": {"daily_llm_token_budget": 100}}))
        .await;
    let key = w.key("acme").await;
    w.llm.json(completion("Park in lot B behind the hall."));
    assert_eq!(w.turn(&key, "Where do I park?").await.0, 200);
    assert_429(
        &w.turn(&key, "And bikes?").await,
        "llm_budget_exhausted",
        "43200",
    );
    assert_eq!(w.llm.bodies().len(), 1);
}

#[tokio::test]
async fn limits_a_16001_char_message_is_400_on_the_api_and_a_refusal_on_channels() {
    let w = world(&[]).await;
    w.tenant("acme", json!({})).await;
    let key = w.key("acme").await;
    let long = "a".repeat(16_001);
    let (status, _, v) = w.turn(&key, &long).await;
    assert_eq!(status, 400, "{v}");
    assert_eq!(
        v["error"]["message"],
        "message is 16001 characters long; at most 16000 are accepted"
    );
    let (status, _, v) = w
        .simulate(&json!({"tenant": "acme", "message": long, "slack_user_id": "U1"}))
        .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["refused"], "message_too_long");
    assert!(
        v["response"]
            .as_str()
            .unwrap()
            .starts_with("Your message is 16001 characters long"),
        "{v}"
    );
    assert!(w.llm.bodies().is_empty());
    // History over its caps is a 400 as well.
    let (status, _, v) = w
        .post(
            "/api/v1/agent/turns",
            Some(&key),
            &json!({"message": "hi", "principal": "api-user",
                    "history": [{"role": "user", "content": "h".repeat(16_001)}]}),
        )
        .await;
    assert_eq!(status, 400, "{v}");
    let five: Vec<Value> = (0..5)
        .map(|_| json!({"role": "user", "content": "h".repeat(16_000)}))
        .collect();
    let (status, _, v) = w
        .post(
            "/api/v1/agent/turns",
            Some(&key),
            &json!({"message": "hi", "principal": "api-user", "history": five}),
        )
        .await;
    assert_eq!(status, 400, "{v}");
    assert!(
        v["error"]["message"].as_str().unwrap().contains("64000"),
        "{v}"
    );
    // Exactly 16 000 is accepted.
    w.llm.json(completion("That was a long one, but readable."));
    assert_eq!(w.turn(&key, &"a".repeat(16_000)).await.0, 200);
}

#[tokio::test]
async fn limits_seventeen_tool_calls_in_one_batch_run_sixteen_and_fail_one() {
    let w = world(&[]).await;
    w.tenant("acme", json!({})).await;
    let ids: Vec<String> = (1..=17).map(|i| format!("c{i}")).collect();
    let calls: Vec<(&str, &str, &str)> = ids
        .iter()
        .map(|id| (id.as_str(), "list_my_human_interventions", "{}"))
        .collect();
    w.llm.json(tool_calls(None, &calls)).json(completion(
        "You have no open requests with the team right now.",
    ));
    let (status, _, v) = w
        .simulate(&json!({"tenant": "acme", "message": "What did I ask the team?", "slack_user_id": "U1"}))
        .await;
    assert_eq!(status, 200, "{v}");
    let executed = v["tool_calls"].as_array().unwrap();
    assert_eq!(executed.len(), 17, "{v}");
    let ran = executed
        .iter()
        .filter(|c| c["success"] == json!(true))
        .count();
    assert_eq!(ran, 16, "{v}");
    let last = &executed[16];
    assert_eq!(last["id"], "c17");
    assert_eq!(last["success"], json!(false));
    assert_eq!(
        last["result"]["error"],
        "Not run: at most 16 tool calls run per batch. Call list_my_human_interventions again \
         in the next round if you still need it."
    );
    // Every call id got its tool message in the next request.
    let second = &w.llm.bodies()[1];
    let answered: Vec<&str> = second["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["tool_call_id"].as_str().unwrap())
        .collect();
    assert_eq!(answered, ids.iter().map(String::as_str).collect::<Vec<_>>());
}

/// Records the query the rerank prompt is built from.
#[derive(Default)]
struct RecordingReranker(Mutex<Vec<String>>);

#[async_trait]
impl index::rerank::Reranker for RecordingReranker {
    async fn score(
        &self,
        query: &str,
        candidates: &[index::rerank::RerankCandidate],
    ) -> Result<Vec<(String, f64)>, index::rerank::RerankError> {
        self.0.lock().unwrap().push(query.to_string());
        Ok(candidates.iter().map(|c| (c.id.clone(), 1.0)).collect())
    }
}

/// The offline embedder, recording what it is asked to embed.
#[derive(Default)]
struct RecordingEmbedder(Mutex<Vec<String>>);

#[async_trait]
impl root::ai::embeddings::Embedder for RecordingEmbedder {
    fn model(&self) -> &str {
        root::ai::embeddings::HASHING_MODEL
    }
    async fn embed(
        &self,
        inputs: &[String],
        purpose: &str,
    ) -> Result<Vec<Vec<f32>>, root::ai::AiError> {
        self.0.lock().unwrap().extend(inputs.iter().cloned());
        root::ai::embeddings::HashingEmbedder
            .embed(inputs, purpose)
            .await
    }
}

#[tokio::test]
async fn limits_a_5000_char_query_reaches_the_lanes_and_the_rerank_cut_to_1000() {
    let app = crate::support::TestApp::spawn().await;
    let key = crate::kb::key_for(&app, "acme").await;
    crate::kb::put_page(
        &app,
        &key,
        json!({"slug": "parking", "title": "Parking", "content_html": "<p>Park in lot B behind the community hall.</p>"}),
    )
    .await;
    crate::kb::put_page(
        &app,
        &key,
        json!({"slug": "bikes", "title": "Bikes", "content_html": "<p>Bike parking is by the side door.</p>"}),
    )
    .await;
    let embedder = Arc::new(RecordingEmbedder::default());
    let reranker = Arc::new(RecordingReranker::default());
    let retrieval = root::retrieval::Retrieval::new(
        app.state.store.clone(),
        app.state.retrieval.registry().clone(),
        embedder.clone(),
    )
    .with_reranker(Some(reranker.clone()), true);
    let tenant = app
        .state
        .store
        .tenant_by_slug("acme")
        .await
        .unwrap()
        .unwrap();
    let query = format!("parking {}", "é".repeat(4_992));
    assert_eq!(query.chars().count(), 5_000);
    let out = tenancy::scope(
        TenantContext {
            tenant: Arc::new(tenant),
        },
        retrieval.search_knowledge(root::retrieval::KnowledgeQuery {
            query: query.clone(),
            rerank: true,
            ..Default::default()
        }),
    )
    .await
    .unwrap();
    assert!(out.reranked, "{out:?}");
    let cut: String = query.chars().take(1_000).collect();
    assert_eq!(
        *embedder.0.lock().unwrap(),
        vec![cut.clone()],
        "the vector lane's query"
    );
    assert_eq!(
        *reranker.0.lock().unwrap(),
        vec![cut],
        "the rerank prompt's query"
    );
}

/// Security review L-6: a 1 MB `who_knows` topic (the MCP tool's and the
/// agent tool's shared path) reaches the query embedder cut to 1,000 characters.
#[tokio::test]
async fn security_l6_who_knows_topic_reaches_the_embedder_cut_to_1000() {
    let app = crate::support::TestApp::spawn().await;
    let embedder = Arc::new(RecordingEmbedder::default());
    let retrieval = root::retrieval::Retrieval::new(
        app.state.store.clone(),
        app.state.retrieval.registry().clone(),
        embedder.clone(),
    );
    let tenant = app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    let topic = format!("terraform {}", "x".repeat(1_000_000));
    let ctx = TenantContext {
        tenant: Arc::new(tenant),
    };
    let experts = tenancy::scope(ctx, retrieval.who_knows(&topic, None))
        .await
        .unwrap();
    assert!(experts.is_empty());
    let asked = embedder.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "one query embedding");
    assert_eq!(asked[0].chars().count(), 1_000);
    assert!(asked[0].starts_with("terraform x"));
}

#[tokio::test]
async fn limits_every_api_request_counts_against_its_key_and_tenant() {
    let w = world(&[]).await;
    w.tenant(
        "acme",
        json!({"limits": {"api_requests_per_tenant_per_minute": 5,
                          "api_requests_per_key_per_minute": 3}}),
    )
    .await;
    w.tenant("other", json!({})).await;
    let (a, b) = (w.key("acme").await, w.key("acme").await);
    let other = w.key("other").await;
    let me = |key: String| {
        let w = &w;
        async move {
            let r = w
                .client
                .get(format!("{}/api/v1/me", w.base))
                .bearer_auth(&key)
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let retry = r
                .headers()
                .get("retry-after")
                .map(|v| v.to_str().unwrap().to_string());
            (status, retry, r.json().await.unwrap_or(Value::Null))
        }
    };
    for _ in 0..3 {
        assert_eq!(me(a.clone()).await.0, 200);
    }
    // Even a cheap read: key A's 3/min is spent (one every 20 s).
    assert_429(&me(a.clone()).await, "rate_limited", "20");
    for _ in 0..2 {
        assert_eq!(me(b.clone()).await.0, 200, "key B has its own budget");
    }
    // The tenant's 5/min is spent now (one every 12 s).
    assert_429(&me(b.clone()).await, "rate_limited", "12");
    assert_eq!(
        me(other.clone()).await.0,
        200,
        "another tenant is unaffected"
    );
    // A minute later the key may go on.
    w.clock.advance_ms(60_000);
    assert_eq!(me(a).await.0, 200);
}

//! The dashboard admin config tools (§5.1): the dashboard's `/chat` offers
//! them, and only it — the same owner on the web test chat, an API turn and
//! `POST /tools/{name}/execute` gets none. Scripted calls change the
//! community through the services the REST API uses: pages, sources,
//! prompt additions (with versions), intervention statuses (the transition
//! table), and the integration list without secrets. The team and access
//! policy tools are in `dashboard_chat_team_tools.rs`.

use serde_json::{Value, json};
use storage::{
    Channel, HumanIntervention, InterventionCategory, InterventionStatus, Json, RootPrompt,
    RootPromptVersion, Scan, Store, TenantRole, Ts,
};
use uuid::Uuid;

use root::platform::api_keys::KeyKind;
use root::tools::catalog::{CATALOG, ToolGroup};

use crate::support::dashboard::{World, texts, world};
use crate::support::fake_llm::{FakeLlm, completion, tool_calls};
use crate::support::mint_key;

pub(crate) async fn setup_with(with_mail: bool) -> (FakeLlm, World) {
    let llm = FakeLlm::start().await;
    llm.serve_embeddings();
    let w = world(
        &[
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("SEARCH_LLM_RERANK", "false"),
        ],
        with_mail,
    )
    .await;
    (llm, w)
}

async fn setup() -> (FakeLlm, World) {
    setup_with(false).await
}

pub(crate) fn admin_tools() -> Vec<&'static str> {
    CATALOG
        .iter()
        .filter(|t| t.group == ToolGroup::AdminConfig)
        .map(|t| t.name)
        .collect()
}

/// The tool names offered in one chat-completion request.
pub(crate) fn offered(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .map(|ts| {
            ts.iter()
                .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The result the model was shown for tool call `id` (parsed JSON).
pub(crate) fn tool_result(llm: &FakeLlm, id: &str) -> Value {
    let content = llm
        .bodies()
        .iter()
        .flat_map(|b| b["messages"].as_array().cloned().unwrap_or_default())
        .rfind(|m| m["role"] == "tool" && m["tool_call_id"] == id)
        .unwrap_or_else(|| panic!("no result for {id}"))["content"]
        .as_str()
        .unwrap()
        .to_string();
    serde_json::from_str(&content).unwrap_or(Value::String(content))
}

/// One `/chat` turn (the no-script form): the rendered answer.
pub(crate) async fn chat(w: &World, session: &str, csrf: &str, message: &str) -> String {
    let r = w
        .post_form(
            "/chat",
            Some(session),
            &[("csrf", csrf), ("message", message)],
        )
        .await;
    assert_eq!(r.status(), 200);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    texts(&page, "#chat-log .answer").join("")
}

#[tokio::test]
async fn dashboard_chat_tools_are_offered_on_the_dashboard_chat_only() {
    let (llm, w) = setup().await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let me: Value = w.me(&owner).await.1;
    let email = me["email"].as_str().unwrap().to_string();
    let admin = admin_tools();
    assert_eq!(admin.len(), 22);

    // The dashboard chat: every admin config tool, after the member's tools.
    llm.json(completion("Hello, I can help you configure things."));
    chat(&w, &owner, &csrf, "what can you change?").await;
    let names = offered(&llm.bodies()[0]);
    for n in &admin {
        assert!(names.iter().any(|o| o == n), "{n} offered: {names:?}");
    }
    assert!(names.iter().any(|o| o == "search_knowledge_base"));
    let system = llm.bodies()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(system.contains("update_prompt"), "CAPABILITIES list them");

    // The same person on the web test chat: none.
    let tenant = w.tenant("root").await;
    let token = root::channels::web::rotate_web_token(
        &w.app.state.store,
        &root::platform::clock::SystemClock,
        tenant.id,
    )
    .await
    .unwrap();
    llm.json(completion("Hello from the web test chat."));
    let r = w
        .app
        .post_json(
            &format!("/web/root/messages?token={token}"),
            None,
            &json!({"message": "what can you change?", "email": email}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let names = offered(&llm.bodies()[1]);
    assert!(names.iter().any(|o| o == "search_knowledge_base"));
    for n in &admin {
        assert!(!names.iter().any(|o| o == n), "{n} on the web test chat");
    }

    // An API turn as them: none.
    let key = mint_key(&w.app.state.store, "root", KeyKind::Live).await;
    llm.json(completion("Hello from the platform API."));
    let r = w
        .app
        .post_json(
            "/api/v1/agent/turns",
            Some(&key),
            &json!({"message": "what can you change?", "principal": {"email": email}}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let names = offered(&llm.bodies()[2]);
    assert!(!names.is_empty());
    for n in &admin {
        assert!(!names.iter().any(|o| o == n), "{n} on the API");
        assert!(
            !v["offered_tools"].to_string().contains(&format!("\"{n}\"")),
            "{v}"
        );
    }

    // Executing one over REST: refused by the dispatch gate.
    let r = w
        .app
        .post_json(
            "/api/v1/tools/list_prompts/execute",
            Some(&key),
            &json!({"principal": {"email": email}}),
        )
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["result"]["success"], json!(false), "{v}");
    assert_eq!(
        v["result"]["error"],
        "The tool list_prompts is not available in this conversation."
    );

    // The catalog lists them as implemented, offered on the dashboard chat
    // column only, with the gate's reason.
    let v: Value = w
        .app
        .get("/api/v1/tools", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        v["surfaces"]
            .as_array()
            .unwrap()
            .contains(&json!("dashboard_chat"))
    );
    for n in &admin {
        let row = v["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == *n)
            .unwrap_or_else(|| panic!("{n} listed"));
        assert_eq!(row["source"], "admin_config");
        assert_eq!(row["implemented"], json!(true));
        assert!(row["input_schema"].is_object());
        assert_eq!(
            row["allowed"]["member"]["dashboard_chat"],
            "admin config: dashboard /chat"
        );
        for (audience, surfaces) in row["allowed"].as_object().unwrap() {
            let only: Vec<&String> = surfaces.as_object().unwrap().keys().collect();
            assert_eq!(only, ["dashboard_chat"], "{n} for {audience}");
        }
    }
    // A member tool is on the dashboard chat column too (the web surface).
    let kb = v["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "search_knowledge_base")
        .unwrap()
        .clone();
    assert!(
        kb["allowed"]["member"]["dashboard_chat"].is_string(),
        "{kb}"
    );
}

#[tokio::test]
async fn dashboard_chat_tools_write_pages_sources_and_prompts_through_the_services() {
    let (llm, w) = setup().await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let me: Value = w.me(&owner).await.1;
    let email = me["email"].as_str().unwrap().to_string();
    let tenant = w.tenant("root").await;
    let key = mint_key(&w.app.state.store, "root", KeyKind::Live).await;

    // A page: written, then listed; a second page whose title makes the
    // same slug is not written over the first.
    let page = json!({
        "title": "Parking",
        "content": "# Parking\n\nPark behind the hall, by the bike racks near the east gate.",
    })
    .to_string();
    llm.json(tool_calls(None, &[("p1", "upsert_knowledge_page", &page)]))
        .json(tool_calls(
            None,
            &[
                ("p2", "list_knowledge_pages", "{}"),
                ("p3", "upsert_knowledge_page", &page),
                ("p4", "get_knowledge_page", r#"{"slug":"parking"}"#),
            ],
        ))
        .json(completion("The parking page is saved and listed."));
    let answer = chat(&w, &owner, &csrf, "Add a page about parking.").await;
    assert_eq!(answer, "The parking page is saved and listed.");
    let written = tool_result(&llm, "p1");
    assert_eq!(written["success"], json!(true), "{written}");
    assert_eq!(written["data"]["slug"], "parking");
    assert_eq!(written["data"]["created"], json!(true));
    assert_eq!(written["data"]["is_public"], json!(false));
    let listed = tool_result(&llm, "p2");
    assert_eq!(listed["data"]["pages"][0]["slug"], "parking", "{listed}");
    let again = tool_result(&llm, "p3");
    assert_eq!(again["success"], json!(false));
    assert!(
        again["error"].as_str().unwrap().contains("already exists"),
        "{again}"
    );
    let read = tool_result(&llm, "p4");
    assert!(
        read["data"]["text"]
            .as_str()
            .unwrap()
            .contains("bike racks"),
        "{read}"
    );
    // The REST API sees the page the chat wrote.
    let v: Value = w
        .app
        .get("/api/v1/kb/pages", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    let slugs: Vec<&str> = v["pages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["parking"]);
    let v: Value = w
        .app
        .get("/api/v1/kb/pages/parking", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert!(
        v["content_html"]
            .as_str()
            .unwrap()
            .contains("<h1>Parking</h1>")
    );

    // A source: created (api_push), a credential refused, a sync refused
    // for a push source — the service's own rule.
    llm.json(tool_calls(
        None,
        &[(
            "s1",
            "create_knowledge_source",
            r#"{"source_key":"handbook","name":"Handbook","source_kind":"api_push"}"#,
        )],
    ))
    .json(tool_calls(
        None,
        &[
            (
                "s2",
                "update_knowledge_source",
                r#"{"source":"handbook","changes":{"secrets":{"token":"t0ps3cret"}}}"#,
            ),
            ("s3", "sync_knowledge_source", r#"{"source":"handbook"}"#),
            ("s4", "list_knowledge_sources", "{}"),
        ],
    ))
    .json(completion("The handbook source is registered for pushes."));
    chat(&w, &owner, &csrf, "Register a handbook source.").await;
    assert_eq!(tool_result(&llm, "s1")["success"], json!(true));
    let creds = tool_result(&llm, "s2");
    assert_eq!(creds["success"], json!(false));
    assert!(
        creds["error"]
            .as_str()
            .unwrap()
            .starts_with("secrets cannot be set")
    );
    let sync = tool_result(&llm, "s3");
    assert_eq!(sync["success"], json!(false));
    assert!(
        sync["error"].as_str().unwrap().contains("api_push"),
        "{sync}"
    );
    assert_eq!(
        tool_result(&llm, "s4")["data"]["sources"][0]["source_key"],
        "handbook"
    );
    let v: Value = w
        .app
        .get("/api/v1/kb/sources/handbook", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(v["source_kind"], "api_push");
    assert_eq!(
        v["secrets_set"],
        json!([]),
        "the refused secret was not set"
    );

    // A prompt addition: saved with a version, read back, then reset.
    let prompt = "slack.identity_addendum";
    llm.json(tool_calls(
        None,
        &[(
            "u1",
            "update_prompt",
            &json!({"key": prompt, "addition": "Always greet members by their first name."})
                .to_string(),
        )],
    ))
    .json(tool_calls(
        None,
        &[("u2", "get_prompt", &json!({"key": prompt}).to_string())],
    ))
    .json(completion("The greeting rule is added to the chat tone."));
    chat(&w, &owner, &csrf, "Greet members by first name.").await;
    assert_eq!(tool_result(&llm, "u1")["success"], json!(true));
    let got = tool_result(&llm, "u2");
    assert_eq!(
        got["data"]["addition"], "Always greet members by their first name.",
        "{got}"
    );
    assert!(got["data"]["built_in_text"].as_str().unwrap().len() > 20);
    assert_eq!(got["data"]["version_count"], json!(1));
    let versions: Vec<RootPromptVersion> = w
        .app
        .state
        .store
        .scan(Some(tenant.id), Scan::all())
        .await
        .unwrap();
    assert_eq!(versions.len(), 1);
    assert_eq!(versions[0].key, prompt);
    assert_eq!(versions[0].saved_by.as_deref(), Some(email.as_str()));

    llm.json(tool_calls(
        None,
        &[("r1", "reset_prompt", &json!({"key": prompt}).to_string())],
    ))
    .json(tool_calls(
        None,
        &[
            ("r2", "reset_prompt", &json!({"key": prompt}).to_string()),
            (
                "r3",
                "update_prompt",
                r#"{"key":"no.such.key","addition":"x"}"#,
            ),
        ],
    ))
    .json(completion("The chat tone is back to the built-in text."));
    chat(&w, &owner, &csrf, "Undo that greeting rule.").await;
    assert_eq!(tool_result(&llm, "r1")["data"]["reset"], json!(true));
    assert_eq!(
        tool_result(&llm, "r2")["data"]["reset"],
        json!(false),
        "nothing left to reset"
    );
    let unknown = tool_result(&llm, "r3");
    assert!(
        unknown["error"]
            .as_str()
            .unwrap()
            .contains("no prompt with the key")
    );
    let rows: Vec<RootPrompt> = w
        .app
        .state
        .store
        .scan(Some(tenant.id), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].content, "", "the addition is cleared");
    let versions: Vec<RootPromptVersion> = w
        .app
        .state
        .store
        .scan(Some(tenant.id), Scan::all())
        .await
        .unwrap();
    assert_eq!(
        versions.len(),
        2,
        "the reset is a version; the no-op is not"
    );
    // The next turn's system prompt no longer carries the addition.
    let before = llm.bodies().len();
    llm.json(completion("Hello again, nothing else changed."));
    chat(&w, &owner, &csrf, "hello").await;
    let system = llm.bodies()[before]["messages"][0]["content"].to_string();
    assert!(!system.contains("greet members by their first name"));
}

#[tokio::test]
async fn dashboard_chat_tools_follow_the_intervention_table_and_hide_integration_secrets() {
    let (llm, w) = setup().await;
    let (owner, csrf) = w.signed_in(TenantRole::Admin).await;
    let tenant = w.tenant("root").await;
    let store = &w.app.state.store;
    let row = |status: InterventionStatus, title: &str| HumanIntervention {
        id: Uuid::new_v4(),
        tenant_id: tenant.id,
        principal_id: None,
        channel: Channel::Slack,
        category: InterventionCategory::Request,
        status,
        title: title.into(),
        details: Some("A member asked for it.".into()),
        metadata: Json(json!({})),
        created_at: Ts::now(),
        updated_at: Ts::now(),
    };
    let open = store
        .insert(row(InterventionStatus::Open, "New badge"))
        .await
        .unwrap();
    let cancelled = store
        .insert(row(InterventionStatus::Cancelled, "Locker key"))
        .await
        .unwrap();
    let mut integration = storage::Integration::new(
        tenant.id,
        "portal",
        "https://bot:pw@backend.example.org/root?token=q1w2",
        "whsec-very-secret",
    );
    integration.environment = tenant.environment;
    integration.status = storage::IntegrationStatus::Disabled;
    integration.callback_token = Some(storage::Redacted::new("cb-token-123".into()));
    store.insert(integration).await.unwrap();

    llm.json(tool_calls(
        None,
        &[
            ("i1", "list_interventions", r#"{"status":["open"]}"#),
            ("g1", "list_integrations", "{}"),
        ],
    ))
    .json(tool_calls(
        None,
        &[
            (
                "i2",
                "update_intervention_status",
                &json!({"intervention_id": open.id, "status": "resolved"}).to_string(),
            ),
            (
                "i3",
                "update_intervention_status",
                &json!({"intervention_id": cancelled.id, "status": "open"}).to_string(),
            ),
        ],
    ))
    .json(completion(
        "The badge request is resolved; the other stays.",
    ));
    chat(&w, &owner, &csrf, "Resolve the open requests.").await;

    let listed = tool_result(&llm, "i1");
    let items = listed["data"]["interventions"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{listed}");
    assert_eq!(items[0]["title"], "New badge");
    let integrations = tool_result(&llm, "g1");
    assert_eq!(integrations["data"]["integrations"][0]["name"], "portal");
    assert_eq!(
        integrations["data"]["integrations"][0]["base_url"],
        "https://backend.example.org/root"
    );
    let text = integrations.to_string();
    for secret in ["whsec-very-secret", "cb-token-123", "q1w2", "bot:pw"] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    let resolved = tool_result(&llm, "i2");
    assert_eq!(resolved["data"]["status"], "resolved", "{resolved}");
    let refused = tool_result(&llm, "i3");
    assert_eq!(refused["success"], json!(false));
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .contains("cancelled cannot become open"),
        "{refused}"
    );
    let get = |id: Uuid| async move {
        store
            .get::<HumanIntervention>(Some(tenant.id), storage::key().uuid(id))
            .await
            .unwrap()
            .unwrap()
    };
    assert_eq!(get(open.id).await.status, InterventionStatus::Resolved);
    let unchanged = get(cancelled.id).await;
    assert_eq!(unchanged.status, InterventionStatus::Cancelled);
    assert_eq!(unchanged.updated_at, cancelled.updated_at, "row unchanged");
}

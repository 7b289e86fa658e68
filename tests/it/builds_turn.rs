//! Installed community-build tools in use (§15.1, §5.2): a turn offers the
//! tenant's enabled installs after core and integration tools, runs a
//! call in the sandbox (the real `root sandbox-run` child), forwards its
//! progress lines live to the turn's progress surface, and audits every
//! call in `community_build_tool_runs`; `GET /api/v1/tools` lists them
//! with their gating, and a disabled install or another tenant has none.

use std::path::PathBuf;
use std::sync::Arc;

use root::builds::catalog::{self, InstallBody, InstallPatch};
use root::builds::format::Build;
use root::channels::turn::{TurnRequest, run_channel_turn};
use root::platform::api_keys::KeyKind;
use root::platform::tenancy::{self, TenantContext};
use serde_json::{Value, json};
use storage::{Channel, CommunityBuildToolRun, Principal, Scan, Store, Tenant, TenantStore, Ts};
use uuid::Uuid;

use crate::dashboard_chat_tools::{offered, tool_result};
use crate::support::fake_llm::{FakeLlm, completion, tool_calls};
use crate::support::{FakeHttp, Reply, TestApp, mint_key};

const NOW: i64 = 1_800_000_000;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/community-builds")
        .join(name)
}

struct Setup {
    app: TestApp,
    llm: FakeLlm,
    acme: Tenant,
    other: Tenant,
    /// The city-weather install of acme.
    weather: Uuid,
    /// A fake forecast API.
    forecast: FakeHttp,
    /// A member of acme (`ada`).
    ada: Uuid,
}

async fn setup() -> Setup {
    let llm = FakeLlm::start().await;
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("ROOT_RUN_WORKERS", "false"),
        ("SEARCH_LLM_RERANK", "false"),
    ])
    .await;
    let store = &app.state.store;
    let acme = store
        .create_tenant(Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    let other = store
        .create_tenant(Tenant::new("other", "Other"))
        .await
        .unwrap();
    for name in ["city-weather", "duty-roster"] {
        let build = Build::read_dir(&example(name)).unwrap();
        catalog::publish(store, &build, Ts::from_secs(NOW))
            .await
            .unwrap();
    }
    let forecast = FakeHttp::start().await;
    forecast.route("GET", "/v1/forecast", |_| {
        Reply::json(
            200,
            &json!({"current": {"temperature_2m": 21.4, "wind_speed_10m": 11.2}}),
        )
    });
    let weather = catalog::install(
        store,
        acme.id,
        InstallBody {
            listing: "city-weather".into(),
            config: json!({"api_url": forecast.url("/v1/forecast"), "city": "Lyon",
                           "latitude": 45.76, "longitude": 4.84, "api_key": "s3cret-key"}),
        },
        Ts::from_secs(NOW),
    )
    .await
    .unwrap()
    .id;
    catalog::install(
        store,
        acme.id,
        InstallBody {
            listing: "duty-roster".into(),
            config: json!({"duty": "kitchen duty", "people": ["Ada", "Grace"],
                           "start_date": "2026-01-05"}),
        },
        Ts::from_secs(NOW),
    )
    .await
    .unwrap();
    let mut ada = Principal::new(acme.id, "ada");
    ada.tier = "member".into();
    ada.display_name = Some("Ada".into());
    let ada = store.insert(ada).await.unwrap().id;
    Setup {
        ada,
        app,
        llm,
        acme,
        other,
        weather,
        forecast,
    }
}

async fn runs(app: &TestApp, tenant: Uuid) -> Vec<CommunityBuildToolRun> {
    app.state
        .store
        .scan(Some(tenant), Scan::all())
        .await
        .unwrap()
}

#[tokio::test]
async fn builds_turn_offers_installed_tools_last_runs_them_sandboxed_and_audits_each_call() {
    let s = setup().await;
    s.llm.json(tool_calls(
        None,
        &[("c1", "city_weather_now", r#"{"units":"celsius"}"#)],
    ));
    s.llm.json(completion("It is 21.4 °C in Lyon right now."));
    let (tx, mut rx) = tokio::sync::mpsc::channel(16);
    let req = TurnRequest {
        channel: Some(Channel::Api),
        message: "what's the weather like?".into(),
        stable_user_id: Some("ada".into()),
        progress: Some(tx),
        ..TurnRequest::default()
    };
    let ctx = TenantContext {
        tenant: Arc::new(s.acme.clone()),
    };
    let turns = s.app.state.turns.clone();
    let out = tenancy::scope(ctx, async move { run_channel_turn(&turns, req).await })
        .await
        .expect("the turn runs");
    assert!(out.reply.contains("21.4"), "{}", out.reply);

    // Offered last, after every core tool, in build (slug) order.
    let names = offered(&s.llm.bodies()[0]);
    let n = names.len();
    assert!(n > 3, "{names:?}");
    assert_eq!(
        names[n - 3..],
        ["city_weather_now", "who_is_on_duty", "upcoming_duty"],
        "{names:?}"
    );
    assert!(names.iter().any(|t| t == "search_knowledge_base"));

    // The sandbox ran the module against the fake API; the model saw its result.
    let result = tool_result(&s.llm, "c1")["data"].clone();
    assert_eq!(result["city"], "Lyon", "{result}");
    assert_eq!(result["temperature"], 21.4, "{result}");
    let asked = s.forecast.requests();
    assert_eq!(asked.len(), 1);
    assert!(
        asked[0]
            .query
            .as_deref()
            .is_some_and(|q| q.contains("latitude=45.76")),
        "{:?}",
        asked[0].query
    );
    assert_eq!(
        asked[0]
            .headers
            .get("authorization")
            .and_then(|v| v.to_str().ok()),
        Some("Bearer s3cret-key"),
        "the write-only secret reaches the build"
    );

    // Progress went live to the turn's progress surface.
    let mut progress = Vec::new();
    while let Ok(line) = rx.try_recv() {
        progress.push(line);
    }
    assert!(
        progress
            .iter()
            .any(|p| p == "Checking the weather in Lyon…"),
        "{progress:?}"
    );

    // One audit row with the logs (progress recorded too).
    let rows = runs(&s.app, s.acme.id).await;
    assert_eq!(rows.len(), 1);
    let run = &rows[0];
    assert_eq!(run.install_id, s.weather);
    assert_eq!(run.tool_name, "city_weather_now");
    assert!(run.success);
    assert_eq!(run.error, None);
    assert_eq!(run.principal_id, Some(s.ada));
    assert!(run.duration_ms > 0);
    let logs = run.logs.0.as_array().unwrap();
    assert!(
        logs.iter()
            .any(|l| l["type"] == "progress" && l["message"] == "Checking the weather in Lyon…"),
        "{logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l["type"] == "log" && l["message"] == "forecast API answered 200"),
        "{logs:?}"
    );
    assert!(runs(&s.app, s.other.id).await.is_empty());
}

/// `POST /tools/who_is_on_duty/execute` as `ada` with `args` → the body.
async fn on_duty(app: &TestApp, key: &str, args: Value) -> Value {
    let r = app
        .post_json(
            "/api/v1/tools/who_is_on_duty/execute",
            Some(key),
            &json!({"principal": "ada", "args": args}),
        )
        .await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// `GET /tools` with `key`.
async fn tools(app: &TestApp, key: &str) -> Value {
    app.get("/api/v1/tools", Some(key))
        .await
        .json()
        .await
        .unwrap()
}

fn build_rows(catalog: &Value) -> Vec<&Value> {
    catalog["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["source"].get("community_build").is_some())
        .collect()
}

#[tokio::test]
async fn builds_turn_catalog_execute_failures_and_disabled_installs() {
    let s = setup().await;
    let key = mint_key(&s.app.state.store, "acme", KeyKind::Live).await;
    let other_key = mint_key(&s.app.state.store, "other", KeyKind::Live).await;

    let cat = tools(&s.app, &key).await;
    let rows = build_rows(&cat);
    let names: Vec<_> = rows.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        ["city_weather_now", "who_is_on_duty", "upcoming_duty"]
    );
    let duty = rows[1];
    assert_eq!(duty["source"], json!({"community_build": "duty-roster"}));
    assert_eq!(duty["implemented"], true);
    assert_eq!(duty["input_schema"]["properties"]["date"]["type"], "string");
    assert_eq!(
        duty["allowed"]["member"]["api"],
        "community build duty-roster: no tier restriction"
    );
    assert!(
        duty["allowed"].get("unresolved").is_none(),
        "no tiers declared: every non-reserved tier, never unresolved: {duty}"
    );
    let cat = tools(&s.app, &other_key).await;
    assert!(
        build_rows(&cat).is_empty(),
        "another tenant has no build rows"
    );

    // Direct execution through the dispatch gate and the sandbox.
    let v = on_duty(&s.app, &key, json!({"date": "2026-01-12"})).await;
    assert_eq!(v["result"]["success"], true, "{v}");
    assert_eq!(v["result"]["data"]["person"], "Grace", "{v}");
    assert_eq!(v["result"]["data"]["from"], "2026-01-12", "{v}");

    // The build's own error is a failed result the model can read, and audited.
    let v = on_duty(&s.app, &key, json!({"date": "next tuesday"})).await;
    assert_eq!(v["result"]["success"], false, "{v}");
    let error = v["result"]["error"].as_str().unwrap();
    assert!(
        error.contains("who_is_on_duty failed") && error.contains("date must be a date"),
        "{error}"
    );
    let mut rows = runs(&s.app, s.acme.id).await;
    rows.sort_by_key(|r| r.success);
    assert_eq!(rows.len(), 2);
    assert!(!rows[0].success);
    assert!(
        rows[0]
            .error
            .as_deref()
            .is_some_and(|e| e.contains("date must be a date")),
        "{:?}",
        rows[0].error
    );
    assert!(rows[1].success);

    // Another tenant cannot call acme's tools.
    let v = on_duty(&s.app, &other_key, json!({})).await;
    assert_eq!(v["result"]["success"], false, "{v}");
    assert_eq!(runs(&s.app, s.other.id).await.len(), 0);

    // A disabled install is offered to nobody.
    catalog::patch_install(
        &s.app.state.store,
        s.acme.id,
        s.weather,
        InstallPatch {
            enabled: Some(false),
            ..Default::default()
        },
        Ts::from_secs(NOW + 1),
    )
    .await
    .unwrap();
    let cat = tools(&s.app, &key).await;
    let names: Vec<_> = build_rows(&cat)
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["who_is_on_duty", "upcoming_duty"]);
}

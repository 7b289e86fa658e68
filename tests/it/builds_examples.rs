//! The example community builds (`examples/community-builds/`) load, pass
//! the format checks, accept a realistic config, and run in the sandbox:
//! the weather tool against a local fake of its forecast API, the duty
//! roster with no network at all.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::Query;
use axum::http::HeaderMap;
use axum::routing::get;
use serde_json::{Value, json};

use root::builds::format::{Build, secret_properties, validate_config};
use root::builds::sandbox::{SandboxOutcome, SandboxRunner, ToolCall};
use root::outbound::OutboundPolicy;

fn example(name: &str) -> Build {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/community-builds")
        .join(name);
    Build::read_dir(&dir).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn runner(allow_private: bool) -> SandboxRunner {
    SandboxRunner::new(
        env!("CARGO_BIN_EXE_root"),
        OutboundPolicy {
            allow_private,
            require_https: false,
        },
    )
}

async fn run(
    r: &SandboxRunner,
    build: &Build,
    tool: &str,
    params: Value,
    config: Value,
) -> (SandboxOutcome, Vec<String>) {
    let decl = build
        .manifest
        .tools
        .iter()
        .find(|t| t.name == tool)
        .expect("declared");
    let call = ToolCall {
        module_source: build.module_source.clone(),
        tool: tool.into(),
        params,
        config,
        principal: json!({"id": "p1"}),
        channel: "web".into(),
        timeout: Duration::from_millis(decl.timeout_ms.unwrap_or(120_000)),
        tenant: None,
    };
    let mut progress = Vec::new();
    let out = r
        .run_tool(&call, &mut |m: &str| progress.push(m.to_string()))
        .await;
    (out, progress)
}

/// A fake Open-Meteo: records each query and authorization header.
async fn forecast_api(seen: Arc<Mutex<Vec<(Value, String)>>>) -> String {
    let app = axum::Router::new().route(
        "/v1/forecast",
        get(
            move |Query(q): Query<Value>, headers: HeaderMap| async move {
                let auth = headers
                    .get("authorization")
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string();
                seen.lock().unwrap().push((q, auth));
                Json(json!({"current": {"temperature_2m": 18.5, "wind_speed_10m": 9.5}}))
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/v1/forecast")
}

#[tokio::test]
async fn weather_example_calls_the_configured_api_through_fetch() {
    let build = example("city-weather");
    assert_eq!(
        secret_properties(&build.manifest.config_schema),
        ["api_key"]
    );
    let seen = Arc::new(Mutex::new(Vec::new()));
    let url = forecast_api(seen.clone()).await;
    let config = json!({"api_url": url, "city": "Lyon", "latitude": 45.76,
                        "longitude": 4.84, "api_key": "s3cret"});
    validate_config(&build.manifest.config_schema, &config).unwrap();
    assert!(
        validate_config(&build.manifest.config_schema, &json!({"city": "Lyon"})).is_err(),
        "api_url, latitude and longitude are required"
    );

    let (out, progress) = run(
        &runner(true),
        &build,
        "city_weather_now",
        json!({"units": "celsius"}),
        config.clone(),
    )
    .await;
    assert!(out.ok, "{out:?}");
    assert_eq!(
        out.result,
        Some(
            json!({"city": "Lyon", "temperature": 18.5, "units": "celsius", "wind_speed_kmh": 9.5})
        )
    );
    assert_eq!(progress, ["Checking the weather in Lyon…"]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0["latitude"], "45.76");
    assert_eq!(seen[0].0["current"], "temperature_2m,wind_speed_10m");
    assert_eq!(seen[0].1, "Bearer s3cret");

    // Without the operator's permission, the local API is unreachable.
    let (out, _) = run(
        &runner(false),
        &build,
        "city_weather_now",
        json!({}),
        config,
    )
    .await;
    assert!(!out.ok);
    assert!(
        out.error
            .as_deref()
            .unwrap()
            .contains("not a public address"),
        "{out:?}"
    );
}

#[tokio::test]
async fn duty_roster_example_rotates_without_network() {
    let build = example("duty-roster");
    let config = json!({"duty": "kitchen duty", "people": ["Ada", "Bo", "Cy"],
                        "start_date": "2026-01-05", "period_days": 7});
    validate_config(&build.manifest.config_schema, &config).unwrap();
    assert!(
        validate_config(
            &build.manifest.config_schema,
            &json!({"duty": "x", "people": [], "start_date": "2026-01-05"})
        )
        .is_err(),
        "an empty rotation is refused"
    );
    let r = runner(false);
    let (out, _) = run(
        &r,
        &build,
        "who_is_on_duty",
        json!({"date": "2026-01-20"}),
        config.clone(),
    )
    .await;
    assert!(out.ok, "{out:?}");
    assert_eq!(
        out.result,
        Some(
            json!({"duty": "kitchen duty", "date": "2026-01-20", "person": "Cy",
                    "from": "2026-01-19", "until": "2026-01-25"})
        )
    );
    // Before the start the rotation runs backwards.
    let (out, _) = run(
        &r,
        &build,
        "who_is_on_duty",
        json!({"date": "2026-01-04"}),
        config.clone(),
    )
    .await;
    assert_eq!(out.result.unwrap()["person"], "Cy");

    let (out, _) = run(
        &r,
        &build,
        "upcoming_duty",
        json!({"from": "2026-01-06", "turns": 4}),
        config.clone(),
    )
    .await;
    assert!(out.ok, "{out:?}");
    let people: Vec<_> = out.result.unwrap()["turns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["person"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(people, ["Ada", "Bo", "Cy", "Ada"]);

    let (out, _) = run(
        &r,
        &build,
        "who_is_on_duty",
        json!({"date": "next tuesday"}),
        config,
    )
    .await;
    assert!(
        out.error
            .as_deref()
            .unwrap()
            .contains("date must be a date like"),
        "{out:?}"
    );
}

//! Community-build listings and installs over `/api/v1/community-builds`
//! (§15.1): the catalog, config validated against the listing's JSON
//! Schema, secrets write-only (accepted, kept across patches, never
//! answered), per-tenant installs, and `root builds publish`.

use std::path::PathBuf;
use std::process::Command;

use root::builds::catalog;
use root::builds::format::Build;
use root::platform::api_keys::KeyKind;
use serde_json::{Value, json};
use storage::{CommunityBuildInstall, Store, Tenant, TenantStore, Ts, key};
use uuid::Uuid;

use crate::support::{TestApp, mint_key};

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/community-builds")
        .join(name)
}

async fn patch(app: &TestApp, path: &str, key: &str, body: &Value) -> reqwest::Response {
    app.client
        .patch(app.url(path))
        .bearer_auth(key)
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn installs_validate_config_keep_secrets_write_only_and_stay_per_tenant() {
    let app = TestApp::spawn().await;
    for (slug, name) in [("acme", "Acme"), ("other", "Other")] {
        app.state
            .store
            .create_tenant(Tenant::new(slug, name))
            .await
            .unwrap();
    }
    let acme = mint_key(&app.state.store, "acme", KeyKind::Live).await;
    let other = mint_key(&app.state.store, "other", KeyKind::Live).await;
    for name in ["duty-roster", "city-weather"] {
        let build = Build::read_dir(&example(name)).unwrap();
        catalog::publish(&app.state.store, &build, Ts::from_secs(1_800_000_000))
            .await
            .unwrap();
    }

    let r = app
        .get("/api/v1/community-builds/listings", Some(&acme))
        .await;
    assert_eq!(r.status(), 200);
    let listings: Value = r.json().await.unwrap();
    let slugs: Vec<_> = listings["listings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["city-weather", "duty-roster"]);
    assert!(listings["listings"][0].get("module_source").is_none());
    assert_eq!(
        listings["listings"][0]["tools"][0]["name"],
        "city_weather_now"
    );

    // Config checked against the schema; the error names the problem, not the value.
    let r = app
        .post_json(
            "/api/v1/community-builds/installs",
            Some(&acme),
            &json!({"listing": "city-weather",
                    "config": {"api_url": "ftp://x", "city": "Lyon", "latitude": 45, "longitude": 4}}),
        )
        .await;
    assert_eq!(r.status(), 400);
    let e: Value = r.json().await.unwrap();
    assert_eq!(e["error"]["field"], "config", "{e}");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("/api_url"),
        "{e}"
    );
    assert!(!e.to_string().contains("ftp://x"), "{e}");

    let r = app
        .post_json(
            "/api/v1/community-builds/installs",
            Some(&acme),
            &json!({"listing": "nope", "config": {}}),
        )
        .await;
    assert_eq!(r.status(), 404);

    let good = json!({"api_url": "https://api.open-meteo.com/v1/forecast", "city": "Lyon",
                      "latitude": 45.76, "longitude": 4.84, "api_key": "s3cret-key"});
    let r = app
        .post_json(
            "/api/v1/community-builds/installs",
            Some(&acme),
            &json!({"listing": "city-weather", "config": good}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let body = r.text().await.unwrap();
    assert!(!body.contains("s3cret-key"), "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["secrets_set"], json!(["api_key"]));
    assert_eq!(v["config"]["city"], "Lyon");
    assert_eq!(v["enabled"], true);
    let id = v["id"].as_str().unwrap().to_string();
    let path = format!("/api/v1/community-builds/installs/{id}");

    let again = app
        .post_json(
            "/api/v1/community-builds/installs",
            Some(&acme),
            &json!({"listing": "city-weather", "config": good}),
        )
        .await;
    assert_eq!(again.status(), 409);

    // Another tenant sees nothing of it.
    assert_eq!(app.get(&path, Some(&other)).await.status(), 404);
    let r = app
        .get("/api/v1/community-builds/installs", Some(&other))
        .await;
    assert_eq!(r.json::<Value>().await.unwrap()["installs"], json!([]));

    // A merge patch keeps the unnamed secret; a bad value changes nothing.
    let r = patch(&app, &path, &acme, &json!({"config": {"city": "Oslo"}})).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["config"]["city"], "Oslo");
    assert_eq!(v["secrets_set"], json!(["api_key"]));
    let r = patch(&app, &path, &acme, &json!({"config": {"latitude": 200}})).await;
    assert_eq!(r.status(), 400);
    let tenant = app
        .state
        .store
        .tenant_by_slug("acme")
        .await
        .unwrap()
        .unwrap();
    let row: CommunityBuildInstall = app
        .state
        .store
        .get(Some(tenant.id), key().uuid(Uuid::parse_str(&id).unwrap()))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.config.expose().0["api_key"], "s3cret-key");
    assert_eq!(row.config.expose().0["latitude"], 45.76);
    assert_eq!(row.config.expose().0["city"], "Oslo");

    let r = patch(&app, &path, &acme, &json!({"enabled": false})).await;
    assert_eq!(r.json::<Value>().await.unwrap()["enabled"], false);
    let r = app.get(&path, Some(&acme)).await;
    let body = r.text().await.unwrap();
    assert!(
        !body.contains("s3cret-key") && body.contains("\"enabled\":false"),
        "{body}"
    );

    assert_eq!(app.delete(&path, Some(&acme)).await.status(), 204);
    assert_eq!(app.get(&path, Some(&acme)).await.status(), 404);
    assert_eq!(app.delete(&path, Some(&acme)).await.status(), 404);
}

pub(crate) fn root_cmd(data_dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_root"));
    c.env_clear()
        .env("ROOT_DATA_DIR", data_dir)
        .env("RUST_LOG", "warn");
    c
}

#[test]
fn builds_publish_upserts_a_listing_by_name_and_refuses_a_bad_build() {
    let dir = tempfile::tempdir().unwrap();
    let publish = |path: &std::path::Path| {
        root_cmd(dir.path())
            .args(["builds", "publish"])
            .arg(path)
            .output()
            .unwrap()
    };
    let first = publish(&example("duty-roster"));
    assert!(first.status.success(), "{first:?}");
    let first = String::from_utf8(first.stdout).unwrap();
    assert!(
        first.starts_with("published duty-roster 1.0.0 (2 tools)"),
        "{first}"
    );
    let second = String::from_utf8(publish(&example("duty-roster")).stdout).unwrap();
    // The same listing (same id) gets the new publish.
    assert_eq!(
        first.split_whitespace().last(),
        second.split_whitespace().last()
    );

    let bad = tempfile::tempdir().unwrap();
    std::fs::write(
        bad.path().join("build.json"),
        r#"{"name": "Bad Name", "version": "1", "tools": []}"#,
    )
    .unwrap();
    std::fs::write(bad.path().join("index.js"), "export function invoke() {}").unwrap();
    let out = publish(bad.path());
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("name: must be 1–64 characters"), "{err}");
}

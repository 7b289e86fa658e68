//! The community's logo on its public pages (§2.3 `tenant_assets`, §2.1
//! `settings.logo_url`, §14.2): Root's embedded mark until the admin sets
//! one; an upload is typed by its bytes (no SVG, ≤ 512 KiB) and served with
//! an ETag, `nosniff` and a sandboxing CSP; `logo_url` wins on the pages;
//! one tenant's logo never shows on another's pages; the CLI sets it too.

use std::process::Command;

use root::platform::api_keys::KeyKind;
use root::platform::branding::{DEFAULT_LOGO_SVG, MAX_LOGO_BYTES};
use serde_json::{Value, json};
use storage::{Tenant, TenantStore};

use crate::support::{TestApp, mint_key, set_setting};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDRacme-logo";

async fn put_logo(app: &TestApp, key: &str, body: Vec<u8>) -> reqwest::Response {
    app.client
        .put(app.url("/api/v1/branding/logo"))
        .bearer_auth(key)
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn public_page(app: &TestApp, key: &str) -> String {
    let r = app
        .post_json(
            "/api/v1/kb/pages",
            Some(key),
            &json!({"slug": "hours", "title": "Hours", "is_public": true,
                    "content_html": "<p>Open 8am.</p>"}),
        )
        .await;
    assert!(r.status().is_success(), "{}", r.status());
    let v: Value = r.json().await.unwrap();
    let id = v["public_id"]
        .as_str()
        .or_else(|| v["page"]["public_id"].as_str())
        .unwrap_or("hours")
        .to_string();
    app.get(&format!("/kb/acme/{id}"), None)
        .await
        .text()
        .await
        .unwrap()
}

#[tokio::test]
async fn logo_defaults_to_roots_mark_then_serves_the_upload() {
    let app = TestApp::spawn().await;
    for (slug, name) in [("acme", "Acme Club"), ("other", "Other")] {
        app.state
            .store
            .create_tenant(Tenant::new(slug, name))
            .await
            .unwrap();
    }
    let acme = mint_key(&app.state.store, "acme", KeyKind::Live).await;
    let other = mint_key(&app.state.store, "other", KeyKind::Live).await;

    // Before any upload: the page points at the asset route, which serves
    // Root's embedded mark, as an image only.
    let html = public_page(&app, &acme).await;
    assert!(
        html.contains(r#"<img src="/assets/acme/logo" alt="" width="40" height="40">Acme Club"#),
        "{html}"
    );
    let r = app.get("/assets/acme/logo", None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "image/svg+xml");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    assert!(
        r.headers()["content-security-policy"]
            .to_str()
            .unwrap()
            .contains("sandbox")
    );
    assert_eq!(r.bytes().await.unwrap(), DEFAULT_LOGO_SVG);
    // An unknown community gets the same mark (no hint who exists).
    let r = app.get("/assets/nobody/logo", None).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.bytes().await.unwrap(), DEFAULT_LOGO_SVG);

    // Refused uploads change nothing: SVG (could carry script), empty, too big.
    let r = put_logo(&app, &acme, b"<svg onload=alert(1)></svg>".to_vec()).await;
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body.to_string().contains("PNG, JPEG, GIF or WebP"),
        "{body}"
    );
    assert_eq!(put_logo(&app, &acme, Vec::new()).await.status(), 400);
    let mut big = PNG.to_vec();
    big.resize(MAX_LOGO_BYTES + 1, 0);
    assert_eq!(put_logo(&app, &acme, big).await.status(), 413);
    let r = app.get("/assets/acme/logo", None).await;
    assert_eq!(r.headers()["content-type"], "image/svg+xml");

    // A PNG upload is served as PNG with a validator.
    let r = put_logo(&app, &acme, PNG.to_vec()).await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["uploaded"], true);
    assert_eq!(v["content_type"], "image/png");
    assert_eq!(v["bytes"], PNG.len());
    assert!(v["url"].as_str().unwrap().ends_with("/assets/acme/logo"));
    let r = app.get("/assets/acme/logo", None).await;
    assert_eq!(r.headers()["content-type"], "image/png");
    let etag = r.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(r.bytes().await.unwrap(), PNG);
    let r = app
        .client
        .get(app.url("/assets/acme/logo"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 304);
    // The other community still shows Root's mark.
    let r = app.get("/assets/other/logo", None).await;
    assert_eq!(r.bytes().await.unwrap(), DEFAULT_LOGO_SVG);

    // An admin's https logo_url wins on the pages.
    set_setting(
        &app.state,
        "acme",
        "logo_url",
        json!("https://cdn.acme.org/logo.png"),
    )
    .await;
    let html = public_page(&app, &acme).await;
    assert!(
        html.contains(r#"<img src="https://cdn.acme.org/logo.png""#),
        "{html}"
    );
    set_setting(&app.state, "acme", "logo_url", Value::Null).await;

    // Deleting goes back to the mark; another tenant's key cannot touch it.
    let r = app.delete("/api/v1/branding/logo", Some(&other)).await;
    assert_eq!(r.status(), 200);
    let r = app.get("/assets/acme/logo", None).await;
    assert_eq!(r.headers()["content-type"], "image/png");
    let r = app.delete("/api/v1/branding/logo", Some(&acme)).await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["uploaded"], false);
    let r = app.get("/assets/acme/logo", None).await;
    assert_eq!(r.bytes().await.unwrap(), DEFAULT_LOGO_SVG);
}

#[test]
fn logo_cli_sets_and_clears_the_logo() {
    let dir = tempfile::tempdir().unwrap();
    let root = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_root"))
            .env_clear()
            .env("ROOT_DATA_DIR", dir.path())
            .env("RUST_LOG", "warn")
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string(),
            String::from_utf8_lossy(&out.stderr).to_string(),
        )
    };
    assert!(root(&["tenant", "create", "acme"]).0);
    let png = dir.path().join("logo.png");
    std::fs::write(&png, PNG).unwrap();
    let (ok, out, err) = root(&["tenant", "logo", "acme", png.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(
        out.contains(&format!(
            "logo set for acme: image/png, {} bytes",
            PNG.len()
        )),
        "{out}"
    );
    assert!(out.contains("/assets/acme/logo"), "{out}");
    let svg = dir.path().join("logo.svg");
    std::fs::write(&svg, "<svg/>").unwrap();
    let (ok, _, err) = root(&["tenant", "logo", "acme", svg.to_str().unwrap()]);
    assert!(!ok);
    assert!(err.contains("PNG, JPEG, GIF or WebP"), "{err}");
    let (ok, out, _) = root(&["tenant", "logo", "acme", "--clear"]);
    assert!(ok);
    assert!(out.contains("logo removed for acme"), "{out}");
}

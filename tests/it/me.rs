//! `/api/v1/me` with live, dev, legacy, revoked, unknown and garbage keys (§12.1, acceptance 8).

use serde_json::Value;
use storage::{ApiKeyStore, Store, TenantStatus, TenantStore};

use root::platform::api_keys::{self, KeyKind};

use crate::support::{TestApp, mint_key};

async fn mint(app: &TestApp, slug: &str, kind: KeyKind) -> String {
    mint_key(&app.state.store, slug, kind).await
}

#[tokio::test]
async fn a_live_key_selects_the_live_tenant_row() {
    let app = TestApp::spawn().await;
    let key = mint(&app, "root", KeyKind::Live).await;
    let resp = app.get("/api/v1/me", Some(&key)).await;
    assert_eq!(resp.status(), 200);
    let me: Value = resp.json().await.unwrap();
    assert_eq!(me["tenant"]["slug"], "root");
    assert_eq!(me["tenant"]["id"], "11111111-1111-4111-8111-111111111111");
    assert_eq!(me["environment"], "live");
    assert_eq!(me["key"]["environment"], "live");
    assert_eq!(me["key"]["token_prefix"], key[..17]);
    assert!(!me.to_string().contains(&key), "the secret is never echoed");
}

#[tokio::test]
async fn dev_and_live_keys_hit_the_same_route_but_the_paired_rows() {
    let app = TestApp::spawn().await;
    let live = mint(&app, "root", KeyKind::Live).await;
    let dev = mint(&app, "root", KeyKind::Dev).await;
    assert!(dev.starts_with("rpk_dev_"));
    let live_me: Value = app
        .get("/api/v1/me", Some(&live))
        .await
        .json()
        .await
        .unwrap();
    let dev_me: Value = app
        .get("/api/v1/me", Some(&dev))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(dev_me["tenant"]["slug"], "root--dev");
    assert_eq!(dev_me["environment"], "dev");
    assert_eq!(dev_me["tenant"]["live_tenant_id"], live_me["tenant"]["id"]);
    assert_ne!(dev_me["tenant"]["id"], live_me["tenant"]["id"]);
    assert_eq!(
        dev_me["key"]["token_prefix"].as_str().unwrap().len(),
        "rpk_dev_".len() + 8
    );
}

#[tokio::test]
async fn a_legacy_key_is_live() {
    let app = TestApp::spawn().await;
    let key = mint(&app, "root", KeyKind::Legacy).await;
    assert!(key.starts_with("rpk_") && !key.starts_with("rpk_live_"));
    let me: Value = app
        .get("/api/v1/me", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(me["environment"], "live");
    assert_eq!(me["tenant"]["slug"], "root");
}

#[tokio::test]
async fn revoked_unknown_and_garbage_keys_get_the_same_opaque_401() {
    let app = TestApp::spawn().await;
    let (_, minted) = api_keys::mint_for_slug(&app.state.store, "root", "t", KeyKind::Live)
        .await
        .unwrap();
    assert_eq!(app.get("/api/v1/me", Some(&minted.raw)).await.status(), 200);
    assert!(
        app.state
            .store
            .revoke_api_key(minted.row.tenant_id, minted.row.id)
            .await
            .unwrap()
    );
    let unknown = api_keys::generate_token(KeyKind::Live);
    let mut bodies = Vec::new();
    for bearer in [
        Some(minted.raw.as_str()),
        Some(unknown.as_str()),
        Some("garbage"),
        Some("rpk_live_zz"),
        None,
    ] {
        let resp = app.get("/api/v1/me", bearer).await;
        assert_eq!(resp.status(), 401, "{bearer:?}");
        assert_eq!(resp.headers()["www-authenticate"], "Bearer");
        bodies.push(resp.text().await.unwrap());
    }
    assert!(
        bodies.windows(2).all(|w| w[0] == w[1]),
        "no hint which check failed: {bodies:?}"
    );
    let basic = app
        .client
        .get(app.url("/api/v1/me"))
        .header("authorization", format!("Basic {}", minted.raw))
        .send()
        .await
        .unwrap();
    assert_eq!(basic.status(), 401);
}

#[tokio::test]
async fn an_inactive_tenant_is_refused_with_403() {
    let app = TestApp::spawn().await;
    let live = mint(&app, "root", KeyKind::Live).await;
    let dev = mint(&app, "root", KeyKind::Dev).await;
    let mut root = app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    root.status = TenantStatus::Suspended;
    app.state.store.update(root.clone()).await.unwrap();
    app.state.tenants.invalidate(&root);
    let resp = app.get("/api/v1/me", Some(&live)).await;
    assert_eq!(resp.status(), 403);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "forbidden");
    assert_eq!(
        app.get("/api/v1/me", Some(&dev)).await.status(),
        403,
        "the shadow of a suspended tenant too"
    );
}

/// The `/api/v1/me` body and the opaque 401 body, pinned (key id, token
/// prefix and timestamps redacted).
#[tokio::test]
async fn me_and_401_bodies_match_their_snapshots() {
    let app = TestApp::spawn().await;
    let key = mint(&app, "root", KeyKind::Live).await;
    let me: Value = app
        .get("/api/v1/me", Some(&key))
        .await
        .json()
        .await
        .unwrap();
    insta::assert_json_snapshot!("me_live_key", me, {
        ".key.id" => "[key id]",
        ".key.token_prefix" => "[token prefix]",
        ".**.created_at" => "[timestamp]",
        ".**.last_used_at" => "[timestamp]",
    });
    let denied: Value = app.get("/api/v1/me", None).await.json().await.unwrap();
    insta::assert_json_snapshot!("me_401", denied);
}

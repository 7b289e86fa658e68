//! Knowledge sources and sync (§11, §12.2, §17 #5) over HTTP: sources
//! registered through the API, runs queued durably and executed by the
//! `knowledge-source-sync` handler, pages created / updated / skipped by
//! their hashes, `replace_missing`, the single running run, failure
//! counting, the scheduler's lease and clamp, tenant isolation. The offline
//! hashing embedder is in use; the scripted model stands in for the AI step.

mod kinds;
mod push;
mod sources;

use root::platform::api_keys::KeyKind;
use serde_json::{Value, json};
use storage::{KnowledgeChunk, KnowledgeSyncRun, Scan, Store, Tenant, TenantStore, key};
use uuid::Uuid;

use crate::support::{TestApp, mint_key};

pub const SYNC: &str = "knowledge-source-sync";
/// Jobs run only when a test drains them.
pub const NO_WORKERS: &[(&str, &str)] = &[("ROOT_RUN_WORKERS", "false")];

pub async fn tenant_key(app: &TestApp, slug: &str) -> (Tenant, String) {
    let t = match app.state.store.tenant_by_slug(slug).await.unwrap() {
        Some(t) => t,
        None => app
            .state
            .store
            .create_tenant(Tenant::new(slug, slug))
            .await
            .unwrap(),
    };
    let k = mint_key(&app.state.store, slug, KeyKind::Live).await;
    (t, k)
}

pub async fn send(
    app: &TestApp,
    method: &str,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = app
        .client
        .request(method.parse().unwrap(), app.url(path))
        .bearer_auth(key);
    if let Some(b) = body {
        req = req.json(&b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

pub fn doc(id: &str, title: &str, text: &str) -> Value {
    json!({"external_id": id, "title": title,
           "content_html": format!("<h2>{title}</h2><p>{text}</p>")})
}

pub async fn push(app: &TestApp, key: &str, docs: Vec<Value>, options: Value) -> Value {
    let (s, v) = send(
        app,
        "POST",
        "/api/v1/kb/sync",
        key,
        Some(json!({"source": {"key": "handbook"}, "documents": docs, "options": options})),
    )
    .await;
    assert_eq!(s, 202, "{v}");
    assert_eq!(v["run"]["status"], "queued");
    v["run"].clone()
}

pub async fn run_row(app: &TestApp, tenant: Uuid, id: &str) -> KnowledgeSyncRun {
    app.state
        .store
        .get(Some(tenant), key().uuid(Uuid::parse_str(id).unwrap()))
        .await
        .unwrap()
        .unwrap()
}

pub async fn drain(app: &TestApp) {
    crate::support::drain_jobs(&app.state, SYNC).await;
}

/// The tenant's page `slug` (it must exist).
pub async fn page_by_slug(app: &TestApp, tenant: Uuid, slug: &str) -> storage::KnowledgePage {
    app.state
        .store
        .find_unique(
            Some(tenant),
            storage::KnowledgePage::SLUG_KEY,
            key().str(slug),
        )
        .await
        .unwrap()
        .unwrap_or_else(|| panic!("page {slug} exists"))
}

pub async fn chunk_ids(app: &TestApp, tenant: Uuid) -> Vec<Uuid> {
    let mut ids: Vec<Uuid> = app
        .state
        .store
        .scan::<KnowledgeChunk>(Some(tenant), Scan::all())
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect();
    ids.sort();
    ids
}

pub async fn api_push_source(app: &TestApp, key: &str) -> Value {
    let (s, v) = send(
        app,
        "POST",
        "/api/v1/kb/sources",
        key,
        Some(
            json!({"source_key": "handbook", "name": "Member handbook", "source_kind": "api_push"}),
        ),
    )
    .await;
    assert_eq!(s, 201, "{v}");
    v
}

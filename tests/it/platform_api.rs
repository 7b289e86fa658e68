//! The platform-admin API (`/api/v1/platform/*`, §15.1, §2.6, §15.4):
//! platform keys (`rpa_…`) only — no / unknown / revoked keys and keys of an
//! email removed from `platform_admins` are one 401, tenant keys a 403;
//! publishing a community build (the `root builds publish` checks, 201 then
//! 200 for a new version, 422 naming the field); a tenant's export as one
//! tar (every tenant table, nothing of another tenant); and deleting a
//! tenant while serving (its key, index directory and queued jobs gone,
//! another tenant's search still answering).

use std::collections::BTreeSet;
use std::io::Read;

use serde_json::{Value, json};
use storage::conformance::seed_every_table;
use storage::{EnqueueMode, JobQueue, NewJob, PlatformAdmin, Store, Tenant, TenantStore, Ts, key};
use uuid::Uuid;

use root::platform::api_keys::KeyKind;
use root::platform::platform_keys;
use root::retrieval::registry::tenant_index_dir;

use crate::kb::{put_page, search};
use crate::support::{TestApp, mint_key};

const ADMIN: &str = "ops@root.example";
const LISTINGS: &str = "/api/v1/platform/community-builds/listings";

async fn admin_key(app: &TestApp) -> String {
    let store = &app.state.store;
    let admin: Option<PlatformAdmin> = store
        .find_unique(None, PlatformAdmin::EMAIL_KEY, key().str(ADMIN))
        .await
        .unwrap();
    if admin.is_none() {
        store
            .insert(PlatformAdmin {
                id: Uuid::new_v4(),
                email: ADMIN.into(),
                created_at: Ts::from_secs(1_800_000_000),
            })
            .await
            .unwrap();
    }
    platform_keys::mint(store, ADMIN, "ci", Ts::from_secs(1_800_000_000))
        .await
        .unwrap()
        .raw
}

async fn tenant(app: &TestApp, slug: &str) -> (Tenant, String) {
    let t = app
        .state
        .store
        .create_tenant(Tenant::new(slug, slug))
        .await
        .unwrap();
    (t, mint_key(&app.state.store, slug, KeyKind::Live).await)
}

fn build(version: &str) -> Value {
    json!({
        "build": {
            "name": "hello-board",
            "version": version,
            "description": "Says hello.",
            "tools": [{
                "name": "say_hello",
                "description": "Greets someone.",
                "parameters": {"type": "object", "properties": {"who": {"type": "string"}}}
            }]
        },
        "source": "export async function invoke(tool, params) { return 'hello ' + params.who; }"
    })
}

async fn listings(app: &TestApp, tenant_key: &str) -> Value {
    let r = app
        .get("/api/v1/community-builds/listings", Some(tenant_key))
        .await;
    assert_eq!(r.status(), 200);
    r.json().await.unwrap()
}

/// A job of `tenant` in `queue`, due in an hour (no worker takes it).
pub(crate) async fn queue_job(store: &storage::RedbStore, queue: &str, id: &str, tenant: Uuid) {
    store
        .enqueue(
            NewJob {
                queue: queue.into(),
                id: Some(id.into()),
                tenant_id: Some(tenant),
                payload: json!({}),
                max_attempts: 1,
                backoff_ms: 0,
                delay_ms: 3_600_000,
                mode: EnqueueMode::Dedupe,
            },
            Ts::from_secs(1_800_000_000),
        )
        .await
        .unwrap();
}

async fn error_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    (status, body["error"].clone())
}

#[tokio::test]
async fn platform_api_refuses_every_key_but_a_live_platform_admin_key() {
    let app = TestApp::spawn().await;
    let (_, tenant_key) = tenant(&app, "acme").await;
    let good = admin_key(&app).await;
    let body = build("1.0.0");

    let (status, err) = error_of(app.post_json(LISTINGS, None, &body).await).await;
    assert_eq!((status, err["code"].as_str()), (401, Some("unauthorized")));
    let unknown = platform_keys::generate_token();
    let (status, unknown_err) =
        error_of(app.post_json(LISTINGS, Some(&unknown), &body).await).await;
    assert_eq!(status, 401);
    assert_eq!(unknown_err, err, "the same body for every 401");
    let (status, _) = error_of(app.post_json(LISTINGS, Some("rpa_nonsense"), &body).await).await;
    assert_eq!(status, 401);

    let (status, err) = error_of(app.post_json(LISTINGS, Some(&tenant_key), &body).await).await;
    assert_eq!((status, err["code"].as_str()), (403, Some("forbidden")));
    assert!(err["message"].as_str().unwrap().contains("platform"));
    let r = app
        .get("/api/v1/platform/tenants/acme/export", Some(&tenant_key))
        .await;
    assert_eq!(r.status(), 403);
    // …and a platform key does not reach the tenant routes.
    assert_eq!(app.get("/api/v1/me", Some(&good)).await.status(), 401);

    // Revoked by prefix: refused from the next request on.
    let revoked = admin_key(&app).await;
    assert_eq!(
        app.post_json(LISTINGS, Some(&revoked), &body)
            .await
            .status(),
        201
    );
    let prefix = platform_keys::display_prefix(&revoked);
    platform_keys::revoke(&app.state.store, &prefix, Ts::from_secs(1_800_000_100))
        .await
        .unwrap();
    let (status, e) = error_of(app.post_json(LISTINGS, Some(&revoked), &body).await).await;
    assert_eq!((status, e), (401, err_unauthorized(&app).await));
    assert_eq!(
        app.post_json(LISTINGS, Some(&good), &body).await.status(),
        200
    );

    // The email leaves platform_admins: its keys stop working.
    let admin: PlatformAdmin = app
        .state
        .store
        .find_unique(None, PlatformAdmin::EMAIL_KEY, key().str(ADMIN))
        .await
        .unwrap()
        .unwrap();
    assert!(
        app.state
            .store
            .delete::<PlatformAdmin>(None, key().uuid(admin.id))
            .await
            .unwrap()
    );
    assert_eq!(
        app.post_json(LISTINGS, Some(&good), &body).await.status(),
        401
    );
    let listed = platform_keys::list(&app.state.store).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(
        listed
            .iter()
            .all(|k| k.token_hash.len() == 64 && !k.token_hash.starts_with("rpa_"))
    );
}

async fn err_unauthorized(app: &TestApp) -> Value {
    error_of(app.post_json(LISTINGS, None, &json!({})).await)
        .await
        .1
}

#[tokio::test]
async fn platform_api_publishes_listings_with_the_cli_checks() {
    let app = TestApp::spawn().await;
    let (_, tenant_key) = tenant(&app, "acme").await;
    let admin = admin_key(&app).await;

    let r = app.post_json(LISTINGS, Some(&admin), &build("1.0.0")).await;
    assert_eq!(r.status(), 201);
    let first: Value = r.json().await.unwrap();
    assert_eq!(first["slug"], "hello-board");
    let listed = listings(&app, &tenant_key).await;
    assert_eq!(listed["listings"][0]["slug"], "hello-board");
    assert_eq!(listed["listings"][0]["version"], "1.0.0");

    let r = app.post_json(LISTINGS, Some(&admin), &build("1.1.0")).await;
    assert_eq!(r.status(), 200, "a new version of the listing");
    let second: Value = r.json().await.unwrap();
    assert_eq!(second["id"], first["id"]);
    let listed = listings(&app, &tenant_key).await;
    assert_eq!(listed["listings"].as_array().unwrap().len(), 1);
    assert_eq!(listed["listings"][0]["version"], "1.1.0");

    // Bad builds: 422 naming the field, nothing published.
    let mut bad_name = build("2.0.0");
    bad_name["build"]["name"] = json!("Bad Name");
    let mut bad_tool = build("2.0.0");
    bad_tool["build"]["tools"][0]["parameters"] = json!({"type": "string"});
    let mut empty_source = build("2.0.0");
    empty_source["source"] = json!("   ");
    let mut unknown = build("2.0.0");
    unknown["build"]["homepage"] = json!("https://x.example");
    for (body, field) in [
        (bad_name, "build.name"),
        (bad_tool, "build.tools[0].parameters"),
        (empty_source, "source"),
        (unknown, "build"),
    ] {
        let (status, err) = error_of(app.post_json(LISTINGS, Some(&admin), &body).await).await;
        assert_eq!((status, err["field"].as_str()), (422, Some(field)), "{err}");
    }
    let (status, _) = error_of(
        app.post_json(LISTINGS, Some(&admin), &json!({"build": {}}))
            .await,
    )
    .await;
    assert_eq!(status, 400, "a body without `source` is malformed");
    let listed = listings(&app, &tenant_key).await;
    assert_eq!(listed["listings"][0]["version"], "1.1.0");
}

#[tokio::test]
async fn platform_api_exports_a_tenant_as_one_tar_of_only_its_rows() {
    let app = TestApp::spawn().await;
    let admin = admin_key(&app).await;
    let store = &app.state.store;
    let (acme, _) = tenant(&app, "acme").await;
    let acme_dev = store.ensure_dev_shadow(acme.id).await.unwrap();
    let (other, _) = tenant(&app, "other").await;
    for t in [acme.id, acme_dev.id, other.id] {
        seed_every_table(store, t).await;
    }

    let r = app
        .get("/api/v1/platform/tenants/acme/export", Some(&admin))
        .await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["content-type"], "application/x-tar");
    let bytes = r.bytes().await.unwrap();
    let mut files = std::collections::BTreeMap::new();
    let mut archive = tar::Archive::new(bytes.as_ref());
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let mut text = String::new();
        entry.read_to_string(&mut text).unwrap();
        files.insert(path, text);
    }
    assert!(files.contains_key("export.json"));
    for slug in ["acme", "acme--dev"] {
        assert!(files.contains_key(&format!("{slug}/tenants.jsonl")));
        let tables: BTreeSet<&str> = storage::tenant_table_names().into_iter().collect();
        for table in tables {
            assert!(
                files.contains_key(&format!("{slug}/tables/{table}.jsonl")),
                "{slug}: {table} missing"
            );
        }
    }
    let all: String = files.values().cloned().collect();
    assert!(all.contains(&acme.id.to_string()));
    assert!(
        !all.contains(&other.id.to_string()),
        "nothing of another tenant"
    );
    assert!(files.keys().all(|p| !p.starts_with("other")));
    // The temp directory is gone once the archive is sent.
    let leftovers: Vec<_> = std::fs::read_dir(&app.data_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".export-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    let r = app
        .get("/api/v1/platform/tenants/acme--dev/export", Some(&admin))
        .await;
    assert_eq!(r.status(), 422, "a dev shadow comes with its live tenant");
    let r = app
        .get("/api/v1/platform/tenants/nobody/export", Some(&admin))
        .await;
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn platform_api_deletes_a_tenant_while_serving() {
    let app = TestApp::spawn().await;
    let admin = admin_key(&app).await;
    let (acme, acme_key) = tenant(&app, "acme").await;
    let (other, other_key) = tenant(&app, "other").await;
    for key in [&acme_key, &other_key] {
        put_page(
            &app,
            key,
            json!({"slug": "vpn-setup", "title": "VPN setup",
                   "content_html": "<p>Install the wireguard client and import the profile.</p>"}),
        )
        .await;
        let found = search(&app, key, json!({"query": "wireguard"})).await;
        assert!(!found["results"].as_array().unwrap().is_empty(), "{found}");
    }
    let acme_dir = tenant_index_dir(&app.data_dir, acme.id);
    assert!(acme_dir.is_dir(), "the search opened acme's index");
    let open_of = |t: Uuid| {
        let open = app.state.retrieval.registry().open_indexes();
        open.iter().filter(|(id, _, _)| *id == t).count()
    };
    assert!(open_of(acme.id) > 0);
    let store = &app.state.store;
    for (t, id) in [(acme.id, "acme-job"), (other.id, "other-job")] {
        queue_job(store, "platform-api-test", id, t).await;
    }

    // Refusals: no or a wrong confirmation, the root tenant, a shadow.
    for path in [
        "/api/v1/platform/tenants/acme",
        "/api/v1/platform/tenants/acme?confirm=other",
    ] {
        let (status, err) = error_of(app.delete(path, Some(&admin)).await).await;
        assert_eq!((status, err["field"].as_str()), (400, Some("confirm")));
    }
    let r = app
        .delete("/api/v1/platform/tenants/root?confirm=root", Some(&admin))
        .await;
    assert_eq!(r.status(), 403);
    store.ensure_dev_shadow(acme.id).await.unwrap();
    let r = app
        .delete(
            "/api/v1/platform/tenants/acme--dev?confirm=acme--dev",
            Some(&admin),
        )
        .await;
    assert_eq!(r.status(), 422);
    assert!(store.tenant_by_slug("acme").await.unwrap().is_some());

    let r = app
        .delete("/api/v1/platform/tenants/acme?confirm=acme", Some(&admin))
        .await;
    assert_eq!(r.status(), 200);
    let done: Value = r.json().await.unwrap();
    assert_eq!(done["tenants"].as_array().unwrap().len(), 2, "{done}");
    assert_eq!(done["jobs"], 1);

    assert_eq!(app.get("/api/v1/me", Some(&acme_key)).await.status(), 401);
    assert!(!acme_dir.exists(), "acme's index directory is gone");
    assert_eq!(open_of(acme.id), 0, "acme's index handles were dropped");
    assert!(store.tenant_by_slug("acme").await.unwrap().is_none());
    assert!(store.tenant_by_slug("acme--dev").await.unwrap().is_none());
    assert!(store.tenant_by_id(acme.id).await.unwrap().is_none());
    assert!(
        store
            .job("platform-api-test", "acme-job")
            .await
            .unwrap()
            .is_none(),
        "the deleted tenant's queued job is gone"
    );
    assert!(
        store
            .job("platform-api-test", "other-job")
            .await
            .unwrap()
            .is_some()
    );
    let found = search(&app, &other_key, json!({"query": "wireguard"})).await;
    assert!(!found["results"].as_array().unwrap().is_empty(), "{found}");
    assert!(tenant_index_dir(&app.data_dir, other.id).is_dir());
    let r = app
        .delete("/api/v1/platform/tenants/acme?confirm=acme", Some(&admin))
        .await;
    assert_eq!(r.status(), 404);
}

#[test]
fn platform_key_cli_mints_for_platform_admins_lists_and_revokes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        crate::builds_api::root_cmd(dir.path())
            .args(args)
            .output()
            .unwrap()
    };
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let create = ["platform-key", "create", "--email", ADMIN, "--name", "ci"];
    let refused = run(&create);
    assert!(!refused.status.success());
    assert!(
        text(&refused.stderr).contains("is not a platform admin"),
        "{}",
        text(&refused.stderr)
    );
    assert!(
        run(&["seed", "platform-admin", "--email", ADMIN])
            .status
            .success()
    );
    let created = run(&create);
    assert!(created.status.success(), "{}", text(&created.stderr));
    let raw = text(&created.stdout).trim().to_string();
    assert!(platform_keys::is_platform_token(&raw), "{raw}");
    let prefix = platform_keys::display_prefix(&raw);

    let listed = text(&run(&["platform-key", "list"]).stdout);
    assert!(listed.contains(&prefix) && listed.contains(ADMIN) && listed.contains("active"));
    assert!(!listed.contains(&raw), "the key is shown once");
    let revoked = run(&["platform-key", "revoke", &prefix]);
    assert!(revoked.status.success(), "{}", text(&revoked.stderr));
    let listed = text(&run(&["platform-key", "list"]).stdout);
    assert!(listed.contains("revoked"), "{listed}");
    assert!(
        !run(&["platform-key", "revoke", "rpa_00000000"])
            .status
            .success()
    );
}

/// Platform routes count against the platform key's own per-minute bucket
/// (`ROOT_API_REQUESTS_PER_KEY_PER_MINUTE`): past it, 429 with
/// `Retry-After`, and another platform key still gets through.
#[tokio::test]
async fn platform_api_rate_limits_each_platform_key_with_retry_after() {
    let app = TestApp::spawn_with(&[("ROOT_API_REQUESTS_PER_KEY_PER_MINUTE", "2")]).await;
    let busy = admin_key(&app).await;
    let other = admin_key(&app).await;
    for version in ["1.0.0", "1.0.1"] {
        let r = app.post_json(LISTINGS, Some(&busy), &build(version)).await;
        assert!(r.status().is_success(), "{}", r.status());
    }
    let r = app.post_json(LISTINGS, Some(&busy), &build("1.0.2")).await;
    assert_eq!(r.status(), 429);
    assert!(
        r.headers().get("retry-after").is_some(),
        "{:?}",
        r.headers()
    );
    let r = app.post_json(LISTINGS, Some(&other), &build("1.0.2")).await;
    assert!(r.status().is_success(), "{}", r.status());
}

//! `/platform` (§14.1, §14.2): communities for platform admins — list,
//! create with a first owner, suspend / reactivate, impersonation — the
//! header's community picker, and `/health` diagnostics (§14.3) for a
//! platform admin's session only.

use serde_json::Value;
use storage::{Store, TenantRole, TenantStatus, TenantStore, TenantUser, Ts};
use uuid::Uuid;

use root::auth::DashboardAuth;
use root::platform::api_keys::KeyKind;

use crate::support::dashboard::{World, attrs, injected_scripts, location, texts, world};
use crate::support::{create_tenant, logs, mint_key};

async fn admin(w: &World) -> (String, String) {
    w.app
        .state
        .store
        .insert(storage::PlatformAdmin {
            id: Uuid::new_v4(),
            email: "ops@example.org".into(),
            created_at: Ts::now(),
        })
        .await
        .unwrap();
    let s = w.sign_in("ops@example.org").await;
    let csrf = DashboardAuth::csrf_token(&s);
    (s, csrf)
}

#[tokio::test]
async fn dashboard_platform_non_admins_get_403_everywhere_and_forms_need_csrf() {
    let w = world(&[], false).await;
    let acme = create_tenant(&w.app.state.store, "acme", "Acme").await;
    let id = acme.tenant.id.to_string();
    let (owner, owner_csrf) = w.signed_in(TenantRole::Owner).await;
    let (admin_s, _) = admin(&w).await;
    let posts = [
        "/platform".to_string(),
        format!("/platform/{id}/status"),
        format!("/platform/{id}/impersonate"),
    ];
    assert_eq!(w.get("/platform", Some(&owner)).await.status(), 403);
    for path in &posts {
        let r = w
            .post_form(
                path,
                Some(&owner),
                &[
                    ("csrf", owner_csrf.as_str()),
                    ("slug", "x"),
                    ("name", "X"),
                    ("owner_email", "x@example.org"),
                    ("status", "suspended"),
                ],
            )
            .await;
        assert_eq!(r.status(), 403, "{path} as an owner");
        let r = w
            .post_form(
                path,
                Some(&admin_s),
                &[("csrf", "forged"), ("status", "suspended")],
            )
            .await;
        assert_eq!(r.status(), 403, "{path} without the CSRF token");
    }
    assert_eq!(
        w.tenant("acme").await.status,
        TenantStatus::Active,
        "nothing changed"
    );
    assert!(
        w.app
            .state
            .store
            .tenant_by_slug("x")
            .await
            .unwrap()
            .is_none()
    );
    // No session at all: the sign-in page.
    assert_eq!(location(&w.get("/platform", None).await), "/auth/login");
}

#[tokio::test]
async fn dashboard_platform_lists_creates_and_the_owner_signs_in() {
    let w = world(&[], false).await;
    let (s, csrf) = admin(&w).await;
    let r = w
        .post_form(
            "/platform",
            Some(&s),
            &[
                ("csrf", &csrf),
                ("slug", "garden"),
                ("name", "<script>alert(1)</script> Garden"),
                ("owner_email", " Ann@Example.org "),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/platform?done=community-created");
    let t = w.tenant("garden").await;
    assert_eq!(t.display_name, "<script>alert(1)</script> Garden");
    let users: Vec<TenantUser> = w
        .app
        .state
        .store
        .scan(Some(t.id), storage::Scan::all())
        .await
        .unwrap();
    assert_eq!(users.len(), 1);
    assert_eq!(users[0].email, "ann@example.org");
    assert_eq!(users[0].role, TenantRole::Owner);

    let (status, page) = w.page("/platform?done=community-created", &s).await;
    assert_eq!(status, 200);
    assert_eq!(injected_scripts(&page), 0, "names are escaped");
    assert_eq!(
        texts(&page, "#community-garden .name"),
        vec!["<script>alert(1)</script> Garden"]
    );
    assert_eq!(texts(&page, "#community-garden .users"), vec!["1"]);
    assert_eq!(texts(&page, "#community-garden .status"), vec!["active"]);
    assert_eq!(texts(&page, "#community-root .slug"), vec!["root"]);
    assert!(texts(&page, "nav a").contains(&"Communities".to_string()));

    // The new owner signs in and lands on their community.
    let owner = w.sign_in("ann@example.org").await;
    let (_, me) = w.me(&owner).await;
    assert_eq!(me["tenant"]["slug"], "garden");
    assert_eq!(me["role"], "owner");

    // A taken slug, a reserved one, a bad address: 422, typed values kept.
    let r = w
        .post_form(
            "/platform",
            Some(&s),
            &[
                ("csrf", &csrf),
                ("slug", "garden"),
                ("name", "Second"),
                ("owner_email", "bob@example.org"),
            ],
        )
        .await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert_eq!(texts(&page, "#slug-error").len(), 1);
    assert_eq!(attrs(&page, "#name", "value"), vec!["Second"]);
    assert_eq!(
        attrs(&page, "#owner_email", "value"),
        vec!["bob@example.org"]
    );
    for (slug, email) in [("garden--dev", "bob@example.org"), ("Bad Slug", "nope")] {
        let r = w
            .post_form(
                "/platform",
                Some(&s),
                &[
                    ("csrf", &csrf),
                    ("slug", slug),
                    ("name", "Second"),
                    ("owner_email", email),
                ],
            )
            .await;
        assert_eq!(r.status(), 422, "{slug}");
    }
    assert!(
        w.app
            .state
            .store
            .tenant_by_slug("garden--dev")
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn dashboard_platform_suspend_refuses_api_keys_and_reactivate_restores() {
    let w = world(&[], false).await;
    create_tenant(&w.app.state.store, "acme", "Acme").await;
    let key = mint_key(&w.app.state.store, "acme", KeyKind::Live).await;
    let dev_key = mint_key(&w.app.state.store, "acme", KeyKind::Dev).await;
    assert_eq!(w.app.get("/api/v1/tools", Some(&key)).await.status(), 200);
    assert_eq!(
        w.app.get("/api/v1/tools", Some(&dev_key)).await.status(),
        200
    );
    let (s, csrf) = admin(&w).await;
    let id = w.tenant("acme").await.id;
    let (_, page) = w.page("/platform", &s).await;
    assert_eq!(texts(&page, "#community-acme .dev"), vec!["acme--dev"]);
    assert!(texts(&page, "#suspended-effect")[0].contains("403"));

    let r = w
        .post_form(
            &format!("/platform/{id}/status"),
            Some(&s),
            &[("csrf", &csrf), ("status", "suspended")],
        )
        .await;
    assert_eq!(location(&r), "/platform?done=community-suspended");
    assert_eq!(w.tenant("acme").await.status, TenantStatus::Suspended);
    assert_eq!(w.app.get("/api/v1/tools", Some(&key)).await.status(), 403);
    assert_eq!(
        w.app.get("/api/v1/tools", Some(&dev_key)).await.status(),
        403
    );
    let (_, page) = w.page("/platform", &s).await;
    assert_eq!(texts(&page, "#community-acme .status"), vec!["suspended"]);

    let r = w
        .post_form(
            &format!("/platform/{id}/status"),
            Some(&s),
            &[("csrf", &csrf), ("status", "active")],
        )
        .await;
    assert_eq!(location(&r), "/platform?done=community-reactivated");
    assert_eq!(w.app.get("/api/v1/tools", Some(&key)).await.status(), 200);
    let r = w
        .post_form(
            &format!("/platform/{id}/status"),
            Some(&s),
            &[("csrf", &csrf), ("status", "deleted")],
        )
        .await;
    assert_eq!(r.status(), 400);
    let r = w
        .post_form(
            &format!("/platform/{}/status", Uuid::new_v4()),
            Some(&s),
            &[("csrf", &csrf), ("status", "active")],
        )
        .await;
    assert_eq!(r.status(), 404);
}

#[tokio::test(flavor = "current_thread")]
async fn dashboard_platform_impersonation_opens_the_community_says_so_and_is_logged() {
    let (out, _guard) = logs::capture(tracing::Level::INFO);
    let w = world(&[], false).await;
    create_tenant(&w.app.state.store, "acme", "Acme Club").await;
    w.user("root", "ops@example.org", TenantRole::Owner).await;
    let (s, csrf) = admin(&w).await;
    let root = w.tenant("root").await.id.to_string();
    let r = w
        .post_form(
            "/dashboard/community",
            Some(&s),
            &[("csrf", &csrf), ("tenant", &root)],
        )
        .await;
    assert_eq!(r.status(), 303);
    let (_, page) = w.page("/dashboard", &s).await;
    assert!(
        texts(&page, "#impersonating").is_empty(),
        "their own community"
    );
    let id = w.tenant("acme").await.id;
    let r = w
        .post_form(
            &format!("/platform/{id}/impersonate"),
            Some(&s),
            &[("csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/dashboard");
    let (status, page) = w.page("/dashboard", &s).await;
    assert_eq!(status, 200);
    assert_eq!(texts(&page, "header .community"), vec!["Acme Club"]);
    assert_eq!(texts(&page, "#impersonating"), vec!["impersonating"]);
    let logs = out.text();
    let line = logs
        .lines()
        .find(|l| l.contains("platform admin impersonating a community"))
        .unwrap_or_else(|| panic!("no impersonation log line in {logs}"));
    assert!(
        line.contains("acme") && line.contains("ops@example.org"),
        "{line}"
    );

    // The picker brings them back to their own community.
    let (_, page) = w.page("/dashboard", &s).await;
    assert!(attrs(&page, "#community-picker option", "value").contains(&root));
    let r = w
        .post_form(
            "/dashboard/community",
            Some(&s),
            &[("csrf", &csrf), ("tenant", &root)],
        )
        .await;
    assert_eq!(r.status(), 303);
    let (_, page) = w.page("/dashboard", &s).await;
    assert!(texts(&page, "#impersonating").is_empty());
}

#[tokio::test]
async fn dashboard_platform_picker_switches_between_own_communities_only() {
    let w = world(&[], false).await;
    create_tenant(&w.app.state.store, "acme", "Acme").await;
    create_tenant(&w.app.state.store, "other", "Other").await;
    w.user("root", "two@example.org", TenantRole::Admin).await;
    w.user("acme", "two@example.org", TenantRole::Viewer).await;
    let s = w.sign_in("two@example.org").await;
    let csrf = DashboardAuth::csrf_token(&s);
    let (_, page) = w.page("/dashboard", &s).await;
    assert_eq!(
        texts(&page, "#community-picker option").len(),
        2,
        "their two communities"
    );
    let acme = w.tenant("acme").await.id.to_string();
    let other = w.tenant("other").await.id.to_string();
    let r = w
        .post_form(
            "/dashboard/community",
            Some(&s),
            &[("csrf", &csrf), ("tenant", &acme)],
        )
        .await;
    assert_eq!(r.status(), 303);
    let (_, me) = w.me(&s).await;
    assert_eq!(me["tenant"]["slug"], "acme");
    assert_eq!(me["role"], "viewer");
    let r = w
        .post_form(
            "/dashboard/community",
            Some(&s),
            &[("csrf", &csrf), ("tenant", &other)],
        )
        .await;
    assert_eq!(r.status(), 403, "not theirs");
    let r = w
        .post_form("/dashboard/community", Some(&s), &[("tenant", &acme)])
        .await;
    assert_eq!(r.status(), 403, "no CSRF token");
    // A single community: no picker.
    let (one, _) = w.signed_in(TenantRole::Owner).await;
    let (_, page) = w.page("/dashboard", &one).await;
    assert!(texts(&page, "#community-picker option").is_empty());
}

#[tokio::test]
async fn dashboard_platform_health_diagnostics_only_for_platform_admins() {
    let w = world(&[], false).await;
    let anon: Value = w.get("/health", None).await.json().await.unwrap();
    assert_eq!(anon, serde_json::json!({"status": "ok"}));
    let (owner, _) = w.signed_in(TenantRole::Owner).await;
    let r = w.get("/health", Some(&owner)).await;
    assert_eq!(r.status(), 200);
    let as_owner: Value = r.json().await.unwrap();
    assert_eq!(as_owner, serde_json::json!({"status": "ok"}));
    let ready: Value = w.get("/ready", Some(&owner)).await.json().await.unwrap();
    assert_eq!(ready, serde_json::json!({"status": "ok"}));

    let (s, _) = admin(&w).await;
    let r = w.get("/health", Some(&s)).await;
    assert_eq!(r.status(), 200);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["status"], "ok");
    let d = &body["diagnostics"];
    assert_eq!(d["storage"]["ping"], true);
    assert!(d["storage"]["migrations_applied"].as_u64().unwrap() >= 1);
    assert!(d["indexes"]["backlog"].is_array());
    assert!(d["indexes"]["open"].is_array());
    assert!(d["indexes"]["outbox_last_seq"].is_u64());
    assert!(d["workers"]["in_process"].is_boolean());
    assert!(d["workers"].get("heartbeat_age_ms").is_some());
    let queues = d["queues"].as_array().unwrap();
    assert_eq!(queues.len(), root::queue::registry::QUEUES.len());
    assert!(queues[0]["waiting"].is_u64());
    assert_eq!(d["errors"], serde_json::json!([]));
    let text = body.to_string();
    assert!(!text.contains("pm-server-token") && !text.contains(&s));
}

/// Issue 19's "done means": the queue overview shows every §13 queue with
/// the handler the running workers registered for it.
#[tokio::test]
async fn dashboard_platform_queue_overview_shows_every_queue_with_its_handler() {
    let w = world(&[("ROOT_RUN_WORKERS", "true")], false).await;
    let (s, _) = admin(&w).await;
    let (status, html) = w.page("/platform/queues", &s).await;
    assert_eq!(status, 200);
    let rows = scraper::Selector::parse("table.card tbody tr").unwrap();
    let cells = scraper::Selector::parse("td").unwrap();
    let mut seen: Vec<(String, String)> = html
        .select(&rows)
        .filter_map(|r| {
            let c: Vec<String> = r.select(&cells).map(|c| c.text().collect()).collect();
            (c.len() == 9).then(|| (c[0].clone(), c[8].clone()))
        })
        .collect();
    seen.sort();
    let mut want: Vec<(String, String)> = root::queue::registry::QUEUES
        .iter()
        .map(|q| (q.name.to_string(), "registered".to_string()))
        .collect();
    want.sort();
    assert_eq!(seen, want);
}

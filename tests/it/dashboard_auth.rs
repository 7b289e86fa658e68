//! Dashboard sign-in (§14.1): magic links (single use, 15 minutes, only
//! their hash stored), the `root_session` cookie (httpOnly, SameSite=Lax,
//! 30 days, revocable), CSRF on every state-changing form, roles, the
//! environment switch and the development bypass.

use std::time::Duration;

use serde_json::json;
use storage::{DashboardLoginLink, Scan, Store, TenantRole, TenantStore, Ts};
use uuid::Uuid;

use root::auth::{DashboardAuth, LOGIN_LINK_TTL_MINUTES, SESSION_DAYS};
use root::platform::api_keys::KeyKind;

use crate::support::dashboard::{location, session_of, world};
use crate::support::{FakeHttp, Reply};

/// Wait (at most 10 s) until `n` mails reached the fake provider.
pub(crate) async fn mail_arrives(mail: &FakeHttp, n: usize) {
    tokio::time::timeout(
        Duration::from_secs(10),
        mail.wait_for_requests_to("/email", n),
    )
    .await
    .expect("the sign-in mail was sent");
}

#[tokio::test]
async fn dashboard_auth_a_magic_link_signs_in_once_within_15_minutes() {
    let w = world(&[], false).await;
    w.user("root", "Owner@Example.org", TenantRole::Owner).await;
    assert!(
        w.app
            .state
            .auth
            .issue_link("stranger@example.org")
            .await
            .unwrap()
            .is_none(),
        "the tables are the allowlist"
    );
    let url = w
        .app
        .state
        .auth
        .issue_link("owner@example.org")
        .await
        .unwrap()
        .unwrap();
    let public = w.app.state.config.platform_base_url.clone();
    assert!(
        url.starts_with(&format!("{public}/auth/callback?token=")),
        "{url}"
    );
    let token = url.split("token=").nth(1).unwrap().to_string();
    let links: Vec<DashboardLoginLink> = w.app.state.store.scan(None, Scan::all()).await.unwrap();
    assert_eq!(links.len(), 1);
    assert_ne!(links[0].token_hash, token, "only the hash is stored");
    assert_eq!(
        links[0].expires_at.micros() - links[0].created_at.micros(),
        LOGIN_LINK_TTL_MINUTES * 60_000_000
    );

    let resp = w.get(&format!("/auth/callback?token={token}"), None).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(location(&resp), "/dashboard");
    let set = resp
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Lax"),
        "{set}"
    );
    assert!(
        set.contains(&format!("Max-Age={}", SESSION_DAYS * 86_400)),
        "{set}"
    );
    assert!(!set.contains("Secure"), "plain http in tests: {set}");
    let session = session_of(&resp).unwrap();

    let (status, me) = w.me(&session).await;
    assert_eq!(status, 200);
    assert_eq!(me["email"], "owner@example.org");
    assert_eq!(
        me["tenant"],
        json!({"slug": "root", "display_name": "Root", "environment": "live"})
    );
    assert_eq!(
        (me["role"].as_str(), me["can_change"].as_bool()),
        (Some("owner"), Some(true))
    );
    let page = w.get("/dashboard", Some(&session)).await;
    assert_eq!(page.status(), 200);
    let csp = page
        .headers()
        .get("content-security-policy")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
    let html = page.text().await.unwrap();
    assert!(
        html.contains("Messages per day") && html.contains("<svg"),
        "{html}"
    );

    // The same link again: used. A forged one: not valid.
    let again = w.get(&format!("/auth/callback?token={token}"), None).await;
    assert_eq!(again.status(), 410);
    assert!(session_of(&again).is_none());
    assert!(again.text().await.unwrap().contains("already used"));
    let forged = w.get("/auth/callback?token=deadbeef", None).await;
    assert_eq!(forged.status(), 400);
    assert!(forged.text().await.unwrap().contains("not valid"));

    // A link older than 15 minutes: expired.
    let url = w
        .app
        .state
        .auth
        .issue_link("owner@example.org")
        .await
        .unwrap()
        .unwrap();
    w.clock.advance_ms(LOGIN_LINK_TTL_MINUTES * 60_000 + 1);
    let token = url.split("token=").nth(1).unwrap();
    let late = w.get(&format!("/auth/callback?token={token}"), None).await;
    assert_eq!(late.status(), 410);
    assert!(late.text().await.unwrap().contains("expired"));

    // Without a session the dashboard sends you to sign in.
    let anon = w.get("/dashboard", None).await;
    assert_eq!(
        (anon.status().as_u16(), location(&anon)),
        (303, "/auth/login")
    );
    let (status, _) = w.me("not-a-session").await;
    assert_eq!(status, 303);
}

#[tokio::test]
async fn dashboard_auth_the_login_form_mails_links_only_to_allowlisted_addresses() {
    let w = world(&[], true).await;
    let mail = w.mail.as_ref().unwrap();
    mail.route("POST", "/email", |_| {
        Reply::json(200, &json!({"MessageID": "pm-1", "ErrorCode": 0}))
    });
    w.user("root", "admin@example.org", TenantRole::Admin).await;

    let form = w.get("/auth/login", None).await;
    assert_eq!(form.status(), 200);
    assert!(form.text().await.unwrap().contains("name=\"email\""));

    let resp = w
        .post_form("/auth/login", None, &[("email", "Admin@Example.org")])
        .await;
    assert_eq!(resp.status(), 200);
    let page = resp.text().await.unwrap();
    assert!(page.contains("a link is on its way"), "{page}");
    // The mail leaves off the request path.
    mail_arrives(mail, 1).await;
    let sent = mail.requests_to("/email");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body["To"], "admin@example.org");
    assert_eq!(sent[0].body["From"], "\"Root\" <login@mail.example.com>");
    let text = sent[0].body["TextBody"].as_str().unwrap();
    let link = text
        .split_whitespace()
        .find(|w| w.contains("/auth/callback?token="))
        .unwrap();
    let path = &link[link.find("/auth/").unwrap()..];
    let resp = w.get(path, None).await;
    assert_eq!(resp.status(), 303, "the mailed link signs in");

    // A stranger hears the same words, and no mail leaves.
    let resp = w
        .post_form("/auth/login", None, &[("email", "stranger@example.org")])
        .await;
    assert_eq!(resp.status(), 200);
    assert!(resp.text().await.unwrap().contains("a link is on its way"));
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(mail.requests_to("/email").len(), 1);

    // A typo keeps what was typed, escaped.
    let resp = w
        .post_form("/auth/login", None, &[("email", "<script>x")])
        .await;
    assert_eq!(resp.status(), 400);
    let page = resp.text().await.unwrap();
    assert!(
        page.contains("&#60;script&#62;x") && !page.contains("<script>x"),
        "{page}"
    );

    // One address cannot be flooded: the 11th request in an hour is refused.
    for _ in 0..9 {
        let r = w
            .post_form("/auth/login", None, &[("email", "admin@example.org")])
            .await;
        assert_eq!(r.status(), 200);
    }
    let r = w
        .post_form("/auth/login", None, &[("email", "admin@example.org")])
        .await;
    assert_eq!(r.status(), 429);
    assert!(r.headers().get("retry-after").is_some());
}

#[tokio::test]
async fn dashboard_auth_without_mail_the_form_says_how_to_print_a_link() {
    let w = world(&[], false).await;
    w.user("root", "admin@example.org", TenantRole::Admin).await;
    let resp = w
        .post_form("/auth/login", None, &[("email", "admin@example.org")])
        .await;
    assert_eq!(resp.status(), 503);
    assert!(
        resp.text()
            .await
            .unwrap()
            .contains("root auth link --email")
    );
}

#[tokio::test]
async fn dashboard_auth_csrf_roles_sign_out_and_the_environment_switch() {
    let w = world(&[], false).await;
    // Minting a dev key creates the dev shadow.
    crate::support::mint_key(&w.app.state.store, "root", KeyKind::Dev).await;
    let shadow = w.tenant("root--dev").await;
    w.user("root", "owner@example.org", TenantRole::Owner).await;
    w.user("root", "viewer@example.org", TenantRole::Viewer)
        .await;
    w.user("root", "member@example.org", TenantRole::Member)
        .await;
    let owner = w.sign_in("owner@example.org").await;
    let csrf = DashboardAuth::csrf_token(&owner);

    // A member signs in but has no dashboard.
    let member = w.sign_in("member@example.org").await;
    assert_eq!(w.get("/dashboard", Some(&member)).await.status(), 403);
    let (status, me) = w.me(&member).await;
    assert_eq!(
        (status, &me["role"]),
        (200, &json!("member")),
        "but knows who they are"
    );

    // The environment switch needs the session's CSRF token.
    let r = w
        .post_form(
            "/dashboard/environment",
            Some(&owner),
            &[("environment", "dev")],
        )
        .await;
    assert_eq!(r.status(), 403);
    let other = DashboardAuth::csrf_token("someone-else");
    let r = w
        .post_form(
            "/dashboard/environment",
            Some(&owner),
            &[("environment", "dev"), ("csrf", &other)],
        )
        .await;
    assert_eq!(r.status(), 403, "another session's token");
    assert_eq!(w.me(&owner).await.1["tenant"]["environment"], "live");
    let r = w
        .post_form(
            "/dashboard/environment",
            Some(&owner),
            &[("environment", "dev"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status(), 303);
    let (_, me) = w.me(&owner).await;
    assert_eq!(me["tenant"]["slug"], shadow.slug);
    assert_eq!(me["tenant"]["environment"], "dev");
    let page = w
        .get("/dashboard", Some(&owner))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("Switch to live"));

    // A viewer reads but is marked read-only.
    let viewer = w.sign_in("viewer@example.org").await;
    let (_, me) = w.me(&viewer).await;
    assert_eq!(me["can_change"], false);
    let page = w
        .get("/dashboard", Some(&viewer))
        .await
        .text()
        .await
        .unwrap();
    assert!(page.contains("read-only"));

    // Sign-out needs the token too, then the session is gone for good.
    let r = w.post_form("/auth/logout", Some(&owner), &[]).await;
    assert_eq!(r.status(), 403);
    assert_eq!(w.me(&owner).await.0, 200, "still signed in");
    let r = w
        .post_form("/auth/logout", Some(&owner), &[("csrf", &csrf)])
        .await;
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/auth/login"));
    let cleared = r.headers().get("set-cookie").unwrap().to_str().unwrap();
    assert!(cleared.contains("Max-Age=0"), "{cleared}");
    assert_eq!(
        w.me(&owner).await.0,
        303,
        "a revoked session signs nobody in"
    );
}

#[tokio::test]
async fn dashboard_auth_community_names_are_escaped() {
    let w = world(&[], false).await;
    let mut t = w.tenant("root").await;
    t.display_name = "<script>alert(1)</script> Club".into();
    w.app.state.store.update(t).await.unwrap();
    w.app.state.tenants.invalidate(&w.tenant("root").await);
    w.user("root", "owner@example.org", TenantRole::Owner).await;
    let s = w.sign_in("owner@example.org").await;
    let page = w.get("/dashboard", Some(&s)).await.text().await.unwrap();
    assert!(
        page.contains("&#60;script&#62;alert(1)&#60;/script&#62; Club"),
        "{page}"
    );
    assert!(!page.contains("<script>alert(1)"));
}

#[tokio::test]
async fn dashboard_auth_dev_login_only_with_the_bypass() {
    let off = world(&[], false).await;
    off.user("root", "owner@example.org", TenantRole::Owner)
        .await;
    let r = off
        .get("/auth/dev-login?email=owner@example.org", None)
        .await;
    assert_eq!(r.status(), 404);

    let on = world(&[("AUTH_DEV_BYPASS", "true")], false).await;
    on.user("root", "owner@example.org", TenantRole::Owner)
        .await;
    let r = on
        .get("/auth/dev-login?email=owner@example.org", None)
        .await;
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/dashboard"));
    let s = session_of(&r).unwrap();
    assert_eq!(on.me(&s).await.1["email"], "owner@example.org");
    let r = on
        .get("/auth/dev-login?email=stranger@example.org", None)
        .await;
    assert_eq!(r.status(), 403);
    assert!(session_of(&r).is_none());
}

#[tokio::test]
async fn dashboard_auth_platform_admins_see_every_community_and_the_queues() {
    use root::queue::Enqueue;
    use root::queue::registry::{self, QUEUES};
    let w = world(&[], false).await;
    let other = crate::support::create_tenant(&w.app.state.store, "acme", "Acme").await;
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
    w.user("acme", "owner@example.org", TenantRole::Owner).await;
    let ops = w.sign_in("ops@example.org").await;
    let (_, me) = w.me(&ops).await;
    assert_eq!(me["platform_admin"], true);
    let slugs: Vec<&str> = me["communities"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["slug"].as_str().unwrap())
        .collect();
    assert!(
        slugs.contains(&"root") && slugs.contains(&other.tenant.slug.as_str()),
        "{slugs:?}"
    );

    w.app
        .state
        .queues
        .enqueue(
            registry::CONVERSATION_MEMORY,
            Enqueue {
                id: Some("m1".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let resp = w.get("/platform/queues", Some(&ops)).await;
    assert_eq!(resp.status(), 200);
    let html = resp.text().await.unwrap();
    for q in QUEUES {
        assert!(
            html.contains(&format!("id=\"q-{}\"", q.name)),
            "{} missing",
            q.name
        );
    }
    let row = html
        .split("<tr>")
        .find(|r| r.contains(&format!("href=\"#q-{}\"", registry::CONVERSATION_MEMORY)))
        .unwrap();
    assert!(row.contains("<td>1</td>"), "one waiting job: {row}");
    assert!(
        row.contains("<td>no workers in this process</td>"),
        "a server without in-process workers does not claim a handler: {row}"
    );

    // A community owner is not a platform admin.
    let owner = w.sign_in("owner@example.org").await;
    assert_eq!(w.get("/platform/queues", Some(&owner)).await.status(), 403);
    let (_, me) = w.me(&owner).await;
    assert_eq!(me["tenant"]["slug"], "acme", "their only community");
}

#[tokio::test]
async fn dashboard_auth_an_owner_opens_the_dev_environment_a_viewer_cannot() {
    let w = world(&[], false).await;
    w.user("root", "owner@example.org", TenantRole::Owner).await;
    w.user("root", "viewer@example.org", TenantRole::Viewer)
        .await;
    let viewer = w.sign_in("viewer@example.org").await;
    let csrf = DashboardAuth::csrf_token(&viewer);
    let r = w
        .post_form(
            "/dashboard/environment",
            Some(&viewer),
            &[("environment", "dev"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(
        r.status(),
        400,
        "no shadow yet, and a viewer does not create one"
    );
    assert!(r.text().await.unwrap().contains("an owner or admin opens"));
    assert!(
        w.app
            .state
            .store
            .tenant_by_slug("root--dev")
            .await
            .unwrap()
            .is_none()
    );

    let owner = w.sign_in("owner@example.org").await;
    let csrf = DashboardAuth::csrf_token(&owner);
    let r = w
        .post_form(
            "/dashboard/environment",
            Some(&owner),
            &[("environment", "dev"), ("csrf", &csrf)],
        )
        .await;
    assert_eq!(r.status(), 303);
    let (_, me) = w.me(&owner).await;
    assert_eq!(
        me["tenant"]["slug"], "root--dev",
        "the owner's switch opened it"
    );
    let r = w
        .post_form(
            "/dashboard/environment",
            Some(&viewer),
            &[
                ("environment", "dev"),
                ("csrf", &DashboardAuth::csrf_token(&viewer)),
            ],
        )
        .await;
    assert_eq!(r.status(), 303, "now the viewer can look at it");
    assert_eq!(w.me(&viewer).await.1["tenant"]["environment"], "dev");
}

#[tokio::test]
async fn dashboard_auth_expired_links_and_ended_sessions_are_deleted_when_signing_in() {
    use root::platform::clock::Clock;
    use storage::DashboardSession;

    let w = world(&[], false).await;
    w.user("root", "owner@example.org", TenantRole::Owner).await;
    let store = &w.app.state.store;
    let now = w.clock.now();
    let hour = 3_600_000_000_i64;
    let link = |expires_at: Ts| DashboardLoginLink {
        id: Uuid::new_v4(),
        email: "owner@example.org".into(),
        token_hash: Uuid::new_v4().simple().to_string(),
        expires_at,
        used_at: None,
        created_at: expires_at.plus_micros(-15 * 60_000_000),
    };
    let session = |expires_at: Ts, revoked_at: Option<Ts>| DashboardSession {
        id: Uuid::new_v4(),
        email: "owner@example.org".into(),
        session_hash: Uuid::new_v4().simple().to_string(),
        tenant_id: None,
        expires_at,
        revoked_at,
        created_at: now.plus_micros(-hour),
    };
    let old_link = store
        .insert(link(now.plus_micros(-25 * hour)))
        .await
        .unwrap();
    let late_link = store.insert(link(now.plus_micros(-hour))).await.unwrap();
    let live_link = store
        .insert(link(now.plus_micros(10 * 60_000_000)))
        .await
        .unwrap();
    let expired = store
        .insert(session(now.plus_micros(-1), None))
        .await
        .unwrap();
    let revoked = store
        .insert(session(
            now.plus_micros(24 * hour),
            Some(now.plus_micros(-60_000_000)),
        ))
        .await
        .unwrap();
    let live = store
        .insert(session(now.plus_micros(48 * hour), None))
        .await
        .unwrap();
    let links = || async {
        let rows: Vec<DashboardLoginLink> = store.scan(None, Scan::all()).await.unwrap();
        rows.into_iter().map(|l| l.id).collect::<Vec<_>>()
    };
    let sessions = || async {
        let rows: Vec<DashboardSession> = store.scan(None, Scan::all()).await.unwrap();
        rows.into_iter().map(|s| s.id).collect::<Vec<_>>()
    };

    // Issuing a link deletes the link expired over a day ago and the ended
    // sessions; the link expired an hour ago (still answers "expired"),
    // the live link and the live session stay.
    w.app
        .state
        .auth
        .issue_link("owner@example.org")
        .await
        .unwrap()
        .unwrap();
    let kept = links().await;
    assert!(!kept.contains(&old_link.id));
    assert!(kept.contains(&late_link.id) && kept.contains(&live_link.id));
    assert_eq!(kept.len(), 3, "the two kept and the new one");
    assert_eq!(sessions().await, vec![live.id]);
    assert!(!sessions().await.contains(&expired.id) && !sessions().await.contains(&revoked.id));

    // Opening a session a day later: the late link is gone too, the live
    // session has not ended and stays.
    w.clock.advance_ms(24 * 3_600_000);
    let ended = store
        .insert(session(w.clock.now().plus_micros(-1), None))
        .await
        .unwrap();
    w.app
        .state
        .auth
        .open_session("owner@example.org")
        .await
        .unwrap();
    let kept = links().await;
    assert!(!kept.contains(&late_link.id));
    let left = sessions().await;
    assert!(left.contains(&live.id), "a live session stays");
    assert!(!left.contains(&ended.id), "an ended session goes");
    assert_eq!(left.len(), 2, "the live one and the new one");
}

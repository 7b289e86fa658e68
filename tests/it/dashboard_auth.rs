//! Dashboard sign-in (§14.1): magic links (single use, 15 minutes, only
//! their hash stored), the `root_session` cookie (httpOnly, SameSite=Lax,
//! 30 days, revocable), CSRF on every state-changing form, roles, the
//! environment switch and the development bypass.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use storage::{DashboardLoginLink, Scan, Store, TenantRole, TenantStore, Ts};
use uuid::Uuid;

use root::auth::{
    DashboardAuth, LINK_CALLBACKS_PER_IP_PER_MINUTE, LOGIN_LINK_TTL_MINUTES,
    LOGIN_REQUESTS_PER_EMAIL_PER_HOUR, LOGIN_REQUESTS_PER_IP_PER_MINUTE, SESSION_DAYS,
};
use root::platform::api_keys::KeyKind;

use crate::support::dashboard::{World, location, session_of, world};
use crate::support::{FakeHttp, Reply};

/// Wait (at most 10 s) until `n` mails reached the fake provider.
async fn mail_arrives(mail: &FakeHttp, n: usize) {
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

/// A client that connects from `ip` (any 127.0.0.0/8 address on Linux):
/// another machine as far as the server's socket can tell.
fn client_from(ip: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .local_address(ip.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

/// `POST /auth/login` for `email` through `client`, optionally claiming
/// `X-Forwarded-For: forwarded`.
async fn ask_link(
    w: &World,
    client: &reqwest::Client,
    email: &str,
    forwarded: Option<&str>,
) -> reqwest::Response {
    let mut req = client
        .post(w.app.url("/auth/login"))
        .form(&[("email", email)]);
    if let Some(f) = forwarded {
        req = req.header("x-forwarded-for", f);
    }
    req.send().await.unwrap()
}

fn pm_ok(mail: &FakeHttp) {
    mail.route("POST", "/email", |_| {
        Reply::json(200, &json!({"MessageID": "pm-1", "ErrorCode": 0}))
    });
}

#[tokio::test]
async fn security_m3_dev_login_and_every_browser_route_need_the_platform_host() {
    let w = world(
        &[
            ("AUTH_DEV_BYPASS", "true"),
            ("PLATFORM_BASE_URL", "http://root.example.org"),
        ],
        false,
    )
    .await;
    w.user("root", "owner@example.org", TenantRole::Owner).await;
    let owner = w.sign_in("owner@example.org").await;
    let get = |path: &str, host: &str| {
        w.http
            .get(w.app.url(path))
            .header("host", host)
            .header("cookie", format!("root_session={owner}"))
            .send()
    };

    // A DNS-rebound page gets no session from the bypass.
    let r = get("/auth/dev-login?email=owner@example.org", "evil.example")
        .await
        .unwrap();
    assert_eq!(r.status(), 421);
    assert!(session_of(&r).is_none());
    // Nor reads a dashboard page (signed in or not), the web chat, KB pages
    // or the sign-in and signup forms.
    for path in [
        "/dashboard",
        "/platform/queues",
        "/auth/login",
        "/auth/me",
        "/auth/callback?token=00",
        "/",
        "/get-started",
        "/web/root/test",
        "/kb/root/anything",
        "/assets/root/logo",
        "/static/dashboard.js",
    ] {
        for host in [
            "evil.example",
            "evil.example:4000",
            "root.example.org.evil.example",
        ] {
            let r = get(path, host).await.unwrap();
            assert_eq!(r.status(), 421, "{path} under {host}");
        }
    }
    let r = w
        .http
        .post(w.app.url("/auth/login"))
        .header("host", "evil.example")
        .form(&[("email", "owner@example.org")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 421, "POST /auth/login");

    // PLATFORM_BASE_URL's host and the loopback names pass, with any port.
    let r = get(
        "/auth/dev-login?email=owner@example.org",
        "root.example.org",
    )
    .await
    .unwrap();
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/dashboard"));
    for host in [
        "ROOT.example.org:443",
        "localhost:4000",
        "127.0.0.1",
        "[::1]:8080",
    ] {
        assert_eq!(
            get("/dashboard", host).await.unwrap().status(),
            200,
            "{host}"
        );
    }

    // Probes, webhooks and /api/v1 are called by whatever name the caller
    // uses: never 421.
    assert_eq!(get("/health", "10.0.0.7:4000").await.unwrap().status(), 200);
    assert_eq!(
        get("/api/v1/me", "evil.example").await.unwrap().status(),
        401
    );
    for path in [
        "/slack/events",
        "/slack/events/root",
        "/channels/email/inbound/platform",
        "/channels/email/inbound/some-token",
    ] {
        let r = w
            .http
            .post(w.app.url(path))
            .header("host", "hooks.internal")
            .header("content-type", "application/json")
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_ne!(r.status(), 421, "{path}");
    }
}

#[tokio::test]
async fn security_m4_a_flood_from_one_client_leaves_another_clients_sign_in_alone() {
    let w = world(&[], true).await;
    let mail = w.mail.as_ref().unwrap();
    pm_ok(mail);
    w.user("root", "owner@example.org", TenantRole::Owner).await;

    // Client A asks for 120 links for 120 different addresses.
    let a = client_from("127.0.0.2");
    let mut refused = 0;
    for i in 0..120 {
        let r = ask_link(&w, &a, &format!("x{i}@example.org"), None).await;
        match r.status().as_u16() {
            200 => {}
            429 => {
                assert!(r.headers().get("retry-after").is_some());
                refused += 1;
            }
            other => panic!("request {i}: {other}"),
        }
    }
    assert_eq!(
        refused,
        120 - LOGIN_REQUESTS_PER_IP_PER_MINUTE,
        "A is limited as one client"
    );

    // Client B still signs in with a valid link, and still gets one mailed.
    let b = client_from("127.0.0.3");
    let url = w
        .app
        .state
        .auth
        .issue_link("owner@example.org")
        .await
        .unwrap()
        .unwrap();
    let token = url.split("token=").nth(1).unwrap();
    let r = b
        .get(w.app.url(&format!("/auth/callback?token={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!((r.status().as_u16(), location(&r)), (303, "/dashboard"));
    assert!(session_of(&r).is_some(), "Set-Cookie: root_session");
    let r = ask_link(&w, &b, "owner@example.org", None).await;
    assert_eq!(r.status(), 200);
    mail_arrives(mail, 1).await;
    assert_eq!(
        mail.requests_to("/email")[0].body["To"],
        "owner@example.org"
    );
}

#[tokio::test]
async fn security_m4_link_callbacks_are_limited_per_client_apart_from_requests() {
    let w = world(&[], true).await;
    w.user("root", "owner@example.org", TenantRole::Owner).await;
    let a = client_from("127.0.0.2");
    let callback = |client: &reqwest::Client, token: &str| {
        client
            .get(w.app.url(&format!("/auth/callback?token={token}")))
            .send()
    };
    // Link requests spend nothing of the callback budget.
    for i in 0..LOGIN_REQUESTS_PER_IP_PER_MINUTE {
        let r = ask_link(&w, &a, &format!("y{i}@example.org"), None).await;
        assert_eq!(r.status(), 200);
    }
    let forged = "ab".repeat(32);
    for i in 0..LINK_CALLBACKS_PER_IP_PER_MINUTE {
        assert_eq!(callback(&a, &forged).await.unwrap().status(), 400, "{i}");
    }
    let r = callback(&a, &forged).await.unwrap();
    assert_eq!(r.status(), 429, "A guessed too often");
    // Not a token at all: refused without a lookup, whatever the budget.
    assert_eq!(callback(&a, "deadbeef").await.unwrap().status(), 400);

    // Another client's valid link is untouched.
    let url = w
        .app
        .state
        .auth
        .issue_link("owner@example.org")
        .await
        .unwrap()
        .unwrap();
    let token = url.split("token=").nth(1).unwrap();
    let r = callback(&client_from("127.0.0.3"), token).await.unwrap();
    assert_eq!(r.status(), 303);
    assert!(session_of(&r).is_some());
    // A's budget returns after a minute.
    w.clock.advance_ms(61_000);
    assert_eq!(callback(&a, &forged).await.unwrap().status(), 400);
}

#[tokio::test]
async fn security_m4_forwarded_for_counts_only_from_a_trusted_proxy() {
    // No trusted proxy (the default): the header is the client's own claim.
    let w = world(&[], true).await;
    for i in 0..LOGIN_REQUESTS_PER_IP_PER_MINUTE {
        let r = ask_link(
            &w,
            &w.http,
            &format!("a{i}@example.org"),
            Some(&format!("203.0.113.{i}")),
        )
        .await;
        assert_eq!(r.status(), 200);
    }
    let r = ask_link(&w, &w.http, "b@example.org", Some("203.0.113.200")).await;
    assert_eq!(r.status(), 429, "a new X-Forwarded-For is not a new client");

    // A trusted proxy that is not the peer changes nothing.
    let w = world(&[("ROOT_TRUSTED_PROXIES", "10.0.0.1")], true).await;
    for i in 0..LOGIN_REQUESTS_PER_IP_PER_MINUTE {
        let xff = format!("203.0.113.{i}");
        let r = ask_link(&w, &w.http, &format!("a{i}@example.org"), Some(&xff)).await;
        assert_eq!(r.status(), 200);
    }
    let r = ask_link(&w, &w.http, "b@example.org", Some("203.0.113.200")).await;
    assert_eq!(r.status(), 429);

    // Behind a trusted proxy each forwarded client has its own budget, and
    // a client cannot escape it by prepending addresses.
    let w = world(&[("ROOT_TRUSTED_PROXIES", "127.0.0.1")], true).await;
    for i in 0..LOGIN_REQUESTS_PER_IP_PER_MINUTE {
        let r = ask_link(
            &w,
            &w.http,
            &format!("a{i}@example.org"),
            Some("198.51.100.1"),
        )
        .await;
        assert_eq!(r.status(), 200);
    }
    let r = ask_link(&w, &w.http, "b@example.org", Some("198.51.100.1")).await;
    assert_eq!(r.status(), 429, "per client");
    let r = ask_link(
        &w,
        &w.http,
        "b@example.org",
        Some("192.0.2.9, 198.51.100.1"),
    )
    .await;
    assert_eq!(r.status(), 429, "the proxy's entry is the right-most");
    let r = ask_link(&w, &w.http, "b@example.org", Some("198.51.100.2")).await;
    assert_eq!(r.status(), 200, "another client");

    // One address, from many clients: 10 links an hour.
    for i in 0..LOGIN_REQUESTS_PER_EMAIL_PER_HOUR {
        let r = ask_link(
            &w,
            &w.http,
            "victim@example.org",
            Some(&format!("192.0.2.{i}")),
        )
        .await;
        assert_eq!(r.status(), 200);
    }
    let r = ask_link(&w, &w.http, "victim@example.org", Some("192.0.2.100")).await;
    assert_eq!(r.status(), 429, "per address");
    assert!(r.headers().get("retry-after").is_some());
}

#[tokio::test]
async fn security_l5_allowlisted_and_unknown_addresses_answer_without_waiting_for_mail() {
    let w = world(&[], true).await;
    let mail = w.mail.as_ref().unwrap();
    // A provider that does not answer until the test lets it.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let g = gate.clone();
    mail.route("POST", "/email", move |_| {
        Reply::gated(
            g.clone(),
            Reply::json(200, &json!({"MessageID": "pm-1", "ErrorCode": 0})),
        )
    });
    w.user("root", "admin@example.org", TenantRole::Admin).await;
    let mut pages = Vec::new();
    for email in ["admin@example.org", "stranger@example.org"] {
        let started = Instant::now();
        let r = tokio::time::timeout(
            Duration::from_secs(1),
            w.post_form("/auth/login", None, &[("email", email)]),
        )
        .await
        .unwrap_or_else(|_| panic!("{email}: the answer waited for the mail provider"));
        assert!(started.elapsed() < Duration::from_secs(1), "{email}");
        assert_eq!(r.status(), 200, "{email}");
        let page = r.text().await.unwrap();
        pages.push(page.replace(email, "ADDRESS"));
    }
    assert_eq!(pages[0], pages[1], "the same page for both");

    // The allowlisted address still gets its mail, once the provider answers.
    mail_arrives(mail, 1).await;
    gate.add_permits(10);
    let sent = mail.requests_to("/email");
    assert_eq!(sent.len(), 1, "only the allowlisted address is mailed");
    assert_eq!(sent[0].body["To"], "admin@example.org");
    let text = sent[0].body["TextBody"].as_str().unwrap();
    assert!(text.contains("/auth/callback?token="), "{text}");
}

#[tokio::test(flavor = "current_thread")]
async fn security_l5_a_sign_in_mail_that_fails_is_logged_at_warn_without_the_link() {
    let (out, _guard) = crate::support::logs::capture(tracing::Level::WARN);
    let w = world(&[], true).await;
    let mail = w.mail.as_ref().unwrap();
    mail.route("POST", "/email", |_| {
        Reply::json(
            422,
            &json!({"ErrorCode": 406, "Message": "You tried to send to a recipient that has been marked as inactive."}),
        )
    });
    w.user("root", "admin@example.org", TenantRole::Admin).await;
    // tracing's per-callsite interest is process-global: another test's
    // thread may race this thread-local subscriber for it, so ask again a
    // few times until the line is seen.
    let mut line = None;
    for attempt in 1..=5 {
        let r = w
            .post_form("/auth/login", None, &[("email", "admin@example.org")])
            .await;
        assert_eq!(r.status(), 200, "the browser hears nothing of the failure");
        mail_arrives(mail, attempt).await;
        for _ in 0..50 {
            line = out
                .text()
                .lines()
                .find(|l| l.contains("sign-in link could not be mailed"))
                .map(str::to_string);
            if line.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        if line.is_some() {
            break;
        }
        tracing::callsite::rebuild_interest_cache();
    }
    let line = line.unwrap_or_else(|| panic!("no WARN line in {}", out.text()));
    assert!(
        line.contains("WARN") && line.contains("admin@example.org"),
        "{line}"
    );
    let logged = out.text();
    assert!(
        !logged.contains("token=") && !logged.contains("/auth/callback"),
        "{logged}"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn security_m3_the_dev_bypass_is_announced_at_every_start() {
    let (out, _guard) = crate::support::logs::capture(tracing::Level::WARN);
    let mut seen = false;
    for _ in 0..5 {
        let w = world(&[("AUTH_DEV_BYPASS", "true")], false).await;
        // The warning is written before the server accepts connections.
        assert_eq!(w.get("/health", None).await.status(), 200);
        if out.text().contains("AUTH_DEV_BYPASS=true") {
            seen = true;
            break;
        }
        tracing::callsite::rebuild_interest_cache();
    }
    assert!(seen, "{}", out.text());
    let logged = out.text();
    let line = logged
        .lines()
        .find(|l| l.contains("AUTH_DEV_BYPASS=true"))
        .unwrap();
    assert!(
        line.contains("WARN") && line.contains("Loopback only"),
        "{line}"
    );
}

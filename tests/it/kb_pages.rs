//! Knowledge pages in a browser (§14.2, §10.5): a public page rendered
//! (sanitized, canonical link, ETag / 304), private and unknown pages the
//! same 404, and a private link bound to the first browser that opens it —
//! the same browser reads it again, a second cookie jar is refused, an
//! expired link is gone.

use root::platform::api_keys::KeyKind;
use serde_json::json;
use sha2::{Digest, Sha256};
use storage::{KnowledgePage, Principal, Store, Tenant, TenantStore, WebLinkToken, key};
use uuid::Uuid;

use crate::support::{TestApp, mint_key};

async fn world() -> (TestApp, Tenant, String) {
    let app = TestApp::spawn().await;
    let t = app
        .state
        .store
        .create_tenant(Tenant::new("acme", "Acme Club"))
        .await
        .unwrap();
    let k = mint_key(&app.state.store, "acme", KeyKind::Live).await;
    (app, t, k)
}

async fn put(app: &TestApp, key: &str, slug: &str, public: bool) -> KnowledgePage {
    let r = app
        .post_json(
            "/api/v1/kb/pages",
            Some(key),
            &json!({"slug": slug, "title": format!("Page {slug}"), "is_public": public,
                    "author_name": "Ada", "knowledge_date": "2026-11-30",
                    "content_html": "<h2>Hours</h2><p>Open <b>8am</b>.</p><script>alert(1)</script>"}),
        )
        .await;
    assert_eq!(r.status(), 201);
    let tenant = app
        .state
        .store
        .tenant_by_slug("acme")
        .await
        .unwrap()
        .unwrap();
    app.state
        .store
        .find_unique(
            Some(tenant.id),
            KnowledgePage::SLUG_KEY,
            storage::key().str(slug),
        )
        .await
        .unwrap()
        .unwrap()
}

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn kb_public_pages_render_and_private_ones_are_not_found() {
    let (app, _t, api) = world().await;
    let public = put(&app, &api, "hours", true).await;
    let id = public.public_id.clone().unwrap();
    let r = app.get(&format!("/kb/acme/{id}"), None).await;
    assert_eq!(r.status(), 200);
    let etag = r.headers()["etag"].to_str().unwrap().to_string();
    assert_eq!(r.headers()["cache-control"], "public, max-age=300");
    let html = r.text().await.unwrap();
    assert!(
        html.contains("<title>Page hours — Acme Club</title>"),
        "{html}"
    );
    assert!(
        html.contains("<b>8am</b>") && !html.contains("<script>"),
        "{html}"
    );
    assert!(html.contains(&format!(
        "rel=\"canonical\" href=\"{}/kb/acme/{id}\"",
        app.state.config.platform_base_url.trim_end_matches('/')
    )));
    assert!(html.contains("Ada · 2026-11-30"));
    let again = app
        .client
        .get(app.url(&format!("/kb/acme/{id}")))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);

    let private = put(&app, &api, "salaries", false).await;
    let pid = private.public_id.clone().unwrap();
    let hidden = app.get(&format!("/kb/acme/{pid}"), None).await;
    assert_eq!(hidden.status(), 404);
    let hidden = hidden.text().await.unwrap();
    let unknown = app.get("/kb/acme/no-such-page", None).await;
    assert_eq!(unknown.status(), 404);
    assert_eq!(unknown.text().await.unwrap(), hidden, "one 404 for both");
    assert_eq!(
        app.get(&format!("/kb/nobody/{id}"), None).await.status(),
        404
    );
}

/// Security review L-8: every `/kb/…` answer, page or error, carries a CSP
/// without script, frame or form, and `nosniff`.
#[tokio::test]
async fn security_l8_kb_pages_send_csp_and_nosniff() {
    let (app, _t, api) = world().await;
    let public = put(&app, &api, "hours", true).await;
    let id = public.public_id.clone().unwrap();
    for (path, status) in [
        (format!("/kb/acme/{id}"), 200),
        (format!("/kb/acme/{id}"), 200),
        ("/kb/acme/no-such-page".to_string(), 404),
    ] {
        let r = app.get(&path, None).await;
        assert_eq!(r.status(), status, "{path}");
        assert_eq!(
            r.headers()["content-security-policy"],
            "default-src 'none'; img-src 'self' https: data:; style-src 'unsafe-inline'; frame-ancestors 'none'"
        );
        assert_eq!(r.headers()["x-content-type-options"], "nosniff");
        if status == 200 {
            let html = r.text().await.unwrap();
            assert!(
                html.contains("<b>8am</b>") && !html.contains("<script>"),
                "{html}"
            );
        }
    }
    assert_eq!(
        root::web::kb_pages::KB_PAGE_CSP,
        "default-src 'none'; img-src 'self' https: data:; style-src 'unsafe-inline'; frame-ancestors 'none'"
    );
}

#[tokio::test]
async fn kb_private_links_bind_to_the_first_browser() {
    let (app, t, api) = world().await;
    let page = put(&app, &api, "salaries", false).await;
    let pid = page.public_id.clone().unwrap();
    let stored: KnowledgePage = app
        .state
        .store
        .find_unique(Some(t.id), KnowledgePage::SLUG_KEY, key().str("salaries"))
        .await
        .unwrap()
        .unwrap();
    let now = app.state.clock.now();
    let member = app
        .state
        .store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            ref_: "member-1".into(),
            tier: "member".into(),
            created_at: now,
            updated_at: now,
            ..Principal::default()
        })
        .await
        .unwrap();
    let token = "a".repeat(64);
    let link = app
        .state
        .store
        .insert(WebLinkToken {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            token_hash: hex::encode(Sha256::digest(token.as_bytes())),
            knowledge_page_id: stored.id,
            principal_id: member.id,
            browser_session_id: None,
            expires_at: now.plus_micros(30 * 86_400 * 1_000_000),
            created_at: now,
            last_used_at: None,
        })
        .await
        .unwrap();
    let url = |q: &str| app.url(&format!("/kb/acme/{pid}{q}"));
    let mine = browser();

    // First open: a session cookie, and off to a token-free address.
    let first = mine
        .get(url(&format!("?token={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(first.status(), 303);
    let cookie = first.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.starts_with("root_kb_session=")
            && cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    assert!(cookie.contains("Max-Age=7776000"));
    let location = first.headers()["location"].to_str().unwrap().to_string();
    assert_eq!(location, format!("/kb/acme/{pid}?link={}", link.id));
    assert!(!location.contains(&token));
    let session = cookie.split(';').next().unwrap().to_string();
    let read = mine
        .get(app.url(&location))
        .header("cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status(), 200);
    assert_eq!(read.headers()["cache-control"], "private, no-store");
    assert!(read.text().await.unwrap().contains("Page salaries"));
    // The same browser with the token again: sent on, no new cookie.
    let again = mine
        .get(url(&format!("?token={token}")))
        .header("cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 303);
    assert!(again.headers().get("set-cookie").is_none());

    // Another browser: refused, with the token and with the link id.
    let theirs = browser();
    let r = theirs
        .get(url(&format!("?token={token}")))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(r.text().await.unwrap().contains("issued to someone else"));
    let r = theirs
        .get(app.url(&location))
        .header("cookie", "root_kb_session=forged")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403);

    // Expired: gone, even for its own browser.
    let mut expired: WebLinkToken = app
        .state
        .store
        .get(Some(t.id), key().uuid(link.id))
        .await
        .unwrap()
        .unwrap();
    expired.expires_at = now;
    app.state.store.update(expired).await.unwrap();
    let r = mine
        .get(app.url(&location))
        .header("cookie", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 410);
}

#[tokio::test]
async fn kb_link_api_issues_bare_urls_and_personal_links_that_open() {
    let (app, t, api) = world().await;
    let public = put(&app, &api, "hours", true).await;
    put(&app, &api, "salaries", false).await;
    let now = app.state.clock.now();
    app.state
        .store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            ref_: "member-1".into(),
            tier: "member".into(),
            created_at: now,
            updated_at: now,
            ..Principal::default()
        })
        .await
        .unwrap();
    let link = |body: serde_json::Value| {
        let app = &app;
        let api = api.clone();
        async move {
            let r = app.post_json("/api/v1/kb/link", Some(&api), &body).await;
            let status = r.status().as_u16();
            (status, r.json::<serde_json::Value>().await.unwrap())
        }
    };
    let (s, v) = link(json!({"identifier": "hours"})).await;
    assert_eq!(s, 200, "{v}");
    assert!(
        v["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/kb/acme/{}", public.public_id.unwrap()))
    );
    assert_eq!(
        (v["public"].clone(), v["expires_at"].clone()),
        (json!(true), json!(null))
    );
    let (s, v) = link(json!({"identifier": "salaries"})).await;
    assert_eq!(s, 400, "{v}");
    let (s, _) = link(json!({"identifier": "nope", "principal_ref": "member-1"})).await;
    assert_eq!(s, 404);
    let (s, v) =
        link(json!({"identifier": "/kb/acme/salaries", "principal_ref": "member-1"})).await;
    assert_eq!(s, 200, "{v}");
    assert!(
        v["expires_at"].is_string() || v["expires_at"].is_number(),
        "{v}"
    );
    let url = v["url"].as_str().unwrap();
    let path = &url[url.find("/kb/").unwrap()..];
    let first = browser().get(app.url(path)).send().await.unwrap();
    assert_eq!(first.status(), 303, "the personal link opens (and binds)");
}

//! Dashboard pages (§14.2) as handlers: what each page shows, who may
//! change what (CSRF first, then the role: a viewer reads only), bad form
//! values re-rendered with the field's error, and every user-supplied
//! string escaped — pages parsed with a real HTML parser.

use storage::TenantRole;

use crate::support::dashboard::{World, injected_scripts, location, texts, world};

const XSS: &str = "<script>alert(1)</script>";

async fn api_me(w: &World, key: &str) -> u16 {
    w.http
        .get(w.app.url("/api/v1/me"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .status()
        .as_u16()
}

#[tokio::test]
async fn dashboard_pages_api_keys_mint_once_revoke_and_refuse_viewers() {
    let w = world(&[], false).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;

    // Bad input keeps what was typed and says why.
    let r = w
        .post_form(
            "/api-keys",
            Some(&owner),
            &[("csrf", &csrf), ("name", "  ")],
        )
        .await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert_eq!(texts(&page, "#name-error").len(), 1);

    // Minting shows the raw key once; the list shows the escaped name.
    let name = format!("CI {XSS}");
    let r = w
        .post_form(
            "/api-keys",
            Some(&owner),
            &[("csrf", &csrf), ("name", &name)],
        )
        .await;
    assert_eq!(r.status(), 200);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    let raw = texts(&page, "#minted-key").pop().expect("the key is shown");
    assert!(raw.starts_with("rpk_live_"), "{raw}");
    assert_eq!(injected_scripts(&page), 0, "the key name is text");
    assert_eq!(texts(&page, "#keys .key-name"), vec![name.clone()]);
    assert_eq!(api_me(&w, &raw).await, 200, "the minted key works");
    let (status, again) = w.page("/api-keys", &owner).await;
    assert_eq!(status, 200);
    assert!(texts(&again, "#minted-key").is_empty(), "shown once only");
    assert!(!again.html().contains(&raw));

    // A viewer sees the list without forms and cannot mint or revoke.
    let (_, seen) = w.page("/api-keys", &viewer).await;
    assert_eq!(texts(&seen, "#keys .key-name"), vec![name]);
    assert!(texts(&seen, "form#mint").is_empty());
    let r = w
        .post_form(
            "/api-keys",
            Some(&viewer),
            &[("csrf", &viewer_csrf), ("name", "mine")],
        )
        .await;
    assert_eq!(r.status(), 403);
    let action = crate::support::dashboard::attrs(&again, "#keys form", "action")
        .pop()
        .unwrap();
    let r = w
        .post_form(&action, Some(&viewer), &[("csrf", &viewer_csrf)])
        .await;
    assert_eq!(r.status(), 403);
    assert_eq!(api_me(&w, &raw).await, 200, "the viewer changed nothing");

    // Revoking needs the owner's CSRF token, then the key is refused.
    let r = w
        .post_form(&action, Some(&owner), &[("csrf", &viewer_csrf)])
        .await;
    assert_eq!(r.status(), 403, "another session's token");
    let r = w.post_form(&action, Some(&owner), &[("csrf", &csrf)]).await;
    assert_eq!(
        (r.status().as_u16(), location(&r)),
        (303, "/api-keys?done=key-revoked")
    );
    assert_eq!(api_me(&w, &raw).await, 401);
    let (_, after) = w.page("/api-keys?done=key-revoked", &owner).await;
    assert_eq!(texts(&after, "p.message").len(), 1);
    assert!(
        texts(&after, "#keys form").is_empty(),
        "nothing left to revoke"
    );
    let unknown = format!("/api-keys/{}/revoke", uuid::Uuid::new_v4());
    let r = w
        .post_form(&unknown, Some(&owner), &[("csrf", &csrf)])
        .await;
    assert_eq!(r.status(), 404);
}

#[tokio::test]
async fn dashboard_pages_assets_are_embedded_and_the_csp_forbids_inline_code() {
    let w = world(&[], false).await;
    let (owner, _) = w.signed_in(TenantRole::Owner).await;
    let r = w.get("/dashboard", Some(&owner)).await;
    let csp = r.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    assert!(
        csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"),
        "{csp}"
    );
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert_eq!(injected_scripts(&page), 0);
    assert!(texts(&page, "style").is_empty(), "no inline styles");
    for (path, kind) in [
        ("/static/dashboard.css", "text/css"),
        ("/static/dashboard.js", "text/javascript"),
    ] {
        let r = w.get(path, None).await;
        assert_eq!(r.status(), 200);
        assert!(
            r.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
        let etag = r.headers()["etag"].to_str().unwrap().to_string();
        let again = w
            .http
            .get(w.app.url(path))
            .header("if-none-match", &etag)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), 304);
    }
}

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

#[tokio::test]
async fn dashboard_pages_knowledge_editor_creates_previews_searches_and_deletes() {
    let w = world(&[], false).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;
    let (status, empty) = w.page("/knowledge/edit", &owner).await;
    assert_eq!(status, 200);
    assert_eq!(texts(&empty, "form#editor").len(), 1);

    let title = format!("Parking rules {XSS}");
    let content = format!("Park in the **courtyard** after six. {XSS}");
    let form = |action: &'static str| {
        vec![
            ("csrf", csrf.clone()),
            ("title", title.clone()),
            ("format", "markdown".to_string()),
            ("content", content.clone()),
            ("action", action.to_string()),
        ]
    };
    let post = |fields: Vec<(&'static str, String)>, session: String| {
        let w = &w;
        async move {
            let pairs: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
            w.post_form("/knowledge/save", Some(&session), &pairs).await
        }
    };

    // Preview renders sanitised HTML and keeps every typed value.
    let r = post(form("preview"), owner.clone()).await;
    assert_eq!(r.status(), 200);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert_eq!(texts(&page, "#preview strong"), vec!["courtyard"]);
    assert_eq!(
        injected_scripts(&page),
        0,
        "no script from the title or the content"
    );
    assert_eq!(
        crate::support::dashboard::attrs(&page, "#title", "value"),
        vec![title.clone()]
    );
    assert_eq!(texts(&page, "#content"), vec![content.clone()]);
    let (_, list) = w.page("/knowledge", &owner).await;
    assert!(
        texts(&list, "#pages .page-title").is_empty(),
        "a preview saves nothing"
    );

    // A viewer cannot save; the owner can, and search finds the page.
    assert_eq!(post(form("save"), viewer.clone()).await.status(), 403);
    let mut foreign = form("save");
    foreign[0].1 = viewer_csrf.clone();
    assert_eq!(post(foreign, owner.clone()).await.status(), 403);
    let r = post(form("save"), owner.clone()).await;
    assert_eq!(
        (r.status().as_u16(), location(&r)),
        (303, "/knowledge?done=page-saved")
    );
    let (_, list) = w.page("/knowledge?done=page-saved", &owner).await;
    assert_eq!(texts(&list, "#pages .page-title"), vec![title.clone()]);
    assert_eq!(injected_scripts(&list), 0);
    let slug = texts(&list, "#pages code").pop().unwrap();
    assert_eq!(slug, "parking-rules-script-alert-1-script");
    let (_, found) = w.page("/knowledge?q=courtyard", &viewer).await;
    assert_eq!(texts(&found, "#results .result-title"), vec![title.clone()]);

    // The same title again is a slug clash: 422, the field's error, values kept.
    let r = post(form("save"), owner.clone()).await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert_eq!(texts(&page, "#slug-error").len(), 1);
    assert_eq!(texts(&page, "#content"), vec![content.clone()]);

    // Editing keeps the slug; an empty title is refused.
    let (_, editor) = w
        .page(&format!("/knowledge/edit?slug={slug}"), &owner)
        .await;
    assert_eq!(
        crate::support::dashboard::attrs(&editor, "#slug", "readonly").len(),
        1
    );
    let edit = |title: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("original_slug", slug.clone()),
            ("title", title.to_string()),
            ("format", "html".to_string()),
            ("content", "<p>Park on the street.</p>".to_string()),
            ("action", "save".to_string()),
        ]
    };
    let edit_long = |title: &str| {
        let mut f = edit(title);
        f[4].1 = "<p>Park on the street after six o'clock.</p>".into();
        f
    };
    let r = post(edit(" "), owner.clone()).await;
    assert_eq!(r.status(), 422);
    let r = post(edit("Parking"), owner.clone()).await;
    assert_eq!(
        location(&r),
        "/knowledge?done=page-saved-too-short",
        "under 20 chars of text"
    );
    let (_, said) = w.page(location(&r), &owner).await;
    assert!(texts(&said, "p.message")[0].contains("under 20 characters"));
    let r = post(edit_long("Parking"), owner.clone()).await;
    assert_eq!(location(&r), "/knowledge?done=page-saved");
    let (_, found) = w.page("/knowledge?q=street", &owner).await;
    assert_eq!(texts(&found, "#results .result-title"), vec!["Parking"]);

    // Delete: viewers cannot; the owner's delete empties search.
    let del = |c: &str| vec![("csrf", c.to_string()), ("slug", slug.clone())];
    let pairs = del(&viewer_csrf);
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(
        w.post_form("/knowledge/delete", Some(&viewer), &pairs)
            .await
            .status(),
        403
    );
    let pairs = del(&csrf);
    let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = w.post_form("/knowledge/delete", Some(&owner), &pairs).await;
    assert_eq!(location(&r), "/knowledge?done=page-deleted");
    let (_, found) = w.page("/knowledge?q=street", &owner).await;
    assert!(texts(&found, "#results .result-title").is_empty());
    let r = w.post_form("/knowledge/delete", Some(&owner), &pairs).await;
    assert_eq!(r.status(), 404);
}

//! `/agent` (§14.2, §4.5): the identity form (validated, mirrored across the
//! live community and its dev shadow) and prompt overrides — an addition
//! appended to the built-in text, every save kept, a diff per version,
//! reset back to the built-in text.

use storage::{RootPromptVersion, Scan, Store, TenantRole, TenantStore};

use root::platform::api_keys::KeyKind;

use crate::support::dashboard::{attrs, injected_scripts, location, texts, world};

const XSS: &str = "<script>alert(1)</script>";

#[tokio::test]
async fn dashboard_agent_identity_is_validated_and_mirrored_to_the_dev_shadow() {
    let w = world(&[], false).await;
    crate::support::mint_key(&w.app.state.store, "root", KeyKind::Dev).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;
    let form = |c: &str, tz: &str| {
        vec![
            ("csrf", c.to_string()),
            ("agent_name", format!("Ada {XSS}")),
            ("timezone", tz.to_string()),
            ("persona", "You are the guild's helper.".to_string()),
            ("agent_character", String::new()),
        ]
    };
    let post = |session: &str, f: Vec<(&'static str, String)>| {
        let pairs: Vec<(String, String)> = f.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        let req = w
            .http
            .post(w.app.url("/agent"))
            .header("cookie", format!("root_session={session}"))
            .form(&pairs);
        async move { req.send().await.unwrap() }
    };
    assert_eq!(
        post(&viewer, form(&viewer_csrf, "Europe/Berlin"))
            .await
            .status(),
        403
    );
    let r = post(&owner, form(&csrf, "Mars/Olympus")).await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert_eq!(texts(&page, "#timezone-error").len(), 1);
    assert_eq!(
        attrs(&page, "#agent_name", "value"),
        vec![format!("Ada {XSS}")]
    );
    assert_eq!(injected_scripts(&page), 0);
    let r = post(&owner, form(&csrf, "Europe/Berlin")).await;
    assert_eq!(location(&r), "/agent?done=agent-saved");

    let store = &w.app.state.store;
    let live = store.tenant_by_slug("root").await.unwrap().unwrap();
    let dev = store.tenant_by_slug("root--dev").await.unwrap().unwrap();
    assert_eq!(live.agent_name, format!("Ada {XSS}"));
    assert_eq!(live.timezone, "Europe/Berlin");
    assert_eq!(live.settings.0["persona"], "You are the guild's helper.");
    assert_eq!(dev.agent_name, live.agent_name, "the identity is mirrored");
    assert_eq!(dev.settings.0["persona"], live.settings.0["persona"]);
    let (_, page) = w.page("/agent", &viewer).await;
    assert_eq!(
        attrs(&page, "#agent_name", "readonly").len(),
        1,
        "a viewer reads"
    );
    assert_eq!(injected_scripts(&page), 0);
}

#[tokio::test]
async fn dashboard_agent_prompt_additions_keep_every_version_and_reset() {
    let w = world(&[], false).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;
    let path = "/agent/prompts/shared.system.base";
    let (status, page) = w.page(path, &viewer).await;
    assert_eq!(status, 200);
    assert!(
        !texts(&page, "#default")[0].is_empty(),
        "the built-in text is shown"
    );
    assert_eq!(w.page("/agent/prompts/no.such.key", &owner).await.0, 404);
    let r = w
        .post_form(
            path,
            Some(&viewer),
            &[("csrf", &viewer_csrf), ("content", "x"), ("action", "save")],
        )
        .await;
    assert_eq!(r.status(), 403);

    let first = format!("Always answer in English. {XSS}");
    let r = w
        .post_form(
            path,
            Some(&owner),
            &[("csrf", &csrf), ("content", &first), ("action", "save")],
        )
        .await;
    assert_eq!(location(&r), format!("{path}?done=prompt-saved"));
    // Versions are ordered by when they were saved.
    w.clock.advance_ms(1_000);
    let r = w
        .post_form(
            path,
            Some(&owner),
            &[
                ("csrf", &csrf),
                ("content", "Always answer in French."),
                ("action", "save"),
            ],
        )
        .await;
    assert_eq!(r.status(), 303);
    let (_, page) = w.page(path, &owner).await;
    assert_eq!(texts(&page, "#content"), vec!["Always answer in French."]);
    assert!(texts(&page, "#effective")[0].ends_with("\n\nAlways answer in French."));
    assert_eq!(texts(&page, "#versions tbody tr").len(), 2);
    assert_eq!(injected_scripts(&page), 0);
    let (_, listing) = w.page("/agent", &owner).await;
    assert_eq!(texts(&listing, "#prompts .tag.warn").len(), 1);

    // The newest version's changes against the one before.
    let newest = attrs(&page, "#versions a", "href")[0].clone();
    let (_, page) = w.page(&newest, &owner).await;
    assert_eq!(texts(&page, "#diff .del"), vec![format!("- {first}")]);
    assert_eq!(
        texts(&page, "#diff .add"),
        vec!["+ Always answer in French."]
    );

    // Reset: back to the built-in text, and the history keeps the reset.
    w.clock.advance_ms(1_000);
    let r = w
        .post_form(
            path,
            Some(&owner),
            &[("csrf", &csrf), ("content", "ignored"), ("action", "reset")],
        )
        .await;
    assert_eq!(location(&r), format!("{path}?done=prompt-reset"));
    let (_, page) = w.page(path, &owner).await;
    assert_eq!(texts(&page, "#content"), vec![""]);
    assert_eq!(texts(&page, "#effective"), texts(&page, "#default"));
    assert_eq!(texts(&page, "#versions .tag"), vec!["reset"]);
    let t = w.tenant("root").await;
    let versions: Vec<RootPromptVersion> = w
        .app
        .state
        .store
        .scan(Some(t.id), Scan::all())
        .await
        .unwrap();
    assert_eq!(versions.len(), 3);
}

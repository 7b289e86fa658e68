//! `/integrations` and `/channels` (§14.2, §7, §8): roles and CSRF, escaping,
//! 422 with the field's error and typed values kept, secrets shown only
//! once (on register / rotate, on a generated email secret), and every
//! change read back through the API.

use root::channels::web::web_token;
use root::platform::api_keys::KeyKind;
use serde_json::{Value, json};
use storage::{ChannelType, Store, TenantChannel, TenantRole, key};
use testkit::stub::StubBackend;

use crate::slack_admin::{SECRET_1, TEAM, TOKEN_1, fake_slack_auth};
use crate::support::dashboard::{attrs, injected_scripts, location, texts, world};
use crate::support::fake_http::FakeHttp;
use crate::support::mint_key;

const XSS: &str = "<script>alert(1)</script>";

#[tokio::test]
async fn dashboard_integrations_register_refresh_override_rotate_disable() {
    let stub = StubBackend::start("not-yet-known-0123456789")
        .await
        .unwrap();
    stub.set_manifest(json!({
        "protocol": "root-int/1",
        "name": "stub",
        "tools": [{"name": "lookup", "description": format!("Find {XSS}"),
                   "parameters": {"type": "object"}}],
    }));
    let w = world(&[("ROOT_ALLOW_PRIVATE_FETCH", "true")], false).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;
    let api_key = mint_key(&w.app.state.store, "root", KeyKind::Live).await;
    let api_list = || async {
        let r = w.app.get("/api/v1/integrations", Some(&api_key)).await;
        assert_eq!(r.status(), 200);
        r.json::<Value>().await.unwrap()
    };

    // A viewer reads, without forms, and may not change anything.
    let (status, page) = w.page("/integrations", &viewer).await;
    assert_eq!(status, 200);
    assert!(texts(&page, "#register").is_empty());
    assert_eq!(texts(&page, "#endpoints td:first-child")[0], "manifest");
    let form = |c: &str| {
        vec![
            ("csrf", c.to_string()),
            ("name", "stub".to_string()),
            ("base_url", stub.base_url().to_string()),
        ]
    };
    let post = |path: String, session: &str, f: Vec<(&'static str, String)>| {
        let req = w
            .http
            .post(w.app.url(&path))
            .header("cookie", format!("root_session={session}"))
            .form(&f);
        async move { req.send().await.unwrap() }
    };
    assert_eq!(
        post("/integrations".into(), &viewer, form(&viewer_csrf))
            .await
            .status(),
        403
    );
    assert_eq!(
        post("/integrations".into(), &owner, form(""))
            .await
            .status(),
        403
    );
    assert_eq!(
        post("/integrations".into(), &owner, form(&viewer_csrf))
            .await
            .status(),
        403
    );

    // Bad values: 422, the field's error, what was typed.
    let mut bad = form(&csrf);
    bad[1].1 = format!("Bad {XSS}");
    let r = post("/integrations".into(), &owner, bad).await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert!(texts(&page, "#register-error")[0].starts_with("name"));
    assert_eq!(attrs(&page, "#name", "value"), vec![format!("Bad {XSS}")]);
    assert_eq!(attrs(&page, "#base_url", "value"), vec![stub.base_url()]);
    assert_eq!(injected_scripts(&page), 0);
    let mut bad = form(&csrf);
    bad.push(("endpoint_paths", "{nope".into()));
    let r = post("/integrations".into(), &owner, bad).await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert!(texts(&page, "#register-error")[0].starts_with("endpoint_paths"));
    assert!(
        api_list().await["integrations"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Register: the secret is shown once, on the answer.
    let r = post("/integrations".into(), &owner, form(&csrf)).await;
    assert_eq!(r.status(), 200);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    let secret = texts(&page, "#signing-secret")[0].clone();
    assert_eq!(secret.len(), 64);
    let listed = api_list().await;
    assert_eq!(listed["integrations"][0]["name"], "stub");
    assert_eq!(listed["integrations"][0]["status"], "pending");
    for path in ["/integrations", "/integrations/stub"] {
        for session in [&owner, &viewer] {
            let (status, page) = w.page(path, session).await;
            assert_eq!(status, 200);
            assert!(
                !page.html().contains(&secret),
                "{path}: the secret once only"
            );
        }
    }
    let r = post("/integrations".into(), &owner, form(&csrf)).await;
    assert_eq!(r.status(), 422, "a taken name");

    // Refresh through the stub that now knows the secret.
    stub.set_secret(secret.clone());
    let r = post(
        "/integrations/stub/refresh".into(),
        &owner,
        vec![("csrf", csrf.clone())],
    )
    .await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/integrations/stub?done=manifest-refreshed");
    let (_, page) = w.page("/integrations/stub", &owner).await;
    assert_eq!(texts(&page, "#status"), vec!["active"]);
    assert_eq!(texts(&page, ".tool-name"), vec!["lookup"]);
    assert_eq!(injected_scripts(&page), 0);
    assert!(
        texts(&page, ".tool-description")[0].contains(XSS),
        "escaped, shown as text"
    );
    let (_, page) = w.page("/integrations", &viewer).await;
    assert_eq!(texts(&page, ".tool-count"), vec!["1"]);
    let (_, page) = w.page("/integrations/stub", &viewer).await;
    assert!(
        texts(&page, "form.override").is_empty(),
        "viewers get no forms"
    );
    assert_eq!(api_list().await["integrations"][0]["status"], "active");

    // Tool overrides: a bad channel is a 422 on that tool's form.
    let over = |channels: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("description", format!("Look up {XSS}")),
            ("channels", channels.to_string()),
            ("tiers", "member, __admin__".to_string()),
            ("admin_only", "yes".to_string()),
        ]
    };
    let r = post(
        "/integrations/stub/tools/lookup".into(),
        &owner,
        over("slack, pigeon"),
    )
    .await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert!(texts(&page, ".override-error")[0].contains("pigeon"));
    assert_eq!(
        attrs(&page, "form.override input[name=channels]", "value"),
        vec!["slack, pigeon"]
    );
    assert_eq!(injected_scripts(&page), 0);
    let mut viewer_over = over("slack");
    viewer_over[0].1 = viewer_csrf.clone();
    let r = post(
        "/integrations/stub/tools/lookup".into(),
        &viewer,
        viewer_over,
    )
    .await;
    assert_eq!(r.status(), 403);
    let r = post(
        "/integrations/stub/tools/lookup".into(),
        &owner,
        over("slack web"),
    )
    .await;
    assert_eq!(r.status(), 303);
    let listed = api_list().await;
    assert_eq!(
        listed["integrations"][0]["tool_overrides"],
        json!({"lookup": {"removed": false, "description": format!("Look up {XSS}"),
            "channels": ["slack", "web"], "tiers": ["member", "__admin__"], "admin_only": true}})
    );
    let (_, page) = w.page("/integrations/stub", &owner).await;
    assert_eq!(injected_scripts(&page), 0);
    assert!(texts(&page, ".effective")[0].contains("channels: slack, web"));
    let r = post(
        "/integrations/stub/tools/lookup".into(),
        &owner,
        vec![("csrf", csrf.clone()), ("clear", "1".into())],
    )
    .await;
    assert_eq!(r.status(), 303);
    assert_eq!(
        api_list().await["integrations"][0]["tool_overrides"],
        json!({})
    );

    // Rotate: a new secret, once.
    let r = post(
        "/integrations/stub/rotate-secret".into(),
        &owner,
        vec![("csrf", csrf.clone())],
    )
    .await;
    assert_eq!(r.status(), 200);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    let rotated = texts(&page, "#signing-secret")[0].clone();
    assert_ne!(rotated, secret);
    let (_, page) = w.page("/integrations/stub", &owner).await;
    assert!(!page.html().contains(&rotated));
    assert!(!api_list().await.to_string().contains(&rotated));

    // Disable.
    let r = post(
        "/integrations/stub/disable".into(),
        &viewer,
        vec![("csrf", viewer_csrf.clone())],
    )
    .await;
    assert_eq!(r.status(), 403);
    let r = post(
        "/integrations/stub/disable".into(),
        &owner,
        vec![("csrf", csrf.clone())],
    )
    .await;
    assert_eq!(r.status(), 303);
    assert_eq!(api_list().await["integrations"][0]["status"], "disabled");
    let (status, _) = w.page("/integrations/nope", &owner).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn dashboard_channels_slack_email_and_web_chat() {
    let slack = FakeHttp::start().await;
    fake_slack_auth(&slack);
    let api = slack.url("/api");
    let w = world(
        &[
            ("SLACK_API_BASE_URL", api.as_str()),
            ("PLATFORM_EMAIL_DOMAIN", "mail.example.com"),
        ],
        false,
    )
    .await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;
    let api_key = mint_key(&w.app.state.store, "root", KeyKind::Live).await;
    let t = w.tenant("root").await;
    let post = |path: &'static str, session: &str, f: Vec<(&'static str, String)>| {
        let req = w
            .http
            .post(w.app.url(path))
            .header("cookie", format!("root_session={session}"))
            .form(&f);
        async move { req.send().await.unwrap() }
    };

    // Viewers read the manifest, get no forms and may not post.
    let (status, page) = w.page("/channels", &viewer).await;
    assert_eq!(status, 200);
    assert!(texts(&page, "form#slack-form, form#email-form, form#web-form").is_empty());
    let shown: Value = serde_json::from_str(&texts(&page, "#slack-manifest")[0]).unwrap();
    let r = w
        .app
        .get("/api/v1/channels/slack/manifest", Some(&api_key))
        .await;
    assert_eq!(
        shown,
        r.json::<Value>().await.unwrap(),
        "the API's manifest"
    );
    let slack_form = |c: &str, token: &str, team: &str| {
        vec![
            ("csrf", c.to_string()),
            ("bot_token", token.to_string()),
            ("signing_secret", SECRET_1.to_string()),
            ("team_id", team.to_string()),
        ]
    };
    assert_eq!(
        post(
            "/channels/slack",
            &viewer,
            slack_form(&viewer_csrf, TOKEN_1, "")
        )
        .await
        .status(),
        403
    );
    assert_eq!(
        post("/channels/slack", &owner, slack_form("", TOKEN_1, ""))
            .await
            .status(),
        403
    );
    assert_eq!(
        post(
            "/channels/slack",
            &owner,
            slack_form(&viewer_csrf, TOKEN_1, "")
        )
        .await
        .status(),
        403
    );
    assert_eq!(
        post(
            "/channels/web",
            &viewer,
            vec![("csrf", viewer_csrf.clone())]
        )
        .await
        .status(),
        403
    );
    assert_eq!(
        post(
            "/channels/email",
            &viewer,
            vec![
                ("csrf", viewer_csrf.clone()),
                ("mode", "platform_alias".into())
            ]
        )
        .await
        .status(),
        403
    );

    // Slack: bad values re-render with the field's error, secrets not echoed.
    let r = post("/channels/slack", &owner, slack_form(&csrf, TOKEN_1, XSS)).await;
    assert_eq!(r.status(), 422);
    let html = r.text().await.unwrap();
    let page = scraper::Html::parse_document(&html);
    assert!(texts(&page, "#slack-error")[0].starts_with("team_id"));
    assert_eq!(attrs(&page, "#team_id", "value"), vec![XSS]);
    assert_eq!(injected_scripts(&page), 0);
    assert!(!html.contains(TOKEN_1) && !html.contains(SECRET_1));
    let r = post(
        "/channels/slack",
        &owner,
        slack_form(&csrf, "xoxb-revoked", ""),
    )
    .await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert!(texts(&page, "#slack-error")[0].contains("invalid_auth"));
    let r = post("/channels/slack", &owner, slack_form(&csrf, TOKEN_1, "")).await;
    assert_eq!(r.status(), 303);
    assert_eq!(location(&r), "/channels?done=slack-saved");
    let row: TenantChannel = w
        .app
        .state
        .store
        .find_unique(
            Some(t.id),
            TenantChannel::TYPE_KEY,
            key().str(ChannelType::Slack.as_str()),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.secrets.expose().0["bot_token"], TOKEN_1);
    for session in [&owner, &viewer] {
        let (_, page) = w.page("/channels", session).await;
        assert_eq!(texts(&page, "#slack-team"), vec![TEAM]);
        assert!(!page.html().contains(TOKEN_1) && !page.html().contains(SECRET_1));
    }

    // Email: 422s keep what was typed; generated secrets are shown once.
    let email = |mode: &str, alias: &str, url: &str| {
        vec![
            ("csrf", csrf.clone()),
            ("mode", mode.to_string()),
            ("alias", alias.to_string()),
            ("outbound_webhook_url", url.to_string()),
        ]
    };
    let r = post("/channels/email", &owner, email("platform_alias", XSS, "")).await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert!(texts(&page, "#email-error")[0].starts_with("alias"));
    assert_eq!(attrs(&page, "#alias", "value"), vec![XSS]);
    assert_eq!(injected_scripts(&page), 0);
    let r = post("/channels/email", &owner, email("byo_webhook", "", "")).await;
    assert_eq!(r.status(), 422);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert!(texts(&page, "#email-error")[0].starts_with("outbound_webhook_url"));
    assert_eq!(texts(&page, "#mode option[selected]"), vec!["byo_webhook"]);
    let hook = "https://hooks.example.org/mail?key=hook-credential";
    let r = post("/channels/email", &owner, email("byo_webhook", "", hook)).await;
    assert_eq!(r.status(), 200);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    let inbound = texts(&page, "#inbound-url")[0].clone();
    let signing = texts(&page, "#outbound-secret")[0].clone();
    assert!(inbound.contains("/channels/email/inbound/"));
    let (_, page) = w.page("/channels", &owner).await;
    let html = page.html();
    assert!(
        !html.contains(&inbound) && !html.contains(&signing) && !html.contains("hook-credential")
    );
    assert!(texts(&page, "#email-state")[0].contains("https://hooks.example.org/mail"));
    // The API reads back what the page saved: the inbound token is kept.
    let r = w
        .http
        .put(w.app.url("/api/v1/channels/email"))
        .bearer_auth(&api_key)
        .json(&json!({"mode": "byo_webhook", "outbound_webhook_url": hook}))
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["created"], false, "{v}");
    assert!(
        v["inbound_url"].is_null() && v["outbound_signing_secret"].is_null(),
        "{v}"
    );
    let r = post(
        "/channels/email",
        &owner,
        email("platform_alias", "root-team", ""),
    )
    .await;
    assert_eq!(r.status(), 303);
    let (_, page) = w.page("/channels", &viewer).await;
    assert_eq!(
        texts(&page, "#email-address"),
        vec!["root-team@mail.example.com"]
    );

    // Web chat: owners see the shared link; the API's rotation replaces it.
    let r = post("/channels/web", &owner, vec![("csrf", csrf.clone())]).await;
    assert_eq!(r.status(), 303);
    let token = web_token(&w.app.state.store, t.id).await.unwrap().unwrap();
    let (_, page) = w.page("/channels", &owner).await;
    assert!(texts(&page, "#web-chat-link")[0].ends_with(&format!("token={token}")));
    let (_, page) = w.page("/channels", &viewer).await;
    assert!(texts(&page, "#web-chat-link").is_empty());
    assert!(
        !page.html().contains(&token),
        "viewers do not get the token"
    );
    let r = w
        .http
        .put(w.app.url("/api/v1/channels/web"))
        .bearer_auth(&api_key)
        .send()
        .await
        .unwrap();
    let v: Value = r.json().await.unwrap();
    let (_, page) = w.page("/channels", &owner).await;
    assert_eq!(
        texts(&page, "#web-chat-link"),
        vec![v["url"].as_str().unwrap().to_string()]
    );
}

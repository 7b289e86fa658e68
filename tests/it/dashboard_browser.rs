//! The dashboard in a real (headless) Chromium (§14): dev-login → the
//! overview draws its chart → a knowledge page written in the editor is
//! found by search → the admin chat streams an answer from the scripted
//! model → a minted API key works → sign out. Each step leaves a
//! screenshot under `target/browser-screenshots/` (CI artifacts; the
//! README's pictures).

use std::sync::Arc;

use serde_json::Value;
use storage::{
    Channel, ConversationLog, Direction, Store, TenantRole, TenantStore, TenantUser, Ts,
};
use uuid::Uuid;

use crate::support::TestApp;
use crate::support::browser::Browser;
use crate::support::fake_http::Reply;
use crate::support::fake_llm::{FakeLlm, sse_text, tool_calls};

const OWNER: &str = "owner@example.org";

async fn seed(app: &TestApp) {
    let store = &app.state.store;
    let t = store.tenant_by_slug("root").await.unwrap().unwrap();
    store
        .insert(TenantUser {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            email: OWNER.into(),
            role: TenantRole::Owner,
            created_at: Ts::now(),
        })
        .await
        .unwrap();
    // Some days of traffic for the chart.
    for (day, n) in [(1, 3), (2, 5), (4, 2), (6, 7)] {
        for i in 0..n {
            let mut row = ConversationLog::new(t.id, Channel::Slack, Direction::Inbound);
            row.message_text = Some(format!("question {i}"));
            row.message_at = Ts::now().plus_micros(-(day * 86_400 + i) * 1_000_000);
            store.insert(row).await.unwrap();
        }
    }
}

#[tokio::test]
async fn dashboard_in_chromium_signs_in_writes_searches_chats_mints_and_signs_out() {
    let Some(browser) = Browser::launch("dashboard_in_chromium").await else {
        return;
    };
    let llm = FakeLlm::start().await;
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("SEARCH_LLM_RERANK", "false"),
        ("AUTH_DEV_BYPASS", "true"),
    ])
    .await;
    seed(&app).await;
    browser.window(1280, 900).await;

    // Sign in (the development bypass) and land on the overview's chart.
    browser
        .goto(&app.url(&format!("/auth/dev-login?email={OWNER}")))
        .await;
    let bars = browser
        .wait_for(
            "the chart",
            "return document.querySelectorAll('svg rect.bar').length || null",
        )
        .await;
    assert_eq!(bars, 31, "one bar per day of the 30-day window");
    let drawn = browser
        .eval("return [...document.querySelectorAll('svg rect.bar')].filter(r => r.getBBox().height > 0).length")
        .await;
    assert_eq!(drawn, 4, "the four days with traffic");
    browser.screenshot("dashboard-01-overview").await;

    // Write a page in the editor; search finds it.
    browser.goto(&app.url("/knowledge/edit")).await;
    browser.type_into("#title", "Bike storage").await;
    browser
        .type_into(
            "#content",
            "Bikes go in the **courtyard shed**; the code is on the noticeboard.",
        )
        .await;
    browser.click("button[value=preview]").await;
    browser
        .wait_for(
            "the preview",
            "const s = document.querySelector('#preview strong'); return s && s.textContent",
        )
        .await;
    browser.screenshot("dashboard-02-editor").await;
    browser.click("button[value=save]").await;
    browser
        .wait_for(
            "the saved notice",
            "return location.search.includes('done=page-saved') || null",
        )
        .await;
    browser.type_into("#q", "shed").await;
    browser.click("#search button").await;
    let found = browser
        .wait_for(
            "a search result",
            "const r = document.querySelector('#results .result-title'); return r && r.textContent",
        )
        .await;
    assert_eq!(found, "Bike storage");
    browser.screenshot("dashboard-03-knowledge-search").await;

    // The admin chat streams the turn: a tool, then the answer.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    llm.json(tool_calls(
        None,
        &[("c1", "search_knowledge_base", r#"{"query":"bikes"}"#)],
    ))
    .json(tool_calls(
        None,
        &[("c2", "search_knowledge_base", r#"{"query":"shed"}"#)],
    ))
    .then(Reply::gated(
        gate.clone(),
        Reply::sse(sse_text(&["Bikes go in ", "the courtyard shed."])),
    ));
    browser.goto(&app.url("/chat")).await;
    browser.type_into("#message", "where do bikes go?").await;
    browser.click("#send").await;
    browser
        .wait_for(
            "the tool events",
            "return document.querySelectorAll('#chat-log li.tool').length >= 2 || null",
        )
        .await;
    gate.add_permits(1);
    let answer = browser
        .wait_for(
            "the answer",
            "const a = document.querySelector('#chat-log .answer'); \
             return a && a.textContent === 'Bikes go in the courtyard shed.' && a.textContent",
        )
        .await;
    assert_eq!(answer, "Bikes go in the courtyard shed.");
    browser.screenshot("dashboard-04-chat").await;

    // Mint a key; it works against the API.
    browser.goto(&app.url("/api-keys")).await;
    browser.type_into("#name", "CI deploys").await;
    browser.click("#mint button").await;
    let raw = browser
        .wait_for(
            "the minted key",
            "const k = document.querySelector('#minted-key'); return k && k.textContent",
        )
        .await;
    let raw = raw.as_str().unwrap().trim().to_string();
    browser.screenshot("dashboard-05-api-keys").await;
    let me: Value = app
        .client
        .get(app.url("/api/v1/me"))
        .bearer_auth(&raw)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(me["tenant"]["slug"], "root", "{me}");

    // Sign out: back to the sign-in page, and the dashboard is closed.
    browser.click("form[action='/auth/logout'] button").await;
    browser
        .wait_for(
            "the sign-in page",
            "return location.pathname === '/auth/login' || null",
        )
        .await;
    browser.goto(&app.url("/dashboard")).await;
    let path = browser.eval("return location.pathname").await;
    assert_eq!(path, "/auth/login");
    browser.screenshot("dashboard-06-signed-out").await;
    browser.close().await;
}

/// Wait for `script` on the page just opened, then screenshot it as `name`.
async fn check(browser: &Browser, what: &str, script: &str, name: &str) -> Value {
    let v = browser.wait_for(what, script).await;
    browser.screenshot(name).await;
    v
}

#[tokio::test]
async fn dashboard_in_chromium_walks_the_public_and_admin_pages() {
    let Some(browser) = Browser::launch("dashboard_walk_in_chromium").await else {
        return;
    };
    let app = TestApp::spawn_with(&[("AUTH_DEV_BYPASS", "true")]).await;
    seed(&app).await;
    let store = &app.state.store;
    let t = store.tenant_by_slug("root").await.unwrap().unwrap();
    store
        .insert(storage::PlatformAdmin {
            id: Uuid::new_v4(),
            email: OWNER.into(),
            created_at: Ts::now(),
        })
        .await
        .unwrap();
    let listing = storage::CommunityBuildListing {
        id: Uuid::new_v4(),
        slug: "weather".into(),
        name: "Weather".into(),
        description: Some("Forecasts for the next meetup".into()),
        tools: storage::Json(
            serde_json::json!([{"name": "forecast", "description": "Tomorrow's weather"}]),
        ),
        version: "1.2.0".into(),
        created_at: Ts::now(),
        updated_at: Ts::now(),
        ..Default::default()
    };
    store.insert(listing.clone()).await.unwrap();
    let install = store
        .insert(storage::CommunityBuildInstall {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            listing_id: listing.id,
            tools: listing.tools.clone(),
            config: storage::Json(serde_json::json!({"city": "Lisbon"})).into(),
            enabled: true,
            created_at: Ts::now(),
            updated_at: Ts::now(),
            ..Default::default()
        })
        .await
        .unwrap();
    for (i, error) in [None, Some("upstream answered 502"), None]
        .into_iter()
        .enumerate()
    {
        store
            .insert(storage::CommunityBuildToolRun {
                id: Uuid::new_v4(),
                tenant_id: t.id,
                install_id: install.id,
                tool_name: "forecast".into(),
                duration_ms: 180 + 40 * i as i64,
                success: error.is_none(),
                error: error.map(str::to_string),
                logs: storage::Json::empty_array(),
                created_at: Ts::now().plus_micros(-(i as i64) * 3_600_000_000),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    browser.window(1280, 900).await;

    // The public pages, before signing in.
    browser.goto(&app.url("/")).await;
    let cards = check(
        &browser,
        "the landing page's features",
        "return document.querySelectorAll('#features .card').length || null",
        "public-01-landing",
    )
    .await;
    assert_eq!(cards, 6);
    browser.goto(&app.url("/foundations")).await;
    let queues = check(
        &browser,
        "the queue list",
        "return document.querySelectorAll('#queue-list .queue-name').length || null",
        "public-02-foundations",
    )
    .await;
    assert_eq!(queues, root::queue::registry::QUEUES.len());

    // Signed in as an owner who is also a platform admin.
    browser
        .goto(&app.url(&format!("/auth/dev-login?email={OWNER}")))
        .await;
    browser
        .wait_for(
            "the overview",
            "return location.pathname === '/dashboard' || null",
        )
        .await;
    let walk: [(&str, &str, &str); 7] = [
        (
            "/team",
            "return [...document.querySelectorAll('#users td')].some(td => td.textContent.includes('owner@example.org')) || null",
            "dashboard-07-team",
        ),
        (
            "/access/matrix",
            "return document.querySelectorAll('section.surface').length || null",
            "dashboard-08-access-matrix",
        ),
        (
            "/integrations",
            "return document.querySelectorAll('#endpoints tbody tr').length || null",
            "dashboard-09-integrations",
        ),
        (
            "/channels",
            "const s = document.querySelector('#slack-status'); return s && s.textContent",
            "dashboard-10-channels",
        ),
        (
            "/traces",
            "return !!document.querySelector('#traces') || null",
            "dashboard-11-traces",
        ),
        (
            "/community-builds",
            "const n = document.querySelector('.install .build-name'); \
             return n && n.textContent.includes('Weather') && document.querySelectorAll('.install tr.run').length === 3 || null",
            "dashboard-12-community-builds",
        ),
        (
            "/platform",
            "return [...document.querySelectorAll('#communities td')].some(td => td.textContent.includes('root')) || null",
            "dashboard-13-platform",
        ),
    ];
    for (path, script, name) in walk {
        browser.goto(&app.url(path)).await;
        check(&browser, path, script, name).await;
    }
    browser.goto(&app.url("/")).await;
    let open = browser
        .wait_for(
            "the dashboard link",
            "const a = document.querySelector('#open-dashboard'); return a && a.getAttribute('href')",
        )
        .await;
    assert_eq!(open, "/dashboard");
    browser.close().await;
}

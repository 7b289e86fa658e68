//! The public pages (§14.2): `/` and `/foundations` answer without a
//! session, with the dashboard's hardening, offer sign-in or the dashboard
//! and the signup gate only when it is configured, and render the queues
//! and constants from the code. `/community-builds` (viewer+) lists this
//! community's installs only — tools, config keys (never values), the last
//! runs — and the catalog's other listings, escaped.

use scraper::{Html, Selector};
use serde_json::json;
use storage::{
    CommunityBuildInstall, CommunityBuildListing, CommunityBuildToolRun, Json, Store, TenantRole,
    Ts,
};
use uuid::Uuid;

use root::agent::constants::{MAX_PLANNING_ROUNDS, MAX_TOOL_CALLS_PER_BATCH};
use root::queue::registry::QUEUES;
use root::retrieval::params::{KNOWLEDGE_KEYWORD_LANE_LIMIT, RRF_K};

use crate::support::create_tenant;
use crate::support::dashboard::{World, attrs, injected_scripts, location, texts, world};

/// `GET path` without a session: status, CSP header, parsed page.
async fn anonymous(w: &World, path: &str) -> (u16, String, Html) {
    let resp = w.get(path, None).await;
    let status = resp.status().as_u16();
    let csp = resp
        .headers()
        .get("content-security-policy")
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (
        status,
        csp,
        Html::parse_document(&resp.text().await.unwrap()),
    )
}

fn count(page: &Html, css: &str) -> usize {
    page.select(&Selector::parse(css).unwrap()).count()
}

fn assert_hardened(csp: &str, page: &Html) {
    assert!(csp.contains("script-src 'self'"), "{csp}");
    assert!(csp.contains("style-src 'self'"), "{csp}");
    assert_eq!(count(page, "[style]"), 0, "no inline styles");
    assert_eq!(count(page, "script"), 0, "the public pages need no script");
    assert_eq!(
        attrs(page, "link[rel=stylesheet]", "href"),
        ["/static/dashboard.css"]
    );
}

#[tokio::test]
async fn public_landing_answers_anonymous_visitors_hardened_with_sign_in_and_foundations() {
    let w = world(&[], false).await;
    let (status, csp, page) = anonymous(&w, "/").await;
    assert_eq!(status, 200);
    assert_hardened(&csp, &page);
    assert_eq!(texts(&page, "h1"), ["Root"]);
    let links = attrs(&page, "a", "href");
    assert!(links.contains(&"/auth/login".to_string()), "{links:?}");
    assert!(links.contains(&"/foundations".to_string()), "{links:?}");
    assert!(!links.contains(&"/dashboard".to_string()), "{links:?}");
    assert!(
        !links.contains(&"/get-started".to_string()),
        "no signup gate configured: {links:?}"
    );
    let features = texts(&page, "#features h3").join(" | ");
    for claim in [
        "Answers members",
        "Searches",
        "Follows up",
        "Hands off",
        "own tools",
    ] {
        assert!(features.contains(claim), "{features}");
    }
}

#[tokio::test]
async fn public_landing_links_start_a_community_only_when_the_signup_gate_is_configured() {
    let secret = "c".repeat(32);
    for (vars, open) in [
        (vec![("PLATFORM_SIGNUP_CODE", "join-us")], false),
        (vec![("SESSION_COOKIE_SECRET", secret.as_str())], false),
        (
            vec![
                ("PLATFORM_SIGNUP_CODE", "join-us"),
                ("SESSION_COOKIE_SECRET", secret.as_str()),
            ],
            true,
        ),
    ] {
        let w = world(&vars, false).await;
        let (status, _, page) = anonymous(&w, "/").await;
        assert_eq!(status, 200);
        let links = attrs(&page, "a", "href");
        assert_eq!(
            links.contains(&"/get-started".to_string()),
            open,
            "{vars:?}: {links:?}"
        );
        assert_eq!(count(&page, "#start-community"), usize::from(open));
        // The code itself never reaches the page.
        assert!(!page.html().contains("join-us"));
    }
}

#[tokio::test]
async fn public_landing_offers_the_dashboard_to_a_signed_in_viewer() {
    let w = world(&[], false).await;
    let (session, _) = w.signed_in(TenantRole::Viewer).await;
    let (status, page) = w.page("/", &session).await;
    assert_eq!(status, 200);
    assert_eq!(attrs(&page, "#open-dashboard", "href"), ["/dashboard"]);
    assert_eq!(count(&page, "#sign-in"), 0);
    // A session that is not (any more) valid is an anonymous visitor.
    let (_, page) = w.page("/", "not-a-session").await;
    assert_eq!(count(&page, "#open-dashboard"), 0);
    assert_eq!(attrs(&page, "#sign-in", "href"), ["/auth/login"]);
}

#[tokio::test]
async fn public_foundations_renders_the_queue_registry_and_the_code_constants() {
    let w = world(&[], false).await;
    let (status, csp, page) = anonymous(&w, "/foundations").await;
    assert_eq!(status, 200);
    assert_hardened(&csp, &page);
    let queues = texts(&page, "#queue-list .queue-name");
    let expected: Vec<String> = QUEUES.iter().map(|q| q.name.to_string()).collect();
    assert_eq!(queues, expected, "the page lists exactly the registry");
    for (name, value) in [
        ("RRF_K", RRF_K.to_string()),
        ("MAX_PLANNING_ROUNDS", MAX_PLANNING_ROUNDS.to_string()),
        (
            "MAX_TOOL_CALLS_PER_BATCH",
            MAX_TOOL_CALLS_PER_BATCH.to_string(),
        ),
        (
            "KNOWLEDGE_KEYWORD_LANE_LIMIT",
            KNOWLEDGE_KEYWORD_LANE_LIMIT.to_string(),
        ),
    ] {
        assert_eq!(texts(&page, &format!("#const-{name} .value")), [value]);
    }
    // The prose cites the same values.
    let retrieval = texts(&page, "#step-retrieval").join(" ");
    assert!(retrieval.contains(&format!("k = {RRF_K}")), "{retrieval}");
    let agent = texts(&page, "#step-agent").join(" ");
    assert!(
        agent.contains(&format!("up to {MAX_PLANNING_ROUNDS} planning rounds")),
        "{agent}"
    );
    assert!(
        !page.html().contains("?</"),
        "an unknown constant was cited"
    );
    assert_eq!(count(&page, "#endpoints tbody tr"), 6);
    for step in [
        "channel",
        "identity",
        "gating",
        "agent",
        "retrieval",
        "delivery",
    ] {
        assert_eq!(count(&page, &format!("#step-{step}")), 1, "{step}");
    }
}

const T0: i64 = 1_780_000_000;

fn listing(
    name: &str,
    slug: &str,
    description: &str,
    tools: serde_json::Value,
) -> CommunityBuildListing {
    CommunityBuildListing {
        id: Uuid::new_v4(),
        slug: slug.into(),
        name: name.into(),
        description: Some(description.into()),
        module_source: "export default {}".into(),
        config_schema: Json::empty_object(),
        tools: Json(tools),
        version: "1.2.0".into(),
        author: Some("Ops".into()),
        created_at: Ts::from_secs(T0),
        updated_at: Ts::from_secs(T0),
    }
}

fn install(
    tenant: Uuid,
    listing: &CommunityBuildListing,
    tools: serde_json::Value,
    config: serde_json::Value,
) -> CommunityBuildInstall {
    CommunityBuildInstall {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        listing_id: listing.id,
        module_source: listing.module_source.clone(),
        tools: Json(tools),
        config: Json(config).into(),
        enabled: true,
        created_at: Ts::from_secs(T0),
        updated_at: Ts::from_secs(T0),
    }
}

fn run(
    i: &CommunityBuildInstall,
    tool: &str,
    at: i64,
    error: Option<&str>,
) -> CommunityBuildToolRun {
    CommunityBuildToolRun {
        id: Uuid::new_v4(),
        tenant_id: i.tenant_id,
        install_id: i.id,
        tool_name: tool.into(),
        principal_id: None,
        duration_ms: 40 + at,
        success: error.is_none(),
        error: error.map(str::to_string),
        logs: Json::empty_array(),
        created_at: Ts::from_secs(T0 + at),
    }
}

#[tokio::test]
async fn community_builds_lists_only_this_communitys_installs_without_config_values() {
    let w = world(&[], false).await;
    let store = &w.app.state.store;
    let root = w.tenant("root").await.id;
    let other = create_tenant(store, "other", "Other").await.tenant.id;
    let weather = listing(
        "<script>alert('name')</script>Weather",
        "weather",
        "<script>alert('desc')</script>Forecasts for meetups",
        json!([{"name": "forecast", "description": "Tomorrow's weather"}]),
    );
    let polls = listing(
        "Polls",
        "polls",
        "Quick polls",
        json!([{"name": "open_poll"}]),
    );
    let unused = listing("Badges", "badges", "Member badges", json!([]));
    for l in [&weather, &polls, &unused] {
        store.insert(l.clone()).await.unwrap();
    }
    let mine = install(
        root,
        &weather,
        json!([{"name": "forecast", "description": "<script>alert('tool')</script>Tomorrow's weather"}, {"bad": 1}]),
        json!({"zip": "ZIP-VALUE-94107", "api_token": "sk-SECRET-VALUE"}),
    );
    store.insert(mine.clone()).await.unwrap();
    for at in 0..12 {
        store
            .insert(run(&mine, &format!("run-{at}"), at, None))
            .await
            .unwrap();
    }
    store
        .insert(run(
            &mine,
            "forecast",
            100,
            Some("<script>alert('err')</script>upstream 502"),
        ))
        .await
        .unwrap();
    // Another community's install of Polls, its config and its run.
    let theirs = install(
        other,
        &polls,
        json!([{"name": "their_private_tool", "description": "x"}]),
        json!({"other_key": "OTHER-SECRET"}),
    );
    store.insert(theirs.clone()).await.unwrap();
    store
        .insert(run(&theirs, "their_run", 5, None))
        .await
        .unwrap();

    let (session, _) = w.signed_in(TenantRole::Viewer).await;
    let (status, page) = w.page("/community-builds", &session).await;
    assert_eq!(status, 200);
    let html = page.html();
    assert_eq!(count(&page, "section.install"), 1, "only root's install");
    assert_eq!(
        texts(&page, ".install .build-name")[0]
            .split_whitespace()
            .next(),
        Some("<script>alert('name')</script>Weather")
    );
    assert_eq!(
        texts(&page, ".install .build-description"),
        ["<script>alert('desc')</script>Forecasts for meetups"]
    );
    assert_eq!(texts(&page, ".install .tool-name"), ["forecast"]);
    assert_eq!(
        texts(&page, ".install .tool-description"),
        ["<script>alert('tool')</script>Tomorrow's weather"]
    );
    assert_eq!(texts(&page, ".install .config-key"), ["api_token", "zip"]);
    for secret in [
        "sk-SECRET-VALUE",
        "ZIP-VALUE-94107",
        "OTHER-SECRET",
        "other_key",
    ] {
        assert!(!html.contains(secret), "{secret} leaked");
    }
    for foreign in ["their_private_tool", "their_run"] {
        assert!(
            !html.contains(foreign),
            "another community's {foreign} shown"
        );
    }
    // The newest 10 runs, newest first, the failure with its (escaped) error.
    let runs = texts(&page, ".install tr.run td:nth-child(2)");
    assert_eq!(runs.len(), 10, "{runs:?}");
    assert_eq!(runs[0], "forecast");
    assert_eq!(runs[1], "run-11");
    assert_eq!(runs[9], "run-3");
    assert_eq!(
        texts(&page, ".install .run-error"),
        ["<script>alert('err')</script>upstream 502"]
    );
    // The catalog: what this community has not installed (Polls is
    // installed by the other community only).
    assert_eq!(texts(&page, "#listings .listing-name"), ["Badges", "Polls"]);
    assert_eq!(injected_scripts(&page), 0);
    assert_eq!(
        attrs(&page, "nav.pages a[aria-current=page]", "href"),
        ["/community-builds"]
    );
}

#[tokio::test]
async fn community_builds_empty_states_tell_the_truth_and_offer_no_dead_buttons() {
    let w = world(&[], false).await;
    let resp = w.get("/community-builds", None).await;
    assert_eq!(resp.status(), 303);
    assert_eq!(location(&resp), "/auth/login");
    let (member, _) = w.signed_in(TenantRole::Member).await;
    assert_eq!(
        w.get("/community-builds", Some(&member)).await.status(),
        403
    );
    let (session, _) = w.signed_in(TenantRole::Owner).await;
    let (status, page) = w.page("/community-builds", &session).await;
    assert_eq!(status, 200);
    assert_eq!(texts(&page, "#no-installs"), ["No builds are installed."]);
    let none = texts(&page, "#no-listings").join(" ");
    assert!(
        none.contains("published by the platform operator"),
        "{none}"
    );
    assert_eq!(count(&page, "main form"), 0);
    assert_eq!(count(&page, "main button"), 0);
}

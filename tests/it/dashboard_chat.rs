//! `/chat` (§14.2): an owner chats with the agent as themselves — the
//! no-script form runs the whole turn, the stream flushes the turn's events
//! as NDJSON; a viewer, a missing CSRF token and an empty message are
//! refused.

use serde_json::{Value, json};
use storage::TenantRole;

use crate::support::dashboard::{injected_scripts, texts, world};
use crate::support::fake_llm::{FakeLlm, completion, sse_text, tool_calls};

#[tokio::test]
async fn dashboard_chat_runs_the_turn_as_the_admin_with_and_without_a_script() {
    let llm = FakeLlm::start().await;
    let w = world(
        &[
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("SEARCH_LLM_RERANK", "false"),
        ],
        false,
    )
    .await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;

    assert_eq!(w.get("/chat", Some(&viewer)).await.status(), 403);
    let r = w
        .post_form(
            "/chat",
            Some(&viewer),
            &[("csrf", &viewer_csrf), ("message", "hi")],
        )
        .await;
    assert_eq!(r.status(), 403);
    let r = w
        .post_form("/chat", Some(&owner), &[("message", "hi")])
        .await;
    assert_eq!(r.status(), 403, "no CSRF token");
    let r = w
        .post_form("/chat", Some(&owner), &[("csrf", &csrf), ("message", "  ")])
        .await;
    assert_eq!(r.status(), 422);
    assert!(llm.bodies().is_empty(), "no turn ran");

    // The form path: the whole turn, rendered as text.
    llm.json(completion("Hello <b>admin</b>."));
    let r = w
        .post_form(
            "/chat",
            Some(&owner),
            &[("csrf", &csrf), ("message", "who am I? <script>x</script>")],
        )
        .await;
    assert_eq!(r.status(), 200);
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    assert_eq!(
        texts(&page, "#chat-log .answer"),
        vec!["Hello <b>admin</b>."]
    );
    assert_eq!(
        texts(&page, "#chat-log .asked"),
        vec!["who am I? <script>x</script>"]
    );
    assert_eq!(injected_scripts(&page), 0);
    let thread = crate::support::dashboard::attrs(&page, "#thread_key", "value")
        .pop()
        .unwrap();
    assert!(!thread.is_empty(), "the thread continues from the page");

    // The stream: a tool round, then the answer in pieces.
    // (two planning rounds with a tool each, then the streamed answer).
    llm.json(tool_calls(
        None,
        &[("c1", "search_knowledge_base", r#"{"query":"parking"}"#)],
    ))
    .json(tool_calls(
        None,
        &[("c2", "search_knowledge_base", r#"{"query":"bikes"}"#)],
    ))
    .sse(sse_text(&["Park outside, ", "by the gate."]));
    let resp = w
        .http
        .post(w.app.url("/chat/stream"))
        .header("cookie", format!("root_session={owner}"))
        .json(&json!({"csrf": csrf, "message": "where do I park?", "thread_key": thread}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    let events: Vec<Value> = resp
        .text()
        .await
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        [
            "phase", "tool", "tool", "tool", "tool", "phase", "answer", "answer", "done"
        ],
        "{events:?}"
    );
    let done = events.last().unwrap();
    assert_eq!(done["response"], "Park outside, by the gate.");
    assert_eq!(done["thread_key"], thread.as_str(), "the same conversation");
    // The turn ran as the admin's own email identity, in the dashboard's own
    // thread namespace (`dashboard:<identity>`, never the test chat's `web:`).
    assert!(
        thread.starts_with("dashboard:owner-") && thread.ends_with("@example.org"),
        "{thread}"
    );
    let r = w
        .http
        .post(w.app.url("/chat/stream"))
        .header("cookie", format!("root_session={owner}"))
        .json(&json!({"csrf": viewer_csrf, "message": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 403, "another session's token");
}

#[tokio::test]
async fn dashboard_traces_show_the_chat_turn_as_a_timeline() {
    let llm = FakeLlm::start().await;
    let w = world(
        &[
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("SEARCH_LLM_RERANK", "false"),
        ],
        false,
    )
    .await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, _) = w.signed_in(TenantRole::Viewer).await;
    llm.json(completion("Hello there, the guild opens at nine."));
    let r = w
        .post_form(
            "/chat",
            Some(&owner),
            &[
                ("csrf", &csrf),
                ("message", "when <script>x</script> open?"),
            ],
        )
        .await;
    let page = scraper::Html::parse_document(&r.text().await.unwrap());
    let link = crate::support::dashboard::attrs(&page, "#chat-log a", "href")
        .pop()
        .expect("the trace is linked");
    w.app.state.tracer.flush().await;

    let (status, list) = w.page("/traces", &viewer).await;
    assert_eq!(status, 200);
    assert_eq!(
        crate::support::dashboard::attrs(&list, "#traces a", "href"),
        vec![link.clone()]
    );
    let (status, trace) = w.page(&link, &viewer).await;
    assert_eq!(status, 200);
    let names = texts(&trace, "#spans .span-name");
    assert!(names.iter().any(|n| n.starts_with("llm")), "{names:?}");
    assert!(texts(&trace, "#trace-input")[0].contains("when <script>x</script> open?"));
    assert_eq!(injected_scripts(&trace), 0);
    assert_eq!(
        w.page(&format!("/traces/{}", uuid::Uuid::new_v4()), &viewer)
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn dashboard_overview_lists_runs_that_fell_back_to_a_reserved_tier() {
    let llm = FakeLlm::start().await;
    let w = world(
        &[
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("SEARCH_LLM_RERANK", "false"),
            ("ROOT_DEV_HARNESS", "true"),
        ],
        false,
    )
    .await;
    let (viewer, _) = w.signed_in(TenantRole::Viewer).await;
    let (_, page) = w.page("/dashboard", &viewer).await;
    assert_eq!(texts(&page, "#degraded .reason").len(), 0);

    // Slack trust off: an unknown Slack user runs on the reserved tier.
    let mut t = w.tenant("root").await;
    t.settings.0["access"] = json!({"slack": "integration"});
    storage::Store::update(&w.app.state.store, t).await.unwrap();
    let key = crate::support::mint_key(
        &w.app.state.store,
        "root",
        root::platform::api_keys::KeyKind::Live,
    )
    .await;
    llm.json(completion("I can search the knowledge base for you."));
    let r = w
        .http
        .post(w.app.url("/dev/simulate-message"))
        .bearer_auth(&key)
        .json(&json!({"tenant": "root", "message": "hi", "slack_user_id": "U<b>x</b>"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    w.app.state.tracer.flush().await;

    let (_, page) = w.page("/dashboard", &viewer).await;
    let reasons = texts(&page, "#degraded .reason");
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(!reasons[0].is_empty());
    let row = texts(&page, "#degraded tbody tr").pop().unwrap();
    assert!(row.contains("unresolved") && row.contains("slack"), "{row}");
    assert_eq!(injected_scripts(&page), 0);
}

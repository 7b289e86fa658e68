//! The web test chat (§8.4): the token gate (constant-time, same 403 for a
//! wrong token, a missing one, another tenant's and an unknown tenant), the
//! JSON turn, and the NDJSON stream — its first event is on the wire before
//! the model answers, then tool, answer and done events in order.

use std::sync::Arc;

use root::platform::clock::SystemClock;
use serde_json::{Value, json};
use storage::{Tenant, TenantStore};

use crate::support::TestApp;
use crate::support::fake_http::Reply;
use crate::support::fake_llm::{FakeLlm, completion, sse_text, tool_calls};

async fn world(llm: &FakeLlm) -> (TestApp, String, String) {
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("SEARCH_LLM_RERANK", "false"),
    ])
    .await;
    let mut tokens = Vec::new();
    for slug in ["acme", "other"] {
        let t = app
            .state
            .store
            .create_tenant(Tenant::new(slug, format!("{slug} club")))
            .await
            .unwrap();
        tokens.push(
            root::channels::web::rotate_web_token(&app.state.store, &SystemClock, t.id)
                .await
                .unwrap(),
        );
    }
    let other = tokens.pop().unwrap();
    (app, tokens.pop().unwrap(), other)
}

#[tokio::test]
async fn webchat_token_gate_is_the_same_for_every_wrong_answer() {
    let llm = FakeLlm::start().await;
    let (app, token, other) = world(&llm).await;
    let ok = app
        .get(&format!("/web/acme/test?token={token}"), None)
        .await;
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.headers()["cache-control"], "no-store");
    let html = ok.text().await.unwrap();
    assert!(html.contains("acme club — test chat"));
    assert!(
        html.contains(r#"<img src="/assets/acme/logo" alt="""#),
        "{html}"
    );
    assert!(!html.contains("https://"), "no external assets");
    let mut denied = Vec::new();
    for path in [
        format!("/web/acme/test?token={other}"),
        "/web/acme/test".to_string(),
        format!("/web/acme/test?token={}", &token[..10]),
        format!("/web/nobody/test?token={token}"),
    ] {
        let r = app.get(&path, None).await;
        assert_eq!(r.status(), 403, "{path}");
        denied.push(r.text().await.unwrap());
    }
    assert!(denied.windows(2).all(|w| w[0] == w[1]), "one page for all");
    for path in ["/web/acme/messages", "/web/acme/messages/stream"] {
        let r = app
            .post_json(
                &format!("{path}?token={other}"),
                None,
                &json!({"message": "hi"}),
            )
            .await;
        assert_eq!(r.status(), 403);
    }
    assert!(llm.bodies().is_empty(), "no turn ran");
}

#[tokio::test]
async fn webchat_json_turn_answers_and_continues_the_thread() {
    let llm = FakeLlm::start().await;
    let (app, token, _) = world(&llm).await;
    llm.json(completion("Hello from Root."))
        .json(completion("Still here."));
    // Bearer works as well as the query parameter.
    let r = app
        .post_json(
            "/web/acme/messages",
            Some(&token),
            &json!({"message": "hi <b>there</b>", "email": "Visitor@Example.org"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["response"], "Hello from Root.");
    assert_eq!(v["principal"]["ref"], "email:visitor@example.org");
    let thread = v["thread_key"].as_str().unwrap().to_string();
    let r = app
        .post_json(
            &format!("/web/acme/messages?token={token}"),
            None,
            &json!({"message": "again", "thread_key": thread, "email": "visitor@example.org"}),
        )
        .await;
    let v: Value = r.json().await.unwrap();
    assert_eq!(v["thread_key"], thread.as_str());
    // The second call saw the first exchange as history.
    let second = llm.bodies()[1]["messages"].to_string();
    assert!(second.contains("Hello from Root."), "{second}");
    // Over the size limit: 400 naming it.
    let r = app
        .post_json(
            &format!("/web/acme/messages?token={token}"),
            None,
            &json!({"message": "x".repeat(16_001)}),
        )
        .await;
    assert_eq!(r.status(), 400);
}

#[tokio::test]
async fn webchat_stream_flushes_phase_tool_answer_done_in_order() {
    let llm = FakeLlm::start().await;
    let (app, token, _) = world(&llm).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    // Two planning rounds with a tool each (not streamed), then the
    // streamed answer round.
    let plan = |id: &str, q: &str| {
        tool_calls(
            None,
            &[(
                id,
                "search_knowledge_base",
                &format!(r#"{{"query":"{q}"}}"#),
            )],
        )
    };
    llm.then(Reply::gated(
        gate.clone(),
        Reply::raw_json(200, plan("c1", "parking")),
    ))
    .json(plan("c2", "bikes"))
    .sse(sse_text(&["Park ", "in the ", "courtyard."]));
    let mut resp = app
        .client
        .post(app.url(&format!("/web/acme/messages/stream?token={token}")))
        .json(&json!({"message": "where do I park?"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/x-ndjson");
    // The first event arrives while the model is still held.
    let first = resp.chunk().await.unwrap().unwrap();
    let first: Value =
        serde_json::from_slice(first.split(|b| *b == b'\n').next().unwrap()).unwrap();
    assert_eq!(first, json!({"type": "phase", "phase": "thinking"}));
    gate.add_permits(1);
    let mut rest = Vec::new();
    while let Some(c) = resp.chunk().await.unwrap() {
        rest.extend_from_slice(&c);
    }
    let events: Vec<Value> = rest
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| serde_json::from_slice(l).unwrap())
        .collect();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| match e["type"].as_str().unwrap() {
            "tool" => format!("tool:{}", e["status"].as_str().unwrap()),
            "phase" => format!("phase:{}", e["phase"].as_str().unwrap()),
            t => t.to_string(),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "tool:started",
            "tool:finished",
            "tool:started",
            "tool:finished",
            "phase:answering",
            "answer",
            "answer",
            "answer",
            "done"
        ],
        "{events:?}"
    );
    assert_eq!(events[0]["name"], "search_knowledge_base");
    let done = events.last().unwrap();
    assert_eq!(done["response"], "Park in the courtyard.");
    assert_eq!(
        done["tool_calls"],
        json!([{"name": "search_knowledge_base", "success": true},
               {"name": "search_knowledge_base", "success": true}])
    );
    assert!(done["thread_key"].is_string());
}

#[tokio::test]
async fn webchat_token_rotation_through_the_api_retires_the_old_one() {
    let llm = FakeLlm::start().await;
    let (app, old, _) = world(&llm).await;
    let key = crate::support::mint_key(
        &app.state.store,
        "acme",
        root::platform::api_keys::KeyKind::Live,
    )
    .await;
    let r = app
        .client
        .put(app.url("/api/v1/channels/web"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    let new = v["token"].as_str().unwrap();
    assert_eq!(new.len(), 48);
    assert!(
        v["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/web/acme/test?token={new}"))
    );
    assert_eq!(
        app.get(&format!("/web/acme/test?token={old}"), None)
            .await
            .status(),
        403
    );
    assert_eq!(
        app.get(&format!("/web/acme/test?token={new}"), None)
            .await
            .status(),
        200
    );
}

/// A client that leaves mid-stream stops receiving; the turn still
/// finishes and its exchange is logged.
#[tokio::test]
async fn webchat_a_disconnected_stream_still_logs_the_exchange() {
    let llm = FakeLlm::start().await;
    let (app, token, _) = world(&llm).await;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    llm.then(Reply::gated(
        gate.clone(),
        Reply::raw_json(200, completion("Logged anyway.")),
    ));
    let mut resp = app
        .client
        .post(app.url(&format!("/web/acme/messages/stream?token={token}")))
        .json(&json!({"message": "are you there?"}))
        .send()
        .await
        .unwrap();
    assert!(resp.chunk().await.unwrap().is_some(), "the first event");
    drop(resp);
    gate.add_permits(1);
    let tenant = app
        .state
        .store
        .tenant_by_slug("acme")
        .await
        .unwrap()
        .unwrap();
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let logs: Vec<storage::ConversationLog> =
            storage::Store::scan(&app.state.store, Some(tenant.id), storage::Scan::all())
                .await
                .unwrap();
        if logs.iter().any(|l| {
            l.direction == storage::Direction::Outbound
                && l.message_text.as_deref() == Some("Logged anyway.")
        }) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the exchange was not logged: {logs:?}"
        );
        tokio::task::yield_now().await;
    }
}

//! The web test chat in a real (headless) Chromium (§8.4): the page sends a
//! message, shows the turn's progress while the model is still held, renders
//! the streamed answer, keeps markup in the member's message as text, and
//! continues the thread on the next message.

use std::sync::Arc;

use root::platform::clock::SystemClock;
use serde_json::Value;
use storage::{Tenant, TenantStore};

use crate::support::TestApp;
use crate::support::browser::Browser;
use crate::support::fake_http::Reply;
use crate::support::fake_llm::{FakeLlm, completion, tool_calls};

#[tokio::test]
async fn webchat_page_in_chromium_streams_the_answer_and_continues_the_thread() {
    let Some(browser) = Browser::launch("webchat_page_in_chromium").await else {
        return;
    };
    let llm = FakeLlm::start().await;
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("SEARCH_LLM_RERANK", "false"),
    ])
    .await;
    let tenant = app
        .state
        .store
        .create_tenant(Tenant::new("acme", "Acme club"))
        .await
        .unwrap();
    let token = root::channels::web::rotate_web_token(&app.state.store, &SystemClock, tenant.id)
        .await
        .unwrap();

    // Round one plans a search; round two (the answer) is held until the
    // page has shown the turn at work.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    llm.json(tool_calls(
        None,
        &[("c1", "search_knowledge_base", r#"{"query":"parking"}"#)],
    ))
    .then(Reply::gated(
        gate.clone(),
        Reply::raw_json(200, completion("Park in the courtyard.")),
    ))
    .json(completion("You are welcome."));

    browser
        .goto(&app.url(&format!("/web/acme/test?token={token}")))
        .await;
    let title = browser.eval("return document.title").await;
    assert_eq!(title, "Acme club — test chat");
    browser
        .type_into("#message", "where do I <b>park</b>?")
        .await;
    browser.click("#send").await;

    // While the answer round is held the page shows the tool at work and
    // has not rendered an answer yet.
    let status = browser
        .wait_for(
            "the tool status",
            "const s = document.getElementById('status').textContent; \
             return s.startsWith('Using') || s.startsWith('Answering') ? s : null",
        )
        .await;
    assert!(
        status == "Using search_knowledge_base…" || status == "Answering…",
        "{status}"
    );
    let bot = browser
        .eval("return document.querySelector('#log li.bot').textContent")
        .await;
    assert_eq!(bot, "", "no answer before the model answered");
    gate.add_permits(1);

    let answer = browser
        .wait_for(
            "the streamed answer",
            "const b = document.querySelectorAll('#log li.bot'); \
             const s = document.getElementById('status').textContent; \
             return b.length === 1 && s === '' ? b[0].textContent : null",
        )
        .await;
    assert_eq!(answer, "Park in the courtyard.");
    // The member's markup is shown as typed, never rendered.
    let mine = browser
        .eval(
            "const m = document.querySelector('#log li.me'); \
             return [m.textContent, m.children.length]",
        )
        .await;
    assert_eq!(mine, serde_json::json!(["where do I <b>park</b>?", 0]));

    // A second message continues the same conversation.
    browser.type_into("#message", "thanks!").await;
    browser.click("#send").await;
    browser
        .wait_for(
            "the second answer",
            "const b = document.querySelectorAll('#log li.bot'); \
             return b.length === 2 && b[1].textContent === 'You are welcome.'",
        )
        .await;
    let last: &Value = &llm.bodies()[2];
    let history = last["messages"].to_string();
    assert!(
        history.contains("Park in the courtyard."),
        "the second turn saw the first exchange: {history}"
    );
    browser.close().await;
}

//! LLM failures: retries with the spec delays, exhaustion, client errors,
//! no provider configured.

use super::*;

#[tokio::test]
async fn agent_llm_retries_transient_errors_with_the_spec_delays() {
    assert_eq!(root::agent::constants::LLM_CALL_RETRY_DELAYS_MS, [0, 5000]);
    let h = harness().await;
    h.fake
        .then(error(503))
        .then(error(429))
        .json(completion(ANSWER));
    let started = std::time::Instant::now();
    let run = h.run(&NoTools, AgentOptions::default()).await;
    assert_eq!(run.text, ANSWER);
    assert!(run.success);
    assert_eq!(h.fake.bodies().len(), 3, "3 attempts in total");
    assert!(
        started.elapsed() >= Duration::from_millis(40),
        "second delay waited"
    );
    assert!(h.notices.0.lock().unwrap().is_empty());
    // Settings built from the client carry the spec's delays.
    assert_eq!(
        AgentSettings::from_client(
            &ChatClient::from_config(
                &Config::from_vars(Vec::<(String, String)>::new())
                    .unwrap()
                    .llm,
                UsageRecorder::new(Arc::new(h.store.clone()), Arc::new(SystemClock)),
            )
            .unwrap()
        )
        .retry_delays,
        vec![Duration::ZERO, Duration::from_millis(5000)]
    );
}

#[tokio::test]
async fn agent_llm_exhausted_notifies_admins_and_returns_the_canned_failure() {
    let h = harness().await;
    h.fake.then(error(502)).then(error(503)).then(error(504));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(h.fake.bodies().len(), 3);
    assert_eq!(run.outcome, AgentOutcome::LlmUnavailable);
    assert_eq!(run.text, phrases::LLM_UNAVAILABLE_REPLY);
    assert!(!run.success);
    let notices = h.notices.0.lock().unwrap();
    assert_eq!(notices.len(), 1);
    assert_eq!(notices[0].kind, "agent.llm_unavailable");
    assert!(notices[0].body.contains(&h.tenant.id().to_string()));
    assert!(notices[0].body.contains("Trace:"));
}

#[tokio::test]
async fn agent_client_errors_are_not_retried() {
    let h = harness().await;
    h.fake.then(error(400));
    let run = h.run(&NoTools, AgentOptions::default()).await;
    assert_eq!(h.fake.bodies().len(), 1);
    assert_eq!(run.outcome, AgentOutcome::LlmUnavailable);
    assert_eq!(h.notices.0.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn agent_without_a_provider_reports_not_configured_at_once() {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let cfg = Config::from_vars(Vec::<(String, String)>::new()).unwrap();
    let usage = UsageRecorder::new(Arc::new(store.clone()), Arc::new(SystemClock));
    let client = ChatClient::from_config(&cfg.llm, usage).unwrap();
    let notices = RecordingSink::default();
    let kernel = AgentKernel::new(
        Arc::new(client.clone()),
        AgentSettings::from_client(&client),
        Arc::new(notices.clone()),
        Tracer::disabled(),
    );
    let run = tokio::time::timeout(
        Duration::from_secs(5),
        kernel.run(input("hi"), &NoTools, AgentOptions::default()),
    )
    .await
    .expect("no hang");
    assert_eq!(run.outcome, AgentOutcome::NotConfigured);
    assert_eq!(run.text, phrases::NOT_CONFIGURED_REPLY);
    assert!(!run.success);
    assert!(notices.0.lock().unwrap().is_empty());
}

//! What a run leaves behind: usage rows and collector totals, the reply
//! source hook, trace spans, and the streamed answer round.

use super::*;

#[tokio::test]
async fn agent_usage_rows_and_collector_totals_cover_every_round() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(tool_calls(None, &[("c2", "search_knowledge_base", "{}")]))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let (run, totals) = collect_usage(h.run(&tools, AgentOptions::default())).await;
    assert!(run.success);
    assert_eq!(totals.llm_calls, 3);
    assert_eq!(totals.tokens, 60 + 60 + 120);
    assert!((totals.cost_usd - (1.0e-4 + 1.0e-4 + 2.5e-4)).abs() < 1e-12);
    assert_eq!(
        usage_purposes(&h).await,
        vec!["agent.planning", "agent.planning", "agent.answer"]
    );
}

#[tokio::test]
async fn agent_reply_source_usage_hook_records_refs_and_is_skipped_in_replay() {
    let h = harness().await;
    let slack_matches: Vec<Value> = (0..250)
        .map(|i| json!({"channel_id": "C1", "message_ts": format!("1700000000.{i:06}"), "text": "private words"}))
        .collect();
    let matches = slack_matches.clone();
    let tools = ScriptedTools::new()
        .tool("search_knowledge_base", |_| {
            ToolResult::ok(
                json!({"results": [{"slug": "parking"}, {"slug": "parking"}, {"slug": "hours"}]}),
            )
        })
        .tool("search_slack_messages", move |_| {
            ToolResult::ok(json!({"matches": matches.clone()}))
        });
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "search_knowledge_base", "{}"),
                ("c2", "search_slack_messages", "{}"),
            ],
        ))
        .json(tool_calls(None, &[("c3", "search_knowledge_base", "{}")]))
        .json(completion(ANSWER));
    let run = h.run(&tools, AgentOptions::default()).await;
    h.kernel.hooks_idle().await;
    let rows: Vec<ReplySourceUsage> = h
        .store
        .scan(Some(h.tenant.id()), Scan::all())
        .await
        .unwrap();
    assert_eq!(rows.len(), 200, "cap 200 refs per run");
    assert!(rows.iter().all(|r| r.run_id == run.run_id));
    let kb: Vec<&str> = rows
        .iter()
        .filter(|r| r.source_type.as_str() == "knowledge_page")
        .map(|r| r.source_ref.as_str())
        .collect();
    assert_eq!(kb.len(), 2, "deduplicated across batches: {kb:?}");
    assert!(rows.iter().any(|r| r.source_ref == "C1:1700000000.000000"));

    // Replay mode: the same run writes nothing.
    let h2 = harness().await;
    h2.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(completion(ANSWER));
    h2.run(
        &tools,
        AgentOptions {
            replay: true,
            ..AgentOptions::default()
        },
    )
    .await;
    h2.kernel.hooks_idle().await;
    let rows: Vec<ReplySourceUsage> = h2
        .store
        .scan(Some(h2.tenant.id()), Scan::all())
        .await
        .unwrap();
    assert!(rows.is_empty());
    drop(slack_matches);
}

#[tokio::test]
async fn agent_run_is_traced_with_phase_tool_and_llm_spans() {
    let mut h = harness().await;
    let cfg = Config::from_vars([
        ("OPENROUTER_BASE_URL".to_string(), h.fake.base_url.clone()),
        ("OPENROUTER_API_KEY".to_string(), "sk-or-test".to_string()),
    ])
    .unwrap();
    let tracer = Tracer::from_config(&cfg, h.store.clone(), Arc::new(SystemClock));
    let usage = UsageRecorder::new(Arc::new(h.store.clone()), Arc::new(SystemClock));
    let client = ChatClient::from_config(&cfg.llm, usage).unwrap();
    h.kernel = AgentKernel::new(
        Arc::new(client.clone()),
        AgentSettings::from_client(&client),
        Arc::new(h.notices.clone()),
        tracer.clone(),
    );
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "search_knowledge_base", "{}"),
                ("c2", "book_room", "{}"),
            ],
        ))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new()
        .tool("search_knowledge_base", found)
        .tool("book_room", |_| ToolResult::failed("No rooms left."));
    let run = h.run(&tools, AgentOptions::default()).await;
    let trace_id = run.trace_id.expect("tracing is on by default");
    tracer.flush().await;
    let view = tenancy::scope(h.tenant.clone(), tracer.get(trace_id))
        .await
        .unwrap()
        .expect("stored");
    assert_eq!(view.trace.name, "agent.run");
    assert_eq!(view.trace.llm_calls, 2);
    let names: Vec<&str> = view.spans.iter().map(|s| s.name.as_str()).collect();
    for want in [
        "planning_round_1",
        "tool:search_knowledge_base",
        "tool:book_room",
        "planning_round_2",
        "llm:agent.planning",
    ] {
        assert!(names.contains(&want), "{want} in {names:?}");
    }
    let round1 = view.span("planning_round_1").unwrap();
    let llm = view
        .spans
        .iter()
        .find(|s| s.name == "llm:agent.planning" && s.parent_span_id == Some(round1.id))
        .expect("the LLM call is a child of its round");
    assert_eq!(llm.total_tokens, 60);
    assert_eq!(
        view.span("tool:book_room").unwrap().error.as_deref(),
        Some("No rooms left.")
    );
    assert!(
        view.span("tool:search_knowledge_base")
            .unwrap()
            .error
            .is_none()
    );
    assert_eq!(view.trace.output.0["success"], json!(false));
}

#[tokio::test]
async fn agent_streams_the_answer_round_to_the_channel() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(tool_calls(None, &[("c2", "search_knowledge_base", "{}")]))
        .sse(sse_text(&[
            "Park in ",
            "lot B ",
            "behind the main building.",
        ]));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let (tx, mut rx) = tokio::sync::mpsc::channel(64);
    let run = h
        .run(
            &tools,
            AgentOptions {
                stream: Some(tx),
                ..AgentOptions::default()
            },
        )
        .await;
    assert_eq!(run.text, "Park in lot B behind the main building.");
    let mut streamed = String::new();
    while let Ok(delta) = rx.try_recv() {
        if let root::ai::chat::ChatDelta::Text(t) = delta {
            streamed.push_str(&t);
        }
    }
    assert_eq!(streamed, run.text, "only the answer round is streamed");
    let bodies = h.fake.bodies();
    assert_eq!(bodies[2]["stream"], json!(true));
    assert!(bodies[0].get("stream").is_none_or(|v| v == &json!(false)));
}

//! The planning / answer rounds: which tools each round offers, batch
//! rules, truncation of oversized tool results, the iteration limit.

use super::*;

#[tokio::test]
async fn agent_planning_rounds_offer_tools_and_the_answer_round_omits_them() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            Some("Checking two places."),
            &[
                ("c1", "search_knowledge_base", r#"{"query":"parking"}"#),
                ("c2", "search_slack_messages", r#"{"query":"parking"}"#),
            ],
        ))
        .json(tool_calls(
            None,
            &[("c3", "search_knowledge_base", r#"{"query":"lot"}"#)],
        ))
        .json(completion(ANSWER));
    // Both calls of the first batch must be in flight together.
    let tools = ScriptedTools::new()
        .tool("search_knowledge_base", found)
        .tool("search_slack_messages", found)
        .with_barrier(2);
    let run = tokio::time::timeout(
        Duration::from_secs(20),
        h.run(&tools, AgentOptions::default()),
    )
    .await
    .expect("a sequential batch would deadlock on the barrier");

    assert_eq!(run.text, ANSWER);
    assert!(run.success);
    assert_eq!(run.outcome, AgentOutcome::Answered);
    assert!(run.recoveries.is_empty());
    assert_eq!(run.plan_messages, vec!["Checking two places.".to_string()]);
    assert_eq!(run.tool_calls.len(), 3);
    assert_eq!(run.llm_calls, 3, "≤ planning rounds + 1");

    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 3);
    let offered = vec!["search_knowledge_base", "search_slack_messages"];
    assert_eq!(tools_of(&bodies[0]), offered);
    assert_eq!(tools_of(&bodies[1]), offered);
    assert!(
        bodies[2].get("tools").is_none(),
        "answer round: tools omitted"
    );
    for b in &bodies {
        assert_eq!(b["model"], "acme/planner-1");
        assert_eq!(b["temperature"], json!(0.0));
        assert_eq!(b["max_tokens"], json!(16000));
        assert_eq!(b["reasoning"], json!({"effort": "medium"}));
    }
    // One transient phase message per round, last, never accumulating.
    let s0 = system_texts(&bodies[0]);
    let s1 = system_texts(&bodies[1]);
    let s2 = system_texts(&bodies[2]);
    assert_eq!(s0.len(), 2);
    assert!(s0[1].starts_with("PLANNING PHASE (round 1 of 2)"));
    assert_eq!(s1.len(), 2);
    assert!(s1[1].starts_with("PLANNING PHASE (round 2 of 2)"));
    assert_eq!(s2.len(), 2);
    assert_eq!(s2[1], phrases::ANSWER_INSTRUCTION);
    assert_eq!(messages(&bodies[0]).last().unwrap()["role"], "system");
    // System prompt, history, the member's message, in order.
    let m0 = messages(&bodies[0]);
    assert_eq!(m0[1]["content"], "earlier question");
    assert_eq!(m0[3]["content"], "Where do I park?");
    // Round 2 sees the assistant tool-call turn and both results.
    let results = tool_messages(&bodies[1]);
    assert_eq!(results.len(), 2);
    assert_eq!(results[0]["success"], json!(true));
    assert_eq!(results[0]["data"]["results"][0]["slug"], "parking");
    assert_eq!(tool_messages(&bodies[2]).len(), 3);
}

#[tokio::test]
async fn agent_batch_rules_unknown_tool_malformed_args_and_error_detail() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "search_knowledge_base", "{not json"),
                ("c2", "drop_database", r#"{"really":true}"#),
                ("c3", "book_room", r#"{"room":"A"}"#),
            ],
        ))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new()
        .tool("search_knowledge_base", found)
        .tool("book_room", |_| ToolResult {
            success: false,
            error: Some("The room could not be booked.".into()),
            error_detail: Some("HTTP 502 from https://backend.internal/rooms".into()),
            ..ToolResult::default()
        });
    let run = h.run(&tools, AgentOptions::default()).await;

    // Malformed arguments reach the handler as {}; the unknown name never does.
    assert_eq!(
        tools.calls(),
        vec![
            ("search_knowledge_base".to_string(), json!({})),
            ("book_room".to_string(), json!({"room": "A"}))
        ]
    );
    let bodies = h.fake.bodies();
    let results = tool_messages(&bodies[1]);
    assert_eq!(
        results[1],
        json!({"success": false, "error": "Unknown tool: drop_database"})
    );
    assert_eq!(
        results[2],
        json!({"success": false, "error": "The room could not be booked."}),
        "error_detail stripped from the transcript"
    );
    let raw = bodies[1].to_string();
    assert!(!raw.contains("backend.internal"));
    // The failure note follows the batch and names both failures.
    let notes = system_texts(&bodies[1]);
    let note = notes.iter().find(|s| s.starts_with("NOTE:")).unwrap();
    assert!(note.contains("drop_database, book_room"), "{note}");
    assert!(note.contains("NOT completed"));
    // The run keeps the detail for operators.
    assert_eq!(
        run.tool_calls[2].result.error_detail.as_deref(),
        Some("HTTP 502 from https://backend.internal/rooms")
    );
}

#[tokio::test]
async fn agent_oversized_tool_result_is_deep_truncated_in_the_transcript() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "fetch_page", "{}")]))
        .json(tool_calls(None, &[("c2", "list_members", "{}")]))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new()
        .tool("fetch_page", |_| {
            ToolResult::ok(json!({"title": "Handbook", "body": "policy text ".repeat(10_000)}))
        })
        .tool("list_members", |_| {
            let members: Vec<Value> = (0..3000)
                .map(|i| json!({"id": i, "name": format!("Member {i}")}))
                .collect();
            ToolResult::ok(json!({"members": members}))
        });
    let run = h.run(&tools, AgentOptions::default()).await;
    assert!(run.tool_calls.iter().all(|c| c.truncated));
    let body = &h.fake.bodies()[2];
    let raw: Vec<&str> = messages(body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    for r in &raw {
        assert!(
            r.chars().count() <= TOOL_RESULT_TRUNCATE_BUDGET,
            "{}",
            r.len()
        );
    }
    let page: Value = serde_json::from_str(raw[0]).unwrap();
    assert_eq!(page["data"]["title"], "Handbook");
    assert!(
        page["data"]["body"]
            .as_str()
            .unwrap()
            .ends_with(STRING_TRUNCATION_MARKER)
    );
    let list: Value = serde_json::from_str(raw[1]).unwrap();
    let members = list["data"]["members"].as_array().unwrap();
    let kept = members.len() - 1;
    assert_eq!(
        members[kept],
        json!(format!("[… {} more items omitted for size]", 3000 - kept))
    );
    // The run keeps the full result.
    assert_eq!(
        run.tool_calls[1].result.data.as_ref().unwrap()["members"]
            .as_array()
            .unwrap()
            .len(),
        3000
    );
}

#[tokio::test]
async fn agent_max_iterations_sets_the_planning_rounds() {
    let h = harness().await;
    for i in 0..6 {
        let id = format!("c{i}");
        h.fake.json(tool_calls(
            None,
            &[(id.as_str(), "search_knowledge_base", "{}")],
        ));
    }
    h.fake.json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h
        .run(
            &tools,
            AgentOptions {
                max_iterations: Some(6),
                ..AgentOptions::default()
            },
        )
        .await;
    assert_eq!(run.tool_calls.len(), 6);
    assert_eq!(run.llm_calls, 7);
    let bodies = h.fake.bodies();
    assert!(system_texts(&bodies[5])[1].starts_with("PLANNING PHASE (round 6 of 6)"));
    assert!(bodies[6].get("tools").is_none());

    // max_iterations 0 still plans once: max(1, 0).
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(completion(ANSWER));
    let run = h
        .run(
            &tools,
            AgentOptions {
                max_iterations: Some(0),
                ..AgentOptions::default()
            },
        )
        .await;
    assert_eq!(run.llm_calls, 2);
    assert!(h.fake.bodies()[1].get("tools").is_none());
}

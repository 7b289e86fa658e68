//! The recovery paths A–I of the agent loop.

use super::*;

#[tokio::test]
async fn recovery_a_tool_stall_retry_nudges_once_with_tools_still_on() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(completion(""))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::ToolStallRetry]);
    assert_eq!(run.text, ANSWER);
    assert!(run.success);
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 3);
    assert_eq!(tools_of(&bodies[2]), vec!["search_knowledge_base"]);
    let sys = system_texts(&bodies[2]);
    assert!(
        sys[1].starts_with("PLANNING PHASE (round 2 of 2)"),
        "same round again"
    );
    assert_eq!(sys[2], phrases::TOOL_STALL_NUDGE);
}

#[tokio::test]
async fn recovery_b_exhausted_tools_composition_after_three_empty_same_tool_calls() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "find_member", r#"{"query":"Ann"}"#),
                ("c2", "find_member", r#"{"query":"Anne"}"#),
                ("c3", "find_member", r#"{"query":"Annie"}"#),
            ],
        ))
        .json(completion(""))
        .json(completion("👍"))
        .json(completion(
            "I checked the member directory three ways and found no one by that name.",
        ));
    let tools = ScriptedTools::new().tool("find_member", nothing);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![
            Recovery::ToolStallRetry,
            Recovery::ExhaustedToolsComposition
        ]
    );
    assert_eq!(run.outcome, AgentOutcome::Recovered);
    assert!(run.text.starts_with("I checked the member directory"));
    assert!(run.success);
    assert!(run.tool_calls.iter().all(|c| c.empty));
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 4);
    let composer = &bodies[3];
    assert_eq!(composer["model"], "acme/planner-1");
    assert_eq!(composer["temperature"], json!(0.7));
    assert!(composer.get("tools").is_none());
    let sys = system_texts(composer);
    assert!(sys[0].contains("STRICT GROUNDING"));
    let user = messages(composer)[1]["content"].as_str().unwrap();
    assert!(user.contains("find_member({\"query\":\"Annie\"}) → successful, no results"));
    let purposes = usage_purposes(&h).await;
    assert_eq!(purposes.last().unwrap(), "agent.tool-exhaustion-recovery");
}

#[tokio::test]
async fn recovery_c_best_effort_composition_sees_the_last_six_messages() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(completion(""))
        .json(completion(
            "Sources:\n• <https://kb.example/parking|Parking>",
        ))
        .json(completion(
            "Lot B is the member parking lot, behind the main building.",
        ));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![Recovery::ToolStallRetry, Recovery::BestEffortComposition]
    );
    assert!(run.text.starts_with("Lot B is the member parking lot"));
    let composer = &h.fake.bodies()[3];
    assert_eq!(composer["temperature"], json!(0.3));
    assert_eq!(composer["model"], "acme/planner-1");
    let convo = messages(composer)[1]["content"].as_str().unwrap();
    // Non-system transcript: earlier question, earlier answer, member
    // message, assistant tool call, tool result = 5 ≤ 6, all present.
    assert!(convo.contains("[member] earlier question"));
    assert!(convo.contains("[member] Where do I park?"));
    assert!(convo.contains("(called: search_knowledge_base)"));
    assert!(convo.contains("[tool result]"));
    assert_eq!(convo.matches("\n\n[").count(), 5, "{convo}");
    let purposes = usage_purposes(&h).await;
    assert_eq!(
        purposes.last().unwrap(),
        "agent.best-effort-response-recovery"
    );
}

#[tokio::test]
async fn recovery_c_best_effort_window_is_capped_at_six() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "a", "{}"), ("c2", "b", "{}")]))
        .json(tool_calls(None, &[("c3", "a", "{}"), ("c4", "b", "{}")]))
        .json(completion(""))
        .json(completion(""))
        .json(completion(
            "Here is the best answer I can give from those results.",
        ));
    let tools = ScriptedTools::new().tool("a", found).tool("b", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![Recovery::GenericEmptyRetry, Recovery::BestEffortComposition]
    );
    let composer = &h.fake.bodies()[4];
    let convo = messages(composer)[1]["content"].as_str().unwrap();
    assert_eq!(convo.matches("\n\n[").count(), 6, "{convo}");
    assert!(
        !convo.contains("earlier question"),
        "older messages are cut"
    );
}

#[tokio::test]
async fn recovery_d_missing_tool_call_retry_when_nothing_was_said_or_called() {
    let h = harness().await;
    h.fake.json(completion("  ")).json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::MissingToolCallRetry]);
    assert_eq!(run.text, ANSWER);
    assert!(run.success);
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(tools_of(&bodies[1]), vec!["search_knowledge_base"]);
    assert_eq!(
        system_texts(&bodies[1])[2],
        phrases::MISSING_TOOL_CALL_NUDGE
    );
}

#[tokio::test]
async fn recovery_e_fail_closed_after_the_retry_still_says_nothing() {
    let h = harness().await;
    h.fake.json(completion("")).json(completion("🙂"));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![Recovery::MissingToolCallRetry, Recovery::FailClosed]
    );
    assert_eq!(run.outcome, AgentOutcome::FailClosed);
    assert_eq!(run.text, phrases::FAIL_CLOSED_REPLY);
    assert!(!run.success);
    assert_eq!(h.fake.bodies().len(), 2, "no answer round, no composer");
}

#[tokio::test]
async fn recovery_f_generic_empty_retry_for_other_non_answers() {
    // No tools on this surface: a sources-only reply gets one nudge.
    let h = harness().await;
    h.fake
        .json(completion(
            "Sources:\n- [Parking](https://kb.example/parking)",
        ))
        .json(completion(ANSWER));
    let run = h.run(&NoTools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::GenericEmptyRetry]);
    assert_eq!(run.text, ANSWER);
    let bodies = h.fake.bodies();
    assert!(bodies[1].get("tools").is_none());
    assert_eq!(system_texts(&bodies[1])[2], phrases::GENERIC_EMPTY_NUDGE);
}

#[tokio::test]
async fn recovery_f_generic_empty_retry_in_the_answer_round() {
    let h = harness().await;
    h.fake
        .json(tool_calls(None, &[("c1", "search_knowledge_base", "{}")]))
        .json(tool_calls(None, &[("c2", "search_knowledge_base", "{}")]))
        .json(completion("ok"))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::GenericEmptyRetry]);
    assert_eq!(run.text, ANSWER);
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 4);
    assert!(bodies[3].get("tools").is_none(), "still the answer round");
    let sys = system_texts(&bodies[3]);
    assert_eq!(sys[1], phrases::ANSWER_INSTRUCTION);
    assert_eq!(sys[2], phrases::GENERIC_EMPTY_NUDGE);
}

#[tokio::test]
async fn recovery_g_unexecuted_plan_retry_then_the_batch_runs() {
    let h = harness().await;
    let plan = "On it — checking a few places.\n• Searching the KB\n• Scanning Slack\n• Asking who knows\n• Checking events\n• Stretching";
    h.fake
        .json(completion(plan))
        .json(tool_calls(
            Some(plan),
            &[("c1", "search_knowledge_base", "{}")],
        ))
        .json(completion(ANSWER));
    let tools = ScriptedTools::new().tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::UnexecutedPlanRetry]);
    assert_eq!(run.text, ANSWER);
    assert_eq!(run.tool_calls.len(), 1);
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 3);
    let sys = system_texts(&bodies[1]);
    assert!(sys[1].starts_with("PLANNING PHASE (round 1 of 2)"));
    assert_eq!(sys[2], phrases::UNEXECUTED_PLAN_NUDGE);
    assert_eq!(tools_of(&bodies[1]), vec!["search_knowledge_base"]);
    assert!(
        bodies[2].get("tools").is_some(),
        "round 2 is still planning"
    );
}

#[tokio::test]
async fn recovery_h_tries_b_then_c_then_the_tool_derived_fallback() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "find_member", "{}"),
                ("c2", "find_member", "{}"),
                ("c3", "find_member", "{}"),
            ],
        ))
        .json(completion(""))
        .json(completion(""))
        .json(completion("")) // B: a non-answer
        .then(error(500)); // C: fails
    let tools = ScriptedTools::new().tool("find_member", nothing);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(
        run.recoveries,
        vec![
            Recovery::ToolStallRetry,
            Recovery::ExhaustedToolsComposition,
            Recovery::BestEffortComposition,
            Recovery::ToolDerivedFallback,
        ]
    );
    assert_eq!(run.outcome, AgentOutcome::Recovered);
    assert!(
        run.text.contains("Nothing matched in: find member."),
        "{}",
        run.text
    );
    assert!(run.success, "nothing failed, nothing was found");
    let bodies = h.fake.bodies();
    assert_eq!(bodies.len(), 5, "composers are not retried");
    assert_eq!(bodies[3]["temperature"], json!(0.7));
    assert_eq!(bodies[4]["temperature"], json!(0.3));
    assert!(
        h.notices.0.lock().unwrap().is_empty(),
        "composer failure is not an outage"
    );
}

#[tokio::test]
async fn recovery_i_unresolved_failures_in_the_last_batch_mean_success_false() {
    let h = harness().await;
    h.fake
        .json(tool_calls(
            None,
            &[
                ("c1", "book_room", "{}"),
                ("c2", "search_knowledge_base", "{}"),
            ],
        ))
        .json(completion(
            "I couldn't book the room, but parking is in lot B.",
        ));
    let tools = ScriptedTools::new()
        .tool("book_room", |_| ToolResult::failed("Booking failed."))
        .tool("search_knowledge_base", found);
    let run = h.run(&tools, AgentOptions::default()).await;
    assert_eq!(run.recoveries, vec![Recovery::UnresolvedToolFailures]);
    assert!(
        !run.success,
        "text was produced, but an action did not happen"
    );
    assert_eq!(
        run.text,
        "I couldn't book the room, but parking is in lot B."
    );
}

#[tokio::test]
async fn recovery_i_a_failure_resolved_by_a_later_batch_is_success() {
    let h = harness().await;
    let attempts = Arc::new(AtomicUsize::new(0));
    let a = attempts.clone();
    h.fake
        .json(tool_calls(None, &[("c1", "book_room", "{}")]))
        .json(tool_calls(None, &[("c2", "book_room", "{}")]))
        .json(completion("Booked room A for you on the second try."));
    let tools = ScriptedTools::new().tool("book_room", move |_| {
        if a.fetch_add(1, Ordering::SeqCst) == 0 {
            ToolResult::failed("Busy, try again.")
        } else {
            ToolResult::ok(json!({"booking": "A"}))
        }
    });
    let run = h.run(&tools, AgentOptions::default()).await;
    assert!(run.success);
    assert!(run.recoveries.is_empty());
}

//! Capability-gap detection (§4.6): after a turn with a gap signal (here a
//! successful escalation), the classification runs with temperature 0 and
//! low reasoning effort under `agent.capability-gap-assessment`; a detected
//! gap opens a `missing_tool` intervention and scores the trace
//! `capability_gap`. An ordinary answered turn costs no classification.

use serde_json::{Value, json};
use storage::{HumanIntervention, InterventionCategory, Principal, Scan, Store, TenantStore};
use uuid::Uuid;

use root::platform::api_keys::KeyKind;

use crate::support::fake_http::Reply;
use crate::support::fake_llm::{FakeLlm, completion, tool_calls};
use crate::support::{TestApp, mint_key};

const LLM_PATH: &str = "/api/v1/chat/completions";

/// The model escalates "book the room" and answers; the classifier says
/// a tool is missing with `confidence`.
fn script(llm: &FakeLlm, escalate: bool, confidence: f64) {
    llm.gap_assessment(json!({
        "requires_new_tool": true,
        "requested_capability_summary": "Book a meeting room",
        "reasoning": "No booking tool exists; the member had to be escalated.",
        "confidence": confidence,
        "suggested_tool_name": "book_room",
        "implementation_notes": "Needs the room calendar API."
    }));
    llm.http.route("POST", LLM_PATH, move |req| {
        let body = req.body.to_string();
        let reply = if !escalate || body.contains("\"role\":\"tool\"") {
            completion("I've passed your booking request to the team.")
        } else {
            tool_calls(
                None,
                &[(
                    "c1",
                    "escalate_to_admin",
                    r#"{"escalation_reason":"no booking tool","user_request_summary":"book room 4 for Friday"}"#,
                )],
            )
        };
        Reply::raw_json(200, reply)
    });
}

async fn world(escalate: bool, confidence: f64) -> (TestApp, FakeLlm, String) {
    let llm = FakeLlm::start().await;
    script(&llm, escalate, confidence);
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("SEARCH_LLM_RERANK", "false"),
        ("ROOT_RUN_WORKERS", "false"),
    ])
    .await;
    let tenant = app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    app.state
        .store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            ref_: "member-7".into(),
            tier: "member".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let key = mint_key(&app.state.store, "root", KeyKind::Live).await;
    (app, llm, key)
}

async fn turn(app: &TestApp, key: &str) -> Value {
    let r = app
        .post_json(
            "/api/v1/agent/turns",
            Some(key),
            &json!({"message": "Please book room 4 for Friday", "principal": "member-7"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    app.state.turns.gaps.idle().await;
    app.state.agent.hooks_idle().await;
    app.state.tracer.flush().await;
    v
}

async fn missing_tool(app: &TestApp) -> Vec<HumanIntervention> {
    let tenant = app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    let rows: Vec<HumanIntervention> = app
        .state
        .store
        .scan(Some(tenant.id), Scan::all())
        .await
        .unwrap();
    rows.into_iter()
        .filter(|r| r.category == InterventionCategory::MissingTool)
        .collect()
}

fn classifications(llm: &FakeLlm) -> Vec<Value> {
    llm.gap_bodies()
}

#[tokio::test]
async fn capability_gap_after_an_escalation_opens_a_missing_tool_intervention_and_scores_the_trace()
{
    let (app, llm, key) = world(true, 0.9).await;
    let v = turn(&app, &key).await;
    let calls = classifications(&llm);
    assert_eq!(calls.len(), 1, "one classification for the turn");
    assert_eq!(calls[0]["temperature"], 0.0);
    assert_eq!(calls[0]["reasoning"]["effort"], "low", "{}", calls[0]);
    let input = calls[0]["messages"].to_string();
    assert!(input.contains("Please book room 4 for Friday"), "{input}");
    assert!(input.contains("escalate_to_admin"), "{input}");
    let gaps = missing_tool(&app).await;
    assert_eq!(gaps.len(), 1, "{gaps:#?}");
    assert_eq!(gaps[0].title, "Missing capability: Book a meeting room");
    let details = gaps[0].details.clone().unwrap();
    assert!(details.contains("Suggested tool: book_room"), "{details}");
    assert_eq!(gaps[0].metadata.0["principal_ref"], "member-7");
    // The run's trace carries the score.
    let trace_id: Uuid = v["trace_id"].as_str().unwrap().parse().unwrap();
    let tenant = app.state.tenants.by_slug("root").await.unwrap().unwrap();
    let trace = root::platform::tenancy::scope(
        root::platform::tenancy::TenantContext { tenant },
        app.state.tracer.get(trace_id),
    )
    .await
    .unwrap()
    .expect("the trace is stored");
    let score = trace
        .trace
        .feedback_scores
        .iter()
        .find(|s| s.name == "capability_gap")
        .expect("a capability_gap score");
    assert_eq!(score.value, 0.9);
}

#[tokio::test]
async fn capability_gap_low_confidence_opens_nothing_and_plain_answers_are_not_assessed() {
    let (app, llm, key) = world(true, 0.3).await;
    turn(&app, &key).await;
    assert_eq!(classifications(&llm).len(), 1);
    assert!(
        missing_tool(&app).await.is_empty(),
        "below the confidence bar"
    );

    let (app, llm, key) = world(false, 0.9).await;
    turn(&app, &key).await;
    assert!(
        classifications(&llm).is_empty(),
        "no gap signal: no classification"
    );
    assert!(missing_tool(&app).await.is_empty());
}

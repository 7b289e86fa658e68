//! Action alerts (§4.6, §17 #6): after a turn's tool batch, an active alert
//! watching one of the batch's successful tools gets the LLM judge
//! (`action-alerts.evaluate`); a match DMs the recipient and records a
//! trigger. Alerts watching other tools, cancelled alerts and a judge that
//! says no change nothing.

use serde_json::{Value, json};
use storage::{
    Principal, RootActionAlert, RootActionAlertTrigger, Scan, Store, TenantStore, Ts, key,
};
use uuid::Uuid;

use root::platform::api_keys::KeyKind;

use crate::support::fake_http::{FakeHttp, Reply};
use crate::support::fake_llm::{FakeLlm, completion, tool_calls};
use crate::support::{TestApp, mint_key};

const LLM_PATH: &str = "/api/v1/chat/completions";

/// The model: plans a knowledge search, then answers; the judge says
/// `verdict` for any alert.
fn script_llm(llm: &FakeLlm, matches: bool) {
    llm.http.route("POST", LLM_PATH, move |req| {
        let body = req.body.to_string();
        let reply = if body.contains("action_alert_evaluation") {
            let message = if matches {
                "Someone just asked about parking: visitors use Level 2."
            } else {
                ""
            };
            completion(
                &json!({"matches": matches, "reasoning": "judged", "message": message}).to_string(),
            )
        } else if body.contains("\"role\":\"tool\"") {
            completion("Visitors park on Level 2.")
        } else {
            tool_calls(
                None,
                &[
                    ("c1", "search_knowledge_base", r#"{"query":"parking"}"#),
                    (
                        "c2",
                        "search_knowledge_base",
                        r#"{"query":"visitor parking"}"#,
                    ),
                ],
            )
        };
        Reply::raw_json(200, reply)
    });
}

async fn world(matches: bool) -> (TestApp, FakeLlm, FakeHttp, String, Uuid) {
    let llm = FakeLlm::start().await;
    script_llm(&llm, matches);
    let slack = FakeHttp::start().await;
    slack
        .reply(
            "/api/conversations.open",
            200,
            json!({"ok": true, "channel": {"id": "D0ALERT"}}),
        )
        .reply(
            "/api/chat.postMessage",
            200,
            json!({"ok": true, "ts": "1700000000.000300"}),
        );
    let api = slack.url("/api");
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("SEARCH_LLM_RERANK", "false"),
        ("SLACK_API_BASE_URL", api.as_str()),
        ("SLACK_BOT_TOKEN", "xoxb-test-token"),
        ("SLACK_SIGNING_SECRET", "s3cret"),
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
    let key = mint_key(&app.state.store, "root", KeyKind::Live).await;
    let mut admin_id = Uuid::nil();
    for (r, slack_id) in [("U0ASKER", "U0ASKER"), ("U0ADMIN", "U0ADMIN")] {
        let p = app
            .state
            .store
            .insert(Principal {
                id: Uuid::new_v4(),
                tenant_id: tenant.id,
                ref_: r.into(),
                tier: "member".into(),
                slack_user_id: Some(slack_id.into()),
                ..Default::default()
            })
            .await
            .unwrap();
        if r == "U0ADMIN" {
            admin_id = p.id;
        }
    }
    (app, llm, slack, key, admin_id)
}

async fn alert(app: &TestApp, member: Uuid, watch: &[&str], status: &str) -> RootActionAlert {
    let tenant = app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    app.state
        .store
        .insert(RootActionAlert {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            member_id: member,
            instruction: "Tell me when someone asks about parking".into(),
            watch_tool_names: watch.iter().map(|s| s.to_string()).collect(),
            notify_slack_id: Some("U0ADMIN".into()),
            status: status.into(),
            created_at: Ts::now(),
            updated_at: Ts::now(),
        })
        .await
        .unwrap()
}

async fn ask(app: &TestApp, key: &str) -> Value {
    let r = app
        .post_json(
            "/api/v1/agent/turns",
            Some(key),
            &json!({"message": "where do visitors park?", "principal": "U0ASKER"}),
        )
        .await;
    assert_eq!(r.status(), 200);
    let v: Value = r.json().await.unwrap();
    app.state.agent.hooks_idle().await;
    v
}

async fn triggers(app: &TestApp) -> Vec<RootActionAlertTrigger> {
    let tenant = app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    app.state
        .store
        .scan(Some(tenant.id), Scan::all())
        .await
        .unwrap()
}

#[tokio::test]
async fn action_alert_watching_a_tool_triggers_after_a_matching_batch_and_dms() {
    let (app, llm, slack, api_key, admin) = world(true).await;
    let watched = alert(&app, admin, &["search_knowledge_base"], "active").await;
    alert(&app, admin, &["create_follow_up"], "active").await;
    alert(&app, admin, &["search_knowledge_base"], "cancelled").await;
    let v = ask(&app, &api_key).await;
    assert_eq!(v["response"], "Visitors park on Level 2.");
    // One judge call: only the active alert watching the batch's tool.
    let judged: Vec<Value> = llm
        .bodies()
        .into_iter()
        .filter(|b| b.to_string().contains("action_alert_evaluation"))
        .collect();
    assert_eq!(judged.len(), 1);
    let input = judged[0]["messages"].to_string();
    assert!(
        input.contains("Tell me when someone asks about parking"),
        "{input}"
    );
    assert!(input.contains("search_knowledge_base"), "{input}");
    // The recipient got a DM with the judge's message.
    let open = slack.requests_to("/api/conversations.open");
    assert_eq!(open.len(), 1);
    assert!(String::from_utf8_lossy(&open[0].raw).contains("U0ADMIN"));
    let posts = slack.requests_to("/api/chat.postMessage");
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].body["channel"], "D0ALERT");
    assert_eq!(
        posts[0].body["text"],
        "Someone just asked about parking: visitors use Level 2."
    );
    let t = triggers(&app).await;
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].alert_id, watched.id);
    assert_eq!(
        t[0].matched_tools,
        vec!["search_knowledge_base".to_string()]
    );
    assert!(t[0].delivered);
    assert!(t[0].run_id.is_some());
    let stored: RootActionAlert = app
        .state
        .store
        .get(Some(watched.tenant_id), key().uuid(watched.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, "active", "an alert keeps watching");
}

#[tokio::test]
async fn action_alert_the_judge_saying_no_sends_nothing() {
    let (app, llm, slack, key, admin) = world(false).await;
    alert(&app, admin, &["*"], "active").await;
    ask(&app, &key).await;
    assert_eq!(
        llm.bodies()
            .iter()
            .filter(|b| b.to_string().contains("action_alert_evaluation"))
            .count(),
        1,
        "`*` watches every tool"
    );
    assert!(slack.requests_to("/api/chat.postMessage").is_empty());
    assert!(triggers(&app).await.is_empty());
}

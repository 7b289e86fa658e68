//! Proactive replies: un-mentioned channel questions are answered only with
//! the tenant's switch on, the member's mode not off, and the confidence
//! evaluator's approval.

use storage::Store;

use super::*;

async fn enable_auto_reply(w: &World) {
    crate::support::set_setting(
        &w.app.state,
        "root",
        "runtime.slack_auto_reply",
        json!(true),
    )
    .await;
}

fn verdict(score: f64, safe: bool) -> Vec<u8> {
    completion(
        &json!({"score": score, "is_safe_for_proactive_reply": safe,
            "unsupported_claims": [], "reasoning": "test"})
        .to_string(),
    )
}

fn question(ts: &str) -> Vec<u8> {
    channel_event(
        "message",
        "Where can visitors park near the studio?",
        ts,
        None,
    )
}

#[tokio::test]
async fn slack_proactive_replies_post_only_what_the_evaluator_approves() {
    let w = world().await;
    enable_auto_reply(&w).await;
    w.llm
        .json(completion("Visitors can use the garage on Elm Street."))
        .json(verdict(0.9, true));
    assert_eq!(w.deliver(&question("1700000006.000100")).await.0, 200);
    w.settle().await;
    let posts = w.all_posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert_eq!(posts[0]["thread_ts"], "1700000006.000100");
    assert_eq!(
        posts[0]["text"],
        "Visitors can use the garage on Elm Street."
    );
    // No "working…" line for a draft nobody asked for.
    assert!(w.slack.requests_to("/api/chat.update").is_empty());
    let bodies = w.llm.bodies();
    assert_eq!(bodies.len(), 2);
    let eval_system = bodies[1]["messages"][0]["content"].as_str().unwrap();
    assert!(eval_system.starts_with("You are deciding whether a user would walk away satisfied"));
    assert!(bodies[1].to_string().contains("Draft reply"));

    // Unsafe (or not good enough): nothing is posted.
    w.llm
        .json(completion("Maybe ask around?"))
        .json(verdict(0.9, false));
    assert_eq!(w.deliver(&question("1700000006.000200")).await.0, 200);
    w.settle().await;
    assert_eq!(w.all_posts().len(), 1, "the unsafe draft was withheld");
    assert_eq!(w.llm.bodies().len(), 4);
}

#[tokio::test]
async fn slack_no_proactive_reply_when_the_member_turned_them_off() {
    let w = world().await;
    enable_auto_reply(&w).await;
    let tenant = w.app.state.tenants.by_slug("root").await.unwrap().unwrap();
    w.app
        .state
        .store
        .insert(storage::Principal {
            id: uuid::Uuid::new_v4(),
            tenant_id: tenant.id,
            ref_: "U043H11ES4V".into(),
            tier: "member".into(),
            slack_user_id: Some("U043H11ES4V".into()),
            preferences: storage::Json(json!({"auto_reply": "off"})),
            created_at: storage::Ts::now(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(w.deliver(&question("1700000007.000100")).await.0, 200);
    w.settle().await;
    assert!(w.all_posts().is_empty());
    assert!(w.llm.bodies().is_empty(), "no draft was even written");
}

fn verdict_with(score: f64, claims: &[&str]) -> Vec<u8> {
    completion(
        &json!({"score": score, "is_safe_for_proactive_reply": false,
            "unsupported_claims": claims, "reasoning": "test"})
        .to_string(),
    )
}

/// A.6 for a reply Root was asked for: a LOW draft is rewritten by the
/// repair prompt and what the evaluator calls unsupported is cut; it is
/// still posted (the member asked).
#[tokio::test]
async fn slack_low_confidence_dm_replies_are_repaired_before_posting() {
    let w = world().await;
    w.llm
        .json(gate("new_request", None))
        .json(completion(
            "I've notified the team and Jane Roe will call you tomorrow.",
        ))
        .json(verdict_with(0.1, &["Jane Roe"]))
        .json(completion(
            "I could not notify the team: no request was logged. Please ask again \
             and I can log it. Jane Roe",
        ));
    let body = fixture("message_im.slack-web.json");
    assert_eq!(w.deliver(&body).await.0, 200);
    w.settle().await;
    let posts = w.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    let text = posts[0]["text"].as_str().unwrap();
    assert!(text.starts_with("I could not notify the team"), "{text}");
    assert!(!text.contains("Jane Roe"), "{text}");
    assert!(!text.contains("I've notified"), "{text}");
    // The repair ran with the spec's suffix over the draft and its evidence.
    let bodies = w.llm.bodies();
    assert_eq!(bodies.len(), 4);
    let system = bodies[3]["messages"][0]["content"].as_str().unwrap();
    assert!(
        system.starts_with("You are repairing a LOW-confidence reply before it is sent."),
        "{system}"
    );
    let input = bodies[3]["messages"][1]["content"].as_str().unwrap();
    assert!(input.contains("Jane Roe will call you tomorrow"), "{input}");
    assert!(input.contains("(no tool was called)"), "{input}");
}

/// A MEDIUM or better draft is not rewritten; its unsupported claims are
/// still cut.
#[tokio::test]
async fn slack_medium_confidence_mentions_keep_the_draft_minus_unsupported_claims() {
    let w = world().await;
    w.llm
        .json(completion("Visitors park on Level 2, says Jane Roe."))
        .json(verdict_with(0.7, &[", says Jane Roe"]));
    let mention = channel_event(
        "app_mention",
        &format!("<@{BOT}> where do visitors park?"),
        "1700000007.000100",
        None,
    );
    assert_eq!(w.deliver(&mention).await.0, 200);
    w.settle().await;
    let posts = w.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert_eq!(posts[0]["text"], "Visitors park on Level 2.");
    assert_eq!(w.llm.bodies().len(), 2, "no repair call");
}

//! Events API ingress and replies: signatures, dedupe, the reply policy,
//! authors, the intent gate, DM reply style, never-silent failures.

use super::*;

#[tokio::test]
async fn slack_url_verification_is_signed_and_answers_the_challenge() {
    let w = world().await;
    let body = fixture("url_verification.slack-docs.json");
    let (status, v) = w.deliver(&body).await;
    assert_eq!(status, 200, "{v}");
    let expected: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["challenge"], expected["challenge"]);
    // Unsigned, it is refused like any other request.
    let resp = w
        .app
        .client
        .post(w.app.url("/slack/events/root"))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 401);
}

#[tokio::test]
async fn slack_forged_stale_or_misrouted_requests_are_refused_and_nothing_runs() {
    let w = world().await;
    let body = fixture("message_im.slack-web.json");
    let (s, _) = w
        .deliver_signed(&body, "not-the-secret", &now_secs(), None)
        .await;
    assert_eq!(s, 401, "forged");
    let stale = (now_secs().parse::<i64>().unwrap() - 301).to_string();
    let (s, _) = w.deliver_signed(&body, SECRET, &stale, None).await;
    assert_eq!(s, 401, "stale");
    let resp = w
        .app
        .client
        .post(w.app.url("/slack/events/nobody"))
        .header("X-Slack-Request-Timestamp", now_secs())
        .header("X-Slack-Signature", sign(SECRET, &now_secs(), &body))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 404, "unknown slug");
    // Signed but not JSON: 400.
    let (s, v) = w.deliver(b"{not json").await;
    assert_eq!(s, 400, "{v}");
    w.settle().await;
    assert!(w.posts().is_empty());
    assert!(
        w.llm.bodies().is_empty(),
        "no model call for refused requests"
    );
}

#[tokio::test]
async fn slack_a_dm_gets_exactly_one_mrkdwn_reply_even_when_slack_retries() {
    let w = world().await;
    w.llm.json(gate("new_request", None)).json(completion(
        "## Parking\n**Level 2** is for visitors. See [the map](https://example.org/map).",
    ));
    let body = fixture("message_im.slack-web.json");
    let (s, v) = w.deliver(&body).await;
    assert_eq!((s, v), (200, json!({"ok": true})));
    // Slack's retry of the same delivery is acked and dropped.
    let (s, _) = w
        .deliver_signed(&body, SECRET, &now_secs(), Some("1"))
        .await;
    assert_eq!(s, 200);
    w.settle().await;
    let posts = w.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    let post = &posts[0];
    assert_eq!(post["channel"], "D0442US94JD");
    assert_eq!(post["mrkdwn"], true);
    assert!(
        post.get("thread_ts").is_none(),
        "a top-level DM is answered top-level"
    );
    let text = post["text"].as_str().unwrap();
    assert!(text.contains("*Parking*"), "{text}");
    assert!(text.contains("*Level 2*"), "{text}");
    assert!(text.contains("<https://example.org/map|the map>"), "{text}");
    assert_eq!(post["blocks"][0]["type"], "section");
    assert_eq!(post["blocks"][0]["text"]["type"], "mrkdwn");
    // The status line came first, in the same place, and became the answer.
    let status = w.all_posts();
    assert_eq!(status.len(), 1);
    assert_eq!(status[0]["text"], root::channels::slack::WORKING_TEXT);
    assert_eq!(status[0]["channel"], "D0442US94JD");
    let update = &w.slack.requests_to("/api/chat.update")[0].body;
    assert_eq!(update["ts"], "1700000000.000200");
    // The bot token went to Slack as a bearer header.
    let req = &w.slack.requests_to("/api/chat.postMessage")[0];
    assert_eq!(req.header("authorization"), Some("Bearer xoxb-test-token"));
    // The gate saw the message, the loop answered it, the evaluator
    // reviewed the answer (unscripted here: it fails open, draft posted).
    let bodies = w.llm.bodies();
    assert_eq!(bodies.len(), 3);
    assert!(
        bodies[0]["response_format"].is_object(),
        "the gate is a structured call"
    );
    assert!(bodies[1].to_string().contains("test"));
}

#[tokio::test]
async fn slack_a_mention_and_its_message_twin_get_one_threaded_reply() {
    let w = world().await;
    w.llm.json(completion("Hi! The doc is in #general."));
    let text = format!("<@{BOT}> where is the onboarding doc?");
    let mention = channel_event("app_mention", &text, "1700000001.000100", None);
    let message = channel_event("message", &text, "1700000001.000100", None);
    assert_eq!(w.deliver(&mention).await.0, 200);
    assert_eq!(w.deliver(&message).await.0, 200);
    w.settle().await;
    let posts = w.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert_eq!(posts[0]["channel"], "C0123");
    assert_eq!(posts[0]["thread_ts"], "1700000001.000100");
    // The model saw the question without the bot's mention.
    let sent = w.llm.bodies()[0].to_string();
    assert!(sent.contains("where is the onboarding doc?"));
    assert!(!sent.contains(&format!("<@{BOT}>")), "{sent}");
}

#[tokio::test]
async fn slack_no_reply_to_unmentioned_channel_posts_bots_or_our_own_posts() {
    let w = world().await;
    for body in [
        channel_event(
            "message",
            "just chatting about lunch",
            "1700000002.000100",
            None,
        ),
        fixture("message_from_own_bot_in_thread.slack-web.json"),
        fixture("message_subtype_bot_message.slack-web.json"),
        fixture("message_changed.slack-web.json"),
    ] {
        assert_eq!(w.deliver(&body).await.0, 200);
    }
    w.settle().await;
    assert!(w.all_posts().is_empty(), "{:#?}", w.all_posts());
    assert!(w.llm.bodies().is_empty());
}

#[tokio::test]
async fn slack_an_app_relayed_human_is_answered_and_another_apps_bot_is_not() {
    let w = world().await;
    w.llm
        .json(gate("new_request", None))
        .json(completion("The meetup starts at 6 pm."));
    assert_eq!(
        w.deliver(&app_relayed_dm("UHUMAN", "1700000003.000100"))
            .await
            .0,
        200
    );
    assert_eq!(
        w.deliver(&app_relayed_dm("UAPPBOT", "1700000003.000200"))
            .await
            .0,
        200
    );
    w.settle().await;
    let posts = w.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert!(posts[0]["text"].as_str().unwrap().contains("6 pm"));
    let asked: Vec<String> = w
        .slack
        .requests_to("/api/users.info")
        .iter()
        .map(|r| String::from_utf8_lossy(&r.raw).to_string())
        .collect();
    assert!(
        asked.iter().any(|b| b.contains("user=UAPPBOT")),
        "{asked:?}"
    );
}

#[tokio::test]
async fn slack_a_failed_turn_still_answers_the_member() {
    let w = world().await;
    // The provider refuses (not retryable): the member gets the canned
    // failure, not silence.
    w.llm
        .json(gate("new_request", None))
        .then(crate::support::fake_llm::error(401));
    let body = fixture("message_im.slack-web.json");
    assert_eq!(w.deliver(&body).await.0, 200);
    w.settle().await;
    let posts = w.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    let text = posts[0]["text"].as_str().unwrap();
    let canned = root::slack::mrkdwn::to_mrkdwn(root::agent::phrases::LLM_UNAVAILABLE_REPLY);
    assert_eq!(text, canned.trim());
}

#[tokio::test]
async fn slack_a_dm_nicety_is_answered_by_the_intent_gate_without_the_loop() {
    let w = world().await;
    w.llm.json(gate(
        "conversational_nicety",
        Some("You're welcome, Ann! 🙌"),
    ));
    let body = serde_json::to_vec(&json!({
        "type": "event_callback", "team_id": "T043DB835ML",
        "event": {"type": "message", "user": "U043H11ES4V", "text": "thanks!",
            "ts": "1700000005.000100", "channel": "D0442US94JD", "channel_type": "im"},
        "authorizations": [{"user_id": BOT, "is_bot": true}],
    }))
    .unwrap();
    assert_eq!(w.deliver(&body).await.0, 200);
    w.settle().await;
    let posts = w.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert_eq!(posts[0]["text"], "You're welcome, Ann! 🙌");
    let bodies = w.llm.bodies();
    assert_eq!(bodies.len(), 1, "only the gate ran");
    let system = bodies[0]["messages"][0]["content"].as_str().unwrap();
    assert!(system.starts_with("You are the assistant's pre-loop intent gate"));
    assert!(
        system.contains("User's first name (for the reply): Ann"),
        "{system}"
    );
}

#[tokio::test]
async fn slack_a_member_who_chose_threaded_dm_replies_gets_them_in_a_thread() {
    use storage::Store;
    let w = world().await;
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
            preferences: storage::Json(json!({"dm_reply_style": "thread"})),
            created_at: storage::Ts::now(),
            ..Default::default()
        })
        .await
        .unwrap();
    w.llm
        .json(gate("new_request", None))
        .json(completion("Level 2."));
    assert_eq!(
        w.deliver(&fixture("message_im.slack-web.json")).await.0,
        200
    );
    w.settle().await;
    let status = w.all_posts();
    assert_eq!(status.len(), 1, "{status:#?}");
    assert_eq!(status[0]["thread_ts"], "1664408649.009629");
}

/// Security review L-2: a suspended community's signed Slack event is acked
/// (so Slack stops retrying) and no turn runs, although the 30 s tenant
/// cache still holds the active row.
#[tokio::test]
async fn security_l2_suspended_tenant_slack_event_is_acked_without_a_turn() {
    use storage::{TenantStatus, TenantStore};
    let w = world().await;
    // Warm the cache with the active row.
    let cached = w.app.state.tenants.by_slug("root").await.unwrap().unwrap();
    assert_eq!(cached.status, TenantStatus::Active);
    let mut tenant = w
        .app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    tenant.status = TenantStatus::Suspended;
    w.app.state.store.save_tenant(tenant).await.unwrap();
    let (s, v) = w.deliver(&fixture("message_im.slack-web.json")).await;
    assert_eq!((s, v), (200, json!({"ok": true})));
    w.settle().await;
    assert!(w.all_posts().is_empty(), "{:?}", w.all_posts());
    assert!(w.llm.bodies().is_empty(), "no model call");
}

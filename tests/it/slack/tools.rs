//! The Slack-only tools, admin messaging, the broadcast queue and the
//! Slack intervention sink.

use super::*;

#[tokio::test]
async fn slack_community_posts_need_confirmation_a_public_channel_and_mention_the_requester() {
    use root::tools::core::slack::StartCommunityConversation;
    let w = world().await;
    w.slack
        .route("POST", "/api/conversations.info", |req| {
            let body = String::from_utf8_lossy(&req.raw).to_string();
            let private = body.contains("channel=GPRIV");
            Reply::json(
                200,
                &json!({"ok": true, "channel": {
                "id": if private { "GPRIV" } else { "CASKS" }, "name": "asks",
                "is_channel": !private, "is_private": private, "is_member": false}}),
            )
        })
        .reply("/api/conversations.join", 200, json!({"ok": true}))
        .reply(
            "/api/chat.getPermalink",
            200,
            json!({"ok": true, "permalink": "https://x/p1"}),
        );
    let ctx = tool_ctx(&w, "U1", false).await;
    let args = |channel: &str, confirm: Option<bool>| {
        json!({"channel": channel, "message": "Who has been through a SOC 2 audit?",
            "cc_slack_user_ids": ["U2"], "confirm": confirm})
    };
    let unconfirmed = run_tool(&w, &StartCommunityConversation, args("CASKS", None), &ctx).await;
    assert!(!unconfirmed.success);
    assert!(unconfirmed.error.unwrap().contains("confirm=true"));
    let private = run_tool(
        &w,
        &StartCommunityConversation,
        args("GPRIV", Some(true)),
        &ctx,
    )
    .await;
    assert!(!private.success, "{private:?}");
    assert!(
        w.all_posts().is_empty(),
        "nothing posted without a confirmed public channel"
    );

    let posted = run_tool(
        &w,
        &StartCommunityConversation,
        args("CASKS", Some(true)),
        &ctx,
    )
    .await;
    assert!(posted.success, "{posted:?}");
    assert_eq!(w.slack.requests_to("/api/conversations.join").len(), 1);
    let post = &w.all_posts()[0];
    assert_eq!(post["channel"], "CASKS");
    assert_eq!(
        post["text"],
        "<@U1> Who has been through a SOC 2 audit?\ncc <@U2>"
    );
    assert_eq!(posted.data.unwrap()["permalink"], "https://x/p1");
}

#[tokio::test]
async fn slack_admin_dms_go_inline_up_to_ten_and_are_admin_only() {
    use root::tools::core::slack::SendSlackDmAdmin;
    let w = world().await;
    w.slack
        .route("POST", "/api/conversations.open", |req| {
            let body = String::from_utf8_lossy(&req.raw).to_string();
            let user = body.split("users=").nth(1).unwrap_or("").to_string();
            Reply::json(
                200,
                &json!({"ok": true, "channel": {"id": format!("D{user}")}}),
            )
        })
        .route("POST", "/api/users.lookupByEmail", |req| {
            if String::from_utf8_lossy(&req.raw).contains("ann%40example.org") {
                Reply::json(200, &json!({"ok": true, "user": {"id": "UANN"}}))
            } else {
                Reply::json(200, &json!({"ok": false, "error": "users_not_found"}))
            }
        });
    let member = tool_ctx(&w, "U1", false).await;
    let args = json!({"message": "The meetup moved to 7 pm.", "slack_user_ids": ["U2", "U3"],
        "emails": ["ann@example.org", "ghost@example.org"]});
    let refused = run_tool(&w, &SendSlackDmAdmin, args.clone(), &member).await;
    assert!(!refused.success);
    assert!(w.all_posts().is_empty());

    let admin = tool_ctx(&w, "UADMIN", true).await;
    let r = run_tool(&w, &SendSlackDmAdmin, args, &admin).await;
    assert!(r.success, "{r:?}");
    let data = r.data.unwrap();
    assert_eq!(data["sent"].as_array().unwrap().len(), 3);
    assert_eq!(data["failed"][0]["email"], "ghost@example.org");
    let channels: Vec<Value> = w.all_posts().iter().map(|p| p["channel"].clone()).collect();
    assert_eq!(channels, vec![json!("DU2"), json!("DU3"), json!("DUANN")]);
}

#[tokio::test]
async fn slack_admin_broadcasts_over_ten_are_queued_and_each_dm_is_sent_once() {
    use root::queue::{WorkerConfig, Workers};
    use root::tools::core::slack::{AdminBroadcast, SendSlackDmAdmin};
    let w = world().await;
    w.slack.route("POST", "/api/conversations.open", |req| {
        let body = String::from_utf8_lossy(&req.raw).to_string();
        let user = body.split("users=").nth(1).unwrap_or("").to_string();
        Reply::json(
            200,
            &json!({"ok": true, "channel": {"id": format!("D{user}")}}),
        )
    });
    // One recipient's DM fails: reported, never retried.
    w.slack.script(
        "POST",
        "/api/chat.postMessage",
        [
            Reply::json(200, &json!({"ok": true, "ts": "1.1"})),
            Reply::json(200, &json!({"ok": false, "error": "cannot_dm_bot"})),
        ],
    );
    let admin = tool_ctx(&w, "UADMIN", true).await;
    let users: Vec<String> = (0..12).map(|i| format!("U{i:02}")).collect();
    let r = run_tool(
        &w,
        &SendSlackDmAdmin,
        json!({"message": "Reminder: dues are due Friday.", "slack_user_ids": users}),
        &admin,
    )
    .await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.data.as_ref().unwrap()["queued"], 12);
    assert!(w.all_posts().is_empty(), "nothing sent inline past ten");
    // The broadcast job, paced on a shrunk time unit.
    let fast = w
        .app
        .state
        .slack
        .workspaces()
        .clone()
        .with_time_unit(std::time::Duration::from_millis(1));
    let s = &w.app.state;
    let mut workers = Workers::new(
        s.queues.clone(),
        s.tenants.clone(),
        s.config.limits,
        WorkerConfig::default(),
    );
    workers.register_job(AdminBroadcast::new(fast)).unwrap();
    let ran = workers
        .run_until_idle(Some("slack-admin-broadcast"))
        .await
        .unwrap();
    assert_eq!(ran.len(), 1, "{ran:?}");
    let posts = w.all_posts();
    assert_eq!(posts.len(), 12, "one DM per recipient, none retried");
    let mut channels: Vec<String> = posts
        .iter()
        .map(|p| p["channel"].as_str().unwrap().to_string())
        .collect();
    channels.dedup();
    assert_eq!(channels.len(), 12);
}

#[tokio::test]
async fn slack_escalations_reach_the_configured_admin_channel_and_dms() {
    let w = world().await;
    w.slack.route("POST", "/api/conversations.open", |_| {
        Reply::json(200, &json!({"ok": true, "channel": {"id": "DADMIN"}}))
    });
    // A channel name is not a channel id: refused by the validator.
    assert!(
        root::platform::settings::apply_setting(
            &mut json!({}),
            "notifications.slack_channel",
            &json!("#general")
        )
        .is_err()
    );
    let state = &w.app.state;
    crate::support::set_setting(
        state,
        "root",
        "notifications.slack_channel",
        json!("CADMINS"),
    )
    .await;
    crate::support::set_setting(
        state,
        "root",
        "notifications.slack_admin_user_ids",
        json!(["UADMIN1"]),
    )
    .await;

    let ctx = tool_ctx(&w, "U1", false).await;
    let r = run_tool(
        &w,
        &root::tools::core::handoff::EscalateToAdmin,
        json!({"escalation_reason": "The door code for the studio does not work.",
            "user_request_summary": "Member cannot get into the studio."}),
        &ctx,
    )
    .await;
    assert!(r.success, "{r:?}");
    w.app.state.interventions.idle().await;
    let posts = w.all_posts();
    let to: Vec<&str> = posts
        .iter()
        .map(|p| p["channel"].as_str().unwrap())
        .collect();
    assert_eq!(to, ["CADMINS", "DADMIN"], "{posts:#?}");
    let text = posts[0]["text"].as_str().unwrap();
    assert!(text.starts_with("*Escalation:*"), "{text}");
    assert!(text.contains("door code"), "{text}");
}

#[tokio::test]
async fn slack_a_permalink_to_an_unindexed_message_is_resolved_live() {
    use root::tools::core::knowledge::SearchSlackMessages;
    let w = world().await;
    w.slack.route("POST", "/api/conversations.history", |req| {
        let body = String::from_utf8_lossy(&req.raw).to_string();
        assert!(body.contains("latest=1700000008.000100"), "{body}");
        assert!(body.contains("inclusive=true"), "{body}");
        Reply::json(
            200,
            &json!({"ok": true, "messages": [{"ts": "1700000008.000100", "user": "U9",
                "text": "The board meets on the first Tuesday of the month."}]}),
        )
    });
    let ctx = tool_ctx(&w, "U1", false).await;
    let link = "https://acme.slack.com/archives/C0123/p1700000008000100";
    let r = run_tool(
        &w,
        &SearchSlackMessages,
        json!({"query": format!("what does this say {link}")}),
        &ctx,
    )
    .await;
    assert!(r.success, "{r:?}");
    let data = r.data.unwrap().to_string();
    assert!(data.contains("first Tuesday of the month"), "{data}");
    assert!(data.contains(link), "{data}");
    assert_eq!(w.slack.requests_to("/api/conversations.history").len(), 1);
}

#[tokio::test]
async fn slack_a_member_adds_an_unindexed_public_message_of_their_own_by_link() {
    use root::tools::core::contributions::AddMySlackContribution;
    let w = world().await;
    w.slack
        .reply(
            "/api/conversations.info",
            200,
            json!({"ok": true, "channel": {"id": "C0123", "name": "general", "is_channel": true}}),
        )
        .route("POST", "/api/conversations.history", |req| {
            let body = String::from_utf8_lossy(&req.raw).to_string();
            let (user, text) = if body.contains("1700000009.000100") {
                ("U1", "Our bylaws are in the shared drive under Governance.")
            } else {
                ("U2", "Someone else's message")
            };
            let ts = if body.contains("1700000009.000100") {
                "1700000009.000100"
            } else {
                "1700000009.000200"
            };
            Reply::json(
                200,
                &json!({"ok": true, "messages": [{"ts": ts, "user": user, "text": text}]}),
            )
        });
    let ctx = tool_ctx(&w, "U1", false).await;
    let own = "https://acme.slack.com/archives/C0123/p1700000009000100";
    let r = run_tool(&w, &AddMySlackContribution, json!({"permalink": own}), &ctx).await;
    assert!(r.success, "{r:?}");
    assert_eq!(r.data.as_ref().unwrap()["searchable"], true);
    // Now Slack search finds it.
    let tenant = w.app.state.tenants.by_slug("root").await.unwrap().unwrap();
    let found = root::platform::tenancy::scope(
        root::platform::tenancy::TenantContext { tenant },
        w.app.state.retrieval.search_slack(
            root::retrieval::slack::SlackQuery {
                query: "bylaws shared drive governance".into(),
                ..Default::default()
            },
            &root::retrieval::slack::NoPermalinks,
        ),
    )
    .await
    .unwrap();
    assert!(
        found
            .matches
            .iter()
            .any(|m| m.message_ts == "1700000009.000100"),
        "{found:?}"
    );
    // Someone else's message is refused.
    let theirs = "https://acme.slack.com/archives/C0123/p1700000009000200";
    let r = run_tool(
        &w,
        &AddMySlackContribution,
        json!({"permalink": theirs}),
        &ctx,
    )
    .await;
    assert!(!r.success);
    assert!(r.error.unwrap().contains("someone else"));
}

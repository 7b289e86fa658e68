//! The ingest hook: public messages into Slack search; deletions withdrawn.

use super::*;

#[tokio::test]
async fn slack_public_messages_are_indexed_whether_or_not_root_replies() {
    let w = world().await;
    w.slack
        .reply(
            "/api/conversations.info",
            200,
            json!({"ok": true, "channel": {"id": "C0123", "name": "general"}}),
        )
        .reply(
            "/api/chat.getPermalink",
            200,
            json!({"ok": true, "permalink": "https://x.slack.com/archives/C0123/p1700000004000100"}),
        );
    // Not addressed to Root (no reply), long enough to index.
    let chat = channel_event(
        "message",
        "The parking garage on Elm Street closes at 9 pm on weekdays",
        "1700000004.000100",
        None,
    );
    // Too short to index.
    let short = channel_event("message", "ok thanks", "1700000004.000200", None);
    assert_eq!(w.deliver(&chat).await.0, 200);
    assert_eq!(w.deliver(&short).await.0, 200);
    w.settle().await;
    assert!(w.all_posts().is_empty(), "nobody asked Root");
    let ran = crate::support::drain_jobs(&w.app.state, "slack-knowledge-ingest").await;
    assert_eq!(ran.len(), 1, "{ran:?}");
    let tenant = w.app.state.tenants.by_slug("root").await.unwrap().unwrap();
    let ctx = root::platform::tenancy::TenantContext { tenant };
    let found = root::platform::tenancy::scope(ctx.clone(), async {
        w.app
            .state
            .retrieval
            .search_slack(
                root::retrieval::slack::SlackQuery {
                    query: "parking garage Elm Street".into(),
                    ..Default::default()
                },
                &root::retrieval::slack::NoPermalinks,
            )
            .await
            .unwrap()
    })
    .await;
    let hit = found
        .matches
        .iter()
        .find(|m| m.message_ts == "1700000004.000100")
        .unwrap_or_else(|| panic!("indexed message not found: {found:?}"));
    assert_eq!(hit.channel_name.as_deref(), Some("general"));
    assert_eq!(hit.user_name.as_deref(), Some("Ann"));

    // Deleting it in Slack withdraws it from search at once.
    let deleted = serde_json::to_vec(&json!({
        "type": "event_callback", "team_id": "T043DB835ML",
        "event": {"type": "message", "subtype": "message_deleted", "channel": "C0123",
            "channel_type": "channel", "ts": "1700000004.000300",
            "deleted_ts": "1700000004.000100", "hidden": true},
        "authorizations": [{"user_id": BOT, "is_bot": true}],
    }))
    .unwrap();
    assert_eq!(w.deliver(&deleted).await.0, 200);
    w.settle().await;
    let after = root::platform::tenancy::scope(ctx, async {
        w.app
            .state
            .retrieval
            .search_slack(
                root::retrieval::slack::SlackQuery {
                    query: "parking garage Elm Street".into(),
                    ..Default::default()
                },
                &root::retrieval::slack::NoPermalinks,
            )
            .await
            .unwrap()
    })
    .await;
    assert!(
        after
            .matches
            .iter()
            .all(|m| m.message_ts != "1700000004.000100"),
        "{after:?}"
    );
}

//! `/conversations` and `/interventions` (§14.2): filters, pages, the
//! status transitions of the API's table, roles and escaping.

use serde_json::Value;
use storage::{
    Channel, ConversationLog, Direction, InterventionCategory, InterventionStatus, Store,
    TenantRole, Ts,
};

use root::insights::interventions::{NewIntervention, create};

use crate::support::dashboard::{attrs, injected_scripts, location, texts, world};

const XSS: &str = "<script>alert(1)</script>";

#[tokio::test]
async fn dashboard_activity_conversations_filter_by_channel_text_and_member() {
    let w = world(&[], false).await;
    let (viewer, _) = w.signed_in(TenantRole::Viewer).await;
    let t = w.tenant("root").await;
    let base = Ts::now();
    for (i, (channel, text)) in [
        (Channel::Slack, format!("where do I park? {XSS}")),
        (Channel::Email, "invoice question".to_string()),
        (Channel::Web, "opening hours".to_string()),
    ]
    .into_iter()
    .enumerate()
    {
        let mut row = ConversationLog::new(t.id, channel, Direction::Inbound);
        row.message_text = Some(text);
        row.message_at = base.plus_micros(i as i64 * 1_000_000);
        w.app.state.store.insert(row).await.unwrap();
    }
    let (status, page) = w.page("/conversations", &viewer).await;
    assert_eq!(status, 200);
    let shown = texts(&page, "#messages .message-text");
    assert_eq!(shown.len(), 3);
    assert_eq!(shown[0], "opening hours", "newest first");
    assert_eq!(
        shown[2],
        format!("where do I park? {XSS}"),
        "markup is text"
    );
    assert_eq!(injected_scripts(&page), 0);
    assert_eq!(texts(&page, "#counts .n"), vec!["1", "1", "1", "0"]);

    let (_, page) = w.page("/conversations?channel=email", &viewer).await;
    assert_eq!(
        texts(&page, "#messages .message-text"),
        vec!["invoice question"]
    );
    let (_, page) = w.page("/conversations?q=PARK", &viewer).await;
    assert_eq!(texts(&page, "#messages .message-text").len(), 1);
    let (status, page) = w
        .page("/conversations?channel=fax&member=nobody", &viewer)
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        texts(&page, "p.message.error").len(),
        2,
        "both bad filters named"
    );
    assert!(
        texts(&page, "#messages .message-text").is_empty(),
        "an unknown member has no messages"
    );
}

#[tokio::test]
async fn dashboard_activity_interventions_move_through_the_status_table() {
    let w = world(&[], false).await;
    let (owner, csrf) = w.signed_in(TenantRole::Owner).await;
    let (viewer, viewer_csrf) = w.signed_in(TenantRole::Viewer).await;
    let t = w.tenant("root").await;
    let (row, _) = create(
        &w.app.state.store,
        t.id,
        NewIntervention {
            category: InterventionCategory::Escalation,
            channel: Channel::Slack,
            title: format!("Refund request {XSS}"),
            details: Some("member asked twice".into()),
            principal: None,
            metadata: Value::Object(Default::default()),
        },
        Ts::now(),
    )
    .await
    .unwrap();

    let (status, page) = w.page("/interventions?status=open", &viewer).await;
    assert_eq!(status, 200);
    assert_eq!(
        texts(&page, "#interventions .title"),
        vec![format!("Refund request {XSS}")]
    );
    assert_eq!(injected_scripts(&page), 0);
    assert!(
        texts(&page, "#interventions form").is_empty(),
        "a viewer gets no forms"
    );
    let action = format!("/interventions/{}/status", row.id);
    let r = w
        .post_form(
            &action,
            Some(&viewer),
            &[("csrf", &viewer_csrf), ("status", "resolved")],
        )
        .await;
    assert_eq!(r.status(), 403);

    let (_, page) = w.page("/interventions", &owner).await;
    let offered = texts(&page, "#interventions form option");
    assert_eq!(
        offered,
        vec!["in_progress", "resolved", "dismissed", "cancelled"]
    );
    assert_eq!(
        attrs(&page, "#interventions form", "action"),
        vec![action.clone()]
    );
    let r = w
        .post_form(&action, Some(&owner), &[("status", "resolved")])
        .await;
    assert_eq!(r.status(), 403, "no CSRF token");
    let r = w
        .post_form(
            &action,
            Some(&owner),
            &[("csrf", &csrf), ("status", "resolved")],
        )
        .await;
    assert_eq!(location(&r), "/interventions?done=intervention-updated");
    let (_, page) = w.page("/interventions?status=resolved", &owner).await;
    assert_eq!(texts(&page, "#interventions .status"), vec!["resolved"]);
    let (_, page) = w.page("/interventions?status=open", &owner).await;
    assert!(texts(&page, "#interventions .title").is_empty());

    // The API's transition table: resolved → in_progress is refused.
    let r = w
        .post_form(
            &action,
            Some(&owner),
            &[("csrf", &csrf), ("status", "in_progress")],
        )
        .await;
    assert_eq!(r.status(), 409);
    let r = w
        .post_form(
            &action,
            Some(&owner),
            &[("csrf", &csrf), ("status", "closed")],
        )
        .await;
    assert_eq!(r.status(), 400);
    let stored: storage::HumanIntervention = w
        .app
        .state
        .store
        .get(Some(t.id), storage::key().uuid(row.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, InterventionStatus::Resolved);
}

/// §14.2 "linked from conversations and interventions": a reply written by
/// a turn and an intervention a run opened link to that run's trace; rows
/// without a run (a member's message, a hand-made intervention) do not.
#[tokio::test]
async fn dashboard_activity_replies_and_interventions_link_their_trace() {
    let w = world(&[], false).await;
    let (viewer, _) = w.signed_in(TenantRole::Viewer).await;
    let t = w.tenant("root").await;
    let run = uuid::Uuid::new_v4();
    let base = Ts::now();
    let mut inbound = ConversationLog::new(t.id, Channel::Web, Direction::Inbound);
    inbound.message_text = Some("when is the workshop?".into());
    inbound.message_at = base;
    let mut reply = ConversationLog::new(t.id, Channel::Web, Direction::Outbound);
    reply.message_text = Some("Thursday at six.".into());
    reply.message_at = base.plus_micros(1_000_000);
    reply.metadata = storage::Json(serde_json::json!({"trace_id": run, "success": true}));
    w.app.state.store.insert(inbound).await.unwrap();
    w.app.state.store.insert(reply).await.unwrap();
    let (status, page) = w.page("/conversations", &viewer).await;
    assert_eq!(status, 200);
    assert_eq!(
        attrs(&page, "#messages a.trace", "href"),
        vec![format!("/traces/{run}")],
        "only the reply links its run"
    );

    for metadata in [serde_json::json!({"trace_id": run}), serde_json::json!({})] {
        create(
            &w.app.state.store,
            t.id,
            NewIntervention {
                category: InterventionCategory::Escalation,
                channel: Channel::Web,
                title: "Needs a human".into(),
                details: None,
                principal: None,
                metadata,
            },
            Ts::now(),
        )
        .await
        .unwrap();
    }
    let (_, page) = w.page("/interventions", &viewer).await;
    assert_eq!(texts(&page, "#interventions .title").len(), 2);
    assert_eq!(
        attrs(&page, "#interventions a.trace", "href"),
        vec![format!("/traces/{run}")]
    );
}

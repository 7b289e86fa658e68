//! The `channel-join-sweep` queue (§13): after a credential set, and on
//! the scheduler's tick.

use root::queue::Outcome;
use root::queue::job::{ChannelJoinSweepTick, JobOptions};
use root::queue::registry::CHANNEL_JOIN_SWEEP;
use serde_json::json;
use storage::Ts;

use super::*;
use crate::support::drain_jobs;

/// Two pages of public channels: C1 joined already, C2–C5 not; C3 says
/// `already_in_channel`, C4 fails.
fn fake_channels(slack: &FakeHttp) {
    slack.route("POST", "/api/conversations.list", |req| {
        let body = String::from_utf8_lossy(&req.raw).to_string();
        if body.contains("cursor=page2") {
            Reply::json(
                200,
                &json!({"ok": true, "channels": [
                    {"id": "C4", "name": "broken", "is_member": false},
                    {"id": "C5", "name": "random", "is_member": false},
                ], "response_metadata": {"next_cursor": ""}}),
            )
        } else {
            Reply::json(
                200,
                &json!({"ok": true, "channels": [
                    {"id": "C1", "name": "general", "is_member": true},
                    {"id": "C2", "name": "help", "is_member": false},
                    {"id": "C3", "name": "news", "is_member": false},
                ], "response_metadata": {"next_cursor": "page2"}}),
            )
        }
    });
    slack.route("POST", "/api/conversations.join", |req| {
        let body = String::from_utf8_lossy(&req.raw).to_string();
        let reply = if body.contains("channel=C3") {
            json!({"ok": false, "error": "already_in_channel"})
        } else if body.contains("channel=C4") {
            json!({"ok": false, "error": "method_not_supported_for_channel_type"})
        } else {
            json!({"ok": true, "channel": {"id": "C"}})
        };
        Reply::json(200, &reply)
    });
}

fn joined(w: &World) -> Vec<(String, String)> {
    w.slack
        .requests_to("/api/conversations.join")
        .iter()
        .map(|r| {
            (
                String::from_utf8_lossy(&r.raw).to_string(),
                r.header("authorization").unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[tokio::test]
async fn slack_admin_setting_credentials_queues_a_join_sweep_for_the_tenant() {
    let w = world().await;
    fake_channels(&w.slack);
    let (s, _, _) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": TOKEN_1, "signing_secret": SECRET_1}),
        )
        .await;
    assert_eq!(s, 200);
    let outcomes = drain_jobs(&w.app.state, CHANNEL_JOIN_SWEEP).await;
    assert_eq!(outcomes.len(), 1, "{outcomes:?}");
    assert!(
        matches!(outcomes[0], Outcome::Completed { .. }),
        "{outcomes:?}"
    );
    // Both pages listed, public and unarchived only, with the new token.
    let lists = w.slack.requests_to("/api/conversations.list");
    assert_eq!(lists.len(), 2);
    let first = String::from_utf8_lossy(&lists[0].raw).to_string();
    assert!(
        first.contains("types=public_channel") && first.contains("exclude_archived=true"),
        "{first}"
    );
    assert!(String::from_utf8_lossy(&lists[1].raw).contains("cursor=page2"));
    // Every non-member channel asked, past the failure in the middle; C1 not.
    let joins = joined(&w);
    let bodies: Vec<&str> = joins.iter().map(|(b, _)| b.as_str()).collect();
    assert_eq!(
        bodies,
        vec!["channel=C2", "channel=C3", "channel=C4", "channel=C5"]
    );
    assert!(joins.iter().all(|(_, a)| *a == format!("Bearer {TOKEN_1}")));
    // The job's result says what happened.
    let id = root::channels::slack_setup::join_sweep_job_id(w.tenant("acme").await.id());
    let job = storage::JobQueue::job(&w.app.state.store, CHANNEL_JOIN_SWEEP, &id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        job.result.map(|r| r.0),
        Some(
            json!({"channels": 5, "joined": 2, "already": 1, "failed": 1, "deferred": 0,
            "excluded": 0, "invite_only": false})
        )
    );
}

#[tokio::test]
async fn slack_admin_the_tick_sweeps_tenants_with_credentials_and_skips_the_rest() {
    let w = world().await;
    fake_channels(&w.slack);
    // Only the dev shadow has Slack; acme and root have none.
    let (s, _, _) = w
        .put_slack(
            &w.dev_key,
            &json!({"bot_token": TOKEN_2, "signing_secret": SECRET_2}),
        )
        .await;
    assert_eq!(s, 200);
    drain_jobs(&w.app.state, CHANNEL_JOIN_SWEEP).await;
    let before = joined(&w).len();
    assert_eq!(before, 4);
    // The scheduler's tick (no tenant): every tenant with credentials.
    w.app
        .state
        .queues
        .enqueue_job(
            &ChannelJoinSweepTick {
                scheduled_for: Ts::from_secs(1_800_000_000),
            },
            JobOptions::default(),
        )
        .await
        .unwrap();
    let outcomes = drain_jobs(&w.app.state, CHANNEL_JOIN_SWEEP).await;
    assert!(
        matches!(outcomes[..], [Outcome::Completed { .. }]),
        "{outcomes:?}"
    );
    let joins = joined(&w);
    assert_eq!(joins.len(), before + 4, "one tenant swept again");
    assert!(joins.iter().all(|(_, a)| *a == format!("Bearer {TOKEN_2}")));
}

#[tokio::test]
async fn slack_admin_a_refused_token_fails_the_tenant_sweep_for_good() {
    let w = world().await;
    let (s, _, _) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": TOKEN_1, "signing_secret": SECRET_1}),
        )
        .await;
    assert_eq!(s, 200);
    // The token was revoked between the set and the sweep.
    w.slack.reply(
        "/api/conversations.list",
        200,
        json!({"ok": false, "error": "token_revoked"}),
    );
    let outcomes = drain_jobs(&w.app.state, CHANNEL_JOIN_SWEEP).await;
    match &outcomes[..] {
        [Outcome::Failed { error, .. }] => assert!(error.contains("token_revoked"), "{error}"),
        other => panic!("expected one permanent failure, got {other:?}"),
    }
    assert!(joined(&w).is_empty());
}

/// Set `path` = `value` in the `acme` tenant's settings.
async fn set_acme(w: &World, path: &str, value: serde_json::Value) {
    crate::support::set_setting(&w.app.state, "acme", path, value).await;
}

/// §13 "honor invite settings": excluded channels are never joined, and
/// with automatic joins off the sweep joins (and lists) nothing.
#[tokio::test]
async fn slack_admin_the_sweep_honours_the_tenants_join_settings() {
    let w = world().await;
    fake_channels(&w.slack);
    set_acme(
        &w,
        "slack.join_excluded_channels",
        json!(["#news", "random"]),
    )
    .await;
    let (s, _, _) = w
        .put_slack(
            &w.live_key,
            &json!({"bot_token": TOKEN_1, "signing_secret": SECRET_1}),
        )
        .await;
    assert_eq!(s, 200);
    drain_jobs(&w.app.state, CHANNEL_JOIN_SWEEP).await;
    let bodies: Vec<String> = joined(&w).into_iter().map(|(b, _)| b).collect();
    assert_eq!(bodies, vec!["channel=C2", "channel=C4"]);

    set_acme(&w, "runtime.slack_auto_join_channels", json!(false)).await;
    let lists = w.slack.requests_to("/api/conversations.list").len();
    let tenant = w.tenant("acme").await;
    let report = w
        .app
        .state
        .slack_join
        .sweep_tenant(
            &w.app
                .state
                .tenants
                .by_id(tenant.id())
                .await
                .unwrap()
                .unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(report.invite_only);
    assert_eq!(w.slack.requests_to("/api/conversations.list").len(), lists);
    assert_eq!(joined(&w).len(), 2, "nothing more joined");
}

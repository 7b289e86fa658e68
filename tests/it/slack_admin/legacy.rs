//! The legacy `POST /slack/events`, routed by the body's `team_id` (§8.2).

use std::sync::Arc;

use root::platform::clock::ManualClock;
use root::slack::TeamDirectory;
use root::slack::teams::TEAM_MAP_TTL_SECS;
use serde_json::json;
use storage::{ChannelStatus, ChannelType, Json, Redacted, Store, TenantChannel, Ts};

use super::*;
use crate::support::fake_llm::completion;

async fn set(w: &World, key: &str, token: &str, secret: &str) {
    let (s, _, text) = w
        .put_slack(key, &json!({"bot_token": token, "signing_secret": secret}))
        .await;
    assert_eq!(s, 200, "{text}");
}

fn bearers(w: &World) -> Vec<String> {
    w.slack
        .requests_to("/api/chat.postMessage")
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_string())
        .collect()
}

#[tokio::test]
async fn slack_admin_legacy_route_finds_the_tenant_by_team_and_signature() {
    let w = world().await;
    w.llm
        .json(completion("Live answer."))
        .json(completion("Dev answer."));
    // Live and dev shadow installed in the same workspace, different apps.
    set(&w, &w.live_key, TOKEN_1, SECRET_1).await;
    set(&w, &w.dev_key, TOKEN_2, SECRET_2).await;
    // The published DM fixture names the workspace; live's secret ⇒ live.
    let (s, v) = w
        .deliver(
            "/slack/events",
            &fixture("message_im.slack-web.json"),
            SECRET_1,
        )
        .await;
    assert_eq!((s, v), (200, json!({"ok": true})));
    w.settle().await;
    assert_eq!(bearers(&w), vec![format!("Bearer {TOKEN_1}")]);
    // The dev app's secret ⇒ the dev shadow answers, with its own token.
    let (s, _) = w
        .deliver("/slack/events", &dm("1700000200.000100", "dev?"), SECRET_2)
        .await;
    assert_eq!(s, 200);
    w.settle().await;
    assert_eq!(
        bearers(&w),
        vec![format!("Bearer {TOKEN_1}"), format!("Bearer {TOKEN_2}")]
    );
    // A known workspace with a forged signature: 401, nothing runs.
    let (s, _) = w
        .deliver(
            "/slack/events",
            &dm("1700000200.000200", "x"),
            "forged-secret",
        )
        .await;
    assert_eq!(s, 401);
    // Unknown workspace, or none named: a bare 404 (even when signed).
    let mut other: Value = serde_json::from_slice(&dm("1700000200.000300", "x")).unwrap();
    other["team_id"] = json!("TNOBODY1");
    other["authorizations"][0]["team_id"] = json!("TNOBODY1");
    for body in [
        serde_json::to_vec(&other).unwrap(),
        fixture("url_verification.slack-docs.json"),
        b"{not json".to_vec(),
    ] {
        let resp = w
            .app
            .client
            .post(w.app.url("/slack/events"))
            .header("X-Slack-Request-Timestamp", now_secs())
            .header("X-Slack-Signature", sign(SECRET_1, &now_secs(), &body))
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 404);
        let text = resp.text().await.unwrap();
        assert!(
            !text.contains("TNOBODY1") && !text.contains("acme") && !text.contains(TEAM),
            "{text}"
        );
    }
    w.settle().await;
    assert_eq!(bearers(&w).len(), 2, "nothing else was answered");
    // Two turns ran (the DM intent gate's structured calls aside).
    let turns = w
        .llm
        .bodies()
        .iter()
        .filter(|b| b.get("response_format").is_none())
        .count();
    assert_eq!(turns, 2);
}

#[tokio::test]
async fn slack_admin_team_map_is_cached_for_its_ttl_and_invalidated_on_change() {
    let w = world().await;
    let state = &w.app.state;
    let clock = ManualClock::new(Ts::from_secs(1_800_000_000));
    let teams = TeamDirectory::new(
        state.store.clone(),
        state.config.clone(),
        Arc::new(clock.clone()),
    );
    assert!(teams.tenants_of(TEAM).await.unwrap().is_empty());
    // A row written behind the directory's back is not seen until the TTL…
    let acme = w.tenant("acme").await.tenant;
    state
        .store
        .insert(TenantChannel {
            id: uuid::Uuid::new_v4(),
            tenant_id: acme.id,
            channel_type: ChannelType::Slack,
            config: Json(json!({"team_id": TEAM})),
            secrets: Redacted::new(Json(
                json!({"bot_token": TOKEN_1, "signing_secret": SECRET_1}),
            )),
            status: ChannelStatus::Active,
            created_at: Ts::from_secs(1_800_000_000),
            updated_at: Ts::from_secs(1_800_000_000),
        })
        .await
        .unwrap();
    assert!(teams.tenants_of(TEAM).await.unwrap().is_empty(), "cached");
    clock.advance_ms(TEAM_MAP_TTL_SECS * 1000);
    assert_eq!(teams.tenants_of(TEAM).await.unwrap(), vec![acme.id]);
    // …while an invalidation (what a credential set does) is seen at once;
    // the live tenant comes before its dev shadow.
    let dev = w.tenant("acme--dev").await.tenant;
    let mut row = state
        .store
        .find_unique::<TenantChannel>(
            Some(acme.id),
            TenantChannel::TYPE_KEY,
            storage::key().str("slack"),
        )
        .await
        .unwrap()
        .unwrap();
    row.id = uuid::Uuid::new_v4();
    row.tenant_id = dev.id;
    state.store.insert(row).await.unwrap();
    assert_eq!(teams.tenants_of(TEAM).await.unwrap(), vec![acme.id]);
    teams.invalidate();
    assert_eq!(teams.tenants_of(TEAM).await.unwrap(), vec![acme.id, dev.id]);
}

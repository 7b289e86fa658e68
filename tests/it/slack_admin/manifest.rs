//! The Slack app manifest generator (§14.2).

use serde_json::json;
use storage::Store;

use super::*;

#[tokio::test]
async fn slack_admin_manifest_names_the_agent_scopes_events_and_the_live_url() {
    let w = world().await;
    // The agent's name comes from the tenant row.
    let mut acme = w.tenant("acme").await.tenant.as_ref().clone();
    acme.agent_name = "Ada".into();
    w.app.state.store.update(acme.clone()).await.unwrap();
    w.app.state.tenants.invalidate(&acme);
    let resp = w
        .app
        .get("/api/v1/channels/slack/manifest", Some(&w.live_key))
        .await;
    assert_eq!(resp.status().as_u16(), 200);
    let manifest: Value = resp.json().await.unwrap();
    assert_eq!(
        manifest,
        json!({
            "_metadata": {"major_version": 1, "minor_version": 1},
            "display_information": {
                "name": "Ada",
                "description": "The community's AI assistant (Root)."
            },
            "features": {
                "app_home": {
                    "home_tab_enabled": false,
                    "messages_tab_enabled": true,
                    "messages_tab_read_only_enabled": false
                },
                "bot_user": {"display_name": "Ada", "always_online": true}
            },
            "oauth_config": {"scopes": {"bot": [
                "app_mentions:read", "channels:history", "channels:join", "channels:read",
                "chat:write", "files:read", "files:write", "groups:history", "im:history",
                "im:read", "im:write", "mpim:history", "users:read", "users:read.email"
            ]}},
            "settings": {
                "event_subscriptions": {
                    "request_url": "https://root.example.org/slack/events/acme",
                    "bot_events": [
                        "app_mention", "message.channels", "message.groups",
                        "message.im", "message.mpim"
                    ]
                },
                "org_deploy_enabled": false,
                "socket_mode_enabled": false,
                "token_rotation_enabled": false
            }
        })
    );
    // A dev key: the dev shadow's manifest still points at the live slug.
    let dev: Value = w
        .app
        .get("/api/v1/channels/slack/manifest", Some(&w.dev_key))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(
        dev["settings"]["event_subscriptions"]["request_url"],
        "https://root.example.org/slack/events/acme"
    );
    assert_eq!(dev["display_information"]["name"], "Root");
}

#[tokio::test]
async fn slack_admin_dashboard_manifest_path_checks_the_tenant_against_the_key() {
    let w = world().await;
    for (key, tenant) in [
        (&w.live_key, "acme"),
        (&w.dev_key, "acme"),
        (&w.dev_key, "acme--dev"),
    ] {
        let resp = w
            .app
            .get(
                &format!("/channels/slack/manifest?tenant={tenant}"),
                Some(key),
            )
            .await;
        assert_eq!(resp.status().as_u16(), 200, "{tenant}");
        let v: Value = resp.json().await.unwrap();
        assert_eq!(
            v["settings"]["event_subscriptions"]["request_url"],
            "https://root.example.org/slack/events/acme"
        );
    }
    // Another tenant's slug: 403, nothing about it revealed.
    let resp = w
        .app
        .get("/channels/slack/manifest?tenant=root", Some(&w.live_key))
        .await;
    assert_eq!(resp.status().as_u16(), 403);
    assert!(!resp.text().await.unwrap().contains("/slack/events/"));
    // No key: 401 on both paths.
    for path in [
        "/channels/slack/manifest?tenant=acme",
        "/api/v1/channels/slack/manifest",
    ] {
        assert_eq!(w.app.get(path, None).await.status().as_u16(), 401, "{path}");
    }
}

//! Slack administration (§8.2, §13, §14.2): setting credentials through the
//! API and the CLI, the app manifest generator, the legacy `/slack/events`
//! route by `team_id`, and the `channel-join-sweep`. A fake Slack Web API
//! and the fake LLM on 127.0.0.1; event payloads are the shared fixtures,
//! signed here with a fresh timestamp.

mod credentials;
mod join_sweep;
mod legacy;
mod manifest;

use std::time::{SystemTime, UNIX_EPOCH};

use root::platform::api_keys::KeyKind;
use root::slack::signature::sign;
use serde_json::{Value, json};
use storage::TenantStore;

use crate::support::fake_http::{FakeHttp, Reply};
use crate::support::fake_llm::FakeLlm;
use crate::support::{TestApp, ctx, mint_key};

/// The workspace of the fixtures.
pub const TEAM: &str = "T043DB835ML";
/// The bot user of the fixtures.
pub const BOT: &str = "U0442US8QGH";
/// Tokens the fake Slack accepts (`auth.test` answers `TEAM` / `BOT`).
pub const TOKEN_1: &str = "xoxb-good-token-one";
pub const TOKEN_2: &str = "xoxb-good-token-two";
/// Signing secrets (any string works; the app stores them).
pub const SECRET_1: &str = "first-signing-secret-0123456789ab";
pub const SECRET_2: &str = "second-signing-secret-0123456789a";
pub const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slack/events");

pub struct World {
    pub app: TestApp,
    pub slack: FakeHttp,
    pub llm: FakeLlm,
    /// `rpk_live_…` of `acme`.
    pub live_key: String,
    /// `rpk_dev_…` of `acme--dev`.
    pub dev_key: String,
}

/// The fake Slack's `auth.test`: the good tokens are the fixtures' bot,
/// anything else `invalid_auth`.
pub fn fake_slack_auth(slack: &FakeHttp) {
    slack.route("POST", "/api/auth.test", |req| {
        let bearer = req.header("authorization").unwrap_or("");
        if bearer == format!("Bearer {TOKEN_1}") || bearer == format!("Bearer {TOKEN_2}") {
            Reply::json(
                200,
                &json!({"ok": true, "team_id": TEAM, "user_id": BOT, "bot_id": "B1"}),
            )
        } else {
            Reply::json(200, &json!({"ok": false, "error": "invalid_auth"}))
        }
    });
}

/// An app with `acme` (+ `acme--dev`) and its keys, over a fake Slack;
/// no Slack credentials anywhere yet (no env fallback either).
pub async fn world() -> World {
    let llm = FakeLlm::start().await;
    let slack = FakeHttp::start().await;
    fake_slack_auth(&slack);
    slack
        .reply(
            "/api/chat.postMessage",
            200,
            json!({"ok": true, "ts": "1700000000.000200"}),
        )
        .reply("/api/chat.update", 200, json!({"ok": true}))
        .reply(
            "/api/users.info",
            200,
            json!({"ok": true, "user": {"id": "U043H11ES4V", "profile": {"display_name": "Ann"}}}),
        );
    let api = slack.url("/api");
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("SLACK_API_BASE_URL", api.as_str()),
        ("PLATFORM_BASE_URL", "https://root.example.org/"),
        ("ROOT_RUN_WORKERS", "false"),
    ])
    .await;
    let store = &app.state.store;
    let acme = store
        .create_tenant(storage::Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    store.ensure_dev_shadow(acme.id).await.unwrap();
    let live_key = mint_key(store, "acme", KeyKind::Live).await;
    let dev_key = mint_key(store, "acme", KeyKind::Dev).await;
    World {
        app,
        slack,
        llm,
        live_key,
        dev_key,
    }
}

pub fn now_secs() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string()
}

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{EVENTS}/{name}")).unwrap()
}

/// A DM from a member to the bot, `ts` distinct per test message.
pub fn dm(ts: &str, text: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "type": "event_callback", "team_id": TEAM, "api_app_id": "A1",
        "event": {"type": "message", "user": "U043H11ES4V", "text": text, "ts": ts,
            "channel": "D0442US94JD", "channel_type": "im", "event_ts": ts},
        "event_id": format!("Ev{ts}"),
        "authorizations": [{"team_id": TEAM, "user_id": BOT, "is_bot": true}],
    }))
    .unwrap()
}

impl World {
    /// `PUT /api/v1/channels/slack` with `key`.
    pub async fn put_slack(&self, key: &str, body: &Value) -> (u16, Value, String) {
        let resp = self
            .app
            .client
            .put(self.app.url("/api/v1/channels/slack"))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        let text = resp.text().await.unwrap();
        let v = serde_json::from_str(&text).unwrap_or(Value::Null);
        (status, v, text)
    }

    /// POST `body` to `path` signed with `secret` now.
    pub async fn deliver(&self, path: &str, body: &[u8], secret: &str) -> (u16, Value) {
        let ts = now_secs();
        let resp = self
            .app
            .client
            .post(self.app.url(path))
            .header("content-type", "application/json")
            .header("X-Slack-Request-Timestamp", &ts)
            .header("X-Slack-Signature", sign(secret, &ts, body))
            .body(body.to_vec())
            .send()
            .await
            .unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    /// Every spawned event task has finished.
    pub async fn settle(&self) {
        self.app.state.slack.idle().await;
    }

    /// The tenant context of `slug`.
    pub async fn tenant(&self, slug: &str) -> root::platform::tenancy::TenantContext {
        ctx(self
            .app
            .state
            .store
            .tenant_by_slug(slug)
            .await
            .unwrap()
            .unwrap())
    }

    /// `slug`'s resolved Slack credentials.
    pub async fn creds(&self, slug: &str) -> Option<root::slack::SlackCredentials> {
        let t = self.tenant(slug).await;
        root::slack::resolve_credentials(&self.app.state.store, &self.app.state.config, &t.tenant)
            .await
            .unwrap()
    }
}

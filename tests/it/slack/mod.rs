//! The Slack channel end to end (§8.2): signed Events API deliveries through
//! the real route, a fake Slack Web API and the scripted fake LLM on
//! 127.0.0.1. Event payloads are the published fixtures of
//! `tests/fixtures/slack/events/` (copied from `../shared/fixtures/slack/`), signed
//! here with a fresh timestamp.

use std::time::{SystemTime, UNIX_EPOCH};

use root::slack::signature::sign;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::fake_http::{FakeHttp, Reply};
use crate::support::fake_llm::{FakeLlm, completion};

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const BOT: &str = "U0442US8QGH";
const EVENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/slack/events");

struct World {
    app: TestApp,
    slack: FakeHttp,
    llm: FakeLlm,
}

mod api;
mod distill;
mod enrich;
mod events;
mod follow_up_sweep;
mod ingest;
mod proactive;
mod tools;

async fn world() -> World {
    world_on(&[], std::sync::Arc::new(root::platform::clock::SystemClock)).await
}

/// A world with extra settings on `clock`.
async fn world_on(
    extra: &[(&str, &str)],
    clock: std::sync::Arc<dyn root::platform::clock::Clock>,
) -> World {
    let llm = FakeLlm::start().await;
    let slack = FakeHttp::start().await;
    slack
        .reply(
            "/api/auth.test",
            200,
            json!({"ok": true, "team_id": "T043DB835ML", "user_id": BOT}),
        )
        .reply(
            "/api/chat.postMessage",
            200,
            json!({"ok": true, "ts": "1700000000.000200"}),
        )
        .reply("/api/chat.update", 200, json!({"ok": true}))
        .route("POST", "/api/users.info", |req| {
            let body = String::from_utf8_lossy(&req.raw).to_string();
            let is_bot = body.contains("user=UAPPBOT");
            Reply::json(
                200,
                &json!({"ok": true, "user": {"id": "U", "is_bot": is_bot,
                    "profile": {"display_name": "Ann"}}}),
            )
        });
    let api = slack.url("/api");
    let mut vars = vec![
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("SLACK_API_BASE_URL", api.as_str()),
        ("SLACK_BOT_TOKEN", "xoxb-test-token"),
        ("SLACK_SIGNING_SECRET", SECRET),
        ("ROOT_RUN_WORKERS", "false"),
    ];
    vars.extend_from_slice(extra);
    let app = TestApp::spawn_with_clock(&vars, clock).await;
    World { app, slack, llm }
}

/// The DM intent gate's verdict (the first model call of a DM).
fn gate(intent: &str, nicety: Option<&str>) -> Vec<u8> {
    completion(&json!({"intent": intent, "nicety_reply": nicety}).to_string())
}

fn now_secs() -> String {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        .to_string()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!("{EVENTS}/{name}")).unwrap()
}

impl World {
    /// POST `body` to `/slack/events/root` signed with `secret` at `ts`.
    async fn deliver_signed(
        &self,
        body: &[u8],
        secret: &str,
        ts: &str,
        retry: Option<&str>,
    ) -> (u16, Value) {
        let mut req = self
            .app
            .client
            .post(self.app.url("/slack/events/root"))
            .header("content-type", "application/json")
            .header("X-Slack-Request-Timestamp", ts)
            .header("X-Slack-Signature", sign(secret, ts, body))
            .body(body.to_vec());
        if let Some(n) = retry {
            req = req.header("X-Slack-Retry-Num", n);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        let v = resp.json().await.unwrap_or(Value::Null);
        (status, v)
    }

    async fn deliver(&self, body: &[u8]) -> (u16, Value) {
        self.deliver_signed(body, SECRET, &now_secs(), None).await
    }

    /// Every spawned event task has finished.
    async fn settle(&self) {
        self.app.state.slack.idle().await;
    }

    /// Every `chat.postMessage` body (status lines included).
    fn all_posts(&self) -> Vec<Value> {
        self.slack
            .requests_to("/api/chat.postMessage")
            .into_iter()
            .map(|r| r.body)
            .collect()
    }

    /// The messages that carry an answer: the status lines' final
    /// `chat.update`s and any other post (with the status line's channel
    /// and thread copied onto the update for assertions).
    fn posts(&self) -> Vec<Value> {
        let status: Vec<Value> = self
            .all_posts()
            .into_iter()
            .filter(|p| p["text"] == root::channels::slack::WORKING_TEXT)
            .collect();
        let mut out: Vec<Value> = self
            .slack
            .requests_to("/api/chat.update")
            .into_iter()
            .map(|r| r.body)
            .filter(|u| u.get("blocks").is_some())
            .map(|mut u| {
                if let Some(s) = status.first() {
                    u["mrkdwn"] = s["mrkdwn"].clone();
                    if let Some(t) = s.get("thread_ts") {
                        u["thread_ts"] = t.clone();
                    }
                }
                u
            })
            .collect();
        out.extend(
            self.all_posts()
                .into_iter()
                .filter(|p| p["text"] != root::channels::slack::WORKING_TEXT),
        );
        out
    }
}

fn channel_event(kind: &str, text: &str, ts: &str, thread_ts: Option<&str>) -> Vec<u8> {
    let mut event = json!({
        "type": kind, "user": "U043H11ES4V", "text": text, "ts": ts,
        "channel": "C0123", "channel_type": "channel", "event_ts": ts,
    });
    if kind == "app_mention" {
        event.as_object_mut().unwrap().remove("channel_type");
    }
    if let Some(t) = thread_ts {
        event["thread_ts"] = json!(t);
    }
    serde_json::to_vec(&json!({
        "type": "event_callback", "team_id": "T043DB835ML", "api_app_id": "A1",
        "event": event, "event_id": format!("Ev{ts}"),
        "authorizations": [{"user_id": BOT, "is_bot": true}],
    }))
    .unwrap()
}

fn app_relayed_dm(user: &str, ts: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "type": "event_callback", "team_id": "T043DB835ML", "api_app_id": "A1",
        "event": {"type": "message", "user": user, "bot_id": "B999", "app_id": "A222",
            "text": "what time is the meetup?", "ts": ts, "channel": "D0999",
            "channel_type": "im"},
        "authorizations": [{"user_id": BOT, "is_bot": true}],
    }))
    .unwrap()
}

fn client(fake: &FakeHttp) -> root::slack::SlackApi {
    root::slack::SlackApi::new(
        reqwest::Client::new(),
        &fake.url("/api"),
        root::config::Secret::new("xoxb-t"),
    )
    .with_time_unit(std::time::Duration::from_millis(1))
}

/// A turn context in the root tenant for calling a tool directly.
async fn tool_ctx(w: &World, slack_user: &str, is_admin: bool) -> root::tools::TurnContext {
    let tenant = w.app.state.tenants.by_slug("root").await.unwrap().unwrap();
    root::tools::TurnContext {
        tenant_id: tenant.id,
        principal: root::tools::TurnPrincipal {
            principal_ref: slack_user.into(),
            slack_user_id: Some(slack_user.into()),
            tier: root::platform::tiers::Tier::member(),
            is_admin,
            ..Default::default()
        },
        surface: root::tools::gating::Surface::Slack,
        channel_id: Some("D0442US94JD".into()),
        user_message: "post it".into(),
        knowledge_source_types: None,
        surface_tools: Vec::new(),
        services: w.app.state.tools.clone(),
        delivery: Default::default(),
        email_delegation: None,
    }
}

async fn run_tool(
    w: &World,
    tool: &dyn root::tools::CoreTool,
    args: Value,
    ctx: &root::tools::TurnContext,
) -> root::agent::ToolResult {
    let tenant = w.app.state.tenants.by_slug("root").await.unwrap().unwrap();
    root::platform::tenancy::scope(
        root::platform::tenancy::TenantContext { tenant },
        tool.execute(args, ctx),
    )
    .await
}

//! `POST /api/v1/messages` (§12.2) against a fake Slack Web API and a fake
//! BYO email webhook on 127.0.0.1: a DM by Slack id, a threaded channel
//! post, an email target resolved through the member's Slack binding, an
//! email; and every refusal — a bad field (400 naming it), nobody behind
//! the target (404), a channel not set up (409), Slack refusing (502), no
//! key (401).

use serde_json::{Value, json};
use storage::{
    ChannelStatus, ChannelType, Json, Principal, ROOT_TENANT_ID, Redacted, Store, TenantChannel, Ts,
};
use uuid::Uuid;

use root::platform::api_keys::KeyKind;

use crate::support::fake_http::{FakeHttp, Reply};
use crate::support::{TestApp, create_tenant, mint_key};

struct World {
    app: TestApp,
    slack: FakeHttp,
    out: FakeHttp,
    key: String,
}

async fn world() -> World {
    let slack = FakeHttp::start().await;
    slack
        .reply(
            "/api/auth.test",
            200,
            json!({"ok": true, "team_id": "T043DB835ML", "user_id": "U0BOT"}),
        )
        .route("POST", "/api/conversations.open", |req| {
            let body = String::from_utf8_lossy(&req.raw).to_string();
            let user = body
                .split('&')
                .find_map(|kv| kv.strip_prefix("users="))
                .unwrap_or("")
                .to_string();
            Reply::json(
                200,
                &json!({"ok": true, "channel": {"id": format!("D-{user}")}}),
            )
        })
        .route("POST", "/api/chat.postMessage", |req| {
            if req.body.to_string().contains("C0PRIVATE") {
                return Reply::json(200, &json!({"ok": false, "error": "not_in_channel"}));
            }
            Reply::json(200, &json!({"ok": true, "ts": "1700000000.000200"}))
        });
    let out = FakeHttp::start().await;
    let api = slack.url("/api");
    let app = TestApp::spawn_with(&[
        ("SLACK_API_BASE_URL", api.as_str()),
        ("SLACK_BOT_TOKEN", "xoxb-test-token"),
        ("SLACK_SIGNING_SECRET", "8f742231b10e8888abcd99yyyzzz85a5"),
        ("ROOT_RUN_WORKERS", "false"),
    ])
    .await;
    let key = mint_key(&app.state.store, "root", KeyKind::Live).await;
    World {
        app,
        slack,
        out,
        key,
    }
}

impl World {
    async fn send(&self, key: &str, body: Value) -> (u16, Value) {
        let resp = self
            .app
            .post_json("/api/v1/messages", Some(key), &body)
            .await;
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    fn posts(&self) -> Vec<Value> {
        self.slack
            .requests_to("/api/chat.postMessage")
            .into_iter()
            .map(|r| r.body)
            .collect()
    }

    async fn byo_email(&self) {
        self.out.reply("/email-out", 200, json!({"ok": true}));
        let now = Ts::now();
        self.app
            .state
            .store
            .insert(TenantChannel {
                id: Uuid::new_v4(),
                tenant_id: ROOT_TENANT_ID,
                channel_type: ChannelType::Email,
                config: Json(json!({"mode": "byo_webhook",
                    "outbound_webhook_url": self.out.url("/email-out")})),
                secrets: Redacted::new(Json(json!({"inbound_token": "inbound-token-0123456789",
                    "outbound_signing_secret": "outbound-secret"}))),
                status: ChannelStatus::Active,
                created_at: now,
                updated_at: now,
            })
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn slack_targets_are_a_user_a_conversation_or_a_members_email() {
    let w = world().await;
    let (status, body) = w
        .send(
            &w.key,
            json!({"channel": "slack", "target": "U0ADA01", "text": "**Welcome** aboard"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({"kind": "slack_dm", "channel_id": "D-U0ADA01", "ts": "1700000000.000200"})
    );
    let posts = w.posts();
    assert_eq!(posts[0]["channel"], "D-U0ADA01");
    assert_eq!(
        posts[0]["text"], "*Welcome* aboard",
        "Markdown became mrkdwn"
    );

    let (status, body) = w
        .send(
            &w.key,
            json!({"channel": "slack", "target": "C0GENERAL", "text": "Release is out",
                   "thread_ts": "1699999999.000100"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["kind"], "slack_channel");
    let posts = w.posts();
    assert_eq!(posts[1]["channel"], "C0GENERAL");
    assert_eq!(posts[1]["thread_ts"], "1699999999.000100");

    // An email address goes through the member's Slack binding.
    let mut ada = Principal::new(ROOT_TENANT_ID, "m-ada");
    ada.email = Some("ada@example.org".into());
    ada.slack_user_id = Some("U0ADA01".into());
    w.app.state.store.insert(ada).await.unwrap();
    let (status, body) = w
        .send(
            &w.key,
            json!({"channel": "slack", "target": "Ada@Example.org", "text": "Hi"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["channel_id"], "D-U0ADA01");
    let (status, body) = w
        .send(
            &w.key,
            json!({"channel": "slack", "target": "nobody@example.org", "text": "Hi"}),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        body["error"]["message"],
        "no member with email \"nobody@example.org\" has a Slack account known to Root"
    );
    assert_eq!(w.posts().len(), 3, "nothing posted for the unknown address");
}

#[tokio::test]
async fn refusals_name_the_field_the_target_or_the_upstream() {
    let w = world().await;
    for (body, field) in [
        (
            json!({"channel": "slack", "target": "general", "text": "x"}),
            "target",
        ),
        (
            json!({"channel": "slack", "target": "U0ADA01", "text": "  "}),
            "text",
        ),
        (
            json!({"channel": "slack", "target": "U0ADA01", "text": "x".repeat(4001)}),
            "text",
        ),
        (
            json!({"channel": "slack", "target": "U0ADA01", "text": "x", "subject": "s"}),
            "subject",
        ),
        (
            json!({"channel": "email", "target": "ada@example.org", "text": "x",
                   "thread_ts": "1.2"}),
            "thread_ts",
        ),
        (
            json!({"channel": "email", "target": "not-an-address", "text": "x"}),
            "target",
        ),
    ] {
        let (status, resp) = w.send(&w.key, body.clone()).await;
        assert_eq!(status, 400, "{body} → {resp}");
        assert_eq!(resp["error"]["field"], field, "{body}");
    }
    let (status, resp) = w
        .send(
            &w.key,
            json!({"channel": "sms", "target": "x", "text": "x"}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(resp["error"]["message"].as_str().unwrap().contains("sms"));

    let (status, resp) = w
        .send(
            &w.key,
            json!({"channel": "slack", "target": "C0PRIVATE", "text": "hello"}),
        )
        .await;
    assert_eq!(status, 502, "{resp}");
    assert!(
        resp["error"]["message"]
            .as_str()
            .unwrap()
            .contains("not_in_channel")
    );

    // A community without Slack or email set up.
    create_tenant(&w.app.state.store, "acme", "Acme").await;
    let acme = mint_key(&w.app.state.store, "acme", KeyKind::Live).await;
    let (status, resp) = w
        .send(
            &acme,
            json!({"channel": "slack", "target": "U0ADA01", "text": "x"}),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        resp["error"]["message"],
        "Slack is not set up for this community"
    );
    let (status, _) = w
        .send(
            &acme,
            json!({"channel": "email", "target": "ada@example.org", "text": "x"}),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(
        w.posts().len(),
        1,
        "only the refused C0PRIVATE post reached Slack"
    );

    let resp = w
        .app
        .post_json(
            "/api/v1/messages",
            None,
            &json!({"channel": "slack", "target": "U0ADA01", "text": "x"}),
        )
        .await;
    assert_eq!(resp.status(), 401);
}

#[tokio::test]
async fn an_email_goes_out_through_the_communitys_email_channel() {
    let w = world().await;
    w.byo_email().await;
    let (status, body) = w
        .send(
            &w.key,
            json!({"channel": "email", "target": "Ada@Example.org",
                   "text": "Your **invoice** is ready.", "subject": "Invoice"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"kind": "email", "email": "ada@example.org"}));
    let sent = w.out.requests_to("/email-out");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].body["to"], json!(["ada@example.org"]));
    assert_eq!(sent[0].body["subject"], "Invoice");
    assert!(sent[0].body["text"].as_str().unwrap().contains("invoice"));

    // No subject: the community's name says who it is from.
    w.send(
        &w.key,
        json!({"channel": "email", "target": "bob@example.org", "text": "Hello"}),
    )
    .await;
    let sent = w.out.requests_to("/email-out");
    let subject = sent[1].body["subject"].as_str().unwrap();
    assert!(subject.starts_with("Message from "), "{subject}");
}

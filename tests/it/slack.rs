//! The Slack channel end to end (§8.2): signed Events API deliveries through
//! the real route, a fake Slack Web API and the scripted fake LLM on
//! 127.0.0.1. Event payloads are the published fixtures of
//! `../shared/fixtures/slack/events/`, signed here with a fresh timestamp.

use std::time::{SystemTime, UNIX_EPOCH};

use root::slack::signature::sign;
use serde_json::{Value, json};

use crate::support::TestApp;
use crate::support::fake_http::{FakeHttp, Reply};
use crate::support::fake_llm::{FakeLlm, completion};

const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const BOT: &str = "U0442US8QGH";
const EVENTS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../shared/fixtures/slack/events"
);

struct World {
    app: TestApp,
    slack: FakeHttp,
    llm: FakeLlm,
}

async fn world() -> World {
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
    let app = TestApp::spawn_with(&[
        ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
        ("OPENROUTER_API_KEY", "sk-or-test"),
        ("SLACK_API_BASE_URL", api.as_str()),
        ("SLACK_BOT_TOKEN", "xoxb-test-token"),
        ("SLACK_SIGNING_SECRET", SECRET),
        ("ROOT_RUN_WORKERS", "false"),
    ])
    .await;
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
    // The gate saw the message, then the loop answered it.
    let bodies = w.llm.bodies();
    assert_eq!(bodies.len(), 2);
    assert!(
        bodies[0]["response_format"].is_object(),
        "the gate is a structured call"
    );
    assert!(bodies[1].to_string().contains("test"));
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

fn client(fake: &FakeHttp) -> root::slack::SlackApi {
    root::slack::SlackApi::new(
        reqwest::Client::new(),
        &fake.url("/api"),
        root::config::Secret::new("xoxb-t"),
    )
    .with_time_unit(std::time::Duration::from_millis(1))
}

#[tokio::test]
async fn slack_api_retries_429_and_5xx_and_reports_ok_false() {
    let fake = FakeHttp::start().await;
    fake.script(
        "POST",
        "/api/chat.postMessage",
        [
            Reply::json(429, &json!({"ok": false, "error": "ratelimited"})),
            Reply::status(503),
            Reply::json(200, &json!({"ok": true, "ts": "1.2"})),
        ],
    );
    let api = client(&fake);
    let ts = api
        .post_message(&root::slack::OutgoingMessage {
            channel: "C1".into(),
            text: "hi".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(ts, "1.2");
    assert_eq!(fake.requests_to("/api/chat.postMessage").len(), 3);
    // `ok: false` on a 200 is an error with Slack's code, not retried.
    fake.reply(
        "/api/users.info",
        200,
        json!({"ok": false, "error": "user_not_found"}),
    );
    let err = api.users_info("U404").await.unwrap_err();
    assert_eq!(err.code(), Some("user_not_found"));
    assert_eq!(fake.requests_to("/api/users.info").len(), 1);
    // Reads are form-encoded with the bearer token.
    let req = &fake.requests_to("/api/users.info")[0];
    assert_eq!(req.header("authorization"), Some("Bearer xoxb-t"));
    assert!(String::from_utf8_lossy(&req.raw).contains("user=U404"));
}

#[tokio::test]
async fn slack_api_follows_cursors_across_pages() {
    let fake = FakeHttp::start().await;
    fake.script(
        "POST",
        "/api/conversations.replies",
        [
            Reply::json(
                200,
                &json!({"ok": true, "messages": [{"ts": "1"}, {"ts": "2"}],
                "response_metadata": {"next_cursor": "c2"}}),
            ),
            Reply::json(
                200,
                &json!({"ok": true, "messages": [{"ts": "3"}],
                "response_metadata": {"next_cursor": ""}}),
            ),
        ],
    );
    let msgs = client(&fake)
        .conversations_replies("C1", "1")
        .await
        .unwrap();
    assert_eq!(msgs.len(), 3);
    let second =
        String::from_utf8_lossy(&fake.requests_to("/api/conversations.replies")[1].raw).to_string();
    assert!(second.contains("cursor=c2"), "{second}");
}

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

#[tokio::test]
async fn slack_escalations_reach_the_configured_admin_channel_and_dms() {
    use storage::{Store, TenantStore};
    let w = world().await;
    w.slack.route("POST", "/api/conversations.open", |_| {
        Reply::json(200, &json!({"ok": true, "channel": {"id": "DADMIN"}}))
    });
    let mut tenant = w
        .app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    let mut settings = tenant.settings.0.clone();
    root::platform::settings::apply_setting(
        &mut settings,
        "notifications.slack_channel",
        &json!("CADMINS"),
    )
    .unwrap();
    root::platform::settings::apply_setting(
        &mut settings,
        "notifications.slack_admin_user_ids",
        &json!(["UADMIN1"]),
    )
    .unwrap();
    assert!(
        root::platform::settings::apply_setting(
            &mut settings.clone(),
            "notifications.slack_channel",
            &json!("#general")
        )
        .is_err()
    );
    tenant.settings = storage::Json(settings);
    w.app.state.store.update(tenant.clone()).await.unwrap();
    w.app.state.tenants.invalidate(&tenant);

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
async fn slack_image_upload_follows_the_external_upload_sequence() {
    use base64::Engine as _;
    use root::slack::files::{ImageIn, stitch_png, upload_png};
    let fake = FakeHttp::start().await;
    let upload_url = fake.url("/upload/abc");
    fake.reply(
        "/api/files.getUploadURLExternal",
        200,
        json!({"ok": true, "upload_url": upload_url, "file_id": "F123"}),
    )
    .reply("/upload/abc", 200, Value::Null)
    .reply(
        "/api/files.completeUploadExternal",
        200,
        json!({"ok": true, "files": [{"id": "F123"}]}),
    );
    // Two tool images become one stitched PNG.
    let tiny = |rgb: [u8; 3]| {
        let img = image::RgbaImage::from_pixel(4, 4, image::Rgba([rgb[0], rgb[1], rgb[2], 255]));
        let mut bytes = Vec::new();
        image::DynamicImage::ImageRgba8(img)
            .write_to(
                &mut std::io::Cursor::new(&mut bytes),
                image::ImageFormat::Png,
            )
            .unwrap();
        ImageIn {
            name: None,
            base64: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    };
    let png = stitch_png(&[tiny([255, 0, 0]), tiny([0, 0, 255])]).unwrap();
    let api = client(&fake);
    let id = upload_png(
        &api,
        &reqwest::Client::new(),
        "C0123",
        Some("1700000000.000100"),
        "images.png",
        png.clone(),
    )
    .await
    .unwrap();
    assert_eq!(id, "F123");
    let paths: Vec<String> = fake.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        paths,
        [
            "/api/files.getUploadURLExternal",
            "/upload/abc",
            "/api/files.completeUploadExternal"
        ]
    );
    let ticket = String::from_utf8_lossy(&fake.requests()[0].raw).to_string();
    assert!(
        ticket.contains(&format!("length={}", png.len())),
        "{ticket}"
    );
    assert_eq!(
        fake.requests()[1].raw,
        png,
        "the exact bytes went to upload_url"
    );
    let complete = String::from_utf8_lossy(&fake.requests()[2].raw).to_string();
    let form: Vec<(String, String)> = reqwest::Url::parse(&format!("http://x/?{complete}"))
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    let get = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("channel_id").as_deref(), Some("C0123"));
    assert_eq!(get("thread_ts").as_deref(), Some("1700000000.000100"));
    let files: Value = serde_json::from_str(&get("files").unwrap()).unwrap();
    assert_eq!(files, json!([{"id": "F123", "title": "images.png"}]));
}

//! The email channel end to end (§8.3, §17 #7): signed / tokened ingress,
//! 202 only after the durable enqueue, dedupe, the checkpointed reply
//! (a failed send is retried from the job record without re-running the
//! turn), threading headers and the signed BYO webhook / Postmark outbound.

use std::sync::Arc;

use root::platform::clock::{Clock, ManualClock};
use serde_json::{Value, json};
use storage::{
    ChannelStatus, ChannelType, ConversationLog, Direction, EmailLog, Json, ROOT_TENANT_ID,
    Redacted, Scan, Store, TenantChannel, Ts,
};
use uuid::Uuid;

use crate::support::TestApp;
use crate::support::fake_http::{FakeHttp, Reply};
use crate::support::fake_llm::{FakeLlm, completion};

pub(super) const TOKEN: &str = "inbound-token-0123456789abcdef";
const OUT_SECRET: &str = "outbound-signing-secret-xyz";
pub(super) const WEBHOOK_SECRET: &str = "whsec_test_secret_key_123";
const MIME: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/email/mime/03_thunderbird_plain_reply_references_chain.eml"
));

pub(super) struct Mail {
    pub(super) app: TestApp,
    pub(super) llm: FakeLlm,
    pub(super) out: FakeHttp,
    pub(super) clock: ManualClock,
}

pub(super) async fn world() -> Mail {
    let llm = FakeLlm::start().await;
    let out = FakeHttp::start().await;
    let clock = ManualClock::new(Ts::now());
    let postmark = out.url("");
    let app = TestApp::spawn_with_clock(
        &[
            ("OPENROUTER_BASE_URL", llm.base_url.as_str()),
            ("OPENROUTER_API_KEY", "sk-or-test"),
            ("ROOT_RUN_WORKERS", "false"),
            ("PLATFORM_EMAIL_DOMAIN", "mail.example.com"),
            ("PRIMITIVE_WEBHOOK_SECRET", WEBHOOK_SECRET),
            ("POSTMARK_SERVER_TOKEN", "pm-server-token"),
            ("POSTMARK_API_URL", postmark.as_str()),
        ],
        Arc::new(clock.clone()),
    )
    .await;
    Mail {
        app,
        llm,
        out,
        clock,
    }
}

impl Mail {
    /// Make the root tenant a BYO tenant posting replies to the fake.
    pub(super) async fn byo(&self) {
        let now = self.clock.now();
        self.app
            .state
            .store
            .insert(TenantChannel {
                id: Uuid::new_v4(),
                tenant_id: ROOT_TENANT_ID,
                channel_type: ChannelType::Email,
                config: Json(json!({"mode": "byo_webhook",
                    "outbound_webhook_url": self.out.url("/email-reply")})),
                secrets: Redacted::new(Json(json!({"inbound_token": TOKEN,
                    "outbound_signing_secret": OUT_SECRET}))),
                status: ChannelStatus::Active,
                created_at: now,
                updated_at: now,
            })
            .await
            .unwrap();
    }

    /// POST as a forwarder that vouches for the sender
    /// (`X-Root-Sender-Auth: pass`; the platform route ignores it).
    pub(super) async fn post(
        &self,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
        sig: Option<String>,
    ) -> (u16, Value) {
        self.post_with(path, content_type, body, sig, Some("pass"))
            .await
    }

    /// POST with the forwarder's sender verdict header as given (`None`:
    /// no header).
    pub(super) async fn post_with(
        &self,
        path: &str,
        content_type: &str,
        body: Vec<u8>,
        sig: Option<String>,
        sender_auth: Option<&str>,
    ) -> (u16, Value) {
        let mut req = self
            .app
            .client
            .post(self.app.url(path))
            .header("content-type", content_type)
            .body(body);
        if let Some(s) = sig {
            req = req.header("Primitive-Signature", s);
        }
        if let Some(v) = sender_auth {
            req = req.header("x-root-sender-auth", v);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    pub(super) async fn drain(&self) -> Vec<root::queue::Outcome> {
        crate::support::drain_jobs(&self.app.state, "email-inbound").await
    }

    pub(super) async fn logs(&self) -> Vec<ConversationLog> {
        self.app
            .state
            .store
            .scan(Some(ROOT_TENANT_ID), Scan::all())
            .await
            .unwrap()
    }
}

#[tokio::test]
async fn email_byo_mail_is_answered_once_threaded_and_signed() {
    let m = world().await;
    m.byo().await;
    m.out.reply("/email-reply", 200, json!({"ok": true}));
    m.llm.json(completion("Yes — the **reply** works."));
    let path = format!("/channels/email/inbound/{TOKEN}");

    // Unknown token: 404, nothing queued. Unreadable mail: 400.
    let (s, _) = m
        .post(
            "/channels/email/inbound/nope",
            "message/rfc822",
            MIME.to_vec(),
            None,
        )
        .await;
    assert_eq!(s, 404);
    let (s, v) = m.post(&path, "message/rfc822", Vec::new(), None).await;
    assert_eq!(s, 400, "{v}");

    // Accepted once (202), the provider's retry is a 200 duplicate.
    let (s, v) = m.post(&path, "message/rfc822", MIME.to_vec(), None).await;
    assert_eq!((s, v), (202, json!({"status": "accepted"})));
    let (s, v) = m.post(&path, "message/rfc822", MIME.to_vec(), None).await;
    assert_eq!((s, v), (200, json!({"status": "duplicate"})));

    let ran = m.drain().await;
    assert_eq!(ran.len(), 1, "{ran:?}");
    let sent = m.out.requests_to("/email-reply");
    assert_eq!(sent.len(), 1);
    let body = &sent[0].body;
    assert_eq!(body["type"], "email_reply");
    assert_eq!(body["subject"], "Re: Test reply email");
    assert_eq!(body["in_reply_to"], "<473FFE27.20003@xxx.org>");
    assert_eq!(
        body["references"],
        json!([
            "<473FF3B8.9020707@xxx.org>",
            "<348F04F142D69C21-291E56D292BC@xxxx.net>",
            "<473FFE27.20003@xxx.org>"
        ])
    );
    assert_eq!(body["to"], json!(["xxxxxxxx@xxx.org"]));
    assert!(
        body["html"]
            .as_str()
            .unwrap()
            .contains("<strong>reply</strong>")
    );
    assert!(body["text"].as_str().unwrap().contains("reply"));
    // §7.1 signature over the exact bytes.
    let ts = sent[0].header("x-root-timestamp").unwrap().to_string();
    let sig = sent[0].header("x-root-signature").unwrap().to_string();
    root::integrations::signing::verify(
        OUT_SECRET,
        &ts,
        &sent[0].raw,
        &sig,
        m.clock.now().micros() / 1_000_000,
        300,
    )
    .expect("signed with the outbound secret");

    // Logged: the inbound row carries the Message-ID, one reply row.
    let logs = m.logs().await;
    let inbound: Vec<_> = logs
        .iter()
        .filter(|l| l.direction == Direction::Inbound)
        .collect();
    let outbound: Vec<_> = logs
        .iter()
        .filter(|l| l.direction == Direction::Outbound)
        .collect();
    assert_eq!(inbound.len(), 1);
    assert_eq!(outbound.len(), 1);
    assert_eq!(
        inbound[0].external_message_id.as_deref(),
        Some("<473FFE27.20003@xxx.org>")
    );
    // A later redelivery (after the in-memory window) is still a duplicate:
    // the logs remember the Message-ID.
    m.clock.advance_ms(31 * 60 * 1000);
    let (s, _) = m.post(&path, "message/rfc822", MIME.to_vec(), None).await;
    assert_eq!(s, 200);
    assert!(m.drain().await.is_empty());
}

#[tokio::test]
async fn email_a_failed_send_is_retried_from_the_checkpoint_without_a_second_turn() {
    let m = world().await;
    m.byo().await;
    m.out.script(
        "POST",
        "/email-reply",
        [Reply::status(503), Reply::json(200, &json!({"ok": true}))],
    );
    m.llm.json(completion("Answer prepared once."));
    let path = format!("/channels/email/inbound/{TOKEN}");
    assert_eq!(
        m.post(&path, "message/rfc822", MIME.to_vec(), None).await.0,
        202
    );

    let first = m.drain().await;
    assert_eq!(first.len(), 1);
    assert_eq!(m.out.requests_to("/email-reply").len(), 1, "tried once");
    assert!(
        m.logs()
            .await
            .iter()
            .all(|l| l.direction == Direction::Inbound),
        "no reply logged before the provider accepted it"
    );
    // The queue's backoff (10 s base) passes; the retry sends the same
    // prepared reply — the model is not asked again.
    m.clock.advance_ms(11_000);
    let second = m.drain().await;
    assert_eq!(second.len(), 1, "{second:?}");
    let sent = m.out.requests_to("/email-reply");
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[0].body, sent[1].body,
        "the checkpointed reply, byte for byte"
    );
    assert_eq!(m.llm.bodies().len(), 1, "one turn only");
    let outbound = m
        .logs()
        .await
        .into_iter()
        .filter(|l| l.direction == Direction::Outbound)
        .count();
    assert_eq!(outbound, 1);
    let email_logs: Vec<EmailLog> = m
        .app
        .state
        .store
        .scan(Some(ROOT_TENANT_ID), Scan::all())
        .await
        .unwrap();
    assert_eq!(email_logs.len(), 1);
    assert_eq!(
        email_logs[0].subject.as_deref(),
        Some("Re: Test reply email")
    );
}

/// The `Primitive-Signature` header value for `body` at `t`.
pub(super) fn header(secret: &str, t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", root::email::primitive::sign(secret, t, body))
}

fn primitive_event(rcpt: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "id": "evt_1", "event": "email.received", "version": "2025-12-14",
        "email": {
            "id": "em_1",
            "smtp": {"mail_from": "ada@example.org", "rcpt_to": [rcpt]},
            "headers": {"from": "Ada <ada@example.org>", "to": rcpt,
                        "subject": "Parking?", "message_id": "<q1@example.org>"},
            "parsed": {"body_text": "Where do visitors park?", "body_html": null,
                       "in_reply_to": null, "references": null,
                       "message_id": "<q1@example.org>"}
        }
    }))
    .unwrap()
}

#[tokio::test]
async fn email_platform_alias_mail_is_signed_routed_and_sent_through_postmark() {
    let m = world().await;
    m.out
        .reply("/email", 200, json!({"MessageID": "pm-1", "ErrorCode": 0}));
    m.llm.json(completion("Visitors park on level 2."));
    let now = m.clock.now().micros() / 1_000_000;
    let body = primitive_event("root@mail.example.com");
    let good = header(WEBHOOK_SECRET, now, &body);
    // Bad signature: 401, nothing queued.
    let bad = header("whsec_other", now, &body);
    let (s, v) = m
        .post(
            "/channels/email/inbound/platform",
            "application/json",
            body.clone(),
            Some(bad),
        )
        .await;
    assert_eq!(s, 401);
    assert_eq!(v["error"]["code"], "invalid_signature");
    // Mail for an alias nobody has: 404.
    let stray = primitive_event("nobody@mail.example.com");
    let sig = header(WEBHOOK_SECRET, now, &stray);
    let (s, _) = m
        .post(
            "/channels/email/inbound/platform",
            "application/json",
            stray,
            Some(sig),
        )
        .await;
    assert_eq!(s, 404);
    assert!(m.drain().await.is_empty());

    let (s, v) = m
        .post(
            "/channels/email/inbound/platform",
            "application/json",
            body,
            Some(good),
        )
        .await;
    assert_eq!((s, v), (202, json!({"status": "accepted"})));
    assert_eq!(m.drain().await.len(), 1);
    // The model saw who wrote (`email.context_block`).
    let system = m.llm.bodies()[0]["messages"][0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains("- Email sender: Ada (ada@example.org)"),
        "{system}"
    );
    assert!(system.contains("EMAIL CONVERSATION ETIQUETTE:"), "{system}");
    let sent = m.out.requests_to("/email");
    assert_eq!(sent.len(), 1);
    assert_eq!(
        sent[0].header("x-postmark-server-token"),
        Some("pm-server-token")
    );
    let b = &sent[0].body;
    assert_eq!(b["Subject"], "Re: Parking?");
    assert!(
        b["From"]
            .as_str()
            .unwrap()
            .contains("root@mail.example.com"),
        "{b}"
    );
    assert!(b["To"].as_str().unwrap().contains("ada@example.org"), "{b}");
    assert_eq!(
        b["Headers"],
        json!([{"Name": "Auto-Submitted", "Value": "auto-replied"},
               {"Name": "In-Reply-To", "Value": "<q1@example.org>"},
               {"Name": "References", "Value": "<q1@example.org>"}])
    );
}

/// `PUT /api/v1/channels/email`: a BYO setup answers its inbound URL and
/// generated signing secret once; mail to that URL is accepted; a second
/// call keeps both (and does not show them); an alias another tenant has
/// is refused.
#[tokio::test]
async fn email_channel_is_configured_through_the_api() {
    use root::platform::api_keys::KeyKind;
    let m = world().await;
    crate::support::tenants::create_tenant(&m.app.state.store, "acme", "Acme").await;
    let key = crate::support::tenants::mint_key(&m.app.state.store, "acme", KeyKind::Live).await;
    let put = |body: Value| {
        let req = m
            .app
            .client
            .put(m.app.url("/api/v1/channels/email"))
            .bearer_auth(&key)
            .json(&body);
        async move {
            let r = req.send().await.unwrap();
            (
                r.status().as_u16(),
                r.json::<Value>().await.unwrap_or(Value::Null),
            )
        }
    };
    let (s, v) = put(json!({"mode": "byo_webhook",
        "outbound_webhook_url": m.out.url("/acme-replies")}))
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["created"], true);
    let url = v["inbound_url"].as_str().unwrap().to_string();
    assert!(url.contains("/channels/email/inbound/"), "{url}");
    assert_eq!(v["outbound_signing_secret"].as_str().unwrap().len(), 64);
    let path = url[url.find("/channels/").unwrap()..].to_string();
    assert_eq!(
        m.post(&path, "message/rfc822", MIME.to_vec(), None).await.0,
        202
    );

    let (s, v) = put(json!({"mode": "byo_webhook",
        "outbound_webhook_url": m.out.url("/acme-replies-2")}))
    .await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["created"], false);
    assert_eq!(v["inbound_url"], Value::Null, "not shown again");
    assert_eq!(v["outbound_signing_secret"], Value::Null);
    // The old URL still works (the token was kept): a duplicate now.
    assert_eq!(
        m.post(&path, "message/rfc822", MIME.to_vec(), None).await.0,
        200
    );

    // The root tenant already answers at root@…: refused.
    let (s, v) = put(json!({"mode": "platform_alias", "alias": "root"})).await;
    assert_eq!(s, 400, "{v}");
    let (s, v) = put(json!({"mode": "platform_alias"})).await;
    assert_eq!(s, 200, "{v}");
    assert_eq!(v["address"], "acme@mail.example.com");
    // Missing URL / unknown field: 400.
    assert_eq!(put(json!({"mode": "byo_webhook"})).await.0, 400);
    assert_eq!(put(json!({"mode": "platform_alias", "x": 1})).await.0, 400);
}

/// `root tenant channel email` (server stopped): prints the address, or
/// the inbound URL and generated signing secret once.
#[tokio::test]
async fn email_cli_configures_the_channel_and_prints_secrets_once() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let run = |args: Vec<&'static str>| {
        let mut c = std::process::Command::new(env!("CARGO_BIN_EXE_root"));
        c.env_clear()
            .env("ROOT_DATA_DIR", &data)
            .env("PLATFORM_EMAIL_DOMAIN", "mail.example.com")
            .env("PLATFORM_BASE_URL", "https://root.example.com")
            .env("RUST_LOG", "warn")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args(args);
        async move {
            let out = tokio::task::spawn_blocking(move || c.output().unwrap())
                .await
                .unwrap();
            (
                out.status.code().unwrap_or(-1),
                String::from_utf8_lossy(&out.stdout).to_string(),
                String::from_utf8_lossy(&out.stderr).to_string(),
            )
        }
    };
    let (code, _, err) = run(vec!["tenant", "create", "acme"]).await;
    assert_eq!(code, 0, "{err}");
    let (code, out, err) = run(vec![
        "tenant",
        "channel",
        "email",
        "acme",
        "--mode",
        "platform_alias",
        "--alias",
        "hello",
    ])
    .await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("members write to hello@mail.example.com"),
        "{out}"
    );
    let byo = || {
        vec![
            "tenant",
            "channel",
            "email",
            "acme",
            "--mode",
            "byo_webhook",
            "--outbound-webhook-url",
            "https://acme.example.org/root-replies",
        ]
    };
    let (code, out, err) = run(byo()).await;
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("forward inbound mail to https://root.example.com/channels/email/inbound/"),
        "{out}"
    );
    assert!(out.contains("replies are signed with "), "{out}");
    let (code, again, _) = run(byo()).await;
    assert_eq!(code, 0);
    assert!(
        !again.contains("forward inbound mail"),
        "shown once: {again}"
    );
    assert!(!again.contains("signed with"), "shown once: {again}");
    // Missing URL: exit 1 with the reason.
    let (code, _, err) = run(vec![
        "tenant",
        "channel",
        "email",
        "acme",
        "--mode",
        "byo_webhook",
    ])
    .await;
    assert_eq!(code, 1);
    assert!(err.contains("outbound-webhook-url"), "{err}");
}

/// §15.2: an escalation reaches `settings.admin_emails` by mail, through
/// the tenant's sender (the platform's Postmark here), via the fan-out.
#[tokio::test]
async fn email_escalations_reach_the_admin_emails() {
    use storage::{HumanIntervention, InterventionCategory, InterventionStatus};
    let m = world().await;
    m.out
        .reply("/email", 200, json!({"MessageID": "pm-2", "ErrorCode": 0}));
    crate::support::set_setting(
        &m.app.state,
        "root",
        "admin_emails",
        json!(["Ops@Example.org", "lead@example.org"]),
    )
    .await;
    let tenant = m.app.state.tenants.by_slug("root").await.unwrap().unwrap();
    let now = m.clock.now();
    let row = HumanIntervention {
        id: Uuid::new_v4(),
        tenant_id: ROOT_TENANT_ID,
        principal_id: None,
        channel: storage::Channel::Email,
        category: InterventionCategory::Escalation,
        status: InterventionStatus::default(),
        title: "The door code does not work".into(),
        details: Some("Member cannot get into the studio.".into()),
        metadata: Json(json!({"user_name": "Ada"})),
        created_at: now,
        updated_at: now,
    };
    root::platform::tenancy::scope(root::platform::tenancy::TenantContext { tenant }, async {
        m.app.state.interventions.dispatch(&row)
    })
    .await;
    m.app.state.interventions.idle().await;
    let sent = m.out.requests_to("/email");
    assert_eq!(sent.len(), 1);
    let b = &sent[0].body;
    assert_eq!(b["To"], "ops@example.org, lead@example.org");
    assert!(
        b["From"]
            .as_str()
            .unwrap()
            .contains("root@mail.example.com"),
        "{b}"
    );
    assert!(
        b["Subject"]
            .as_str()
            .unwrap()
            .contains("Escalation: The door code does not work"),
        "{b}"
    );
    assert!(
        b["TextBody"]
            .as_str()
            .unwrap()
            .contains("From: Ada (via email)"),
        "{b}"
    );
}

fn plain_mail(from: &str, id: &str, body: &str) -> Vec<u8> {
    format!(
        "From: {from}\r\nTo: hello@acme.example\r\nSubject: Plan\r\nMessage-ID: <{id}>\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n{body}\r\n"
    )
    .into_bytes()
}

/// §8.3: `Impersonating:` is honoured for a tenant admin only; the reply
/// still goes to the admin who wrote.
#[tokio::test]
async fn email_impersonation_prefix_is_honoured_for_admins_only() {
    let m = world().await;
    m.byo().await;
    m.out.reply("/email-reply", 200, json!({"ok": true}));
    let now = m.clock.now();
    m.app
        .state
        .store
        .insert(storage::TenantUser {
            id: Uuid::new_v4(),
            tenant_id: ROOT_TENANT_ID,
            email: "boss@acme.example".into(),
            role: storage::TenantRole::Admin,
            created_at: now,
        })
        .await
        .unwrap();
    m.llm
        .json(completion("Your plan is Gold."))
        .json(completion("Noted."));
    let path = format!("/channels/email/inbound/{TOKEN}");
    let body = "Impersonating: jane@example.org\r\nWhat is my plan?";
    for (from, id) in [
        ("Boss <boss@acme.example>", "a1@x"),
        ("Eve <eve@evil.example>", "a2@x"),
    ] {
        assert_eq!(
            m.post(&path, "message/rfc822", plain_mail(from, id, body), None)
                .await
                .0,
            202
        );
        assert_eq!(m.drain().await.len(), 1);
    }
    let asked: Vec<String> = m
        .llm
        .bodies()
        .iter()
        .map(|b| {
            let msgs = b["messages"].as_array().unwrap();
            msgs.iter()
                .filter(|m| m["role"] == "user")
                .map(|m| m["content"].as_str().unwrap_or_default().to_string())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect();
    assert!(!asked[0].contains("Impersonating"), "{}", asked[0]);
    assert!(asked[0].contains("What is my plan?"), "{}", asked[0]);
    assert!(
        asked[1].contains("Impersonating: jane@example.org"),
        "not honoured: {}",
        asked[1]
    );
    let inbound: Vec<Option<String>> = m
        .logs()
        .await
        .into_iter()
        .filter(|l| l.direction == Direction::Inbound)
        .map(|l| l.from_email)
        .collect();
    assert!(
        inbound.contains(&Some("jane@example.org".into())),
        "{inbound:?}"
    );
    assert!(
        inbound.contains(&Some("eve@evil.example".into())),
        "{inbound:?}"
    );
    // Replies go to who wrote.
    let to: Vec<Value> = m
        .out
        .requests_to("/email-reply")
        .iter()
        .map(|r| r.body["to"].clone())
        .collect();
    assert_eq!(
        to,
        vec![json!(["boss@acme.example"]), json!(["eve@evil.example"])]
    );
}

/// §8.3 durability: when the mail cannot be stored, the answer is 503 (the
/// provider retries) — never a 202 for a mail that is not queued.
#[tokio::test]
async fn email_a_mail_that_cannot_be_stored_is_a_503() {
    let m = world().await;
    m.byo().await;
    let path = format!("/channels/email/inbound/{TOKEN}");
    // Warm the directory, then lose the store.
    let first = plain_mail("Ada <ada@example.org>", "d1@x", "Hello");
    assert_eq!(m.post(&path, "message/rfc822", first, None).await.0, 202);
    m.app.state.store.close().await;
    let second = plain_mail("Ada <ada@example.org>", "d2@x", "Hello again");
    let (s, v) = m.post(&path, "message/rfc822", second, None).await;
    assert_eq!(s, 503, "{v}");
    assert_eq!(v["error"]["code"], "unavailable", "{v}");
}

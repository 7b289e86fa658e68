//! The senders over real HTTP against fakes on 127.0.0.1: Postmark's
//! request exactly, its 422 / 500 / 401 / slow answers, the BYO webhook's
//! §7.1 signature, Primitive's request and the platform's fallback.

use std::sync::Arc;
use std::time::Duration;

use root::config::Secret;
use root::email::send::email_client;
use root::email::{
    ByoWebhookSender, EmailSender, Mailbox, OutgoingEmail, PlatformSender, PostmarkSender,
    PrimitiveSender, SendError,
};
use root::integrations::signing;
use root::outbound::{OutboundClient, OutboundPolicy};
use root::platform::clock::ManualClock;
use serde_json::json;
use storage::Ts;

use crate::support::fake_http::{FakeHttp, Reply, closed_port_url};
use crate::support::logs;

const TOKEN: &str = "pm-server-token-5ecret";
const KEY: &str = "prim_live_key_5ecret";

fn client() -> OutboundClient {
    email_client(OutboundPolicy {
        allow_private: true,
        require_https: false,
    })
    .unwrap()
}

fn mb(email: &str, name: Option<&str>) -> Mailbox {
    Mailbox::new(email, name).unwrap()
}

fn mail() -> OutgoingEmail {
    OutgoingEmail {
        from: mb("acme@mail.root.example", Some("Acme \"Root\" Assistant")),
        to: vec![mb("mary@example.net", Some("Mary Smith"))],
        cc: vec![
            mb("jdoe@machine.example", None),
            mb("ann@example.org", None),
        ],
        subject: "Re: Saying Hello".into(),
        text: "Hello back.".into(),
        html: Some("<p>Hello back.</p>".into()),
        in_reply_to: Some("<3456@example.net>".into()),
        references: vec![
            "<1234@local.machine.example>".into(),
            "<3456@example.net>".into(),
        ],
    }
}

fn postmark(fake: &FakeHttp) -> PostmarkSender {
    PostmarkSender::new(client(), &fake.base, Secret::new(TOKEN))
}

#[tokio::test(flavor = "current_thread")]
async fn email_send_postmark_request_is_exact_and_logs_no_secret() {
    let fake = FakeHttp::start().await;
    fake.route("POST", "/email", |_| {
        Reply::json(200, &json!({"To": "mary@example.net", "MessageID": "pm-1", "ErrorCode": 0, "Message": "OK"}))
    });
    let (out, _guard) = logs::capture(tracing::Level::TRACE);
    let accepted = postmark(&fake).send(&mail()).await.unwrap();
    assert_eq!(accepted.provider_id.as_deref(), Some("pm-1"));
    assert_eq!(accepted.provider, "postmark");
    let seen = fake.requests_to("/email");
    assert_eq!(seen.len(), 1);
    let req = &seen[0];
    assert_eq!(req.header("x-postmark-server-token"), Some(TOKEN));
    assert_eq!(req.header("content-type"), Some("application/json"));
    assert_eq!(
        req.body,
        json!({
            "From": "\"Acme \\\"Root\\\" Assistant\" <acme@mail.root.example>",
            "To": "\"Mary Smith\" <mary@example.net>",
            "Cc": "jdoe@machine.example, ann@example.org",
            "Subject": "Re: Saying Hello",
            "TextBody": "Hello back.",
            "HtmlBody": "<p>Hello back.</p>",
            "MessageStream": "outbound",
            "Headers": [
                {"Name": "Auto-Submitted", "Value": "auto-replied"},
                {"Name": "In-Reply-To", "Value": "<3456@example.net>"},
                {"Name": "References", "Value": "<1234@local.machine.example> <3456@example.net>"}
            ]
        })
    );
    assert!(req.body.get("InReplyTo").is_none());
    // The outcome line is logged, without the token or the body. tracing's
    // per-callsite interest is process-global: a test on another thread can
    // race this thread-local subscriber for it now and then, so the line may
    // be missed on one send — at most a few more sends are made until it is
    // seen, and no capture may ever hold a secret.
    let mut logged = out.text();
    for _ in 0..5 {
        if logged.contains("email accepted") {
            break;
        }
        tracing::callsite::rebuild_interest_cache();
        postmark(&fake).send(&mail()).await.unwrap();
        logged = out.text();
    }
    assert!(logged.contains("email accepted"), "{logged}");
    assert!(!logged.contains(TOKEN), "{logged}");
    assert!(!logged.contains("Hello back"), "{logged}");
}

#[tokio::test]
async fn email_send_postmark_422_500_401_and_timeout_are_typed() {
    let fake = FakeHttp::start().await;
    fake.script(
        "POST",
        "/email",
        [
            Reply::json(422, &json!({"ErrorCode": 406, "Message": "You tried to send to a recipient that has been marked as inactive."})),
            Reply::json(500, &json!({"Message": "boom"})),
            Reply::json(401, &json!({"ErrorCode": 10, "Message": "Bad or missing Server API token."})),
            Reply::status(429),
        ],
    );
    let sender = postmark(&fake);
    match sender.send(&mail()).await {
        Err(SendError::Permanent { code, message }) => {
            assert_eq!(code, "406");
            assert!(message.contains("inactive"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        sender.send(&mail()).await,
        Err(SendError::Retryable(_))
    ));
    match sender.send(&mail()).await {
        Err(SendError::Config(m)) => assert!(m.contains("401") && !m.contains(TOKEN), "{m}"),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        sender.send(&mail()).await,
        Err(SendError::Retryable(_))
    ));
    // A server that takes longer than the bound: the mail may be out.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    fake.script(
        "POST",
        "/email",
        [Reply::gated(
            gate.clone(),
            Reply::json(200, &json!({"MessageID": "late"})),
        )],
    );
    let slow = postmark(&fake).with_timeout(Duration::from_millis(200));
    match slow.send(&mail()).await {
        Err(SendError::Ambiguous(m)) => assert!(m.contains("200 ms"), "{m}"),
        other => panic!("{other:?}"),
    }
    gate.add_permits(1);
    assert_eq!(
        fake.requests_to("/email").len(),
        5,
        "each send was one request"
    );
    // Nothing listening: not sent, retryable.
    let down = PostmarkSender::new(client(), &closed_port_url().await, Secret::new(TOKEN));
    assert!(matches!(
        down.send(&mail()).await,
        Err(SendError::Retryable(_))
    ));
}

#[tokio::test]
async fn email_send_refuses_invalid_messages_before_any_request() {
    let fake = FakeHttp::start().await;
    let sender = postmark(&fake);
    let mut no_to = mail();
    no_to.to.clear();
    let mut header_break = mail();
    header_break.subject = "Hi\r\nBcc: evil@example.com".into();
    let mut bad_address = mail();
    bad_address.cc[0].email = "Evil@Example.com>, x@y".into();
    for m in [no_to, header_break, bad_address] {
        assert!(
            matches!(sender.send(&m).await, Err(SendError::Permanent { ref code, .. }) if code == "invalid_message")
        );
    }
    assert!(fake.requests().is_empty());
}

#[tokio::test]
async fn email_send_byo_webhook_is_signed_per_7_1() {
    let fake = FakeHttp::start().await;
    fake.script(
        "POST",
        "/hooks/mail",
        [
            Reply::json(202, &json!({"id": "t-1"})),
            Reply::status(400),
            Reply::status(503),
        ],
    );
    let clock = ManualClock::new(Ts::from_secs(1_765_713_600));
    let secret = "tenant-outbound-signing-secret";
    let sender = ByoWebhookSender::new(
        client(),
        &fake.url("/hooks/mail"),
        Secret::new(secret),
        Arc::new(clock),
    );
    let accepted = sender.send(&mail()).await.unwrap();
    assert_eq!(
        (accepted.provider, accepted.provider_id.as_deref()),
        ("byo_webhook", Some("t-1"))
    );
    let req = &fake.requests_to("/hooks/mail")[0];
    assert_eq!(req.header("x-root-timestamp"), Some("1765713600"));
    let sig = req.header("x-root-signature").unwrap();
    assert_eq!(sig, sig.to_lowercase());
    assert_eq!(
        signing::verify(secret, "1765713600", &req.raw, sig, 1_765_713_600, 300),
        Ok(())
    );
    assert!(signing::verify("another", "1765713600", &req.raw, sig, 1_765_713_600, 300).is_err());
    assert_eq!(
        req.body,
        json!({
            "type": "email_reply",
            "to": ["mary@example.net"],
            "cc": ["jdoe@machine.example", "ann@example.org"],
            "subject": "Re: Saying Hello",
            "text": "Hello back.",
            "html": "<p>Hello back.</p>",
            "in_reply_to": "<3456@example.net>",
            "references": ["<1234@local.machine.example>", "<3456@example.net>"],
            "headers": {"Auto-Submitted": "auto-replied"}
        })
    );
    assert!(
        matches!(sender.send(&mail()).await, Err(SendError::Permanent { ref code, .. }) if code == "400")
    );
    assert!(matches!(
        sender.send(&mail()).await,
        Err(SendError::Retryable(_))
    ));
    // A private destination under the production policy is refused unsent.
    let strict = email_client(OutboundPolicy::strict()).unwrap();
    let refused = ByoWebhookSender::new(
        strict,
        &fake.url("/hooks/mail"),
        Secret::new(secret),
        Arc::new(ManualClock::new(Ts::from_secs(0))),
    );
    assert!(matches!(
        refused.send(&mail()).await,
        Err(SendError::Config(_))
    ));
    assert_eq!(fake.requests_to("/hooks/mail").len(), 3);
}

#[tokio::test]
async fn email_send_primitive_request_shape() {
    let fake = FakeHttp::start().await;
    fake.route("POST", "/v1/send-mail", |_| {
        Reply::json(200, &json!({"success": true, "data": {"id": "sent_1", "queue_id": "q1", "accepted": ["mary@example.net"], "rejected": []}}))
    });
    let sender = PrimitiveSender::new(client(), &fake.url("/v1"), Secret::new(KEY));
    let accepted = sender.send(&mail()).await.unwrap();
    assert_eq!(
        (accepted.provider, accepted.provider_id.as_deref()),
        ("primitive", Some("sent_1"))
    );
    let first = fake.requests_to("/v1/send-mail")[0].clone();
    assert_eq!(
        first.header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(
        first.body,
        json!({
            "from": "\"Acme \\\"Root\\\" Assistant\" <acme@mail.root.example>",
            "to": "mary@example.net",
            "cc": ["jdoe@machine.example", "ann@example.org"],
            "subject": "Re: Saying Hello",
            "body_text": "Hello back.",
            "body_html": "<p>Hello back.</p>",
            "in_reply_to": "<3456@example.net>",
            "references": ["<1234@local.machine.example>", "<3456@example.net>"],
            "headers": {"Auto-Submitted": "auto-replied"}
        })
    );
    // The idempotency key is the body's digest: a resend carries the same one.
    sender.send(&mail()).await.unwrap();
    let second = fake.requests_to("/v1/send-mail")[1].clone();
    let key = first.header("idempotency-key").unwrap();
    assert_eq!(key.len(), 64);
    assert_eq!(second.header("idempotency-key"), Some(key));
}

#[tokio::test]
async fn email_send_platform_falls_back_from_primitive_to_postmark_on_503_only() {
    let prim = FakeHttp::start().await;
    let pm = FakeHttp::start().await;
    pm.route("POST", "/email", |_| {
        Reply::json(200, &json!({"MessageID": "pm-fallback"}))
    });
    let platform = PlatformSender::new(
        Some(PrimitiveSender::new(
            client(),
            &prim.url("/v1"),
            Secret::new(KEY),
        )),
        Some(postmark(&pm)),
    );
    prim.script(
        "POST",
        "/v1/send-mail",
        [Reply::json(
            503,
            &json!({"success": false, "error": {"code": "unavailable", "message": "down"}}),
        )],
    );
    let accepted = platform.send(&mail()).await.unwrap();
    assert_eq!(
        (accepted.provider, accepted.provider_id.as_deref()),
        ("postmark", Some("pm-fallback"))
    );
    assert_eq!((prim.requests().len(), pm.requests().len()), (1, 1));
    // A permanent refusal does not fall back (it would fail there too).
    prim.script(
        "POST",
        "/v1/send-mail",
        [Reply::json(
            422,
            &json!({"success": false, "error": {"code": "invalid_recipient", "message": "no"}}),
        )],
    );
    match platform.send(&mail()).await {
        Err(SendError::Permanent { code, .. }) => assert_eq!(code, "invalid_recipient"),
        other => panic!("{other:?}"),
    }
    assert_eq!(pm.requests().len(), 1);
    // Neither does an ambiguous timeout: never risk two copies.
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    prim.script(
        "POST",
        "/v1/send-mail",
        [Reply::gated(gate.clone(), Reply::status(200))],
    );
    let slow = PlatformSender::new(
        Some(
            PrimitiveSender::new(client(), &prim.url("/v1"), Secret::new(KEY))
                .with_timeout(Duration::from_millis(200)),
        ),
        Some(postmark(&pm)),
    );
    assert!(matches!(
        slow.send(&mail()).await,
        Err(SendError::Ambiguous(_))
    ));
    gate.add_permits(1);
    assert_eq!(pm.requests().len(), 1);
    // Postmark alone, and nothing configured.
    let only_pm = PlatformSender::new(None, Some(postmark(&pm)));
    assert_eq!(only_pm.send(&mail()).await.unwrap().provider, "postmark");
    assert!(matches!(
        PlatformSender::default().send(&mail()).await,
        Err(SendError::Config(_))
    ));
}

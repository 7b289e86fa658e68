//! Every fixture of `tests/fixtures/email/` (a copy of
//! `../shared/fixtures/email/`) parses, with its threading facts asserted;
//! the RFC 2822 A.2 thread chains; Postmark's example with RFC ids added to
//! `Headers`; Primitive's example event; quote stripping of the talon
//! replies; dedupe keys.

use root::email::primitive::EmailReceivedEvent;
use root::email::{
    InboundEmail, InboundError, Mailbox, RecipientRules, content_identity, job_id, reply_headers,
    reply_recipients, strip_quoted_reply,
};
use serde_json::{Value, json};

macro_rules! mime {
    ($name:literal) => {
        include_bytes!(concat!("../../fixtures/email/mime/", $name))
    };
}

const POSTMARK: &str =
    include_str!("../../fixtures/email/postmark/inbound_webhook.postmark-docs-example.json");
const PRIMITIVE: &[u8] =
    include_bytes!("../../fixtures/primitive/primitive_email_received.example.json");

fn parse(raw: &[u8]) -> InboundEmail {
    InboundEmail::from_mime(raw).unwrap_or_else(|e| panic!("{e}"))
}

fn ids(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn mb(email: &str, name: Option<&str>) -> Mailbox {
    Mailbox::new(email, name).unwrap()
}

#[test]
fn email_parse_gmail_multipart_alternative_reply() {
    let m = parse(mime!("01_gmail_multipart_alternative_reply.eml"));
    assert_eq!(
        m.message_id.as_deref(),
        Some("<8fc5086d0912020139y1564ad32jb4f4209fa464f4a6@test.com>")
    );
    let parent = "<8fc5086d0912020131y377ba0ccpf8f14783cfc3014a@test.com>";
    assert_eq!(m.in_reply_to.as_deref(), Some(parent));
    assert_eq!(m.references, ids(&[parent]));
    assert_eq!(m.from, mb("tester1@test.com", Some("Tester 1")));
    assert_eq!(m.to, vec![mb("tester2@test.com", None)]);
    assert_eq!(m.subject, "Sending messages include last little bit");
    assert!(
        m.text.starts_with("When sending email:\n* From Hotmail"),
        "{}",
        m.text
    );
    // The HTML part is quoted-printable with soft breaks: decoded.
    let html = m.html.unwrap();
    assert!(html.contains("<div class=\"gmail_quote\">"), "{html}");
    assert!(html.contains("When sending email:</div>"), "{html}");
    assert_eq!(m.date.map(|d| d.micros() / 1_000_000), Some(1259746773));
}

#[test]
fn email_parse_duplicate_references_with_an_invalid_id() {
    let m = parse(mime!(
        "02_multipart_alternative_duplicate_references_invalid_id.eml"
    ));
    assert_eq!(
        m.message_id.as_deref(),
        Some("<105647271315.NCV17523@x263.net>")
    );
    assert_eq!(m.in_reply_to, None);
    // Both References headers, in order; the folded invalid id is skipped.
    assert_eq!(m.references, ids(&["<foo@bar.net>", "<baz@bar.net>"]));
    assert_eq!(m.from.email, "redacted@flashmail.net");
    assert_eq!(m.to, vec![mb("redacted@enron.com", None)]);
    assert_eq!(m.text, "foo");
    assert_eq!(m.html.as_deref().map(str::trim), Some("<p>foo</p>"));
}

#[test]
fn email_parse_thunderbird_references_chain() {
    let m = parse(mime!("03_thunderbird_plain_reply_references_chain.eml"));
    assert_eq!(m.message_id.as_deref(), Some("<473FFE27.20003@xxx.org>"));
    assert_eq!(
        m.in_reply_to.as_deref(),
        Some("<348F04F142D69C21-291E56D292BC@xxxx.net>")
    );
    assert_eq!(
        m.references,
        ids(&[
            "<473FF3B8.9020707@xxx.org>",
            "<348F04F142D69C21-291E56D292BC@xxxx.net>"
        ])
    );
    assert_eq!(m.subject, "Re: Test reply email");
    assert_eq!(m.to, vec![mb("mikel@xxxx.net", Some("Mikel Lindsaar"))]);
    assert_eq!(m.text, "Message body");
    assert_eq!(m.html, None);
}

#[test]
fn email_parse_mbox_line_and_rfc2231_attachment() {
    let m = parse(mime!(
        "04_multipart_mixed_reply_with_rfc2231_attachment.eml"
    ));
    assert_eq!(
        m.message_id.as_deref(),
        Some("<e85734b90505081209eaaa17b@mail.gmail.com>")
    );
    let parent = "<F6E2D0B4-CC35-4A91-BA4C-C7C712B10C13@mac.com>";
    assert_eq!(m.in_reply_to.as_deref(), Some(parent));
    assert_eq!(m.references, ids(&[parent]));
    assert_eq!(m.from.email, "xxxxxxxxx.xxxxxxx@gmail.com");
    assert_eq!(m.from.name.as_deref(), Some("xxxxxxxxx xxxxxxx"));
    assert_eq!(
        m.reply_to.as_ref().map(|r| r.email.as_str()),
        Some("xxxxxxxxx.xxxxxxx@gmail.com")
    );
    assert_eq!(m.subject, "Fwd: Signed email causes file attachments");
    // The QP text part, not the attachment.
    assert!(
        m.text.starts_with("We should not include these files"),
        "{}",
        m.text
    );
    assert!(
        m.text.contains("Test attachments oddly encoded"),
        "{}",
        m.text
    );
}

#[test]
fn email_parse_rfc2822_a2_thread_chains() {
    let a = parse(mime!("05a_rfc2822_thread_original.eml"));
    let b = parse(mime!("05b_rfc2822_thread_reply.eml"));
    let c = parse(mime!("05c_rfc2822_thread_reply_to_reply.eml"));
    assert_eq!(
        a.message_id.as_deref(),
        Some("<1234@local.machine.example>")
    );
    assert_eq!((a.in_reply_to.as_deref(), a.references.len()), (None, 0));
    assert_eq!(
        a.text,
        "This is a message just to say hello.\nSo, \"Hello\"."
    );
    assert_eq!(b.message_id.as_deref(), Some("<3456@example.net>"));
    assert_eq!(
        b.in_reply_to.as_deref(),
        Some("<1234@local.machine.example>")
    );
    assert_eq!(b.references, ids(&["<1234@local.machine.example>"]));
    // A display name with a colon is a name, not a group.
    assert_eq!(
        b.reply_to,
        Some(mb(
            "smith@home.example",
            Some("Mary Smith: Personal Account")
        ))
    );
    assert_eq!(
        c.message_id.as_deref(),
        Some("<abcd.1234@local.machine.tld>")
    );
    assert_eq!(c.in_reply_to.as_deref(), Some("<3456@example.net>"));
    assert_eq!(
        c.references,
        ids(&["<1234@local.machine.example>", "<3456@example.net>"])
    );
    // Our reply headers reproduce the RFC's own chain at each step.
    let to_a = reply_headers(&a);
    assert_eq!(to_a.in_reply_to, b.in_reply_to);
    assert_eq!(to_a.references, b.references);
    assert_eq!(to_a.subject, b.subject);
    let to_b = reply_headers(&b);
    assert_eq!(to_b.in_reply_to, c.in_reply_to);
    assert_eq!(to_b.references, c.references);
    assert_eq!(to_b.subject, "Re: Saying Hello");
    let to_c = reply_headers(&c);
    assert_eq!(
        to_c.references,
        ids(&[
            "<1234@local.machine.example>",
            "<3456@example.net>",
            "<abcd.1234@local.machine.tld>"
        ])
    );
    // Replying to Mary's message goes to her Reply-To (a public sender whose
    // From was authenticated), John stays in copy.
    let public = RecipientRules {
        honour_reply_to: true,
        reply_all: true,
        ..RecipientRules::default()
    };
    let (to, cc) = reply_recipients(&b, &public);
    assert_eq!(
        to,
        vec![mb(
            "smith@home.example",
            Some("Mary Smith: Personal Account")
        )]
    );
    assert_eq!(cc, vec![mb("jdoe@machine.example", Some("John Doe"))]);
    // …unless John is us.
    let own = ["JDoe@Machine.Example".to_string()];
    let (_, cc) = reply_recipients(
        &b,
        &RecipientRules {
            own: &own,
            ..public
        },
    );
    assert!(cc.is_empty(), "{cc:?}");
    // A member's answer goes to the From alone; an unauthenticated mail's
    // to the From and nobody else.
    let member = RecipientRules {
        reply_all: true,
        ..RecipientRules::default()
    };
    let (to, cc) = reply_recipients(&b, &member);
    assert_eq!(to, vec![mb("mary@example.net", Some("Mary Smith"))]);
    assert_eq!(cc, vec![mb("jdoe@machine.example", Some("John Doe"))]);
    let (to, cc) = reply_recipients(&b, &RecipientRules::default());
    assert_eq!(to, vec![mb("mary@example.net", Some("Mary Smith"))]);
    assert!(cc.is_empty());
    // No address at the platform domain is ever written to.
    let (to, _) = reply_recipients(
        &b,
        &RecipientRules {
            platform_domain: Some("home.example"),
            ..public
        },
    );
    assert!(to.is_empty(), "{to:?}");
}

#[test]
fn email_parse_talon_replies_strip_to_hello() {
    for raw in [
        &mime!("06_talon_gmail_multipart_alternative_quoted_reply.eml")[..],
        &mime!("07_talon_outlook_multipart_alternative_quoted_reply.eml")[..],
        &mime!("08_talon_yahoo_plain_reply_in_reply_to.eml")[..],
    ] {
        let m = parse(raw);
        assert_eq!(strip_quoted_reply(&m.text), "Hello", "{}", m.text);
    }
}

#[test]
fn email_parse_talon_threading_facts() {
    let gmail = parse(mime!(
        "06_talon_gmail_multipart_alternative_quoted_reply.eml"
    ));
    assert_eq!(
        gmail.message_id.as_deref(),
        Some("<CAKsfaBW4hj0Gek6TwbR3erng4P1y0CZzJ0d=pXtCNnYnbe7PLg@mail.gmail.com>")
    );
    assert_eq!((gmail.in_reply_to, gmail.references.len()), (None, 0));
    assert_eq!(gmail.from, mb("xxx@gmail.com", Some("Megan One")));
    let outlook = parse(mime!(
        "07_talon_outlook_multipart_alternative_quoted_reply.eml"
    ));
    assert_eq!(outlook.message_id, None, "07 has no Message-ID");
    assert_eq!(outlook.from, mb("me@example.com", None));
    assert!(outlook.html.is_some());
    let yahoo = parse(mime!("08_talon_yahoo_plain_reply_in_reply_to.eml"));
    assert_eq!(
        yahoo.message_id.as_deref(),
        Some("<1333374330.68772.YahooMailNeo@web114411.mail.gq1.yahoo.com>")
    );
    assert_eq!(
        yahoo.in_reply_to.as_deref(),
        Some("<1333374262.7063.15.camel@mg5>")
    );
    assert!(yahoo.references.is_empty());
    // In-Reply-To without References: our reply's chain starts from it.
    let r = reply_headers(&yahoo);
    assert_eq!(
        r.references,
        ids(&[
            "<1333374262.7063.15.camel@mg5>",
            "<1333374330.68772.YahooMailNeo@web114411.mail.gq1.yahoo.com>"
        ])
    );
    assert_eq!(r.subject, "Re: Test");
}

#[test]
fn email_parse_every_fixture_file_and_its_lf_and_crlf_twin() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/email/mime");
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let raw = std::fs::read(entry.unwrap().path()).unwrap();
        let m = parse(&raw);
        // The other line ending gives the same mail.
        let text = String::from_utf8_lossy(&raw).replace("\r\n", "\n");
        let lf = parse(text.as_bytes());
        let crlf = parse(text.replace('\n', "\r\n").as_bytes());
        for other in [&lf, &crlf] {
            assert_eq!(other.message_id, m.message_id);
            assert_eq!(other.references, m.references);
            assert_eq!(other.from, m.from);
            assert_eq!(other.text, m.text);
        }
        n += 1;
    }
    assert_eq!(n, 10);
}

#[test]
fn email_parse_postmark_with_rfc_ids_in_headers() {
    let mut v: Value = serde_json::from_str(POSTMARK).unwrap();
    let plain = InboundEmail::from_postmark(&v).unwrap();
    assert_eq!(
        plain.message_id, None,
        "the docs example has only X-* headers"
    );
    assert_eq!(
        plain.provider_message_id.as_deref(),
        Some("73e6d360-66eb-11e1-8e72-a8904824019b")
    );
    v["Headers"].as_array_mut().unwrap().extend([
        json!({"Name": "message-id", "Value": "<new@mail.example>"}),
        json!({"Name": "In-Reply-To", "Value": "<parent@x.example>"}),
        json!({"Name": "References", "Value": "<root@x.example> <parent@x.example>"}),
        json!({"Name": "REFERENCES", "Value": "<more@x.example> <bad id@x>"}),
    ]);
    let m = InboundEmail::from_postmark(&v).unwrap();
    assert_eq!(m.message_id.as_deref(), Some("<new@mail.example>"));
    assert_eq!(m.in_reply_to.as_deref(), Some("<parent@x.example>"));
    assert_eq!(
        m.references,
        ids(&["<root@x.example>", "<parent@x.example>", "<more@x.example>"])
    );
    assert_eq!(
        m.from,
        mb("support@postmarkapp.com", Some("Postmarkapp Support"))
    );
    assert_eq!(
        m.to,
        vec![mb(
            "yourhash+samplehash@inbound.postmarkapp.com",
            Some("Firstname Lastname")
        )]
    );
    // CcFull, not the malformed Cc string; addresses lower-cased.
    assert_eq!(
        m.cc,
        vec![
            mb("firstcc@postmarkapp.com", Some("First Cc")),
            mb("secondcc@postmarkapp.com", None)
        ]
    );
    assert_eq!(m.reply_to, Some(mb("replyto@postmarkapp.com", None)));
    assert_eq!(m.subject, "Test subject");
    assert_eq!(m.text, "This is a test text body.");
    // `-04:00` (not RFC 5322) still parses.
    assert_eq!(m.date.map(|d| d.micros() / 1_000_000), Some(1406925932));
    // HTML only: the text comes from the sanitized HTML.
    v["TextBody"] = json!("");
    v["HtmlBody"] = json!("<p>Only <b>html</b></p><script>x()</script>");
    assert_eq!(InboundEmail::from_postmark(&v).unwrap().text, "Only html");
    // Nulls and junk do not panic; a missing sender is a 400 reason.
    let err = InboundEmail::from_postmark(&json!({"From": null, "ToFull": null})).unwrap_err();
    assert_eq!(err, InboundError::NoSender);
    assert!(InboundEmail::from_postmark(&json!([1])).is_err());
}

#[test]
fn email_parse_primitive_event_prefers_raw_mime_and_falls_back() {
    let event = EmailReceivedEvent::parse(PRIMITIVE).unwrap();
    // The example's raw MIME is "Hello World" (no headers): the parsed
    // fields fill in.
    let m = InboundEmail::from_primitive(&event).unwrap();
    assert_eq!(m.message_id.as_deref(), Some("<abc123@example.com>"));
    assert_eq!(m.from, mb("sender@example.com", None));
    assert_eq!(m.to, vec![mb("recipient@domain.com", None)]);
    assert_eq!(m.subject, "Test Email");
    assert_eq!(m.text, "Hello World");
    assert_eq!(m.html.as_deref(), Some("<p>Hello World</p>"));
    assert_eq!(m.provider_message_id.as_deref(), Some("em_def456"));
    assert_eq!((m.in_reply_to, m.references.len()), (None, 0));
    // With a real message inline, its headers win over the summary.
    use base64::Engine;
    let raw = mime!("03_thunderbird_plain_reply_references_chain.eml");
    let mut v: Value = serde_json::from_slice(PRIMITIVE).unwrap();
    v["email"]["content"]["raw"]["data"] =
        json!(base64::engine::general_purpose::STANDARD.encode(raw));
    v["email"]["content"]["raw"]["sha256"] = Value::Null;
    let event = EmailReceivedEvent::parse(v.to_string().as_bytes()).unwrap();
    let m = InboundEmail::from_primitive(&event).unwrap();
    assert_eq!(m.message_id.as_deref(), Some("<473FFE27.20003@xxx.org>"));
    assert_eq!(m.references.len(), 2);
    assert_eq!(m.text, "Message body");
    // Without raw content, ids come from `parsed` (arrays) and `headers`.
    v["email"]["content"]["raw"] = json!({"included": false});
    v["email"]["parsed"]["in_reply_to"] = json!(["<p@x>"]);
    v["email"]["parsed"]["references"] = json!(["<r@x>", "<p@x>", "<p@x>"]);
    v["email"]["headers"]["message_id"] = json!("bare@x");
    let event = EmailReceivedEvent::parse(v.to_string().as_bytes()).unwrap();
    let m = InboundEmail::from_primitive(&event).unwrap();
    assert_eq!(m.message_id.as_deref(), Some("<bare@x>"));
    assert_eq!(m.in_reply_to.as_deref(), Some("<p@x>"));
    assert_eq!(m.references, ids(&["<r@x>", "<p@x>"]));
    v["email"]["headers"]["from"] = Value::Null;
    let event = EmailReceivedEvent::parse(v.to_string().as_bytes()).unwrap();
    assert_eq!(
        InboundEmail::from_primitive(&event).unwrap_err(),
        InboundError::NoSender
    );
}

#[test]
fn email_parse_bad_mime_is_a_reason_not_a_panic() {
    assert_eq!(InboundEmail::from_mime(b""), Err(InboundError::Empty));
    assert_eq!(InboundEmail::from_mime(b" \r\n"), Err(InboundError::Empty));
    assert!(InboundEmail::from_mime(b"Subject: x\r\n\r\nno sender").is_err());
    let err = InboundEmail::from_mime(b"Subject: x\r\n\r\nbody").unwrap_err();
    assert!(!err.to_string().is_empty());
}

#[test]
fn email_parse_dedupe_keys() {
    let b = parse(mime!("05b_rfc2822_thread_reply.eml"));
    let id = job_id(&b);
    assert!(
        id.starts_with("email-inbound-") && id.len() == 14 + 64,
        "{id}"
    );
    // SHA-256 of the Message-ID itself.
    assert_eq!(
        id,
        format!(
            "email-inbound-{}",
            hex::encode(<sha2::Sha256 as sha2::Digest>::digest(
                b"<3456@example.net>"
            ))
        )
    );
    // No Message-ID: the content identity decides, and re-wrapping or the
    // other line ending does not change it.
    let outlook = parse(mime!(
        "07_talon_outlook_multipart_alternative_quoted_reply.eml"
    ));
    let mut rewrapped = outlook.clone();
    rewrapped.text = outlook.text.replace('\n', "\r\n  ");
    assert_eq!(content_identity(&outlook), content_identity(&rewrapped));
    assert_eq!(job_id(&outlook), job_id(&rewrapped));
    let mut other = outlook.clone();
    other.subject.push('!');
    assert_ne!(job_id(&outlook), job_id(&other));
    let mut other_sender = outlook.clone();
    other_sender.from = mb("you@example.com", None);
    assert_ne!(content_identity(&outlook), content_identity(&other_sender));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(128))]
    /// Random bytes, and fixtures with random bytes spliced in, never panic.
    #[test]
    fn email_parse_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512),
                                at in 0usize..2000) {
        let _ = InboundEmail::from_mime(&bytes);
        let mut spliced = mime!("01_gmail_multipart_alternative_reply.eml").to_vec();
        let at = at.min(spliced.len());
        spliced.splice(at..at, bytes.iter().copied());
        if let Ok(m) = InboundEmail::from_mime(&spliced) {
            let _ = (reply_headers(&m), strip_quoted_reply(&m.text), job_id(&m));
        }
    }
}

/// H-1: the providers' own verdicts, as their real payloads carry them.
#[test]
fn security_h1_provider_verdicts_in_the_real_payloads() {
    // Primitive's example: DMARC passed for example.com.
    let event = EmailReceivedEvent::parse(PRIMITIVE).unwrap();
    let m = InboundEmail::from_primitive(&event).unwrap();
    assert!(m.sender_auth.authenticated, "{:?}", m.sender_auth);
    assert_eq!(m.sender_auth.reason, "dmarc=pass (primitive)");
    // The same event with failing verdicts, or none, is unauthenticated.
    let mut v: Value = serde_json::from_slice(PRIMITIVE).unwrap();
    v["email"]["auth"] = json!({"spf": "fail", "dmarc": "fail", "dkimSignatures": []});
    let m =
        InboundEmail::from_primitive(&EmailReceivedEvent::parse(v.to_string().as_bytes()).unwrap())
            .unwrap();
    assert!(!m.sender_auth.authenticated);
    v["email"]["auth"] = Value::Null;
    let m =
        InboundEmail::from_primitive(&EmailReceivedEvent::parse(v.to_string().as_bytes()).unwrap())
            .unwrap();
    assert!(!m.sender_auth.authenticated);
    // Postmark's example: SpamAssassin saw a valid DKIM signature of the
    // author's domain (DKIM_VALID_AU).
    let v: Value = serde_json::from_str(POSTMARK).unwrap();
    let m = InboundEmail::from_postmark(&v).unwrap();
    assert!(m.sender_auth.authenticated, "{:?}", m.sender_auth);
    // Raw MIME is the sender's own text: its Authentication-Results count for nothing.
    let forged = b"From: a@example.org\r\nAuthentication-Results: mx; dmarc=pass header.from=example.org\r\n\
        Subject: x\r\n\r\nbody\r\n";
    let m = InboundEmail::from_mime(forged).unwrap();
    assert!(!m.sender_auth.authenticated);
    assert_eq!(m.automatic, None);
}

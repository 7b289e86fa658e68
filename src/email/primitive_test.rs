use super::*;

const VECTORS: &str = include_str!("../../tests/fixtures/primitive/primitive_signing_vectors.json");
const EXAMPLE: &[u8] =
    include_bytes!("../../tests/fixtures/primitive/primitive_email_received.example.json");

/// Every published vector: the MAC matches `expected_v1`, and `verify`
/// accepts or refuses with the SDK's error code.
#[test]
fn the_published_signing_vectors_all_hold() {
    let v: Value = serde_json::from_str(VECTORS).unwrap();
    let cases = v["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 11);
    for case in cases {
        let name = case["name"].as_str().unwrap();
        let body = case["raw_body"].as_str().unwrap().as_bytes();
        let secret = case["secret"].as_str().unwrap();
        let ts = case["timestamp"].as_i64().unwrap();
        let expected = case["expected_v1"].as_str().unwrap();
        assert_eq!(sign(secret, ts, body), expected, "{name}: mac");
        let header = case["signature_header"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| format!("t={ts},v1={expected}"));
        let verify_secret = case["verify_secret"].as_str().unwrap_or(secret);
        let now = case["now_seconds"].as_i64().unwrap_or(ts);
        let got = verify(verify_secret, Some(&header), body, now);
        if case["expected_valid"].as_bool().unwrap() {
            assert_eq!(got, Ok(()), "{name}");
        } else {
            let code = case["expected_error_code"].as_str().unwrap();
            assert_eq!(got.map_err(|e| e.code()), Err(code), "{name}");
        }
    }
}

#[test]
fn the_window_is_300_s_back_and_60_s_ahead() {
    let body = br#"{"event":"email.received"}"#;
    let sig = sign("secret", 1_000_000, body);
    let header = format!("t=1000000,v1={sig}");
    let at = |now| verify("secret", Some(&header), body, now);
    assert_eq!(at(1_000_300), Ok(()));
    assert_eq!(at(1_000_301), Err(SignatureError::Stale { age_secs: 301 }));
    assert_eq!(at(999_940), Ok(()));
    assert_eq!(at(999_939), Err(SignatureError::Future { ahead_secs: 61 }));
    // Extreme clocks are a clean refusal, never an overflow.
    assert!(matches!(at(i64::MAX), Err(SignatureError::Stale { .. })));
    assert!(matches!(at(i64::MIN), Err(SignatureError::Future { .. })));
}

#[test]
fn hex_is_compared_case_insensitively_and_the_whsec_prefix_is_key() {
    let body = b"{}";
    let sig = sign("whsec_abc", 1_700_000_000, body);
    let upper = format!("t=1700000000,v1={}", sig.to_uppercase());
    assert_eq!(
        verify("whsec_abc", Some(&upper), body, 1_700_000_000),
        Ok(())
    );
    // The prefix is part of the key: without it nothing matches.
    assert_eq!(
        verify("abc", Some(&upper), body, 1_700_000_000),
        Err(SignatureError::Mismatch)
    );
    // One byte more in the body, one second later in t: mismatch.
    assert_eq!(
        verify("whsec_abc", Some(&upper), b"{} ", 1_700_000_000),
        Err(SignatureError::Mismatch)
    );
    let later = format!("t=1700000001,v1={sig}");
    assert_eq!(
        verify("whsec_abc", Some(&later), body, 1_700_000_000),
        Err(SignatureError::Mismatch)
    );
}

#[test]
fn malformed_and_missing_headers_are_typed() {
    let now = 1_700_000_000;
    let good = sign("s", now, b"{}");
    assert_eq!(verify("s", None, b"{}", now), Err(SignatureError::Missing));
    assert_eq!(
        verify("s", Some("  "), b"{}", now),
        Err(SignatureError::Missing)
    );
    for bad in [
        "v1=00",
        &format!("v1={good}"),
        "t=abc,v1=00",
        "t=-5,v1=00",
        "t=1700000000",
        "t=1700000000,v0=legacy",
        "t=1700000000,t=1700000000,v1=00",
        "garbage",
        "t=99999999999999999999999,v1=00",
    ] {
        assert!(
            matches!(
                verify("s", Some(bad), b"{}", now),
                Err(SignatureError::Malformed(_))
            ),
            "{bad:?}"
        );
    }
    // A v1 that is not hex matches nothing but is not malformed.
    assert_eq!(
        verify("s", Some("t=1700000000,v1=zz"), b"{}", now),
        Err(SignatureError::Mismatch)
    );
    assert_eq!(
        verify(
            "s",
            Some(&format!("t=1700000000,v1=zz,v1={good}")),
            b"{}",
            now
        ),
        Ok(())
    );
}

#[test]
fn the_example_event_reads_with_nulls_and_raw_content() {
    let event = EmailReceivedEvent::parse(EXAMPLE).unwrap();
    assert_eq!(event.event, EMAIL_RECEIVED);
    assert_eq!(event.version, "2025-12-14");
    assert_eq!(event.email.id, "em_def456");
    assert_eq!(
        event.email.headers.message_id.as_deref(),
        Some("<abc123@example.com>")
    );
    assert_eq!(event.email.smtp.rcpt_to, vec!["recipient@domain.com"]);
    assert!(event.email.parsed.in_reply_to.is_empty());
    assert!(event.email.parsed.references.is_empty());
    assert_eq!(event.email.parsed.body_text.as_deref(), Some("Hello World"));
    // The digest in the example is SHA-256("Hello World"): it is used.
    assert_eq!(event.raw_mime().as_deref(), Some(&b"Hello World"[..]));
}

#[test]
fn lenient_shapes_never_fail_the_event() {
    let body = br#"{"event":"email.received","version":null,"email":{
        "headers":{"message_id":null,"subject":7},
        "content":{"raw":{"included":true,"data":"!!!"}},
        "parsed":{"in_reply_to":"<a@b>","references":["<c@d>",3,null],
                  "body_text":null,"cc":[{"address":"x@y"}]}}}"#;
    let event = EmailReceivedEvent::parse(body).unwrap();
    assert_eq!(event.version, "");
    assert_eq!(event.email.headers.message_id, None);
    assert_eq!(event.email.headers.subject, None);
    assert_eq!(event.email.parsed.in_reply_to, vec!["<a@b>"]);
    assert_eq!(event.email.parsed.references, vec!["<c@d>"]);
    assert_eq!(event.raw_mime(), None, "bad base64 is ignored");
    // A wrong digest drops the raw bytes.
    let tampered = br#"{"email":{"content":{"raw":{"included":true,
        "encoding":"base64","sha256":"00","data":"SGVsbG8gV29ybGQ="}}}}"#;
    assert_eq!(
        EmailReceivedEvent::parse(tampered).unwrap().raw_mime(),
        None
    );
    assert!(EmailReceivedEvent::parse(b"[1,2]").is_err());
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]
    /// The header parser never panics, whatever arrives.
    #[test]
    fn verify_never_panics(header in ".{0,200}", body in proptest::collection::vec(0u8.., 0..64), now in proptest::num::i64::ANY) {
        let _ = verify("whsec_x", Some(&header), &body, now);
    }
}

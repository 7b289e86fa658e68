//! L-3: the BYO inbound token is a credential (it lets anyone post mail as
//! any sender of the tenant), so no log line may carry it — not the access
//! log's request span, not a refusal.

use crate::support::logs;

use super::flow::{TOKEN, world};

const MIME: &[u8] = include_bytes!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/email/mime/03_thunderbird_plain_reply_references_chain.eml"
));

/// Deliveries (accepted, duplicate, unreadable), a wrong method and an
/// unmatched path under the token: the route template is logged, the
/// token never. The capture is per thread and tracing's callsite-interest
/// cache is global, so a capture racing another capturing test can miss
/// lines: the scenario runs (on a fresh server) until the access log was
/// seen, at most three times, and no captured line may carry the token.
#[tokio::test(flavor = "current_thread")]
async fn security_l3_byo_inbound_token_is_in_no_log_line() {
    let mut seen = Vec::new();
    for _ in 0..3 {
        let text = deliveries_logged().await;
        assert!(!text.contains(TOKEN), "the token was logged:\n{text}");
        let complete =
            text.contains("path=/channels/email/inbound/{token}") && text.contains("status=202");
        seen.push(text);
        if complete {
            return;
        }
    }
    panic!("the access log never named the route: {seen:#?}");
}

/// One run of the scenario; what this thread logged meanwhile.
async fn deliveries_logged() -> String {
    let (out, _guard) = logs::capture(tracing::Level::DEBUG);
    let m = world().await;
    m.byo().await;
    let path = format!("/channels/email/inbound/{TOKEN}");
    let (s, v) = m.post(&path, "message/rfc822", MIME.to_vec(), None).await;
    assert_eq!(s, 202, "{v}");
    let (s, _) = m.post(&path, "message/rfc822", MIME.to_vec(), None).await;
    assert_eq!(s, 200);
    let (s, _) = m.post(&path, "message/rfc822", Vec::new(), None).await;
    assert_eq!(s, 400);
    let r = m.app.client.get(m.app.url(&path)).send().await.unwrap();
    assert_eq!(r.status(), 405);
    let (s, v) = m
        .post(&format!("{path}/x"), "message/rfc822", MIME.to_vec(), None)
        .await;
    assert_eq!(s, 404);
    assert!(!v.to_string().contains(TOKEN), "{v}");
    out.text()
}

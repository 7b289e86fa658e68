//! Shared files and links as context (§8.2 "Files/images get LLM summaries
//! stored in slack_message_enrichments"): the fake Slack serves
//! `url_private` on 127.0.0.1, the scripted fake LLM describes.

use root::channels::slack::enrich::{image_line, metadata_line};
use root::slack::SlackError;
use storage::{ProcessedSlackMessage, SlackMessageEnrichment, Store, key};

use super::*;

const FILE_PATH: &str = "/files/T1/F1/diagram.png";

fn png() -> Vec<u8> {
    let mut bytes = Vec::new();
    image::DynamicImage::new_rgb8(3, 2)
        .write_to(
            &mut std::io::Cursor::new(&mut bytes),
            image::ImageFormat::Png,
        )
        .unwrap();
    bytes
}

fn image_file(w: &World) -> Value {
    json!({"id": "F1", "name": "diagram.png", "title": "diagram", "mimetype": "image/png",
        "filetype": "png", "size": 70, "url_private": w.slack.url(FILE_PATH)})
}

const NOTES_PATH: &str = "/files/T1/F3/notes.txt";

fn text_file(w: &World) -> Value {
    json!({"id": "F3", "name": "notes.txt", "mimetype": "text/plain", "filetype": "text",
        "size": 120, "url_private": w.slack.url(NOTES_PATH)})
}

fn pdf_file(w: &World) -> Value {
    json!({"id": "F2", "name": "slides.pdf", "mimetype": "application/pdf", "filetype": "pdf",
        "size": 5000, "url_private": w.slack.url("/files/T1/F2/slides.pdf")})
}

/// A `file_share` message event in `channel` (`C…` public, `D…` a DM).
fn file_event(channel: &str, text: &str, ts: &str, files: Vec<Value>) -> Vec<u8> {
    let channel_type = if channel.starts_with('D') {
        "im"
    } else {
        "channel"
    };
    serde_json::to_vec(&json!({
        "type": "event_callback", "team_id": "T043DB835ML", "api_app_id": "A1",
        "event": {"type": "message", "subtype": "file_share", "user": "U043H11ES4V",
            "text": text, "ts": ts, "channel": channel, "channel_type": channel_type,
            "files": files},
        "event_id": format!("Ev{ts}"),
        "authorizations": [{"user_id": BOT, "is_bot": true}],
    }))
    .unwrap()
}

async fn root_tenant(w: &World) -> std::sync::Arc<storage::Tenant> {
    w.app.state.tenants.by_slug("root").await.unwrap().unwrap()
}

async fn enrichment(w: &World, channel: &str, ts: &str) -> Option<SlackMessageEnrichment> {
    let tenant = root_tenant(w).await;
    w.app
        .state
        .store
        .find_unique(
            Some(tenant.id),
            SlackMessageEnrichment::MESSAGE_KEY,
            key().str(channel).str(ts),
        )
        .await
        .unwrap()
}

fn completed(outcomes: &[root::queue::Outcome]) -> bool {
    matches!(outcomes, [root::queue::Outcome::Completed { .. }])
}

#[tokio::test]
async fn slack_an_image_shared_in_a_public_channel_gets_a_vision_summary_row() {
    let w = world().await;
    let bytes = png();
    w.slack.route("GET", FILE_PATH, move |_| {
        Reply::bytes(200, "image/png", bytes.clone())
    });
    w.llm
        .json(completion("A flow chart of the deploy pipeline."));
    // A message with no text (≤ 10 chars) is still queued, for its files:
    // the image is described; the PDF is named without a download; the
    // text file fails (404) and is named — without failing the others.
    let ts = "1700000020.000100";
    let files = vec![image_file(&w), pdf_file(&w), text_file(&w)];
    assert_eq!(w.deliver(&file_event("C0123", "", ts, files)).await.0, 200);
    w.settle().await;
    assert!(w.all_posts().is_empty(), "nobody asked Root");
    let ran = crate::support::drain_jobs(&w.app.state, "slack-knowledge-ingest").await;
    assert!(completed(&ran), "{ran:?}");
    let row = enrichment(&w, "C0123", ts)
        .await
        .expect("an enrichment row");
    assert_eq!(
        row.summary,
        [
            image_line("diagram.png", "A flow chart of the deploy pipeline."),
            metadata_line("slides.pdf", Some("application/pdf")),
            metadata_line("notes.txt", Some("text/plain")),
        ]
        .join("\n")
    );
    assert!(w.slack.requests_to("/files/T1/F2/slides.pdf").is_empty());
    assert_eq!(w.slack.requests_to(NOTES_PATH).len(), 1);
    // The vision request carried the image itself, as a data URI.
    let bodies = w.llm.bodies();
    assert_eq!(bodies.len(), 1);
    assert!(
        bodies[0]
            .to_string()
            .contains("data:image/png;base64,iVBOR"),
        "{}",
        bodies[0]
    );
    // The file was fetched with the bot token.
    let fetched = w.slack.requests_to(FILE_PATH);
    assert_eq!(fetched.len(), 1);
    assert_eq!(fetched[0].method, "GET");
    assert_eq!(
        fetched[0].header("authorization"),
        Some("Bearer xoxb-test-token")
    );
    // No text to index: the Slack index is untouched.
    let tenant = root_tenant(&w).await;
    let indexed = w
        .app
        .state
        .store
        .count::<ProcessedSlackMessage>(Some(tenant.id))
        .await
        .unwrap();
    assert_eq!(indexed, 0);
}

#[tokio::test]
async fn slack_a_sign_in_page_is_never_summarised_and_the_job_still_succeeds() {
    let w = world().await;
    for path in [FILE_PATH, NOTES_PATH] {
        w.slack.route("GET", path, |_| {
            Reply::bytes(
                200,
                "text/html; charset=utf-8",
                b"<html><body>Sign in to Slack</body></html>".to_vec(),
            )
        });
    }
    let ts = "1700000021.000100";
    let text = "Here is the deploy diagram for review";
    assert_eq!(
        w.deliver(&file_event(
            "C0123",
            text,
            ts,
            vec![image_file(&w), text_file(&w)]
        ))
        .await
        .0,
        200
    );
    w.settle().await;
    let ran = crate::support::drain_jobs(&w.app.state, "slack-knowledge-ingest").await;
    assert!(completed(&ran), "{ran:?}");
    assert!(w.llm.bodies().is_empty(), "a sign-in page reaches no model");
    assert_eq!(w.slack.requests_to(FILE_PATH).len(), 1, "not retried");
    assert_eq!(w.slack.requests_to(NOTES_PATH).len(), 1, "not retried");
    let row = enrichment(&w, "C0123", ts)
        .await
        .expect("an enrichment row");
    assert_eq!(
        row.summary,
        [
            metadata_line("diagram.png", Some("image/png")),
            metadata_line("notes.txt", Some("text/plain")),
        ]
        .join("\n")
    );
    // The text (> 10 chars) is indexed as before.
    let tenant = root_tenant(&w).await;
    let rows: Option<ProcessedSlackMessage> = w
        .app
        .state
        .store
        .find_unique(
            Some(tenant.id),
            ProcessedSlackMessage::MESSAGE_KEY,
            key().str("C0123").str(ts),
        )
        .await
        .unwrap();
    assert_eq!(rows.map(|r| r.message_text).as_deref(), Some(text));
}

#[tokio::test]
async fn slack_a_dm_with_an_image_gives_the_turn_its_description() {
    let w = world().await;
    let bytes = png();
    w.slack.route("GET", FILE_PATH, move |_| {
        Reply::bytes(200, "image/png", bytes.clone())
    });
    w.llm
        .json(completion(
            "A screenshot of a login form showing the error \"token expired\".",
        ))
        .json(completion(
            "That error means your session ran out: sign in again.",
        ));
    let ts = "1700000022.000100";
    assert_eq!(
        w.deliver(&file_event("D0442US94JD", "", ts, vec![image_file(&w)]))
            .await
            .0,
        200
    );
    w.settle().await;
    let bodies = w.llm.bodies();
    assert_eq!(bodies.len(), 3, "the vision call, the turn, the review");
    assert!(bodies[0].to_string().contains("data:image/png;base64,"));
    // The turn's user message is the image's line (the member typed nothing).
    let messages = bodies[1]["messages"].as_array().unwrap();
    let last_user = messages.iter().rev().find(|m| m["role"] == "user").unwrap();
    let want = image_line(
        "diagram.png",
        "A screenshot of a login form showing the error \"token expired\".",
    );
    assert!(
        last_user["content"].to_string().contains(
            &serde_json::to_string(&want)
                .unwrap()
                .trim_matches('"')
                .to_string()
        ),
        "{last_user}"
    );
    assert!(!bodies[1].to_string().contains("(shared a file)"));
    let posts = w.posts();
    assert_eq!(posts.len(), 1, "{posts:#?}");
    assert!(posts[0]["text"].as_str().unwrap().contains("sign in again"));
    // Stored too, so the DM's thread history can show it later.
    let row = enrichment(&w, "D0442US94JD", ts).await.unwrap();
    assert_eq!(row.summary, want);
}

#[tokio::test]
async fn slack_a_thread_reply_sees_the_parents_file_summary_and_link_unfurls() {
    let w = world().await;
    let parent = "1700000023.000100";
    let reply_ts = "1700000023.000200";
    let summary = image_line(
        "chart.png",
        "A bar chart of monthly sign-ups, peaking in May.",
    );
    let tenant = root_tenant(&w).await;
    w.app
        .state
        .store
        .insert(SlackMessageEnrichment {
            id: uuid::Uuid::new_v4(),
            tenant_id: tenant.id,
            channel_id: "C0123".into(),
            message_ts: parent.into(),
            summary: summary.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    let question = format!("<@{BOT}> which month was best?");
    w.slack.reply(
        "/api/conversations.replies",
        200,
        json!({"ok": true, "messages": [
            {"ts": parent, "user": "U2", "text": "",
             "files": [{"id": "F2", "name": "chart.png", "mimetype": "image/png"}],
             "attachments": [{"title": "Sign-up dashboard",
                 "title_link": "https://dash.example.org/signups", "text": "Live numbers"}]},
            {"ts": reply_ts, "user": "U043H11ES4V", "text": question, "thread_ts": parent},
        ]}),
    );
    w.llm.json(completion("May was the best month."));
    let event = channel_event("message", &question, reply_ts, Some(parent));
    assert_eq!(w.deliver(&event).await.0, 200);
    w.settle().await;
    let bodies = w.llm.bodies();
    assert_eq!(
        bodies.len(),
        2,
        "the turn and its review: no file is summarised again"
    );
    let messages = bodies[0]["messages"].as_array().unwrap();
    let parent_msg = messages
        .iter()
        .find(|m| {
            m["content"]
                .to_string()
                .contains("[Shared image: chart.png")
        })
        .unwrap_or_else(|| panic!("no history message carries the summary: {messages:#?}"));
    assert_eq!(parent_msg["role"], "user");
    let content = parent_msg["content"].to_string();
    assert!(content.contains("peaking in May"), "{content}");
    assert!(
        content.contains("[Shared link: Sign-up dashboard — https://dash.example.org/signups]"),
        "{content}"
    );
    assert_eq!(w.posts().len(), 1);
}

#[tokio::test]
async fn slack_file_downloads_are_capped_refuse_sign_in_pages_and_carry_the_token() {
    let fake = FakeHttp::start().await;
    fake.route("GET", "/ok.txt", |_| {
        Reply::bytes(200, "text/plain; charset=utf-8", b"hello".to_vec())
    })
    .route("GET", "/big.bin", |_| {
        Reply::bytes(200, "application/octet-stream", vec![7; 4096])
    })
    // Over the cap in its first piece, then silence: only a download that
    // stops at the cap returns (one that reads on waits for the timeout).
    .route("GET", "/endless.bin", |_| Reply::Stall {
        content_type: "application/octet-stream",
        first: vec![7; 4096],
    })
    .route("GET", "/signin", |_| {
        Reply::bytes(200, "text/html", b"<html>sign in</html>".to_vec())
    });
    let api = client(&fake);
    let ok = api.download_file(&fake.url("/ok.txt"), 1024).await.unwrap();
    assert_eq!(ok.bytes, b"hello");
    assert_eq!(ok.content_type.as_deref(), Some("text/plain"));
    assert_eq!(
        fake.requests_to("/ok.txt")[0].header("authorization"),
        Some("Bearer xoxb-t")
    );
    for path in ["/big.bin", "/endless.bin"] {
        let err = api.download_file(&fake.url(path), 1024).await.unwrap_err();
        assert!(
            matches!(err, SlackError::FileTooLarge { max_bytes: 1024 }),
            "{path}: {err:?}"
        );
    }
    let err = api
        .download_file(&fake.url("/signin"), 1024)
        .await
        .unwrap_err();
    assert!(matches!(err, SlackError::SignInPage), "{err:?}");
    assert!(!err.to_string().contains("xoxb"), "{err}");
    let err = api
        .download_file(&fake.url("/gone"), 1024)
        .await
        .unwrap_err();
    assert!(
        matches!(err, SlackError::Http { status: 404, .. }),
        "{err:?}"
    );
}

//! The Web API client against a fake Slack: retries, `ok: false`,
//! pagination, and the external file-upload sequence.

use super::*;

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

//! The fake-HTTP kit's own tests: routing by method and path, scripts
//! before closures, recording, NDJSON / SSE bodies, 404 / 418 / 503.

use serde_json::json;

use super::fake_http::{FakeHttp, Reply};

#[tokio::test]
async fn routes_by_method_and_path_scripts_first_and_records_everything() {
    let fake = FakeHttp::start().await;
    fake.route("POST", "/echo", |req| Reply::json(201, &req.body))
        .script("GET", "/flaky", [Reply::status(500), Reply::status(200)]);
    let client = reqwest::Client::new();
    let echo = client
        .post(fake.url("/echo?x=1"))
        .header("x-test", "yes")
        .json(&json!({"a": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(echo.status(), 201);
    assert_eq!(
        echo.json::<serde_json::Value>().await.unwrap(),
        json!({"a": 1})
    );
    let statuses = [
        client
            .get(fake.url("/flaky"))
            .send()
            .await
            .unwrap()
            .status(),
        client
            .get(fake.url("/flaky"))
            .send()
            .await
            .unwrap()
            .status(),
        client
            .get(fake.url("/flaky"))
            .send()
            .await
            .unwrap()
            .status(),
        client.get(fake.url("/echo")).send().await.unwrap().status(),
        client
            .get(fake.url("/nowhere"))
            .send()
            .await
            .unwrap()
            .status(),
    ];
    assert_eq!(statuses.map(|s| s.as_u16()), [500, 200, 418, 404, 404]);
    let seen = fake.requests();
    assert_eq!(seen.len(), 6);
    assert_eq!(seen[0].method, "POST");
    assert_eq!(seen[0].path, "/echo");
    assert_eq!(seen[0].query.as_deref(), Some("x=1"));
    assert_eq!(seen[0].header("x-test"), Some("yes"));
    assert_eq!(seen[0].raw, br#"{"a":1}"#);
    assert!(seen[0].headers_text().contains("x-test: yes\r\n"));
    assert_eq!(fake.requests_to("/flaky").len(), 3);
}

#[tokio::test]
async fn answers_ndjson_sse_and_fails_the_next_n_requests_with_503() {
    let fake = FakeHttp::start().await;
    fake.route("GET", "/lines", |_| {
        Reply::ndjson(200, &[json!({"n": 1}), json!({"n": 2})])
    })
    .route("GET", "/events", |_| {
        Reply::sse_events(&[json!({"d": "hi"})])
    });
    let get = |path: &str| reqwest::get(fake.url(path));
    let lines = get("/lines").await.unwrap();
    assert_eq!(lines.headers()["content-type"], "application/x-ndjson");
    assert_eq!(lines.text().await.unwrap(), "{\"n\":1}\n{\"n\":2}\n");
    let events = get("/events").await.unwrap();
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    assert_eq!(
        events.text().await.unwrap(),
        "data: {\"d\":\"hi\"}\n\ndata: [DONE]\n\n"
    );
    fake.fail_next(1);
    assert_eq!(get("/lines").await.unwrap().status(), 503);
    assert_eq!(get("/lines").await.unwrap().status(), 200);
    fake.wait_for_requests(4).await;
}

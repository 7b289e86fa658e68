//! Knowledge-source fetchers (§11.1, §11.2 step 1) against in-process fakes
//! on 127.0.0.1: a web page extracted with Readability, redirects followed
//! by hand (and refused past five), api_pull requests (auth headers byte for
//! byte, POST bodies) and answers (JSONPath mapping, default keys, the
//! 250-document cut, errors with their status), the §7.1-signed webhook
//! trigger and its inline answer, and the SSRF guard: a strict fetcher
//! refuses loopback, LAN and metadata addresses before anything is sent.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::IntoResponse;
use serde_json::{Value, json};
use storage::{
    AuthType, HttpMethod, Json, KnowledgeSource, Redacted, ResponseMode, SourceKind, Ts,
};
use uuid::Uuid;

use root::integrations::signing;
use root::knowledge::fetch::{
    FETCH_TIMEOUT, FetchError, FetchOutcome, Fetched, Fetcher, MAX_DOCUMENTS_PER_RUN,
    MAX_WEB_PAGE_BYTES, RawDocument, RunRef,
};
use root::outbound::OutboundPolicy;
use root::platform::clock::ManualClock;

use crate::support::{FakeHttp, Reply, closed_port_url};

const NOW_SECS: i64 = 1_767_225_600; // 2026-01-01T00:00:00Z
const SIGNING_SECRET: &str = "whsec_knowledge_0123456789abcdef";
const PLATFORM: &str = "https://root.example.org";

fn fetcher(policy: OutboundPolicy) -> Fetcher {
    let clock = ManualClock::new(Ts::from_secs(NOW_SECS));
    Fetcher::new(policy, PLATFORM, Arc::new(clock)).unwrap()
}

/// What the fakes on 127.0.0.1 need.
fn lan_fetcher() -> Fetcher {
    fetcher(OutboundPolicy {
        allow_private: true,
        require_https: false,
    })
}

fn strict_fetcher() -> Fetcher {
    fetcher(OutboundPolicy::strict())
}

fn run() -> RunRef {
    RunRef {
        tenant_id: Uuid::from_u128(0x7e7),
        run_id: Uuid::from_u128(0x4242),
    }
}

fn source(kind: SourceKind, url: &str) -> KnowledgeSource {
    KnowledgeSource {
        id: Uuid::from_u128(0x5005),
        tenant_id: run().tenant_id,
        source_key: "handbook".into(),
        name: "Community handbook".into(),
        source_kind: kind,
        url: Some(url.to_string()),
        request_headers: Json::empty_object().into(),
        auth_config: Json::empty_object(),
        secrets: Redacted::new(Json::empty_object()),
        mapping: Json::empty_object(),
        ..KnowledgeSource::default()
    }
}

fn api_source(url: &str) -> KnowledgeSource {
    KnowledgeSource {
        response_mode: ResponseMode::Json,
        ..source(SourceKind::ApiPull, url)
    }
}

fn with_secrets(mut s: KnowledgeSource, secrets: Value) -> KnowledgeSource {
    s.secrets = Redacted::new(Json(secrets));
    s
}

async fn documents(fetcher: &Fetcher, s: &KnowledgeSource) -> Fetched {
    match fetcher.fetch(s, &run()).await {
        Ok(FetchOutcome::Documents(f)) => f,
        other => panic!("documents expected, got {other:?}"),
    }
}

async fn failure(fetcher: &Fetcher, s: &KnowledgeSource) -> FetchError {
    match fetcher.fetch(s, &run()).await {
        Err(e) => e,
        Ok(other) => panic!("an error expected, got {other:?}"),
    }
}

/// A fake that answers with headers [`FakeHttp`] cannot set (`Location`):
/// each path has a status, headers and a body; every request's path is
/// recorded.
struct HeaderServer {
    base: String,
    hits: Arc<Mutex<Vec<String>>>,
}

type Canned = (u16, Vec<(&'static str, String)>, String);

impl HeaderServer {
    async fn start(routes: impl Fn(&str) -> Option<Canned> + Send + Sync + 'static) -> Self {
        let hits = Arc::new(Mutex::new(Vec::new()));
        let seen = hits.clone();
        let routes = Arc::new(routes);
        let app = axum::Router::new().fallback(move |uri: Uri| {
            let seen = seen.clone();
            let routes = routes.clone();
            async move {
                seen.lock().unwrap().push(uri.path().to_string());
                match routes(uri.path()) {
                    None => StatusCode::NOT_FOUND.into_response(),
                    Some((status, headers, body)) => {
                        let mut map = HeaderMap::new();
                        for (name, value) in headers {
                            map.insert(name, value.parse().unwrap());
                        }
                        (StatusCode::from_u16(status).unwrap(), map, body).into_response()
                    }
                }
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        HeaderServer { base, hits }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn hits(&self) -> Vec<String> {
        self.hits.lock().unwrap().clone()
    }
}

fn redirect(status: u16, to: &str) -> Option<Canned> {
    Some((status, vec![("location", to.to_string())], String::new()))
}

fn html_page(body: &str) -> Option<Canned> {
    Some((
        200,
        vec![("content-type", "text/html; charset=utf-8".into())],
        body.to_string(),
    ))
}

/// A realistic page: navigation, an article with a byline and a published
/// time in its metadata, a sidebar, a footer and scripts.
const ARTICLE_PAGE: &str = r#"<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>How we run code review | Example Community Handbook</title>
  <meta name="author" content="Grace Hopper">
  <meta property="article:published_time" content="2025-11-03T08:30:00Z">
  <link rel="stylesheet" href="/assets/site.css">
  <script>window.analytics = {track: function () {}};</script>
</head>
<body>
  <header class="site-header">
    <a href="/" class="logo">Example Community</a>
    <nav><ul><li><a href="/handbook">Handbook</a></li><li><a href="/events">Events</a></li>
    <li><a href="/jobs">Jobs board</a></li></ul></nav>
  </header>
  <main>
    <article class="post">
      <h1>How we run code review</h1>
      <p class="byline">By Grace Hopper</p>
      <p>Every pull request in a community project gets two reviews: one from a peer in your
      cohort and one from a mentor. Reviews are about learning, so reviewers explain the why
      behind each suggestion and link to the relevant part of the style guide.</p>
      <h2>Asking for a review</h2>
      <p>Open the pull request as a draft first, fill in the template, and post the link in the
      review-requests channel. A mentor picks it up within two working days; if nobody has after
      that, mention the mentors group and someone will take it.</p>
      <h2>Answering comments</h2>
      <p>Reply to every comment, even with a thumbs-up, and push fixes as new commits so the
      reviewer can see what changed. Squash only when the mentor approves the final version.</p>
    </article>
    <aside class="sidebar"><h3>Popular</h3><ul><li><a href="/jobs">Jobs board</a></li></ul></aside>
  </main>
  <footer>© 2025 Example Community · <a href="/privacy">Privacy</a></footer>
  <script src="/assets/app.js"></script>
</body>
</html>"#;

#[tokio::test]
async fn a_web_page_becomes_one_readability_extracted_document() {
    let fake = FakeHttp::start().await;
    fake.route("GET", "/handbook/code-review", |_| {
        Reply::bytes(
            200,
            "text/html; charset=utf-8",
            ARTICLE_PAGE.as_bytes().to_vec(),
        )
    });
    let url = fake.url("/handbook/code-review");
    let fetched = documents(&lan_fetcher(), &source(SourceKind::WebPage, &url)).await;
    assert_eq!(fetched.documents_total, 1);
    assert_eq!(fetched.http_status, Some(200));
    let doc = &fetched.documents[0];
    assert_eq!(doc.external_id.as_deref(), Some(url.as_str()));
    assert_eq!(doc.source_url.as_deref(), Some(url.as_str()));
    let title = doc.title.as_deref().unwrap();
    assert!(title.starts_with("How we run code review"), "{title}");
    let text = doc.content_text.as_deref().unwrap();
    assert!(text.contains("gets two reviews"), "{text}");
    assert!(
        text.contains("Squash only when the mentor approves"),
        "{text}"
    );
    for chrome in ["Jobs board", "Privacy", "analytics"] {
        assert!(!text.contains(chrome), "{chrome} in {text}");
    }
    let html = doc.content_html.as_deref().unwrap();
    assert!(html.contains("Asking for a review"), "{html}");
    assert!(!html.contains("<script"), "{html}");
    assert_eq!(doc.author_name.as_deref(), Some("Grace Hopper"));
    assert_eq!(doc.knowledge_date.as_deref(), Some("2025-11-03T08:30:00Z"));
    let seen = fake.requests_to("/handbook/code-review");
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].method, "GET");
    assert!(
        seen[0]
            .header("accept")
            .is_some_and(|a| a.starts_with("text/html"))
    );
}

#[tokio::test]
async fn a_redirect_is_followed_and_the_final_url_recorded() {
    let server = HeaderServer::start(|path| match path {
        "/old" => redirect(301, "/handbook/new?ref=old"),
        "/handbook/new" => html_page(ARTICLE_PAGE),
        _ => None,
    })
    .await;
    let registered = server.url("/old");
    let fetched = documents(&lan_fetcher(), &source(SourceKind::WebPage, &registered)).await;
    let doc = &fetched.documents[0];
    assert_eq!(doc.external_id.as_deref(), Some(registered.as_str()));
    assert_eq!(
        doc.source_url.as_deref(),
        Some(server.url("/handbook/new?ref=old").as_str())
    );
    assert!(doc.content_text.as_deref().unwrap().contains("two reviews"));
    assert_eq!(server.hits(), ["/old", "/handbook/new"]);
}

/// `/r{n}` redirects to `/r{n+1}` up to `/r{last}`, which is the page.
async fn redirect_chain(last: usize) -> HeaderServer {
    HeaderServer::start(move |path| {
        let n: usize = path.strip_prefix("/r")?.parse().ok()?;
        if n < last {
            redirect(302, &format!("/r{}", n + 1))
        } else {
            html_page("<html><head><title>End</title></head><body><p>arrived</p></body></html>")
        }
    })
    .await
}

#[tokio::test]
async fn five_redirects_are_followed_and_a_sixth_is_refused() {
    let five = redirect_chain(5).await;
    let fetched = documents(
        &lan_fetcher(),
        &source(SourceKind::WebPage, &five.url("/r0")),
    )
    .await;
    assert_eq!(
        fetched.documents[0].source_url.as_deref(),
        Some(five.url("/r5").as_str())
    );
    assert_eq!(five.hits().len(), 6);

    let six = redirect_chain(6).await;
    let e = failure(
        &lan_fetcher(),
        &source(SourceKind::WebPage, &six.url("/r0")),
    )
    .await;
    assert_eq!(
        e.message,
        "the page redirected more than 5 times; register the final URL instead"
    );
    assert_eq!(e.http_status, Some(302));
    // The sixth target is never requested.
    assert_eq!(six.hits(), ["/r0", "/r1", "/r2", "/r3", "/r4", "/r5"]);
}

#[tokio::test]
async fn a_plain_text_page_is_one_text_document() {
    let fake = FakeHttp::start().await;
    fake.route("GET", "/rules.txt", |_| {
        Reply::bytes(
            200,
            "text/plain; charset=utf-8",
            b"Be kind.\n\nNo <b>spam</b>.".to_vec(),
        )
    });
    let url = fake.url("/rules.txt");
    let fetched = documents(&lan_fetcher(), &source(SourceKind::WebPage, &url)).await;
    assert_eq!(
        fetched.documents,
        vec![RawDocument {
            external_id: Some(url.clone()),
            title: Some(url.clone()),
            content_text: Some("Be kind.\n\nNo <b>spam</b>.".into()),
            source_url: Some(url.clone()),
            ..RawDocument::default()
        }]
    );
}

#[tokio::test]
async fn web_pages_of_other_types_or_over_the_cap_are_refused() {
    let fake = FakeHttp::start().await;
    fake.route("GET", "/file.pdf", |_| {
        Reply::bytes(200, "application/pdf", b"%PDF-1.7".to_vec())
    });
    fake.route("GET", "/huge", |_| {
        Reply::bytes(200, "text/html", vec![b'a'; MAX_WEB_PAGE_BYTES + 1])
    });
    let fetcher = lan_fetcher();
    let e = failure(
        &fetcher,
        &source(SourceKind::WebPage, &fake.url("/file.pdf")),
    )
    .await;
    assert!(
        e.message.starts_with("the page is application/pdf;"),
        "{}",
        e.message
    );
    let e = failure(&fetcher, &source(SourceKind::WebPage, &fake.url("/huge"))).await;
    assert_eq!(e.message, "the response is larger than 5242880 bytes");
    assert_eq!(e.http_status, Some(200));
}

#[tokio::test]
async fn api_pull_maps_json_with_explicit_paths() {
    let fake = FakeHttp::start().await;
    fake.reply(
        "/v1/articles",
        200,
        json!({"data": {"total": 2, "items": [
            {"uid": 101, "attributes": {"headline": "Onboarding", "html": "<p>Welcome</p>",
             "permalink": "https://kb.example.org/101", "by": {"name": "Kim"}, "year": 2025}},
            {"uid": "102", "attributes": {"headline": "Offboarding", "html": "<p>Bye</p>"}},
        ]}}),
    );
    let mut s = api_source(&fake.url("/v1/articles"));
    s.mapping = Json(json!({
        "documents_path": "$.data.items[*]",
        "external_id_path": "$.uid",
        "title_path": "$.attributes.headline",
        "content_html_path": "$.attributes.html",
        "source_url_path": "$.attributes.permalink",
        "author_name_path": "$.attributes.by.name",
        "knowledge_date_path": "$.attributes.year",
    }));
    let fetched = documents(&lan_fetcher(), &s).await;
    assert_eq!(fetched.documents_total, 2);
    assert_eq!(fetched.http_status, Some(200));
    assert_eq!(
        fetched.documents[0],
        RawDocument {
            external_id: Some("101".into()),
            title: Some("Onboarding".into()),
            content_html: Some("<p>Welcome</p>".into()),
            source_url: Some("https://kb.example.org/101".into()),
            author_name: Some("Kim".into()),
            knowledge_date: Some("2025".into()),
            ..RawDocument::default()
        }
    );
    assert_eq!(fetched.documents[1].external_id.as_deref(), Some("102"));
    assert_eq!(fetched.documents[1].source_url, None);
    let seen = fake.requests_to("/v1/articles");
    assert_eq!(seen[0].method, "GET");
    assert_eq!(seen[0].header("accept"), Some("application/json"));
    assert_eq!(seen[0].header("authorization"), None);
}

#[tokio::test]
async fn api_pull_falls_back_to_conventional_keys() {
    let fake = FakeHttp::start().await;
    fake.reply(
        "/export",
        200,
        json!([
            {"id": "faq-1", "slug": "faq-one", "name": "FAQ one", "body": "Answer one",
             "url": "https://x/faq-1", "author": "Lee", "updated_at": "2025-10-01"},
            {"external_id": "faq-2", "title": "FAQ two", "content_html": "<p>Two</p>"},
        ]),
    );
    let mut s = source(SourceKind::ApiPull, &fake.url("/export"));
    s.response_mode = ResponseMode::Auto;
    let fetched = documents(&lan_fetcher(), &s).await;
    assert_eq!(
        fetched.documents,
        vec![
            RawDocument {
                external_id: Some("faq-1".into()),
                slug: Some("faq-one".into()),
                title: Some("FAQ one".into()),
                content_text: Some("Answer one".into()),
                source_url: Some("https://x/faq-1".into()),
                author_name: Some("Lee".into()),
                knowledge_date: Some("2025-10-01".into()),
                ..RawDocument::default()
            },
            RawDocument {
                external_id: Some("faq-2".into()),
                title: Some("FAQ two".into()),
                content_html: Some("<p>Two</p>".into()),
                ..RawDocument::default()
            },
        ]
    );
}

#[tokio::test]
async fn each_auth_type_sends_its_exact_header() {
    let fake = FakeHttp::start().await;
    fake.reply("/docs", 200, json!([{"id": 1, "title": "t"}]));
    let fetcher = lan_fetcher();
    let url = fake.url("/docs");
    let cases: Vec<(AuthType, Value, Value, &str, &str)> = vec![
        (
            AuthType::Bearer,
            json!({}),
            json!({"token": "tok_123"}),
            "authorization",
            "Bearer tok_123",
        ),
        (
            AuthType::Basic,
            json!({"username": "ada"}),
            json!({"password": "s3cret"}),
            "authorization",
            // printf 'ada:s3cret' | base64
            "Basic YWRhOnMzY3JldA==",
        ),
        (
            AuthType::ApiKey,
            json!({}),
            json!({"token": "key_default"}),
            "x-api-key",
            "key_default",
        ),
        (
            AuthType::ApiKey,
            json!({"header_name": "X-Docs-Key"}),
            json!({"token": "key_custom"}),
            "x-docs-key",
            "key_custom",
        ),
    ];
    for (i, (auth_type, config, secrets, header, expected)) in cases.into_iter().enumerate() {
        let mut s = with_secrets(api_source(&url), secrets);
        s.auth_type = auth_type;
        s.auth_config = Json(config);
        documents(&fetcher, &s).await;
        let seen = &fake.requests_to("/docs")[i];
        assert_eq!(seen.header(header), Some(expected), "{auth_type:?}");
        if header != "authorization" {
            assert_eq!(seen.header("authorization"), None);
        }
    }
}

#[tokio::test]
async fn a_post_sends_its_json_body_and_headers() {
    let fake = FakeHttp::start().await;
    fake.route("POST", "/search", |req| {
        Reply::json(
            200,
            &json!({"hits": [{"id": req.body["query"]["team"], "text": "x"}]}),
        )
    });
    let mut s = api_source(&fake.url("/search"));
    s.http_method = HttpMethod::Post;
    s.request_body = Some(Json(json!({"query": {"team": "docs"}, "limit": 50})));
    s.request_headers = Json(json!({"X-Workspace": "community"})).into();
    s.mapping = Json(json!({"documents_path": "$.hits"}));
    let fetched = documents(&lan_fetcher(), &s).await;
    assert_eq!(fetched.documents[0].external_id.as_deref(), Some("docs"));
    let seen = &fake.requests_to("/search")[0];
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.body, json!({"query": {"team": "docs"}, "limit": 50}));
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(seen.header("x-workspace"), Some("community"));
}

#[tokio::test]
async fn api_pull_answers_that_are_not_documents_fail_with_their_status() {
    let fake = FakeHttp::start().await;
    fake.route("GET", "/html-error", |_| {
        Reply::bytes(200, "text/html", b"<html>maintenance</html>".to_vec())
    });
    fake.reply("/down", 503, json!({"error": "maintenance"}));
    fake.reply("/empty", 200, json!({"data": {"items": []}}));
    let fetcher = lan_fetcher();

    let e = failure(&fetcher, &api_source(&fake.url("/html-error"))).await;
    assert!(
        e.message.starts_with("the response is not JSON: "),
        "{}",
        e.message
    );
    assert_eq!(e.http_status, Some(200));

    let e = failure(&fetcher, &api_source(&fake.url("/down"))).await;
    assert_eq!(e.message, "the source answered HTTP 503");
    assert_eq!(e.http_status, Some(503));

    let mut s = api_source(&fake.url("/empty"));
    s.mapping = Json(json!({"documents_path": "$.data.items[*]"}));
    let e = failure(&fetcher, &s).await;
    assert!(
        e.message
            .starts_with("the response mapped to zero documents"),
        "{}",
        e.message
    );

    s.mapping = Json(json!({"title_path": "$["}));
    let e = failure(&fetcher, &s).await;
    assert!(
        e.message
            .starts_with("mapping.title_path: not a valid JSONPath"),
        "{}",
        e.message
    );
    assert_eq!(
        fake.requests_to("/empty").len(),
        1,
        "a broken mapping calls nothing"
    );
}

#[tokio::test]
async fn more_than_250_documents_are_cut_and_counted() {
    let fake = FakeHttp::start().await;
    let items: Vec<Value> = (0..260).map(|i| json!({"id": i, "text": "t"})).collect();
    fake.reply("/all", 200, json!({"items": items}));
    let mut s = api_source(&fake.url("/all"));
    s.mapping = Json(json!({"documents_path": "$.items[*]"}));
    let fetched = documents(&lan_fetcher(), &s).await;
    assert_eq!(fetched.documents.len(), MAX_DOCUMENTS_PER_RUN);
    assert_eq!(fetched.documents_total, 260);
    assert_eq!(fetched.documents[249].external_id.as_deref(), Some("249"));
}

#[tokio::test]
async fn api_pull_does_not_follow_redirects_and_keeps_secrets_out_of_errors() {
    let server = HeaderServer::start(|path| match path {
        "/moved" => redirect(302, "http://elsewhere.example.org/docs?key=abc"),
        "/denied" => Some((401, vec![], "bad token tok_secret_42".into())),
        _ => None,
    })
    .await;
    let fetcher = lan_fetcher();
    let s = with_secrets(
        api_source(&server.url("/moved")),
        json!({"token": "tok_secret_42"}),
    );
    let s = KnowledgeSource {
        auth_type: AuthType::Bearer,
        ..s
    };
    let e = failure(&fetcher, &s).await;
    assert_eq!(
        e.message,
        "the source answered HTTP 302 redirecting to http://elsewhere.example.org/docs?…; redirects are not followed for this kind of source, so register the final URL"
    );
    assert_eq!(e.http_status, Some(302));
    assert_eq!(server.hits(), ["/moved"]);

    let s = KnowledgeSource {
        url: Some(server.url("/denied?api_key=tok_secret_42")),
        ..s
    };
    let e = failure(&fetcher, &s).await;
    assert_eq!(e.message, "the source answered HTTP 401");
    assert!(!format!("{e} {e:?}").contains("tok_secret_42"));

    // A connection failure names the cause, not the URL's query.
    let s = KnowledgeSource {
        url: Some(format!(
            "{}/x?api_key=tok_secret_42",
            closed_port_url().await
        )),
        ..s
    };
    let e = failure(&fetcher, &s).await;
    assert!(
        e.message.starts_with("could not connect to the source: "),
        "{}",
        e.message
    );
    assert!(!format!("{e} {e:?}").contains("tok_secret_42"), "{e}");
}

#[tokio::test]
async fn a_source_that_never_answers_times_out() {
    let fake = FakeHttp::start().await;
    fake.route("GET", "/slow", |_| Reply::Hang);
    let fetcher = lan_fetcher().with_timeout(Duration::from_millis(200));
    let e = failure(&fetcher, &api_source(&fake.url("/slow"))).await;
    assert_eq!(e.message, "the fetch timed out after 200 ms");
    assert_eq!(FETCH_TIMEOUT, Duration::from_secs(45));
}

fn webhook_source(url: &str) -> KnowledgeSource {
    with_secrets(
        source(SourceKind::Webhook, url),
        json!({"webhook_signing_secret": SIGNING_SECRET}),
    )
}

#[tokio::test]
async fn the_webhook_trigger_is_signed_per_7_1_and_202_means_triggered() {
    let fake = FakeHttp::start().await;
    fake.reply("/hooks/kb", 202, Value::Null);
    let fetcher = lan_fetcher();
    let outcome = fetcher
        .fetch(&webhook_source(&fake.url("/hooks/kb")), &run())
        .await
        .unwrap();
    assert_eq!(outcome, FetchOutcome::Triggered { http_status: 202 });

    let seen = &fake.requests_to("/hooks/kb")[0];
    assert_eq!(seen.method, "POST");
    assert_eq!(seen.header("content-type"), Some("application/json"));
    let ts = seen.header(signing::TIMESTAMP_HEADER).unwrap();
    assert_eq!(ts, NOW_SECS.to_string());
    let signature = seen.header(signing::SIGNATURE_HEADER).unwrap();
    assert_eq!(
        signing::verify(SIGNING_SECRET, ts, &seen.raw, signature, NOW_SECS, 300),
        Ok(())
    );
    assert!(signing::verify("another-secret", ts, &seen.raw, signature, NOW_SECS, 300).is_err());
    let callback = format!(
        "{PLATFORM}/webhooks/knowledge/{}/{}",
        run().tenant_id,
        run().run_id
    );
    assert_eq!(fetcher.callback_url(&run()), callback);
    assert_eq!(
        seen.body,
        json!({
            "type": "knowledge.sync.requested",
            "run_id": run().run_id,
            "tenant_id": run().tenant_id,
            "source": {"id": Uuid::from_u128(0x5005), "key": "handbook", "name": "Community handbook"},
            "callback": {"url": callback, "method": "POST"},
            "requested_at": "2026-01-01T00:00:00Z",
        })
    );
}

#[tokio::test]
async fn a_webhook_may_answer_documents_inline() {
    let fake = FakeHttp::start().await;
    fake.reply(
        "/inline",
        200,
        json!({"documents": [
            {"external_id": "a", "title": "Alpha", "content_text": "first"},
            {"external_id": "b", "title": "Beta", "content_html": "<p>second</p>"},
        ]}),
    );
    fake.reply(
        "/bad-shape",
        200,
        json!({"documents": [{"title": "x", "colour": "red"}]}),
    );
    fake.reply("/ack", 200, json!({"ok": true}));
    let fetcher = lan_fetcher();
    let fetched = documents(&fetcher, &webhook_source(&fake.url("/inline"))).await;
    assert_eq!(fetched.documents_total, 2);
    assert_eq!(fetched.http_status, Some(200));
    assert_eq!(
        fetched.documents[1].content_html.as_deref(),
        Some("<p>second</p>")
    );

    let e = failure(&fetcher, &webhook_source(&fake.url("/bad-shape"))).await;
    assert!(
        e.message
            .starts_with("the webhook's documents[0] is not a document: unknown field `colour`"),
        "{}",
        e.message
    );
    let ack = fetcher
        .fetch(&webhook_source(&fake.url("/ack")), &run())
        .await
        .unwrap();
    assert_eq!(ack, FetchOutcome::Triggered { http_status: 200 });
}

#[tokio::test]
async fn a_webhook_error_or_missing_secret_fails() {
    let fake = FakeHttp::start().await;
    fake.reply("/broken", 500, json!({"error": "boom"}));
    let fetcher = lan_fetcher();
    let e = failure(&fetcher, &webhook_source(&fake.url("/broken"))).await;
    assert_eq!(e.message, "the source answered HTTP 500");
    assert_eq!(e.http_status, Some(500));

    let unsigned = source(SourceKind::Webhook, &fake.url("/broken"));
    let e = failure(&fetcher, &unsigned).await;
    assert_eq!(
        e.message,
        "webhook sources need secrets.webhook_signing_secret"
    );
    assert_eq!(
        fake.requests_to("/broken").len(),
        1,
        "nothing unsigned is sent"
    );
}

#[tokio::test]
async fn api_push_sources_are_not_fetched() {
    let e = failure(
        &lan_fetcher(),
        &source(SourceKind::ApiPush, "https://example.org/"),
    )
    .await;
    assert_eq!(
        e.message,
        "api_push sources receive documents through POST /api/v1/kb/sync"
    );
}

#[tokio::test]
async fn a_strict_fetcher_refuses_private_addresses_before_sending() {
    let fake = FakeHttp::start().await;
    fake.reply("/", 200, json!([{"id": 1, "title": "t"}]));
    let fetcher = strict_fetcher();
    for url in [
        fake.url("/"),
        "http://10.0.0.1/".to_string(),
        "http://169.254.169.254/latest/meta-data".to_string(),
    ] {
        for kind in [
            SourceKind::WebPage,
            SourceKind::ApiPull,
            SourceKind::Webhook,
        ] {
            let s = with_secrets(
                source(kind, &url),
                json!({"webhook_signing_secret": SIGNING_SECRET}),
            );
            let e = failure(&fetcher, &s).await;
            assert!(
                e.message.contains("is not a public address; refused"),
                "{url} {kind:?}: {}",
                e.message
            );
            assert_eq!(e.http_status, None);
        }
    }
    // A name is checked where it resolves: localhost is the fake's address.
    let named = fake.url("/").replace("127.0.0.1", "localhost");
    let e = failure(&fetcher, &source(SourceKind::WebPage, &named)).await;
    assert!(
        e.message
            .starts_with("localhost resolves only to non-public addresses; refused"),
        "{}",
        e.message
    );
    assert!(fake.requests().is_empty(), "the fake saw a request");
    // The same fake is reachable when private fetches are allowed.
    let s = source(SourceKind::ApiPull, &fake.url("/"));
    assert_eq!(documents(&lan_fetcher(), &s).await.documents_total, 1);
}

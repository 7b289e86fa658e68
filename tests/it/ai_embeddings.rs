//! The embeddings client against a fake OpenAI-compatible server on
//! 127.0.0.1:0 that records every request: wire format, batching, order,
//! headers, metering, retries, timeouts and config selection. Never the
//! internet, never the shared embed-server.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use storage::{LlmTokenUsage, MigrationStore, RedbStore, Scan, Store, TenantStore};

use root::ai::AiError;
use root::ai::embeddings::{EMBEDDING_DIMENSIONS, Embedder, OpenAiEmbedder, embedder_from_config};
use root::ai::usage::{UsageRecorder, UsageTotals, collect_usage, outside_collection};
use root::config::Config;
use root::platform::clock::SystemClock;
use root::platform::tenancy::{self, TenantContext};

use crate::support::{FakeHttp, Reply as HttpReply};

/// What the fake answers to the next request; when the script is empty it
/// answers correctly, with `data` in reverse order.
enum Reply {
    Status(u16, Value),
    /// No answer until the client gives up.
    Stall,
    Dimensions(usize),
}

/// The fake provider: one `POST /v1/embeddings` route on the fake-HTTP kit
/// whose closure answers from this module's script.
struct FakeProvider {
    base_url: String,
    http: FakeHttp,
    script: Arc<Mutex<VecDeque<Reply>>>,
}

impl FakeProvider {
    async fn start() -> FakeProvider {
        let http = FakeHttp::start().await;
        let script: Arc<Mutex<VecDeque<Reply>>> = Arc::default();
        let s = script.clone();
        http.route("POST", "/v1/embeddings", move |req| {
            embeddings(&req.body, s.lock().unwrap().pop_front())
        });
        FakeProvider {
            base_url: http.url("/v1"),
            http,
            script,
        }
    }

    fn then(&self, reply: Reply) -> &Self {
        self.script.lock().unwrap().push_back(reply);
        self
    }

    fn requests(&self) -> usize {
        self.http.requests().len()
    }

    fn bodies(&self) -> Vec<Value> {
        self.http.requests().into_iter().map(|r| r.body).collect()
    }

    fn header(&self, request: usize, name: &str) -> Option<String> {
        self.http.requests()[request]
            .header(name)
            .map(str::to_string)
    }
}

/// A distinct, un-normalised vector per text (the client must normalise it).
fn fake_vector(text: &str, dims: usize) -> Vec<f32> {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let mut v = vec![0.0f32; dims];
    for (j, x) in v.iter_mut().take(8).enumerate() {
        *x = ((h >> (8 * j)) & 0xff) as f32 + 1.0;
    }
    v
}

fn normalised(v: Vec<f32>) -> Vec<f32> {
    let n = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    v.into_iter().map(|x| (f64::from(x) / n) as f32).collect()
}

fn embeddings(body: &Value, reply: Option<Reply>) -> HttpReply {
    let inputs: Vec<String> = body["input"]
        .as_array()
        .expect("client sends JSON with an input list")
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect();
    let dims = match reply {
        Some(Reply::Status(code, body)) => return HttpReply::json(code, &body),
        Some(Reply::Stall) => return HttpReply::Hang,
        Some(Reply::Dimensions(d)) => d,
        None => EMBEDDING_DIMENSIONS,
    };
    let n = inputs.len() as u64;
    let data: Vec<Value> = inputs
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| json!({"object": "embedding", "index": i, "embedding": fake_vector(t, dims)}))
        .collect();
    let answer = json!({
        "object": "list",
        "data": data,
        "model": "openai/text-embedding-3-large",
        "usage": {"prompt_tokens": 3 * n, "total_tokens": 3 * n, "cost": n as f64 * 1e-6},
    });
    // OpenRouter sends keep-alive whitespace before the JSON.
    HttpReply::raw_json(200, format!("\n \n{answer}").into_bytes())
}

fn config(vars: &[(&str, &str)]) -> Config {
    Config::from_vars(vars.iter().map(|(k, v)| (k.to_string(), v.to_string()))).unwrap()
}

fn provider_config(fake: &FakeProvider) -> Config {
    config(&[
        ("OPENROUTER_BASE_URL", &fake.base_url),
        ("OPENROUTER_API_KEY", "sk-or-test-key"),
        ("OPENROUTER_TITLE", "Root Tests"),
        ("OPENROUTER_REFERER", "https://root.example"),
    ])
}

async fn store() -> RedbStore {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    store
}

fn recorder(store: &RedbStore) -> UsageRecorder {
    UsageRecorder::new(Arc::new(store.clone()), Arc::new(SystemClock))
}

/// The client with test-sized retry delays.
fn embedder(cfg: &Config, store: &RedbStore) -> OpenAiEmbedder {
    OpenAiEmbedder::from_config(cfg, recorder(store))
        .unwrap()
        .with_retry_delays(vec![Duration::from_millis(10), Duration::from_millis(10)])
}

fn texts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("chunk number {i}")).collect()
}

#[tokio::test]
async fn ai_embeddings_go_out_in_batches_of_100_and_come_back_in_input_order() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    let e = embedder(&provider_config(&fake), &store);
    let inputs = texts(250);

    let out = e.embed(&inputs, "knowledge_chunk").await.unwrap();

    let bodies = fake.bodies();
    assert_eq!(bodies.len(), 3);
    for (body, range) in bodies.iter().zip([0..100, 100..200, 200..250]) {
        assert_eq!(
            body,
            &json!({
                "model": "openai/text-embedding-3-large",
                "input": inputs[range],
                "dimensions": 3072,
            })
        );
    }
    assert_eq!(out.len(), 250);
    for (text, v) in inputs.iter().zip(&out) {
        assert_eq!(v.len(), EMBEDDING_DIMENSIONS);
        let expected = normalised(fake_vector(text, EMBEDDING_DIMENSIONS));
        assert!(
            v.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-6),
            "vector of {text:?} is not its own"
        );
    }
    assert!(e.embed(&[], "knowledge_chunk").await.unwrap().is_empty());
    assert_eq!(fake.requests(), 3, "no request for no input");
}

#[tokio::test]
async fn ai_embeddings_send_the_key_and_the_attribution_headers() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    embedder(&provider_config(&fake), &store)
        .embed(&texts(1), "test")
        .await
        .unwrap();
    assert_eq!(
        fake.header(0, "authorization").as_deref(),
        Some("Bearer sk-or-test-key")
    );
    assert_eq!(fake.header(0, "x-title").as_deref(), Some("Root Tests"));
    assert_eq!(
        fake.header(0, "http-referer").as_deref(),
        Some("https://root.example")
    );
    assert!(
        fake.header(0, "content-type")
            .unwrap()
            .starts_with("application/json")
    );
}

/// purpose, model, prompt/completion/total tokens, cost in micro-USD.
type UsageRowSummary<'a> = (&'a str, &'a str, i64, i64, i64, Option<f64>);

#[tokio::test]
async fn ai_embeddings_meter_each_batch_for_the_tenant_and_the_collector() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    let root = store.tenant_by_slug("root").await.unwrap().unwrap();
    let tenant = root.id;
    let e = embedder(&provider_config(&fake), &store);
    let ctx = TenantContext {
        tenant: Arc::new(root),
    };

    let (vectors, totals) = tenancy::scope(ctx.clone(), async {
        collect_usage(async {
            let v = e.embed(&texts(250), "knowledge_chunk").await.unwrap();
            // Background work inside the request: metered, not billed to it.
            outside_collection(e.embed(&texts(10), "embedding_audit"))
                .await
                .unwrap();
            v
        })
        .await
    })
    .await;

    assert_eq!(vectors.len(), 250);
    assert_eq!(totals.llm_calls, 3);
    assert_eq!(totals.tokens, 750);
    assert!((totals.cost_usd - 250e-6).abs() < 1e-12, "{totals:?}");

    let mut rows: Vec<LlmTokenUsage> = store.scan(Some(tenant), Scan::all()).await.unwrap();
    rows.sort_by_key(|r| (r.purpose.clone(), r.prompt_tokens));
    let summary: Vec<UsageRowSummary> = rows
        .iter()
        .map(|r| {
            (
                r.purpose.as_str(),
                r.model.as_str(),
                r.prompt_tokens,
                r.completion_tokens,
                r.total_tokens,
                r.cost_usd.map(|c| (c * 1e6).round()),
            )
        })
        .collect();
    let m = "openai/text-embedding-3-large";
    assert_eq!(
        summary,
        vec![
            ("embedding_audit", m, 30, 0, 30, Some(10.0)),
            ("knowledge_chunk", m, 150, 0, 150, Some(50.0)),
            ("knowledge_chunk", m, 300, 0, 300, Some(100.0)),
            ("knowledge_chunk", m, 300, 0, 300, Some(100.0)),
        ]
    );
    assert!(rows.iter().all(|r| r.tenant_id == tenant));

    // Without a tenant context: collected, no row.
    let ((), totals) = collect_usage(async {
        e.embed(&texts(1), "platform").await.unwrap();
    })
    .await;
    assert_eq!(
        totals,
        UsageTotals {
            llm_calls: 1,
            tokens: 3,
            cost_usd: 1e-6
        }
    );
    assert_eq!(store.count::<LlmTokenUsage>(Some(tenant)).await.unwrap(), 4);
}

#[tokio::test]
async fn ai_embeddings_retry_a_500_then_succeed() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    fake.then(Reply::Status(
        500,
        json!({"error": {"message": "Internal Server Error", "code": 500}}),
    ));
    let out = embedder(&provider_config(&fake), &store)
        .embed(&texts(3), "test")
        .await
        .unwrap();
    assert_eq!(out.len(), 3);
    assert_eq!(fake.requests(), 2);
    assert_eq!(fake.bodies()[0], fake.bodies()[1], "the same request again");
}

#[tokio::test]
async fn ai_embeddings_do_not_retry_a_400_and_return_the_provider_error() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    fake.then(Reply::Status(
        400,
        json!({"error": {"message": "Input must not be empty", "code": 400}}),
    ));
    let err = embedder(&provider_config(&fake), &store)
        .embed(&texts(3), "test")
        .await
        .unwrap_err();
    match &err {
        AiError::Provider {
            status,
            code,
            message,
        } => {
            assert_eq!(*status, 400);
            assert_eq!(code.as_deref(), Some("400"));
            assert_eq!(message, "Input must not be empty");
        }
        other => panic!("expected a provider error, got {other:?}"),
    }
    assert!(!err.is_retryable());
    assert_eq!(fake.requests(), 1);
}

#[tokio::test]
async fn ai_embeddings_give_up_after_the_retries_with_the_last_error() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    for _ in 0..3 {
        fake.then(Reply::Status(
            429,
            json!({"error": {"message": "Rate limit exceeded", "code": 429}}),
        ));
    }
    let err = embedder(&provider_config(&fake), &store)
        .embed(&texts(1), "test")
        .await
        .unwrap_err();
    assert!(
        matches!(err, AiError::Provider { status: 429, .. }),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert_eq!(fake.requests(), 3, "1 attempt + 2 retries");
}

#[tokio::test]
async fn ai_embeddings_time_out_with_a_retryable_error_within_the_bound() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    for _ in 0..3 {
        fake.then(Reply::Stall);
    }
    let timeout = Duration::from_millis(200);
    let e = embedder(&provider_config(&fake), &store).with_timeout(timeout);
    let started = Instant::now();
    let err = e.embed(&texts(1), "test").await.unwrap_err();
    let elapsed = started.elapsed();
    assert!(
        matches!(err, AiError::Timeout(t) if t == timeout),
        "{err:?}"
    );
    assert!(err.is_retryable());
    assert_eq!(fake.requests(), 3);
    // 3 attempts × 200 ms + 2 × 10 ms, with slack for a loaded machine.
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
}

#[tokio::test]
async fn ai_embeddings_reject_a_wrong_dimension() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    fake.then(Reply::Dimensions(1536));
    let err = embedder(&provider_config(&fake), &store)
        .embed(&texts(2), "test")
        .await
        .unwrap_err();
    assert!(matches!(err, AiError::InvalidResponse(_)), "{err:?}");
    assert!(
        err.to_string().contains("1536 dimensions, expected 3072"),
        "{err}"
    );
    assert!(!err.is_retryable());
    assert_eq!(fake.requests(), 1);
}

#[tokio::test]
async fn ai_embeddings_without_a_key_are_not_configured_and_fall_back_offline() {
    let store = store().await;
    let cfg = config(&[]);
    let err = OpenAiEmbedder::from_config(&cfg, recorder(&store))
        .unwrap()
        .embed(&texts(1), "test")
        .await
        .unwrap_err();
    assert!(matches!(err, AiError::NotConfigured), "{err:?}");
    assert_eq!(
        err.to_string(),
        "LLM not configured: set OPENROUTER_API_KEY"
    );

    let offline = embedder_from_config(&cfg, recorder(&store)).unwrap();
    assert_eq!(offline.model(), "root/hashing-v1");
    let v = offline.embed(&texts(2), "test").await.unwrap();
    assert_eq!(v.len(), 2);
    assert_eq!(v[0].len(), EMBEDDING_DIMENSIONS);
}

#[tokio::test]
async fn ai_embeddings_can_point_at_a_local_server_without_leaking_the_openrouter_key() {
    let fake = FakeProvider::start().await;
    let store = store().await;
    let cfg = config(&[
        ("OPENROUTER_API_KEY", "sk-or-must-stay-home"),
        ("EMBEDDING_BASE_URL", &fake.base_url),
        ("EMBEDDING_MODEL", "local/minilm"),
    ]);
    let e = embedder_from_config(&cfg, recorder(&store)).unwrap();
    assert_eq!(e.model(), "local/minilm");
    e.embed(&texts(1), "test").await.unwrap();
    assert_eq!(fake.bodies()[0]["model"], "local/minilm");
    assert_eq!(fake.header(0, "authorization"), None);

    let cfg = config(&[
        ("EMBEDDING_BASE_URL", &fake.base_url),
        ("EMBEDDING_API_KEY", "local-key"),
    ]);
    embedder_from_config(&cfg, recorder(&store))
        .unwrap()
        .embed(&texts(1), "test")
        .await
        .unwrap();
    assert_eq!(
        fake.header(1, "authorization").as_deref(),
        Some("Bearer local-key")
    );
}

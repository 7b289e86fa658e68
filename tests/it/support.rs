//! `TestApp`: a real server on 127.0.0.1:0 over a temp data dir.

use std::path::PathBuf;

use root::app::{App, AppState};
use root::config::Config;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

pub struct TestApp {
    pub base: String,
    pub state: AppState,
    pub data_dir: PathBuf,
    pub client: reqwest::Client,
    shutdown: Option<oneshot::Sender<()>>,
    handle: Option<JoinHandle<anyhow::Result<()>>>,
    _dir: tempfile::TempDir,
}

/// Configuration for tests: port 0, loopback, temp data dir, private
/// fetches allowed (stub backends listen on 127.0.0.1), plus overrides.
pub fn test_config(data_dir: &std::path::Path, extra: &[(&str, &str)]) -> Config {
    let mut vars: Vec<(String, String)> = vec![
        ("PORT".into(), "0".into()),
        ("ROOT_BIND".into(), "127.0.0.1".into()),
        ("ROOT_DATA_DIR".into(), data_dir.display().to_string()),
        ("NODE_ENV".into(), "test".into()),
        ("ROOT_ALLOW_PRIVATE_FETCH".into(), "true".into()),
    ];
    vars.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
    Config::from_vars(vars).expect("test config")
}

impl TestApp {
    pub async fn spawn() -> TestApp {
        Self::spawn_with(&[]).await
    }

    pub async fn spawn_with(extra: &[(&str, &str)]) -> TestApp {
        Self::spawn_in(tempfile::tempdir().unwrap(), extra).await
    }

    /// Start over an existing temp dir (a restart keeps the data dir).
    pub async fn spawn_in(dir: tempfile::TempDir, extra: &[(&str, &str)]) -> TestApp {
        let data_dir = dir.path().join("data");
        let app = App::build(test_config(&data_dir, extra))
            .await
            .expect("app builds");
        let base = format!("http://{}", app.local_addr());
        let state = app.state().clone();
        let (tx, rx) = oneshot::channel::<()>();
        let handle = tokio::spawn(app.run_until(async {
            let _ = rx.await;
        }));
        TestApp {
            base,
            state,
            data_dir,
            client: reqwest::Client::new(),
            shutdown: Some(tx),
            handle: Some(handle),
            _dir: dir,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    pub async fn get(&self, path: &str, bearer: Option<&str>) -> reqwest::Response {
        let mut req = self.client.get(self.url(path));
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        req.send().await.expect("request")
    }

    pub async fn post_json(
        &self,
        path: &str,
        bearer: Option<&str>,
        body: &serde_json::Value,
    ) -> reqwest::Response {
        let mut req = self.client.post(self.url(path)).json(body);
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        req.send().await.expect("request")
    }

    pub async fn delete(&self, path: &str, bearer: Option<&str>) -> reqwest::Response {
        let mut req = self.client.delete(self.url(path));
        if let Some(b) = bearer {
            req = req.bearer_auth(b);
        }
        req.send().await.expect("request")
    }

    /// Stop the server and hand back its temp dir (to restart over it).
    pub async fn stop_keep_dir(mut self) -> tempfile::TempDir {
        self.stop().await;
        self._dir
    }

    /// Trigger graceful shutdown and wait for the server task to finish.
    pub async fn stop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(h) = self.handle.take() {
            h.await.expect("server task").expect("server ran cleanly");
        }
    }
}

/// Crash-test harness: run the test `child_test` of this binary in a child
/// process (with `env_var` = `dir`), wait until it creates `dir/marker`
/// (failing if it exits first or takes over `deadline`), then SIGKILL it.
pub async fn run_child_until_marker_then_sigkill(
    child_test: &str,
    env_var: &str,
    dir: &std::path::Path,
    marker: &str,
    deadline: std::time::Duration,
) {
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child_test, "--nocapture", "--test-threads", "1"])
        .env(env_var, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let marker = dir.join(marker);
    let until = std::time::Instant::now() + deadline;
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < until,
            "child {child_test} never reached {}",
            marker.display()
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("child exited early: {status:?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    child.wait().unwrap();
}

/// One request a [`FakeHttp`] received.
#[derive(Clone, Debug)]
pub struct SeenRequest {
    pub method: String,
    pub path: String,
    pub headers: axum::http::HeaderMap,
    pub body: serde_json::Value,
}

impl SeenRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

#[derive(Default)]
struct FakeHttpState {
    requests: std::sync::Mutex<Vec<SeenRequest>>,
    replies: std::sync::Mutex<std::collections::HashMap<String, (u16, serde_json::Value)>>,
    fail_next: std::sync::atomic::AtomicUsize,
}

/// A generic fake JSON API on 127.0.0.1:0: records every request (method,
/// path, headers, JSON body) and answers each path with its configured
/// reply (404 when none); [`FakeHttp::fail_next`] answers 503 first.
pub struct FakeHttp {
    pub base: String,
    state: std::sync::Arc<FakeHttpState>,
}

impl FakeHttp {
    pub async fn start() -> FakeHttp {
        use axum::body::Bytes;
        use axum::http::{HeaderMap, Method, StatusCode, Uri};
        use axum::response::IntoResponse;
        let state = std::sync::Arc::new(FakeHttpState::default());
        let s = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let s = s.clone();
                async move {
                    let path = uri.path().to_string();
                    s.requests.lock().unwrap().push(SeenRequest {
                        method: method.to_string(),
                        path: path.clone(),
                        headers,
                        body: serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null),
                    });
                    let failing = s
                        .fail_next
                        .fetch_update(
                            std::sync::atomic::Ordering::SeqCst,
                            std::sync::atomic::Ordering::SeqCst,
                            |n| n.checked_sub(1),
                        )
                        .is_ok();
                    if failing {
                        return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
                    }
                    match s.replies.lock().unwrap().get(&path).cloned() {
                        Some((status, body)) => {
                            let status = StatusCode::from_u16(status).unwrap();
                            if body.is_null() {
                                status.into_response()
                            } else {
                                (status, axum::Json(body)).into_response()
                            }
                        }
                        None => StatusCode::NOT_FOUND.into_response(),
                    }
                }
            },
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeHttp { base, state }
    }

    /// Answer `path` with `status` and `body` (`null` ⇒ no body).
    pub fn reply(&self, path: &str, status: u16, body: serde_json::Value) -> &Self {
        self.state
            .replies
            .lock()
            .unwrap()
            .insert(path.to_string(), (status, body));
        self
    }

    /// Answer the next `n` requests with 503.
    pub fn fail_next(&self, n: usize) {
        self.state
            .fail_next
            .store(n, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn requests(&self) -> Vec<SeenRequest> {
        self.state.requests.lock().unwrap().clone()
    }

    pub fn requests_to(&self, path: &str) -> Vec<SeenRequest> {
        self.requests()
            .into_iter()
            .filter(|r| r.path == path)
            .collect()
    }
}

/// An address on 127.0.0.1 where nothing listens (connections are refused).
pub async fn closed_port_url() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

/// Register `stub` as the tenant's integration `stub` (status pending until
/// the next `prime`), signed with `secret`.
pub async fn register_stub(
    app: &TestApp,
    ctx: &root::platform::tenancy::TenantContext,
    stub: &testkit::stub::StubBackend,
    secret: &str,
) {
    let integrations = app.state.integrations.clone();
    let new = root::integrations::registry::NewIntegration {
        name: "stub".into(),
        base_url: stub.base_url().into(),
        signing_secret: Some(secret.into()),
        endpoint_paths: None,
    };
    root::platform::tenancy::scope(ctx.clone(), async move {
        integrations.register(new).await.unwrap();
    })
    .await;
}

/// Index Slack messages for the tenant of `ctx` and wait until search sees them.
pub async fn index_slack_messages(
    retrieval: &root::retrieval::Retrieval,
    ctx: &root::platform::tenancy::TenantContext,
    messages: Vec<storage::ProcessedSlackMessage>,
) {
    let r = retrieval.clone();
    root::platform::tenancy::scope(ctx.clone(), async move {
        let mut last = None;
        for m in messages {
            last = r.index_slack_message(m).await.unwrap().1;
        }
        r.wait_searchable(storage::IndexCorpus::SlackMessages, last)
            .await
            .unwrap();
    })
    .await;
}

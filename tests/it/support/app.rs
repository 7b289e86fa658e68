//! `TestApp` (a real server on 127.0.0.1:0 over a temp data dir) and
//! `test_config` (the configuration every test starts from).

use std::path::PathBuf;
use std::sync::Arc;

use root::app::{App, AppState};
use root::config::Config;
use root::platform::clock::{Clock, SystemClock};
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
        // Community-build calls re-execute the real binary, not the test one.
        (
            "ROOT_SANDBOX_BINARY".into(),
            env!("CARGO_BIN_EXE_root").into(),
        ),
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
        Self::spawn_on(dir, extra, Arc::new(SystemClock)).await
    }

    /// Start on `clock` (a `ManualClock` steps debounces and schedules).
    pub async fn spawn_with_clock(extra: &[(&str, &str)], clock: Arc<dyn Clock>) -> TestApp {
        Self::spawn_on(tempfile::tempdir().unwrap(), extra, clock).await
    }

    pub async fn spawn_on(
        dir: tempfile::TempDir,
        extra: &[(&str, &str)],
        clock: Arc<dyn Clock>,
    ) -> TestApp {
        let data_dir = dir.path().join("data");
        let app = App::build_with_clock(test_config(&data_dir, extra), clock)
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

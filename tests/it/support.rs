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

/// Configuration for tests: port 0, loopback, temp data dir, plus overrides.
pub fn test_config(data_dir: &std::path::Path, extra: &[(&str, &str)]) -> Config {
    let mut vars: Vec<(String, String)> = vec![
        ("PORT".into(), "0".into()),
        ("ROOT_BIND".into(), "127.0.0.1".into()),
        ("ROOT_DATA_DIR".into(), data_dir.display().to_string()),
        ("NODE_ENV".into(), "test".into()),
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

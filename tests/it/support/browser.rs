//! Headless Chromium for page tests, driven over W3C WebDriver by Debian's
//! `chromedriver` (shared by the web chat's check and the dashboard's suite).
//!
//! The client is the handful of WebDriver endpoints the tests use, spoken
//! with the `reqwest` the suite already has: the WebDriver crates pull a
//! second TLS stack with a C build (`aws-lc-sys`) into every cold CI build
//! for a protocol that is plain JSON over loopback (docs/decisions.md).
//!
//! Where Chromium is missing the tests say so on stderr and pass, so the
//! README's test command also works on a machine without a browser; `.ci/run`
//! installs it and sets `ROOT_BROWSER_TESTS=required`, which turns a missing
//! browser into a failure.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The W3C key for an element reference in WebDriver answers.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long a page gets to reach an expected state before the test fails.
pub const PAGE_WAIT: Duration = Duration::from_secs(20);

/// One Chromium session under its own chromedriver; both end on drop.
pub struct Browser {
    driver: tokio::process::Child,
    http: reqwest::Client,
    session: String,
    _profile: tempfile::TempDir,
}

fn find(var: &str, default: &str) -> Option<PathBuf> {
    let path = std::env::var_os(var)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(default));
    path.is_file().then_some(path)
}

impl Browser {
    /// Start a headless browser, or `None` (with a note on stderr) when the
    /// machine has none and the run does not require one.
    pub async fn launch(test: &str) -> Option<Browser> {
        let chromium = find("ROOT_CHROMIUM", "/usr/bin/chromium");
        let driver = find("ROOT_CHROMEDRIVER", "/usr/bin/chromedriver");
        let (Some(chromium), Some(driver)) = (chromium, driver) else {
            let required = std::env::var("ROOT_BROWSER_TESTS").as_deref() == Ok("required");
            assert!(
                !required,
                "{test}: ROOT_BROWSER_TESTS=required but chromium / chromedriver are missing \
                 (apt-get install chromium chromium-driver, or run .ci/run)"
            );
            eprintln!("{test}: skipped — no /usr/bin/chromium + /usr/bin/chromedriver");
            return None;
        };
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free loopback port")
            .port();
        let driver = tokio::process::Command::new(driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("chromedriver starts");
        let http = reqwest::Client::new();
        let base = format!("http://127.0.0.1:{port}");
        let started = Instant::now();
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(started.elapsed() < PAGE_WAIT, "chromedriver never listened");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        let profile = tempfile::tempdir().unwrap();
        // The flags the machine notes ask for: no sandbox (root), and no
        // background networking (the closed network refuses it loudly).
        let args = [
            "--headless=new".to_string(),
            "--no-sandbox".into(),
            "--disable-gpu".into(),
            "--disable-dev-shm-usage".into(),
            "--disable-quic".into(),
            "--no-first-run".into(),
            "--disable-background-networking".into(),
            "--disable-component-update".into(),
            "--disable-sync".into(),
            "--window-size=390,844".into(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let answer: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .expect("new session")
            .json()
            .await
            .unwrap();
        let session = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("chromedriver refused the session: {answer}"))
            .to_string();
        Some(Browser {
            driver,
            http,
            session: format!("{base}/session/{session}"),
            _profile: profile,
        })
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let req = self.http.request(method, format!("{}{path}", self.session));
        let req = match body {
            Some(b) => req.json(&b),
            None => req,
        };
        let answer: Value = req.send().await.unwrap().json().await.unwrap();
        let value = answer["value"].clone();
        assert!(
            value.get("error").is_none(),
            "webdriver {path} failed: {value}"
        );
        value
    }

    /// Open `url` and wait for it to load.
    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    /// The first element matching a CSS selector (fails the test if none).
    pub async fn element(&self, css: &str) -> String {
        let v = self
            .call(
                reqwest::Method::POST,
                "/element",
                Some(json!({"using": "css selector", "value": css})),
            )
            .await;
        v[ELEMENT_KEY]
            .as_str()
            .unwrap_or_else(|| panic!("no element {css}: {v}"))
            .to_string()
    }

    /// Type into an element, as a user would.
    pub async fn type_into(&self, css: &str, text: &str) {
        let el = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{el}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Click an element.
    pub async fn click(&self, css: &str) {
        let el = self.element(css).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{el}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Run a script in the page (its body; `arguments` as WebDriver passes
    /// them) and return its value.
    pub async fn eval(&self, script: &str) -> Value {
        self.call(
            reqwest::Method::POST,
            "/execute/sync",
            Some(json!({"script": script, "args": []})),
        )
        .await
    }

    /// Poll a script until it returns something other than `null` / `false`,
    /// and return that; fails the test after [`PAGE_WAIT`].
    pub async fn wait_for(&self, what: &str, script: &str) -> Value {
        let started = Instant::now();
        loop {
            let v = self.eval(script).await;
            if !(v.is_null() || v == Value::Bool(false)) {
                return v;
            }
            assert!(started.elapsed() < PAGE_WAIT, "page never showed {what}");
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }

    /// Resize the window (CSS pixels).
    pub async fn window(&self, width: u32, height: u32) {
        self.call(
            reqwest::Method::POST,
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        )
        .await;
    }

    /// Save a PNG of the viewport as `<target>/browser-screenshots/<name>.png`
    /// (CI keeps them as artifacts; the README's pictures come from here).
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        use base64::Engine;
        let v = self.call(reqwest::Method::GET, "/screenshot", None).await;
        let png = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().expect("a base64 screenshot"))
            .expect("valid base64");
        let dir = std::env::var_os("CARGO_TARGET_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"))
            .join("browser-screenshots");
        std::fs::create_dir_all(&dir).expect("screenshot folder");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).expect("screenshot written");
        path
    }

    /// End the session (closing Chromium) and the driver.
    pub async fn close(mut self) {
        let _ = self.http.delete(&self.session).send().await;
        let _ = self.driver.kill().await;
    }
}

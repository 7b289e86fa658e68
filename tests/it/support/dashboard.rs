//! The dashboard as a test sees it: a server with a manual clock (and
//! optionally a fake Postmark for magic links), signed-in sessions by role,
//! forms posted with or without the session's CSRF token, and pages parsed
//! with a real HTML parser.

use std::sync::Arc;

use reqwest::redirect::Policy;
use scraper::{Html, Selector};
use serde_json::Value;
use storage::{Store, Tenant, TenantRole, TenantStore, TenantUser, Ts};
use uuid::Uuid;

use root::auth::DashboardAuth;
use root::platform::clock::ManualClock;

use super::{FakeHttp, TestApp};

pub struct World {
    pub app: TestApp,
    pub clock: ManualClock,
    /// A client that does not follow redirects and keeps no cookies.
    pub http: reqwest::Client,
    pub mail: Option<FakeHttp>,
}

pub async fn world(extra: &[(&str, &str)], with_mail: bool) -> World {
    let clock = ManualClock::new(Ts::now());
    let mail = if with_mail {
        Some(FakeHttp::start().await)
    } else {
        None
    };
    let base = mail.as_ref().map(|m| m.url("")).unwrap_or_default();
    let mut vars: Vec<(&str, &str)> = vec![("ROOT_RUN_WORKERS", "false")];
    if with_mail {
        vars.extend([
            ("PLATFORM_EMAIL_DOMAIN", "mail.example.com"),
            ("POSTMARK_SERVER_TOKEN", "pm-server-token"),
            ("POSTMARK_API_URL", base.as_str()),
        ]);
    }
    vars.extend_from_slice(extra);
    let app = TestApp::spawn_with_clock(&vars, Arc::new(clock.clone())).await;
    let http = reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap();
    World {
        app,
        clock,
        http,
        mail,
    }
}

impl World {
    pub async fn user(&self, slug: &str, email: &str, role: TenantRole) {
        let t = self.tenant(slug).await;
        self.app
            .state
            .store
            .insert(TenantUser {
                id: Uuid::new_v4(),
                tenant_id: t.id,
                email: email.into(),
                role,
                created_at: Ts::now(),
            })
            .await
            .unwrap();
    }

    pub async fn tenant(&self, slug: &str) -> Tenant {
        self.app
            .state
            .store
            .tenant_by_slug(slug)
            .await
            .unwrap()
            .unwrap()
    }

    /// A session cookie for `email` through a magic link.
    pub async fn sign_in(&self, email: &str) -> String {
        let url = self
            .app
            .state
            .auth
            .issue_link(email)
            .await
            .unwrap()
            .unwrap();
        let token = url.split("token=").nth(1).unwrap();
        let resp = self
            .get(&format!("/auth/callback?token={token}"), None)
            .await;
        assert_eq!(resp.status(), 303);
        session_of(&resp).expect("a session cookie")
    }

    pub async fn get(&self, path: &str, session: Option<&str>) -> reqwest::Response {
        let mut req = self.http.get(self.app.url(path));
        if let Some(s) = session {
            req = req.header("cookie", format!("root_session={s}"));
        }
        req.send().await.unwrap()
    }

    pub async fn post_form(
        &self,
        path: &str,
        session: Option<&str>,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = self.http.post(self.app.url(path)).form(form);
        if let Some(s) = session {
            req = req.header("cookie", format!("root_session={s}"));
        }
        req.send().await.unwrap()
    }

    pub async fn me(&self, session: &str) -> (u16, Value) {
        let resp = self.get("/auth/me", Some(session)).await;
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

/// The `root_session` value a response sets.
pub fn session_of(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix("root_session="))
        .map(|c| c.split(';').next().unwrap().to_string())
        .filter(|v| !v.is_empty())
}

pub fn location(resp: &reqwest::Response) -> &str {
    resp.headers()
        .get("location")
        .map(|v| v.to_str().unwrap())
        .unwrap_or("")
}

impl World {
    /// A signed-in session of a new `role` user of the `root` tenant, and
    /// its CSRF token.
    pub async fn signed_in(&self, role: TenantRole) -> (String, String) {
        let email = format!("{}-{}@example.org", role, Uuid::new_v4().simple());
        self.user("root", &email, role).await;
        let session = self.sign_in(&email).await;
        let csrf = DashboardAuth::csrf_token(&session);
        (session, csrf)
    }

    /// `GET path` as `session`: the status and the parsed page.
    pub async fn page(&self, path: &str, session: &str) -> (u16, Html) {
        let resp = self.get(path, Some(session)).await;
        let status = resp.status().as_u16();
        (status, Html::parse_document(&resp.text().await.unwrap()))
    }
}

/// The text of every element matching `css`, whitespace-trimmed.
pub fn texts(page: &Html, css: &str) -> Vec<String> {
    let sel = Selector::parse(css).unwrap();
    page.select(&sel)
        .map(|e| e.text().collect::<String>().trim().to_string())
        .collect()
}

/// The `attr` of every element matching `css`.
pub fn attrs(page: &Html, css: &str, attr: &str) -> Vec<String> {
    let sel = Selector::parse(css).unwrap();
    page.select(&sel)
        .filter_map(|e| e.value().attr(attr).map(str::to_string))
        .collect()
}

/// Whether any `<script>` element in the page came from text a user typed:
/// the page's only script is the dashboard's own `/static/dashboard.js`.
pub fn injected_scripts(page: &Html) -> usize {
    let sel = Selector::parse("script").unwrap();
    page.select(&sel)
        .filter(|e| e.value().attr("src") != Some("/static/dashboard.js"))
        .count()
}

//! The admin dashboard (§14): server-rendered askama pages under
//! `templates/dashboard/`, signed in through `auth` (magic links and the
//! `root_session` cookie). [`Dashboard`] is the extractor every page takes:
//! no session → the sign-in page; a role that may not see the dashboard →
//! 403. Every state-changing form carries the session's CSRF token, checked
//! by [`Dashboard::csrf_refusal`] before anything changes.

mod access;
mod activity;
mod agent;
mod api_keys;
mod assets;
mod auth;
mod channels;
mod chat;
mod chrome;
mod community_builds;
mod forms;
mod foundations;
mod integrations;
mod knowledge;
mod overview;
mod platform;
mod prompts;
mod public;
mod setup;
mod signup;
mod sources;
mod team;
mod tenants;
mod traces;

pub use chrome::Chrome;
pub use forms::PageForm;

use axum::Router;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use crate::auth::{DashboardAuth, SESSION_COOKIE, SESSION_DAYS, SignedIn};
use crate::platform::tenancy::{self, TenantContext};
use crate::state::AppState;
use crate::web::pages::{cookie_value as cookie, render_page};

/// The dashboard's pages, the public `/` and `/foundations`, and the
/// `/auth/*` routes.
pub fn router() -> Router<AppState> {
    auth::router()
        .merge(access::router())
        .merge(activity::router())
        .merge(agent::router())
        .merge(api_keys::router())
        .merge(assets::router())
        .merge(channels::router())
        .merge(chat::router())
        .merge(community_builds::router())
        .merge(integrations::router())
        .merge(knowledge::router())
        .merge(overview::router())
        .merge(platform::router())
        .merge(prompts::router())
        .merge(public::router())
        .merge(setup::router())
        .merge(sources::router())
        .merge(team::router())
        .merge(tenants::router())
        .merge(traces::router())
        .merge(signup::router())
}

/// What every dashboard page may load: its own stylesheet and script
/// (`/static/…`), no inline code, no frames, forms only to itself.
const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
                   script-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The security headers of every dashboard answer.
fn harden(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    resp
}

/// `Set-Cookie` for the session (`None`: clear it).
fn session_cookie(auth: &DashboardAuth, raw: Option<&str>) -> HeaderValue {
    set_cookie(
        auth,
        SESSION_COOKIE,
        raw.map(|r| (r, SESSION_DAYS * 86_400)),
        "/",
        "Lax",
    )
}

/// `Set-Cookie` for the `HttpOnly` cookie `name` on `path`: `Some((value,
/// max-age seconds))`, or `None` to clear it; `Secure` when the public
/// address is https.
fn set_cookie(
    auth: &DashboardAuth,
    name: &str,
    value: Option<(&str, i64)>,
    path: &str,
    same_site: &str,
) -> HeaderValue {
    let secure = if auth.secure_cookies() {
        "; Secure"
    } else {
        ""
    };
    let (value, max_age) = value.unwrap_or(("", 0));
    let v = format!(
        "{name}={value}; Path={path}; Max-Age={max_age}; HttpOnly; SameSite={same_site}{secure}"
    );
    HeaderValue::from_str(&v).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// The `?done=<code>` a page shows a notice for after a change.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Done {
    /// A code from `chrome::flash`.
    #[serde(default)]
    pub done: Option<String>,
}

/// A signed-in dashboard user allowed to see the dashboard.
pub struct Dashboard {
    /// Who, where, and with which role.
    pub user: SignedIn,
    /// The CSRF token forms carry.
    pub csrf: String,
    /// The raw session cookie the token derives from.
    csrf_key: String,
}

impl Dashboard {
    /// Run `fut` as this dashboard's tenant (the services read the tenant
    /// from the task's scope, as they do for API requests).
    pub async fn scoped<F: Future>(&self, fut: F) -> F::Output {
        let ctx = TenantContext {
            tenant: std::sync::Arc::new(self.user.tenant.clone()),
        };
        tenancy::scope(ctx, fut).await
    }

    /// The 403 for a form, unless `token` is this session's CSRF token.
    pub fn csrf_refusal(&self, token: &str) -> Option<Response> {
        if DashboardAuth::csrf_ok(&self.csrf_key, token) {
            return None;
        }
        tracing::warn!(email = %self.user.email, "dashboard form without a valid CSRF token refused");
        Some(forbidden(
            "This form expired or did not come from this dashboard. Reload the page and try again.",
        ))
    }
}

fn forbidden(message: &str) -> Response {
    page_notice(StatusCode::FORBIDDEN, "Not allowed", message)
}

#[derive(askama::Template)]
#[template(path = "dashboard/notice.html")]
struct Notice<'a> {
    heading: &'a str,
    message: &'a str,
}

/// A dashboard page saying what happened and what to do.
pub fn page_notice(status: StatusCode, heading: &str, message: &str) -> Response {
    let mut resp = render_page(&Notice { heading, message }, "dashboard notice", ());
    *resp.status_mut() = status;
    harden(resp)
}

/// The 500 page for a failure already logged by the caller.
pub fn failed(what: &str) -> Response {
    page_notice(
        StatusCode::INTERNAL_SERVER_ERROR,
        "Something went wrong",
        &format!("{what} Reload the page in a moment; the server log has the details."),
    )
}

impl FromRequestParts<AppState> for Dashboard {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Response> {
        let to_login = || Redirect::to("/auth/login").into_response();
        let Some(raw) = cookie(&parts.headers, SESSION_COOKIE).map(str::to_string) else {
            return Err(to_login());
        };
        let user = match state.auth.signed_in(&raw).await {
            Ok(Some(u)) => u,
            Ok(None) => return Err(to_login()),
            Err(e) => {
                tracing::error!(error = %e, "dashboard session lookup failed");
                return Err(page_notice(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Try again",
                    "The dashboard could not read your session right now.",
                ));
            }
        };
        if !user.can_view() {
            return Err(forbidden(
                "Your role in this community has no dashboard access. Ask an owner to make you a viewer or admin.",
            ));
        }
        let csrf = DashboardAuth::csrf_token(&raw);
        Ok(Dashboard {
            user,
            csrf,
            csrf_key: raw,
        })
    }
}

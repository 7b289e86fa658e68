//! `/auth/*` (§14.1): the sign-in form, the magic link's callback, sign-out,
//! `/auth/me`, and the development bypass. The browser hears the same thing
//! whether or not an address may sign in (no account discovery).

use askama::Template;
use axum::extract::rejection::FormRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use serde::{Deserialize, Serialize};

use super::{cookie, harden, session_cookie};
use crate::auth::{
    Attempt, DashboardAuth, LOGIN_LINK_TTL_MINUTES, LinkRequest, LoginError, SESSION_COOKIE,
    normalize_email, well_formed_token,
};
use crate::state::AppState;
use crate::web::client_ip::ClientIp;
use crate::web::pages::render_page;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/auth/login", get(login_form).post(login_submit))
        .route("/auth/callback", get(callback))
        .route("/auth/logout", post(logout))
        .route("/auth/me", get(me))
        .route("/auth/dev-login", get(dev_login))
}

#[derive(Template)]
#[template(path = "dashboard/login.html")]
struct LoginPage<'a> {
    email: &'a str,
    /// What happened, for the person at the form.
    message: Option<String>,
    /// The message is an error (styled as one).
    error: bool,
    /// No mail provider: say how an operator prints a link.
    mail_configured: bool,
    /// The signup gate is open: link "Start a community".
    signup_open: bool,
}

fn login_page(status: StatusCode, page: LoginPage<'_>) -> Response {
    let mut resp = render_page(&page, "login", ());
    if resp.status() == StatusCode::OK {
        *resp.status_mut() = status;
    }
    harden(resp)
}

async fn login_form(State(state): State<AppState>) -> Response {
    login_page(
        StatusCode::OK,
        LoginPage {
            email: "",
            message: None,
            error: false,
            mail_configured: state.auth.mail_configured(),
            signup_open: state.auth.signup_gate().is_some(),
        },
    )
}

/// The sign-in form's fields.
#[derive(Debug, Deserialize)]
pub struct LoginForm {
    email: String,
}

async fn login_submit(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    let auth = &state.auth;
    let typed = form.as_ref().map(|f| f.email.clone()).unwrap_or_default();
    let page = |status, message: String, error| {
        login_page(
            status,
            LoginPage {
                email: &typed,
                message: Some(message),
                error,
                mail_configured: auth.mail_configured(),
                signup_open: auth.signup_gate().is_some(),
            },
        )
    };
    let Some(email) = normalize_email(&typed) else {
        return page(
            StatusCode::BAD_REQUEST,
            "Enter your email address, like ada@example.org.".into(),
            true,
        );
    };
    if let Err(wait) = auth.admit(Attempt::LinkRequest(&email), client) {
        tracing::warn!(email = %email, client = ?client, "dashboard sign-in requests rate limited");
        let mut resp = page(
            StatusCode::TOO_MANY_REQUESTS,
            format!("Too many sign-in requests. Try again in {wait} seconds."),
            true,
        );
        if let Ok(v) = wait.to_string().parse() {
            resp.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return resp;
    }
    // The same answer, after the same work, whether or not the address may
    // sign in: the lookup and the mail happen off the request path.
    match auth.request_link_detached(&email) {
        LinkRequest::MailNotConfigured => page(
            StatusCode::SERVICE_UNAVAILABLE,
            "This server cannot send email yet. An operator can print a sign-in link with \
             `root auth link --email <your address>`."
                .into(),
            true,
        ),
        LinkRequest::Accepted => page(
            StatusCode::OK,
            format!(
                "If {email} may sign in to this dashboard, a link is on its way. It works \
                 once, for {LOGIN_LINK_TTL_MINUTES} minutes."
            ),
            false,
        ),
    }
}

/// `?token=` of a magic link.
#[derive(Debug, Deserialize)]
pub struct CallbackQuery {
    #[serde(default)]
    token: String,
}

fn refused(state: &AppState, status: StatusCode, message: String) -> Response {
    login_page(
        status,
        LoginPage {
            email: "",
            message: Some(message),
            error: true,
            mail_configured: state.auth.mail_configured(),
            signup_open: state.auth.signup_gate().is_some(),
        },
    )
}

async fn callback(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    q: Result<Query<CallbackQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let token = q.map(|Query(q)| q.token).unwrap_or_default();
    let token = token.trim();
    if !well_formed_token(token) {
        tracing::info!(reason = %LoginError::Unknown, "dashboard sign-in link refused: not a token");
        return refused(
            &state,
            StatusCode::BAD_REQUEST,
            format!(
                "{}. Ask for a new one below.",
                capitalised(&LoginError::Unknown.to_string())
            ),
        );
    }
    // Per client only: a valid link is never refused because of what
    // other clients sent (security finding M-4).
    if let Err(wait) = state.auth.admit(Attempt::Callback, client) {
        tracing::warn!(client = ?client, "dashboard sign-in link callbacks rate limited");
        return refused(
            &state,
            StatusCode::TOO_MANY_REQUESTS,
            format!("Too many sign-in attempts. Try again in {wait} seconds."),
        );
    }
    match state.auth.consume_link(token).await {
        Ok(raw) => signed_in_redirect(&state.auth, &raw),
        Err(LoginError::Internal(e)) => {
            tracing::error!(error = %e, "dashboard sign-in link could not be checked");
            refused(
                &state,
                StatusCode::SERVICE_UNAVAILABLE,
                "Sign-in is unavailable right now; try again shortly.".into(),
            )
        }
        Err(e) => {
            tracing::info!(reason = %e, "dashboard sign-in link refused");
            let status = match e {
                LoginError::Expired | LoginError::Used => StatusCode::GONE,
                LoginError::NotAllowed => StatusCode::FORBIDDEN,
                _ => StatusCode::BAD_REQUEST,
            };
            refused(
                &state,
                status,
                format!("{}. Ask for a new one below.", capitalised(&e.to_string())),
            )
        }
    }
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Set the session cookie and go to the dashboard.
fn signed_in_redirect(auth: &DashboardAuth, raw: &str) -> Response {
    let mut resp = Redirect::to("/dashboard").into_response();
    resp.headers_mut()
        .insert(header::SET_COOKIE, session_cookie(auth, Some(raw)));
    harden(resp)
}

/// The sign-out form.
#[derive(Debug, Deserialize)]
pub struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

async fn logout(
    State(state): State<AppState>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let token = form.map(|Form(f)| f.csrf).unwrap_or_default();
    let Some(raw) = cookie(&headers, SESSION_COOKIE) else {
        return Redirect::to("/auth/login").into_response();
    };
    if !DashboardAuth::csrf_ok(raw, &token) {
        tracing::warn!("sign-out without a valid CSRF token refused");
        return super::forbidden("This form expired. Reload the page and sign out again.");
    }
    if let Err(e) = state.auth.sign_out(raw).await {
        tracing::error!(error = %e, "dashboard sign-out failed");
    }
    let mut resp = Redirect::to("/auth/login").into_response();
    resp.headers_mut()
        .insert(header::SET_COOKIE, session_cookie(&state.auth, None));
    harden(resp)
}

/// `GET /auth/me`.
#[derive(Debug, Serialize)]
pub struct Me {
    email: String,
    platform_admin: bool,
    tenant: MeTenant,
    role: String,
    can_change: bool,
    communities: Vec<MeCommunity>,
}

#[derive(Debug, Serialize)]
struct MeTenant {
    slug: String,
    display_name: String,
    environment: &'static str,
}

#[derive(Debug, Serialize)]
struct MeCommunity {
    slug: String,
    display_name: String,
    role: String,
}

/// Any signed-in user (members too: they see who they are, not the
/// dashboard); no session → the sign-in page.
async fn me(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(raw) = cookie(&headers, SESSION_COOKIE) else {
        return Redirect::to("/auth/login").into_response();
    };
    let u = match state.auth.signed_in(raw).await {
        Ok(Some(u)) => u,
        Ok(None) => return Redirect::to("/auth/login").into_response(),
        Err(e) => {
            tracing::error!(error = %e, "dashboard session lookup failed");
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        }
    };
    harden(
        Json(Me {
            can_change: u.can_change(),
            email: u.email.clone(),
            platform_admin: u.platform_admin,
            tenant: MeTenant {
                environment: if u.is_dev() { "dev" } else { "live" },
                slug: u.tenant.slug.clone(),
                display_name: u.tenant.display_name.clone(),
            },
            role: u.role.to_string(),
            communities: u
                .memberships
                .iter()
                .map(|m| MeCommunity {
                    slug: m.tenant.slug.clone(),
                    display_name: m.tenant.display_name.clone(),
                    role: m.role.to_string(),
                })
                .collect(),
        })
        .into_response(),
    )
}

/// `?email=` of the development bypass.
#[derive(Debug, Deserialize)]
pub struct DevLoginQuery {
    #[serde(default)]
    email: String,
}

/// `AUTH_DEV_BYPASS=true` (never in production): sign in as an allowlisted
/// address without a mail round trip.
async fn dev_login(
    State(state): State<AppState>,
    q: Result<Query<DevLoginQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    if !state.auth.dev_bypass() {
        return crate::web::error::ApiError::NotFound("no route for GET /auth/dev-login".into())
            .into_response();
    }
    let email = q.map(|Query(q)| q.email).unwrap_or_default();
    let Some(email) = normalize_email(&email) else {
        return refused(
            &state,
            StatusCode::BAD_REQUEST,
            "dev-login needs ?email=<an allowlisted address>.".into(),
        );
    };
    let allowed = match state.auth.memberships(&email).await {
        Ok((m, admin)) => admin || !m.is_empty(),
        Err(e) => {
            tracing::error!(error = %e, "dev-login lookup failed");
            false
        }
    };
    if !allowed {
        return refused(
            &state,
            StatusCode::FORBIDDEN,
            format!(
                "{email} may not sign in: add it with `root seed config-user --tenant <slug> --email {email}`."
            ),
        );
    }
    match state.auth.open_session(&email).await {
        Ok(raw) => {
            tracing::warn!(email = %email, "dashboard dev-login used (AUTH_DEV_BYPASS)");
            signed_in_redirect(&state.auth, &raw)
        }
        Err(e) => {
            tracing::error!(error = %e, "dev-login session failed");
            refused(
                &state,
                StatusCode::SERVICE_UNAVAILABLE,
                "Sign-in is unavailable right now.".into(),
            )
        }
    }
}

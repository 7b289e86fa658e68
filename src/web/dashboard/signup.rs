//! `/get-started` (§14.1): the signup gate. Open only when
//! `PLATFORM_SIGNUP_CODE` and `SESSION_COOKIE_SECRET` are both set (else
//! every route is a 404 page saying signups are closed). The invite code,
//! compared in constant time and rate limited, earns the `root_invite`
//! cookie (30 days, signed); with it the community form creates a live
//! community and its first owner through `tenants`' own validation and
//! [`create_community`]. A signed-in visitor becomes its owner and the
//! session opens it; anyone else gets a magic link. The gate's forms carry
//! a CSRF token signed over a random `root_signup_csrf` cookie (a visitor
//! has no session to derive one from).

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;

use super::tenants::{CreateForm, Created, Errors, checked, create_community};
use super::{PageForm, cookie, failed, harden, page_notice, set_cookie};
use crate::auth::{
    Attempt, GATE_CSRF_COOKIE, INVITE_COOKIE, INVITE_DAYS, InviteRefusal, LOGIN_LINK_TTL_MINUTES,
    LinkDelivery, SESSION_COOKIE, SignedIn, SignupGate,
};
use crate::state::AppState;
use crate::web::client_ip::ClientIp;
use crate::web::pages::render_page;

/// How long the gate's CSRF cookie lives (a form left open longer asks for
/// a reload).
pub const GATE_FORM_HOURS: i64 = 24;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/get-started", get(code_form).post(code_submit))
        .route(
            "/get-started/community",
            get(community_form).post(community_submit),
        )
}

/// The 404 of a closed gate (every route, GET or POST).
fn closed() -> Response {
    page_notice(
        StatusCode::NOT_FOUND,
        "Signups are closed",
        "This server does not take new communities through a signup page. \
         Ask its operator to create one for you.",
    )
}

/// Why the visitor is back at the code form.
#[derive(Clone, Copy)]
enum Back {
    /// No invite cookie on the community form.
    NoInvite,
    /// The invite cookie was refused.
    Refused(InviteRefusal),
}

impl Back {
    fn message(self) -> &'static str {
        match self {
            Back::NoInvite => "Enter the invite code first.",
            Back::Refused(InviteRefusal::Expired) => {
                "Your invite has expired (an invite lasts 30 days). Enter the invite code again."
            }
            Back::Refused(_) => {
                "Your invite is not valid on this server (it was changed, or the server's \
                 secret was replaced). Enter the invite code again."
            }
        }
    }

    fn status(self) -> StatusCode {
        match self {
            Back::Refused(InviteRefusal::Expired) => StatusCode::GONE,
            _ => StatusCode::FORBIDDEN,
        }
    }
}

#[derive(Template)]
#[template(path = "dashboard/get_started.html")]
struct CodePage<'a> {
    csrf: &'a str,
    message: Option<&'a str>,
    code_error: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "dashboard/get_started_community.html")]
struct CommunityPage<'a> {
    csrf: &'a str,
    form: &'a CreateForm,
    /// The visitor's dashboard address: the owner, fixed.
    signed_in_as: Option<&'a str>,
    message: Option<String>,
    errors: Errors,
}

#[derive(Template)]
#[template(path = "dashboard/get_started_done.html")]
struct DonePage<'a> {
    name: &'a str,
    slug: &'a str,
    email: &'a str,
    /// The link was mailed.
    sent: bool,
    /// No mail provider: an operator prints the link.
    mail_missing: bool,
    /// Signed in, but the session could not open the new community.
    signed_in: bool,
    ttl_minutes: i64,
}

/// The gate's CSRF cookie of this browser, or a new one to set.
struct FormKey {
    key: String,
    fresh: bool,
}

impl FormKey {
    fn of(headers: &HeaderMap) -> FormKey {
        match cookie(headers, GATE_CSRF_COOKIE).filter(|k| !k.is_empty()) {
            Some(k) => FormKey {
                key: k.to_string(),
                fresh: false,
            },
            None => FormKey {
                key: SignupGate::new_form_key(),
                fresh: true,
            },
        }
    }
}

/// `resp` hardened, with the gate's cookies to set.
fn answer(state: &AppState, mut resp: Response, key: &FormKey, invite: Invite<'_>) -> Response {
    let auth = &state.auth;
    let h = resp.headers_mut();
    if key.fresh {
        let cookie = set_cookie(
            auth,
            GATE_CSRF_COOKIE,
            Some((&key.key, GATE_FORM_HOURS * 3_600)),
            "/get-started",
            "Strict",
        );
        h.append(header::SET_COOKIE, cookie);
    }
    let invite = match invite {
        Invite::Keep => None,
        Invite::Set(v) => Some(set_cookie(
            auth,
            INVITE_COOKIE,
            Some((v, INVITE_DAYS * 86_400)),
            "/",
            "Lax",
        )),
        Invite::Clear => Some(set_cookie(auth, INVITE_COOKIE, None, "/", "Lax")),
    };
    if let Some(v) = invite {
        h.append(header::SET_COOKIE, v);
    }
    harden(resp)
}

/// What an answer does to the invite cookie.
enum Invite<'a> {
    Keep,
    Set(&'a str),
    Clear,
}

fn with_status(mut resp: Response, status: StatusCode) -> Response {
    if resp.status() == StatusCode::OK {
        *resp.status_mut() = status;
    }
    resp
}

fn code_page(gate: &SignupGate<'_>, key: &FormKey, back: Option<Back>, error: bool) -> Response {
    let csrf = gate.form_token(&key.key);
    let page = CodePage {
        csrf: &csrf,
        message: back.map(Back::message),
        code_error: error.then_some(
            "That is not the invite code. Check it with whoever gave it to you and try again.",
        ),
    };
    render_page(&page, "signup code form", ())
}

/// The 403 for a gate form without this browser's CSRF token.
fn csrf_refusal(gate: &SignupGate<'_>, headers: &HeaderMap, token: &str) -> Option<Response> {
    let key = cookie(headers, GATE_CSRF_COOKIE).unwrap_or("");
    if gate.form_token_ok(key, token) {
        return None;
    }
    tracing::warn!("signup gate form without a valid CSRF token refused");
    Some(page_notice(
        StatusCode::FORBIDDEN,
        "Not allowed",
        "This form expired or did not come from this server. Open /get-started again and retry.",
    ))
}

/// The invite cookie's verdict: `None` when there is none.
fn invite_of(
    state: &AppState,
    gate: &SignupGate<'_>,
    headers: &HeaderMap,
) -> Option<Result<(), InviteRefusal>> {
    let raw = cookie(headers, INVITE_COOKIE).filter(|v| !v.is_empty())?;
    let verdict = gate.check_invite(raw, state.clock.now()).map(|_| ());
    if let Err(why) = verdict {
        tracing::info!(reason = %why, "signup invite cookie refused");
    }
    Some(verdict)
}

/// Back at the code form with why (the refused invite cookie cleared).
fn back_to_code(state: &AppState, gate: &SignupGate<'_>, key: &FormKey, back: Back) -> Response {
    let resp = with_status(code_page(gate, key, Some(back), false), back.status());
    answer(state, resp, key, Invite::Clear)
}

async fn code_form(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(gate) = state.auth.signup_gate() else {
        return closed();
    };
    let key = FormKey::of(&headers);
    match invite_of(&state, &gate, &headers) {
        Some(Ok(())) => Redirect::to("/get-started/community").into_response(),
        Some(Err(why)) => {
            let resp = code_page(&gate, &key, Some(Back::Refused(why)), false);
            answer(&state, resp, &key, Invite::Clear)
        }
        None => {
            let resp = code_page(&gate, &key, None, false);
            answer(&state, resp, &key, Invite::Keep)
        }
    }
}

/// The code form's fields.
#[derive(Debug, Deserialize)]
pub struct CodeForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    code: String,
}

async fn code_submit(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    headers: HeaderMap,
    form: Result<PageForm<CodeForm>, Response>,
) -> Response {
    let Some(gate) = state.auth.signup_gate() else {
        return closed();
    };
    let PageForm(form) = match form {
        Ok(f) => f,
        Err(bad) => return bad,
    };
    if let Some(refused) = csrf_refusal(&gate, &headers, &form.csrf) {
        return refused;
    }
    let key = FormKey::of(&headers);
    if let Err(wait) = state.auth.admit(Attempt::SignupCode, client) {
        tracing::warn!(client = ?client, "signup gate code attempts rate limited");
        let resp = page_notice(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many attempts",
            &format!("Too many invite code attempts. Try again in {wait} seconds."),
        );
        return retry_after(resp, wait);
    }
    if !gate.code_matches(&form.code) {
        // Never the code itself: a near miss would leak the real one.
        tracing::warn!("signup gate: a wrong invite code was entered");
        let resp = with_status(
            code_page(&gate, &key, None, true),
            StatusCode::UNPROCESSABLE_ENTITY,
        );
        return answer(&state, resp, &key, Invite::Keep);
    }
    let invite = gate.issue_invite(state.clock.now());
    tracing::info!("signup gate: invite code accepted, invite cookie issued");
    let resp = Redirect::to("/get-started/community").into_response();
    answer(&state, resp, &key, Invite::Set(&invite))
}

fn retry_after(mut resp: Response, wait: u64) -> Response {
    if let Ok(v) = HeaderValue::from_str(&wait.to_string()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// The visitor's dashboard session, when they have one.
async fn visitor(state: &AppState, headers: &HeaderMap) -> anyhow::Result<Option<SignedIn>> {
    match cookie(headers, SESSION_COOKIE) {
        Some(raw) => state.auth.signed_in(raw).await,
        None => Ok(None),
    }
}

/// The 503 for a session that could not be read.
fn session_unreadable(e: &anyhow::Error) -> Response {
    tracing::error!(error = %e, "signup gate: session lookup failed");
    page_notice(
        StatusCode::SERVICE_UNAVAILABLE,
        "Try again",
        "Your session could not be read right now.",
    )
}

fn community_page(
    gate: &SignupGate<'_>,
    key: &FormKey,
    form: &CreateForm,
    who: Option<&SignedIn>,
    message: Option<String>,
    errors: Errors,
) -> Response {
    let csrf = gate.form_token(&key.key);
    let page = CommunityPage {
        csrf: &csrf,
        form,
        signed_in_as: who.map(|u| u.email.as_str()),
        message,
        errors,
    };
    render_page(&page, "signup community form", ())
}

async fn community_form(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Some(gate) = state.auth.signup_gate() else {
        return closed();
    };
    let key = FormKey::of(&headers);
    match invite_of(&state, &gate, &headers) {
        None => return Redirect::to("/get-started").into_response(),
        Some(Err(why)) => return back_to_code(&state, &gate, &key, Back::Refused(why)),
        Some(Ok(())) => {}
    }
    let who = match visitor(&state, &headers).await {
        Ok(w) => w,
        Err(e) => return session_unreadable(&e),
    };
    let form = CreateForm::default();
    let resp = community_page(&gate, &key, &form, who.as_ref(), None, Errors::default());
    answer(&state, resp, &key, Invite::Keep)
}

async fn community_submit(
    State(state): State<AppState>,
    ClientIp(client): ClientIp,
    headers: HeaderMap,
    form: Result<PageForm<CreateForm>, Response>,
) -> Response {
    let Some(gate) = state.auth.signup_gate() else {
        return closed();
    };
    let PageForm(mut form) = match form {
        Ok(f) => f,
        Err(bad) => return bad,
    };
    if let Some(refused) = csrf_refusal(&gate, &headers, &form.csrf) {
        return refused;
    }
    let key = FormKey::of(&headers);
    match invite_of(&state, &gate, &headers) {
        None => return back_to_code(&state, &gate, &key, Back::NoInvite),
        Some(Err(why)) => return back_to_code(&state, &gate, &key, Back::Refused(why)),
        Some(Ok(())) => {}
    }
    let who = match visitor(&state, &headers).await {
        Ok(w) => w,
        Err(e) => return session_unreadable(&e),
    };
    if let Some(u) = &who {
        form.owner_email = u.email.clone();
    }
    let refill = |status, message, errors| {
        let resp = community_page(&gate, &key, &form, who.as_ref(), message, errors);
        answer(&state, with_status(resp, status), &key, Invite::Keep)
    };
    let (slug, name, owner) = match checked(&form) {
        Ok(v) => v,
        Err(errors) => return refill(StatusCode::UNPROCESSABLE_ENTITY, None, errors),
    };
    if who.is_none()
        && let Err(wait) = state.auth.admit(Attempt::LinkRequest(&owner), client)
    {
        tracing::warn!(email = %owner, "signup gate: sign-in links for this address rate limited");
        let message = format!(
            "Too many sign-in requests for {owner}. Try again in {wait} seconds; nothing was created."
        );
        let resp = refill(
            StatusCode::TOO_MANY_REQUESTS,
            Some(message),
            Errors::default(),
        );
        return retry_after(resp, wait);
    }
    let tenant = match create_community(&state, &slug, &name, &owner).await {
        Ok(Created::Done(t)) => t,
        Ok(Created::SlugTaken) => {
            let errors = Errors {
                slug: Some(format!("{slug} is already taken.")),
                ..Errors::default()
            };
            return refill(StatusCode::UNPROCESSABLE_ENTITY, None, errors);
        }
        Err(e) => {
            tracing::error!(slug = %slug, error = %e, "signup gate: creating a community failed");
            return failed("The community could not be created.");
        }
    };
    tracing::info!(tenant = %tenant.id, slug = %tenant.slug, owner = %owner, signed_in = who.is_some(), "community created through the signup gate");
    let done = |sent, mail_missing, signed_in| {
        let page = DonePage {
            name: &tenant.display_name,
            slug: &tenant.slug,
            email: &owner,
            sent,
            mail_missing,
            signed_in,
            ttl_minutes: LOGIN_LINK_TTL_MINUTES,
        };
        let resp = with_status(render_page(&page, "signup done", ()), StatusCode::CREATED);
        // One community per accepted code entry.
        answer(&state, resp, &key, Invite::Clear)
    };
    if who.is_some() {
        if open_new_community(&state, &headers, tenant.id).await {
            let resp = Redirect::to("/welcome").into_response();
            return answer(&state, resp, &key, Invite::Clear);
        }
        return done(false, false, true);
    }
    match state.auth.request_link(&owner).await {
        Ok(LinkDelivery::Sent) => done(true, false, false),
        Ok(LinkDelivery::MailNotConfigured) => done(false, true, false),
        Ok(other) => {
            tracing::warn!(email = %owner, delivery = ?other, "signup gate: the new owner's sign-in link was not mailed");
            done(false, false, false)
        }
        Err(e) => {
            tracing::error!(email = %owner, error = %e, "signup gate: the new owner's sign-in link could not be issued");
            done(false, false, false)
        }
    }
}

/// Show the new community in the visitor's session (its memberships are
/// read again: the community did not exist when the request began).
async fn open_new_community(state: &AppState, headers: &HeaderMap, id: uuid::Uuid) -> bool {
    let Some(raw) = cookie(headers, SESSION_COOKIE) else {
        return false;
    };
    let switched = match state.auth.signed_in(raw).await {
        Ok(Some(who)) => state.auth.switch_tenant(&who, id).await,
        Ok(None) => Ok(false),
        Err(e) => Err(e),
    };
    match switched {
        Ok(true) => true,
        Ok(false) => {
            tracing::error!(tenant = %id, "signup gate: the session could not open the new community");
            false
        }
        Err(e) => {
            tracing::error!(tenant = %id, error = %e, "signup gate: opening the new community failed");
            false
        }
    }
}

//! The public pages (§14.2), no session needed: `/`, what Root is for a
//! community, and `/foundations`, the reference-architecture walkthrough
//! (its queue list and numbers come from the code: [`super::foundations`]).
//! Both use the dashboard's stylesheet and hardening; a signed-in visitor
//! is offered the dashboard instead of the sign-in link.

use askama::Template;
use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::Response;
use axum::routing::get;

use super::foundations::{ConstRow, EndpointRow, QueueRow, constants, endpoints, queues};
use super::{cookie, harden};
use crate::auth::SESSION_COOKIE;
use crate::integrations::signing::{SIGNATURE_HEADER, TIMESTAMP_HEADER};
use crate::state::AppState;
use crate::web::pages::render_page;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/", get(landing))
        .route("/foundations", get(foundations))
}

/// What the public header offers this visitor.
struct Visitor {
    /// A session that may see the dashboard: "Open the dashboard".
    signed_in: bool,
    /// The signup gate is configured: "Start a community" (/get-started).
    signup_open: bool,
}

impl Visitor {
    async fn of(state: &AppState, headers: &HeaderMap) -> Self {
        let signed_in = match cookie(headers, SESSION_COOKIE) {
            Some(raw) => match state.auth.signed_in(raw).await {
                Ok(user) => user.is_some_and(|u| u.can_view()),
                Err(e) => {
                    // The public page still answers; it offers sign-in.
                    tracing::warn!(error = %e, "public page could not read the session");
                    false
                }
            },
            None => false,
        };
        Visitor {
            signed_in,
            signup_open: signup_open(state),
        }
    }
}

/// Whether `/get-started` is offered: it needs both the signup code and the
/// secret its signed invite cookie is keyed with.
fn signup_open(state: &AppState) -> bool {
    state.config.platform_signup_code.is_some() && state.config.session_cookie_secret.is_some()
}

#[derive(Template)]
#[template(path = "dashboard/landing.html")]
struct LandingPage {
    visitor: Visitor,
}

async fn landing(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let visitor = Visitor::of(&state, &headers).await;
    harden(render_page(&LandingPage { visitor }, "landing", ()))
}

#[derive(Template)]
#[template(path = "dashboard/foundations.html")]
struct FoundationsPage {
    visitor: Visitor,
    queues: Vec<QueueRow>,
    constants: Vec<ConstRow>,
    endpoints: Vec<EndpointRow>,
    /// The signature headers of root-int/1.
    timestamp_header: &'static str,
    signature_header: &'static str,
}

impl FoundationsPage {
    /// The value of the named constant `name` (as listed on the page).
    fn c(&self, name: &str) -> &str {
        self.constants
            .iter()
            .find(|k| k.name == name)
            .map_or("?", |k| k.value.as_str())
    }
}

async fn foundations(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let visitor = Visitor::of(&state, &headers).await;
    let page = FoundationsPage {
        visitor,
        queues: queues(),
        constants: constants(),
        endpoints: endpoints(),
        timestamp_header: TIMESTAMP_HEADER,
        signature_header: SIGNATURE_HEADER,
    };
    harden(render_page(&page, "foundations", ()))
}

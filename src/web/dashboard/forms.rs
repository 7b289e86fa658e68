//! Posted dashboard forms: [`PageForm`] turns a body that does not parse
//! into a 400 page (never axum's plain-text rejection), and
//! [`Dashboard::change_refusal`] is the one check every form that changes
//! something runs first — the session's CSRF token, then the role.

use axum::Form;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::Response;
use serde::de::DeserializeOwned;

use super::{Dashboard, forbidden, page_notice};

/// A form whose only field is the CSRF token (sync, rotate, delete buttons).
#[derive(Debug, serde::Deserialize)]
pub struct TokenForm {
    /// The session's CSRF token.
    #[serde(default)]
    pub csrf: String,
}

/// What a failed change shows: the form again with a field's error (422),
/// or a page of its own (404, 409, 500).
pub enum Failure {
    /// The field at fault and why.
    Field((&'static str, String)),
    /// A whole answer.
    Page(Response),
}

/// An `application/x-www-form-urlencoded` body as `T`.
pub struct PageForm<T>(pub T);

impl<T, S> FromRequest<S> for PageForm<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Response> {
        match Form::<T>::from_request(req, state).await {
            Ok(Form(v)) => Ok(PageForm(v)),
            Err(e) => {
                tracing::warn!(error = %e.body_text(), "dashboard form not understood");
                Err(page_notice(
                    StatusCode::BAD_REQUEST,
                    "Bad form",
                    "The form was not understood. Reload the page and try again.",
                ))
            }
        }
    }
}

impl Dashboard {
    /// The 403 for a form that changes something, unless it carries this
    /// session's CSRF token and the user may change settings (a viewer
    /// reads only).
    pub fn change_refusal(&self, csrf: &str) -> Option<Response> {
        if let Some(refused) = self.csrf_refusal(csrf) {
            return Some(refused);
        }
        if self.user.can_change() {
            return None;
        }
        tracing::warn!(email = %self.user.email, "a read-only dashboard user tried to change something");
        Some(forbidden(
            "Your role in this community is read-only. Ask an owner or admin to make this change.",
        ))
    }
}

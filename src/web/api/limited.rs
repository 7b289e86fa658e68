//! The rate gate of the REST routes (security finding M1) as an extractor:
//! listed before the JSON body, it refuses a flood with 429 + `Retry-After`
//! before the body is even read. Agent turns are gated inside
//! `run_channel_turn` instead, which every channel shares.

use std::marker::PhantomData;

use axum::extract::FromRequestParts;
use axum::http::request::Parts;

use super::Caller;
use crate::limits::Action;
use crate::state::AppState;
use crate::web::error::ApiError;

/// An [`Action`] as a type, for [`Admitted`].
pub trait LimitedAction: Send + Sync + 'static {
    /// The limited action.
    const ACTION: Action;
}

/// `POST /tools/:name/execute`.
pub struct ToolExecute;
impl LimitedAction for ToolExecute {
    const ACTION: Action = Action::ToolExecute;
}

/// `POST /kb/search`.
pub struct KbSearch;
impl LimitedAction for KbSearch {
    const ACTION: Action = Action::KbSearch;
}

/// KB page upserts and deletes.
pub struct KbWrite;
impl LimitedAction for KbWrite {
    const ACTION: Action = Action::KbWrite;
}

/// `PUT /channels/slack`: shares the KB-write rates (a rare admin write
/// that calls Slack; a flood must not turn into a flood of `auth.test`s).
pub struct ChannelWrite;
impl LimitedAction for ChannelWrite {
    const ACTION: Action = Action::KbWrite;
}

/// Proof that the caller's tenant and API key were within `A`'s rates.
pub struct Admitted<A>(PhantomData<A>);

impl<A: LimitedAction> FromRequestParts<AppState> for Admitted<A> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let caller = parts
            .extensions
            .get::<Caller>()
            .ok_or(ApiError::Unauthorized)?;
        state
            .limits
            .check(A::ACTION, &caller.tenant, Some(caller.key.id))?;
        Ok(Admitted(PhantomData))
    }
}

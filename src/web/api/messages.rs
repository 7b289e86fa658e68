//! `POST /api/v1/messages` (§12.2): an outbound Slack or email message from
//! the community's own systems; the rules live in
//! `channels::outbound_message`. A bad field is a 400 naming it, a target
//! nobody answers to a 404, a channel the community has not set up a 409,
//! and a Slack / email provider failure a 502 with its reason.

use axum::Json;
use axum::extract::State;

use super::Caller;
use super::json::ApiJson;
use crate::channels::outbound_message::{OutboundMessage, SendError, SentMessage};
use crate::state::AppState;
use crate::web::error::ApiError;

impl From<SendError> for ApiError {
    fn from(e: SendError) -> Self {
        match e {
            SendError::Invalid(field, message) => ApiError::field(field, message),
            SendError::UnknownTarget(m) => ApiError::NotFound(m),
            SendError::NotConfigured(m) => ApiError::StateConflict(m),
            SendError::Upstream(m) => ApiError::BadGateway(m),
            SendError::Internal(e) => ApiError::Internal(e),
        }
    }
}

/// `POST /api/v1/messages`
pub async fn send(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<OutboundMessage>,
) -> Result<Json<SentMessage>, ApiError> {
    Ok(Json(state.messages.send(&caller.tenant, body).await?))
}

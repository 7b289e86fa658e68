//! Inbound email (§8.3): `POST /channels/email/inbound/platform` (the
//! hosted provider's signed `email.received` webhook, tenant by the
//! recipient alias) and `POST /channels/email/inbound/{token}` (a BYO
//! tenant's forwarder: raw RFC 5322 MIME, or Postmark's inbound JSON).
//!
//! The answer is 202 only once the `email-inbound` job is durably queued;
//! a queue failure is 503 (the provider retries) with nothing half-done. A
//! duplicate delivery is 200 and queues nothing. Bad signature 401, unknown
//! token or recipient 404 (logged), an unreadable mail 400 with the reason
//! — never the body in a log line.

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::post;
use serde::Serialize;

use crate::channels::email::{AcceptError, Acceptance};
use crate::email::primitive::{self, EmailReceivedEvent, SIGNATURE_HEADER};
use crate::email::{InboundEmail, InboundError, sender_auth};
use crate::state::AppState;
use crate::web::error::ApiError;

/// `/channels/email` routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/channels/email/inbound/platform", post(platform))
        .route("/channels/email/inbound/{token}", post(byo))
}

/// What the inbound routes answer.
#[derive(Debug, Serialize)]
pub struct InboundAnswer {
    /// `accepted` (queued), `duplicate` or `ignored` (not a received mail,
    /// or one Root never answers: automatic mail, platform addresses).
    pub status: &'static str,
}

fn answer(status: StatusCode, word: &'static str) -> (StatusCode, Json<InboundAnswer>) {
    (status, Json(InboundAnswer { status: word }))
}

fn unreadable(e: InboundError) -> ApiError {
    ApiError::BadRequest(format!("unreadable mail: {e}"))
}

async fn accept(
    state: &AppState,
    tenant: uuid::Uuid,
    mail: InboundEmail,
) -> Result<(StatusCode, Json<InboundAnswer>), ApiError> {
    match state.email.accept(tenant, mail).await {
        Ok(Acceptance::Queued(_)) => Ok(answer(StatusCode::ACCEPTED, "accepted")),
        Ok(Acceptance::Duplicate) => Ok(answer(StatusCode::OK, "duplicate")),
        // 200 so the provider does not retry: nothing is wrong with it.
        Ok(Acceptance::Ignored(_)) => Ok(answer(StatusCode::OK, "ignored")),
        Err(AcceptError::Unavailable(e)) => {
            tracing::error!(%tenant, error = %e, "inbound mail not queued; provider will retry");
            Err(ApiError::Unavailable(
                "the mail could not be stored; retry later".into(),
            ))
        }
    }
}

/// `POST /channels/email/inbound/platform`
pub async fn platform(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<InboundAnswer>), ApiError> {
    let Some(secret) = state.config.primitive_webhook_secret.as_ref() else {
        tracing::warn!("platform inbound mail refused: PRIMITIVE_WEBHOOK_SECRET is not set");
        return Err(ApiError::NotFound(
            "platform email is not configured".into(),
        ));
    };
    let now = state.clock.now().micros().div_euclid(1_000_000);
    let sig = headers.get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok());
    if let Err(e) = primitive::verify(secret.expose(), sig, &body, now) {
        tracing::warn!(reason = %e, "platform inbound mail refused: signature");
        return Err(ApiError::BadSignature);
    }
    let event = EmailReceivedEvent::parse(&body)
        .map_err(|e| ApiError::BadRequest(format!("invalid email.received JSON: {e}")))?;
    if event.event != primitive::EMAIL_RECEIVED {
        tracing::info!(event = %event.event, "platform email event ignored");
        return Ok(answer(StatusCode::OK, "ignored"));
    }
    let mail = InboundEmail::from_primitive(&event).map_err(unreadable)?;
    let recipients: Vec<String> = event
        .email
        .smtp
        .rcpt_to
        .iter()
        .cloned()
        .chain(mail.to.iter().chain(&mail.cc).map(|m| m.email.clone()))
        .collect();
    let Some(tenant) = state.email.tenant_for_recipients(&recipients).await? else {
        tracing::info!(
            recipients = recipients.len(),
            "platform inbound mail for no tenant"
        );
        return Err(ApiError::NotFound("no community has this address".into()));
    };
    accept(&state, tenant, mail).await
}

/// `POST /channels/email/inbound/{token}`
pub async fn byo(
    State(state): State<AppState>,
    Path(token): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<(StatusCode, Json<InboundAnswer>), ApiError> {
    let Some(tenant) = state.email.directory().by_token(&token).await? else {
        tracing::info!("inbound mail for an unknown token");
        return Err(ApiError::NotFound("not found".into()));
    };
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|c| {
            c.trim()
                .to_ascii_lowercase()
                .starts_with("application/json")
        });
    let mut mail = if json {
        let v: serde_json::Value = serde_json::from_slice(&body)
            .map_err(|e| ApiError::BadRequest(format!("invalid inbound JSON: {e}")))?;
        InboundEmail::from_postmark(&v).map_err(unreadable)?
    } else {
        InboundEmail::from_mime(&body).map_err(unreadable)?
    };
    // The tenant's forwarder vouches for the sender (or not) with a header
    // only it can set; without one, Postmark JSON keeps the verdict of
    // Postmark's own headers and raw MIME has none (H-1).
    if let Some(v) = headers
        .get(sender_auth::BYO_AUTH_HEADER)
        .and_then(|v| v.to_str().ok())
    {
        mail.sender_auth = sender_auth::from_byo_header(v);
    }
    accept(&state, tenant, mail).await
}

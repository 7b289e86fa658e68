//! Slack Events API ingress (§8.2): `POST /slack/events/:tenantSlug`.
//!
//! The slug is always the live tenant's; when the live tenant and its dev
//! shadow share a workspace, the environment is the one whose signing
//! secret verifies the request (live first). The signature is checked over
//! the raw body bytes before anything is parsed; a bad or stale one is 401
//! and nothing else happens. `url_verification` answers the challenge. An
//! event is claimed in the dedupe set (before any await), handed to
//! [`SlackChannel::handle`] on its own task in the tenant's scope, and acked
//! at once — Slack's 3 s deadline never waits for the model. Repeats
//! (Slack's retries, the `message` twin of an `app_mention`) are acked too.
//!
//! Not browser-facing: no `Host` check (Slack's requests carry the public
//! host, proxies may rewrite it); the body limit and the signature guard it.

use std::sync::Arc;

use axum::Json;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::routing::post;
use serde::Serialize;
use storage::{Tenant, TenantStore};

use crate::slack::events::{Envelope, MessageEvent};
use crate::slack::signature::{self, SIGNATURE_HEADER, SignatureError, TIMESTAMP_HEADER};
use crate::slack::{SlackCredentials, resolve_credentials};
use crate::state::AppState;
use crate::web::error::ApiError;

/// `/slack` routes.
pub fn router() -> Router<AppState> {
    Router::new().route("/slack/events/{slug}", post(events))
}

/// What the route answers Slack.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum EventsAnswer {
    /// `url_verification`: the challenge back.
    Challenge {
        /// Slack's challenge.
        challenge: String,
    },
    /// Anything else: received (processing continues on its own).
    Ack {
        /// Always `true`.
        ok: bool,
    },
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// `POST /slack/events/:tenantSlug`
pub async fn events(
    State(state): State<AppState>,
    Path(slug): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<EventsAnswer>, ApiError> {
    let live = state
        .tenants
        .by_slug(&slug)
        .await?
        .filter(|t| t.live_tenant_id.is_none())
        .ok_or_else(|| ApiError::NotFound(format!("no tenant with slug {slug:?}")))?;
    let (Some(ts), Some(sig)) = (
        header(&headers, TIMESTAMP_HEADER),
        header(&headers, SIGNATURE_HEADER),
    ) else {
        tracing::warn!(tenant = %live.id, "slack event without signature headers refused");
        return Err(ApiError::Unauthorized);
    };
    let now = state.clock.now().micros().div_euclid(1_000_000);
    // Live first, then its dev shadow: the first whose secret verifies.
    let mut candidates = vec![live.clone()];
    if let Some(dev) = state.store.dev_shadow_of(live.id).await? {
        candidates.push(Arc::new(dev));
    }
    let mut verified: Option<(Arc<Tenant>, SlackCredentials)> = None;
    let mut last = SignatureError::Malformed;
    for tenant in candidates {
        let Some(creds) = resolve_credentials(&state.store, &state.config, &tenant).await? else {
            continue;
        };
        match signature::verify(creds.signing_secret.expose(), ts, &body, sig, now) {
            Ok(()) => {
                verified = Some((tenant, creds));
                break;
            }
            Err(e) => last = e,
        }
    }
    let Some((tenant, creds)) = verified else {
        tracing::warn!(tenant = %live.id, reason = %last, "slack event refused: signature");
        return Err(ApiError::Unauthorized);
    };
    let envelope: Envelope = serde_json::from_slice(&body)
        .map_err(|e| ApiError::BadRequest(format!("invalid Events API JSON: {e}")))?;
    match envelope.kind.as_str() {
        "url_verification" => {
            let challenge = envelope.challenge.ok_or_else(|| {
                ApiError::BadRequest("url_verification without a challenge".into())
            })?;
            return Ok(Json(EventsAnswer::Challenge { challenge }));
        }
        "event_callback" => {}
        other => {
            tracing::info!(tenant = %tenant.id, kind = other, "slack envelope ignored");
            return Ok(Json(EventsAnswer::Ack { ok: true }));
        }
    }
    let Some(event) = envelope.event.as_ref().and_then(MessageEvent::from_value) else {
        tracing::debug!(tenant = %tenant.id, "slack event type not handled");
        return Ok(Json(EventsAnswer::Ack { ok: true }));
    };
    let retry = header(&headers, "x-slack-retry-num").unwrap_or("0");
    if !state.slack.claim(tenant.id, &event) {
        tracing::debug!(tenant = %tenant.id, retry, "slack delivery already claimed; acked");
        return Ok(Json(EventsAnswer::Ack { ok: true }));
    }
    state.slack.spawn_handle(tenant, creds, envelope, event);
    Ok(Json(EventsAnswer::Ack { ok: true }))
}

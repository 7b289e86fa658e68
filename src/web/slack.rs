//! Slack Events API ingress (§8.2): `POST /slack/events/:tenantSlug` and
//! the legacy `POST /slack/events`, routed by the body's `team_id`.
//!
//! The slug is always the live tenant's; when the live tenant and its dev
//! shadow share a workspace, the environment is the one whose signing
//! secret verifies the request (live first). The legacy route reads
//! `team_id` from the still-unverified body only to find candidates — the
//! tenants whose credentials name that workspace, live first
//! ([`TeamDirectory`](crate::slack::TeamDirectory), cached) — and then
//! verifies exactly like the slug route; an unknown workspace is a bare 404.
//! The signature is checked over the raw body bytes before anything else is
//! parsed; a bad or stale one is 401 and nothing else happens.
//! `url_verification` answers the challenge. An event is claimed in the
//! dedupe set (before any await), handed to `SlackChannel::handle` on its
//! own task in the tenant's scope, and acked at once — Slack's 3 s deadline
//! never waits for the model. Repeats (Slack's retries, the `message` twin
//! of an `app_mention`) are acked too.
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
use serde::{Deserialize, Serialize};
use storage::Tenant;

use crate::slack::SlackCredentials;
use crate::slack::events::{Envelope, MessageEvent};
use crate::slack::signature::{self, SIGNATURE_HEADER, SignatureError, TIMESTAMP_HEADER};
use crate::state::AppState;
use crate::web::error::ApiError;

/// `/slack` routes.
pub fn router() -> Router<AppState> {
    Router::new()
        .route("/slack/events/{slug}", post(events))
        .route("/slack/events", post(legacy_events))
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
    // Live first, then its dev shadow: the first whose secret verifies.
    let mut candidates = vec![live];
    if let Some(dev) = state.tenants.dev_shadow_of(candidates[0].id).await? {
        candidates.push(dev);
    }
    verified_delivery(&state, candidates, &headers, &body).await
}

/// The workspace an Events API body names (unverified: it only narrows
/// the candidates).
#[derive(Deserialize)]
struct TeamProbe {
    #[serde(default)]
    team_id: Option<String>,
    #[serde(default)]
    authorizations: Vec<TeamProbeAuthorization>,
}

#[derive(Deserialize)]
struct TeamProbeAuthorization {
    #[serde(default)]
    team_id: Option<String>,
}

fn team_of(body: &[u8]) -> Option<String> {
    let probe: TeamProbe = serde_json::from_slice(body).ok()?;
    probe
        .team_id
        .or_else(|| probe.authorizations.into_iter().find_map(|a| a.team_id))
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// The legacy route's refusal for a body naming no known workspace: it
/// says nothing about tenants or workspaces.
fn unknown_workspace() -> ApiError {
    ApiError::NotFound("not found".into())
}

/// `POST /slack/events` (legacy): candidates by the body's `team_id`.
pub async fn legacy_events(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<EventsAnswer>, ApiError> {
    let team = team_of(&body).ok_or_else(unknown_workspace)?;
    let mut candidates = Vec::new();
    for id in state.slack_teams.tenants_of(&team).await? {
        if let Some(t) = state.tenants.by_id(id).await? {
            candidates.push(t);
        }
    }
    if candidates.is_empty() {
        tracing::info!(team = %team, "legacy slack event for an unknown workspace");
        return Err(unknown_workspace());
    }
    verified_delivery(&state, candidates, &headers, &body).await
}

/// What both routes share: verify the signature against each candidate's
/// signing secret in order (the first that verifies is the tenant), then
/// answer `url_verification` or claim and hand off the event.
async fn verified_delivery(
    state: &AppState,
    candidates: Vec<Arc<Tenant>>,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Json<EventsAnswer>, ApiError> {
    let first = candidates.first().map(|t| t.id).unwrap_or_default();
    let (Some(ts), Some(sig)) = (
        header(headers, TIMESTAMP_HEADER),
        header(headers, SIGNATURE_HEADER),
    ) else {
        tracing::warn!(tenant = %first, "slack event without signature headers refused");
        return Err(ApiError::BadSignature);
    };
    let now = state.clock.now().micros().div_euclid(1_000_000);
    let mut verified: Option<(Arc<Tenant>, SlackCredentials)> = None;
    let mut last = SignatureError::Malformed;
    for tenant in candidates {
        let Some(creds) = state.slack.workspaces().credentials(&tenant).await? else {
            continue;
        };
        match signature::verify(creds.signing_secret.expose(), ts, body, sig, now) {
            Ok(()) => {
                verified = Some((tenant, creds));
                break;
            }
            Err(e) => last = e,
        }
    }
    let Some((tenant, creds)) = verified else {
        tracing::warn!(tenant = %first, reason = %last, "slack event refused: signature");
        return Err(ApiError::BadSignature);
    };
    let envelope: Envelope = serde_json::from_slice(body)
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
    // A suspended community (or the shadow of one) is acked, so Slack stops
    // retrying, but never answered (security review L-2).
    if !crate::platform::tenancy::is_serving(&state.store, &tenant).await? {
        tracing::info!(tenant = %tenant.id, "slack event for an inactive community; acked without a turn");
        return Ok(Json(EventsAnswer::Ack { ok: true }));
    }
    let retry = header(headers, "x-slack-retry-num").unwrap_or("0");
    if !state.slack.claim(tenant.id, &event) {
        tracing::debug!(tenant = %tenant.id, retry, "slack delivery already claimed; acked");
        return Ok(Json(EventsAnswer::Ack { ok: true }));
    }
    state.slack.spawn_handle(tenant, creds, envelope, event);
    Ok(Json(EventsAnswer::Ack { ok: true }))
}

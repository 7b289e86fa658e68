//! Principal routes (§12.2, §6): the portal's bulk sync
//! (`POST /principals/sync`), a member's memory reset
//! (`POST /principals/memory/reset`), deactivating one learned preference
//! (`POST /principals/preferences/:id/deactivate`) and the member's state as
//! Root holds it (`GET /principals/state`). A principal is named by exactly
//! one of `ref`, `email` or `slack_user_id`; an unknown one is a 404 naming
//! it. The domain rules live in `identity::sync` and `memory::reset`.

use axum::Json;
use axum::extract::{Path, State};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use storage::{ChannelScope, MemberPreference, PreferenceType, Principal, Scan, Store, Ts, key};
use uuid::Uuid;

use super::json::{ApiJson, ApiQuery};
use crate::identity::PrincipalLookup;
use crate::identity::sync::{PRINCIPAL_SYNC_MAX, SyncEntry, SyncReport, validate};
use crate::memory::reset::{MemoryReset, reset_memory};
use crate::platform::tenancy::current_tenant_id;
use crate::state::AppState;
use crate::web::error::{ApiError, FieldError};

/// Body of `POST /principals/sync`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(rename = "PrincipalSyncBody")]
pub struct SyncBody {
    /// 1–500 members.
    pub principals: Vec<SyncEntry>,
}

/// Body of `POST /principals/memory/reset`: one of `ref`, `email`,
/// `slack_user_id`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ResetBody {
    /// `principals.ref`.
    #[serde(default, rename = "ref")]
    pub ref_: Option<String>,
    /// Email address.
    #[serde(default)]
    pub email: Option<String>,
    /// Slack user id.
    #[serde(default)]
    pub slack_user_id: Option<String>,
    /// Also deactivate every learned preference.
    #[serde(default)]
    pub clear_preferences: bool,
}

/// A member named in a query string (or a body of nothing else): one of
/// `ref`, `email`, `slack_user_id`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrincipalQuery {
    /// `principals.ref`.
    #[serde(default, rename = "ref")]
    pub ref_: Option<String>,
    /// Email address.
    #[serde(default)]
    pub email: Option<String>,
    /// Slack user id.
    #[serde(default)]
    pub slack_user_id: Option<String>,
}

/// The principal's identity columns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PrincipalView {
    /// Row id (`author_member_id` of their pages).
    pub id: Uuid,
    /// Stable external ref.
    #[serde(rename = "ref")]
    pub ref_: String,
    /// Display name.
    pub display_name: Option<String>,
    /// Tier.
    pub tier: String,
    /// Community admin.
    pub is_admin: bool,
    /// Email address.
    pub email: Option<String>,
    /// Slack user id.
    pub slack_user_id: Option<String>,
    /// When a backend or sync last set the tier.
    pub tier_resolved_at: Option<Ts>,
}

/// The rolling conversation memory and its bookkeeping.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MemoryView {
    /// The summary (`null` when none).
    pub text: Option<String>,
    /// Newest message it covers.
    pub updated_at: Option<Ts>,
    /// Messages summarised since the last reset.
    pub source_count: i32,
    /// Rewrites (1 = never written).
    pub version: i32,
    /// Last reset.
    pub reset_at: Option<Ts>,
    /// Last compaction attempt.
    pub last_attempted_at: Option<Ts>,
    /// Last compaction error.
    pub last_error: Option<String>,
}

/// One learned preference.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PreferenceView {
    /// Id (for `/principals/preferences/:id/deactivate`).
    pub id: Uuid,
    /// What to do.
    pub instructions: String,
    /// `nickname_alias|formatting|tone|workflow|naming|custom`.
    #[schemars(with = "String")]
    pub preference_type: PreferenceType,
    /// Phrase that triggers it.
    pub trigger_phrase: Option<String>,
    /// What the phrase means.
    pub canonical_value: Option<String>,
    /// `all|slack|email`.
    #[schemars(with = "String")]
    pub channel_scope: ChannelScope,
    /// Still applied.
    pub active: bool,
    /// Created.
    pub created_at: Ts,
    /// Last change.
    pub updated_at: Ts,
}

impl From<MemberPreference> for PreferenceView {
    fn from(p: MemberPreference) -> Self {
        PreferenceView {
            id: p.id,
            instructions: p.instructions,
            preference_type: p.preference_type,
            trigger_phrase: p.trigger_phrase,
            canonical_value: p.canonical_value,
            channel_scope: p.channel_scope,
            active: p.active,
            created_at: p.created_at,
            updated_at: p.updated_at,
        }
    }
}

/// `GET /principals/state`: who they are, their memory and preferences.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PrincipalState {
    /// Identity.
    pub principal: PrincipalView,
    /// Conversation memory.
    pub memory: MemoryView,
    /// Learned preferences, active first, newest first.
    pub preferences: Vec<PreferenceView>,
}

/// `POST /principals/preferences/:id/deactivate`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Deactivated {
    /// The preference, now inactive.
    pub preference: PreferenceView,
    /// Whether it was active before (false: nothing changed).
    pub was_active: bool,
}

pub(super) fn lookup(
    r: Option<&str>,
    email: Option<&str>,
    slack: Option<&str>,
) -> Result<PrincipalLookup, ApiError> {
    PrincipalLookup::one_of(r, email, slack).map_err(|m| ApiError::BadRequest(m.into()))
}

pub(super) async fn principal(
    state: &AppState,
    lookup: &PrincipalLookup,
) -> Result<Principal, ApiError> {
    state
        .identity
        .find_principal(lookup)
        .await
        .map_err(ApiError::Internal)?
        .ok_or_else(|| ApiError::NotFound(format!("no principal with {lookup}")))
}

/// `POST /api/v1/principals/sync`
pub async fn sync(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<SyncBody>,
) -> Result<Json<SyncReport>, ApiError> {
    let n = body.principals.len();
    if n == 0 || n > PRINCIPAL_SYNC_MAX {
        return Err(ApiError::field(
            "principals",
            format!("must hold 1 to {PRINCIPAL_SYNC_MAX} entries (got {n})"),
        ));
    }
    let errors = validate(&body.principals);
    if !errors.is_empty() {
        let bad: std::collections::BTreeSet<usize> = errors.iter().map(|e| e.index).collect();
        return Err(ApiError::InvalidFields {
            message: format!(
                "{} of {n} principals are invalid; nothing was written",
                bad.len()
            ),
            fields: errors
                .into_iter()
                .map(|e| FieldError {
                    field: e.field,
                    message: e.message,
                })
                .collect(),
        });
    }
    let report = state
        .identity
        .sync_principals(&body.principals)
        .await
        .map_err(ApiError::Internal)?;
    Ok(Json(report))
}

/// `POST /api/v1/principals/memory/reset`
pub async fn reset(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ResetBody>,
) -> Result<Json<MemoryReset>, ApiError> {
    let who = lookup(
        body.ref_.as_deref(),
        body.email.as_deref(),
        body.slack_user_id.as_deref(),
    )?;
    let p = principal(&state, &who).await?;
    let tenant = current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let done = reset_memory(
        &state.store,
        tenant,
        p.id,
        body.clear_preferences,
        state.clock.now(),
    )
    .await?
    .ok_or_else(|| ApiError::NotFound(format!("no principal with {who}")))?;
    tracing::info!(tenant = %tenant, principal = %p.id, clear_preferences = body.clear_preferences,
        "member memory reset");
    Ok(Json(done))
}

/// `POST /api/v1/principals/preferences/{id}/deactivate`
pub async fn deactivate_preference(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Deactivated>, ApiError> {
    let id: Uuid = id
        .trim()
        .parse()
        .map_err(|_| ApiError::field("id", format!("{id:?} is not a preference id (a UUID)")))?;
    let tenant = current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let now = state.clock.now();
    let (found, _) = state
        .store
        .transact(move |tx| {
            let Some(mut p) = tx.get::<MemberPreference>(Some(tenant), key().uuid(id))? else {
                return Ok(None);
            };
            let was_active = p.active;
            if was_active {
                p.active = false;
                p.updated_at = now;
                tx.update(&p)?;
            }
            Ok(Some((p, was_active)))
        })
        .await?;
    let (p, was_active) =
        found.ok_or_else(|| ApiError::NotFound(format!("no preference with id {id}")))?;
    Ok(Json(Deactivated {
        preference: p.into(),
        was_active,
    }))
}

/// `GET /api/v1/principals/state`
pub async fn state(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<PrincipalQuery>,
) -> Result<Json<PrincipalState>, ApiError> {
    let who = lookup(
        q.ref_.as_deref(),
        q.email.as_deref(),
        q.slack_user_id.as_deref(),
    )?;
    let p = principal(&state, &who).await?;
    let mut prefs: Vec<MemberPreference> = state
        .store
        .scan(
            Some(p.tenant_id),
            Scan::index(MemberPreference::MEMBER_IDX, key().uuid(p.id)),
        )
        .await?;
    prefs.sort_by_key(|x| (!x.active, std::cmp::Reverse(x.created_at)));
    Ok(Json(PrincipalState {
        principal: PrincipalView {
            id: p.id,
            ref_: p.ref_,
            display_name: p.display_name,
            tier: p.tier,
            is_admin: p.is_admin,
            email: p.email,
            slack_user_id: p.slack_user_id,
            tier_resolved_at: p.tier_resolved_at,
        },
        memory: MemoryView {
            text: p.conversation_memory,
            updated_at: p.conversation_memory_updated_at,
            source_count: p.conversation_memory_source_count,
            version: p.conversation_memory_version,
            reset_at: p.conversation_memory_reset_at,
            last_attempted_at: p.conversation_memory_last_attempted_at,
            last_error: p.conversation_memory_last_error,
        },
        preferences: prefs.into_iter().map(PreferenceView::from).collect(),
    }))
}

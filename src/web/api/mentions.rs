//! `GET /mentions/leaderboard`, `/mentions/counts` and `/mentions/details`
//! (§12.2, §6): thin handlers over [`crate::insights::mentions`].

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::conventions::{decode_cursor, encode_cursor, time_range};
use super::read_params::{limit, principal, query, tenant};
use crate::insights::PageKey;
use crate::insights::mentions::{
    self, DETAILS_DEFAULT_LIMIT, DETAILS_MAX_LIMIT, LEADERBOARD_DEFAULT_LIMIT,
    LEADERBOARD_MAX_LIMIT, LeaderboardEntry, MentionCounts, MentionDetail, TierFilter,
};
use crate::state::AppState;
use crate::web::error::ApiError;

/// Query of `GET /mentions/leaderboard`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LeaderboardQuery {
    /// `member`, `mentor` or `all` (default).
    #[schemars(with = "Option<TierFilter>")]
    pub tier: Option<String>,
    /// ISO-8601 inclusive start (`message_at` of the reply).
    pub from: Option<String>,
    /// ISO-8601 exclusive end.
    pub to: Option<String>,
    /// Rows, 1–100 (default 20).
    pub limit: Option<String>,
}

/// `GET /mentions/leaderboard`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Leaderboard {
    /// The tier ranked.
    pub tier: TierFilter,
    /// Most mentioned first.
    pub items: Vec<LeaderboardEntry>,
}

/// Query of `GET /mentions/counts` and `GET /mentions/details`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PrincipalMentionsQuery {
    /// The member (their stable ref; required).
    pub principal_ref: Option<String>,
    /// ISO-8601 inclusive start.
    pub from: Option<String>,
    /// ISO-8601 exclusive end.
    pub to: Option<String>,
    /// Details only: page size, 1–200 (default 50).
    pub limit: Option<String>,
    /// Details only: `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// `GET /mentions/counts`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PrincipalMentionCounts {
    /// The member.
    pub principal_ref: String,
    /// Their figures.
    #[serde(flatten)]
    pub counts: MentionCounts,
}

/// `GET /mentions/details`: a page of one member's mentions.
#[derive(Debug, Serialize, JsonSchema)]
pub struct MentionDetails {
    /// The member.
    pub principal_ref: String,
    /// Newest first.
    pub items: Vec<MentionDetail>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    pub next_cursor: Option<String>,
}

/// `GET /api/v1/mentions/leaderboard`
pub async fn leaderboard(
    State(state): State<AppState>,
    q: Result<Query<LeaderboardQuery>, QueryRejection>,
) -> Result<Json<Leaderboard>, ApiError> {
    let q = query(q)?;
    let t = tenant()?;
    let tier = match q.tier.as_deref().map(str::trim) {
        None | Some("all") => TierFilter::All,
        Some("member") => TierFilter::Member,
        Some("mentor") => TierFilter::Mentor,
        Some(other) => {
            return Err(ApiError::field(
                "tier",
                format!("must be member, mentor or all (got {other:?})"),
            ));
        }
    };
    let (from, to) = time_range(q.from.as_deref(), q.to.as_deref())?;
    let limit = limit(
        q.limit.as_deref(),
        LEADERBOARD_DEFAULT_LIMIT,
        LEADERBOARD_MAX_LIMIT,
    )?;
    let items = mentions::leaderboard(&state.store, t.id, tier, from, to, limit).await?;
    Ok(Json(Leaderboard { tier, items }))
}

/// `GET /api/v1/mentions/counts`
pub async fn counts(
    State(state): State<AppState>,
    q: Result<Query<PrincipalMentionsQuery>, QueryRejection>,
) -> Result<Json<PrincipalMentionCounts>, ApiError> {
    let q = query(q)?;
    let t = tenant()?;
    for (field, given) in [("limit", q.limit.is_some()), ("cursor", q.cursor.is_some())] {
        if given {
            return Err(ApiError::field(
                field,
                "is a parameter of /mentions/details only",
            ));
        }
    }
    let (from, to) = time_range(q.from.as_deref(), q.to.as_deref())?;
    let p = principal(&state.store, &t, q.principal_ref.as_deref())
        .await?
        .ok_or_else(|| ApiError::field("principal_ref", "is required"))?;
    let counts = mentions::counts(&state.store, t.id, p.id, from, to).await?;
    Ok(Json(PrincipalMentionCounts {
        principal_ref: p.ref_,
        counts,
    }))
}

/// `GET /api/v1/mentions/details`
pub async fn details(
    State(state): State<AppState>,
    q: Result<Query<PrincipalMentionsQuery>, QueryRejection>,
) -> Result<Json<MentionDetails>, ApiError> {
    let q = query(q)?;
    let t = tenant()?;
    let (from, to) = time_range(q.from.as_deref(), q.to.as_deref())?;
    let limit = limit(q.limit.as_deref(), DETAILS_DEFAULT_LIMIT, DETAILS_MAX_LIMIT)?;
    let after = decode_cursor::<PageKey>("cursor", q.cursor.as_deref())?;
    let p = principal(&state.store, &t, q.principal_ref.as_deref())
        .await?
        .ok_or_else(|| ApiError::field("principal_ref", "is required"))?;
    let (items, next) = mentions::details(&state.store, t.id, p.id, from, to, after, limit).await?;
    Ok(Json(MentionDetails {
        principal_ref: p.ref_,
        items,
        next_cursor: next.as_ref().map(encode_cursor),
    }))
}

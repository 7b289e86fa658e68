//! `GET /conversations` and `GET /conversations/analytics` (§12.2): thin
//! handlers over [`crate::insights::conversations`] and
//! [`crate::insights::analytics`].

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use storage::Channel;

use super::conventions::{decode_cursor, encode_cursor, parse_time, time_range};
use super::read_params::{limit, one_of, principal, query, tenant};
use crate::insights::PageKey;
use crate::insights::analytics::{self, Analytics, AnalyticsQuery, GroupBy};
use crate::insights::conversations::{
    self, ChannelCounts, ConversationFilter, ConversationItem, DEFAULT_LIMIT, MAX_LIMIT,
};
use crate::state::AppState;
use crate::web::error::ApiError;

/// Query of `GET /conversations`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationsQuery {
    /// One member's messages (their stable ref); omitted: the whole tenant.
    pub principal_ref: Option<String>,
    /// `slack`, `email`, `api` or `web`.
    pub channel: Option<String>,
    /// Case-insensitive substring of the message text or subject (≤ 200 chars).
    pub q: Option<String>,
    /// ISO-8601 inclusive start (`message_at`).
    pub from: Option<String>,
    /// ISO-8601 exclusive end.
    pub to: Option<String>,
    /// Page size, 1–200 (default 50).
    pub limit: Option<String>,
    /// `next_cursor` of the previous page.
    pub cursor: Option<String>,
}

/// A page of `GET /conversations`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConversationList {
    /// Newest first.
    pub items: Vec<ConversationItem>,
    /// Pass as `cursor` for the next page; `null` on the last one.
    pub next_cursor: Option<String>,
    /// Messages per channel under every filter except `channel` (the same
    /// on every page).
    pub counts: ChannelCounts,
}

/// `GET /api/v1/conversations`
pub async fn list(
    State(state): State<AppState>,
    q: Result<Query<ConversationsQuery>, QueryRejection>,
) -> Result<Json<ConversationList>, ApiError> {
    let q = query(q)?;
    let t = tenant()?;
    let limit = limit(q.limit.as_deref(), DEFAULT_LIMIT, MAX_LIMIT)?;
    let (from, to) = time_range(q.from.as_deref(), q.to.as_deref())?;
    let channel = q
        .channel
        .as_deref()
        .map(|c| one_of::<Channel>("channel", c))
        .transpose()?;
    let after = decode_cursor::<PageKey>("cursor", q.cursor.as_deref())?;
    let who = principal(&state.store, &t, q.principal_ref.as_deref()).await?;
    let filter = ConversationFilter {
        principal_id: who.map(|p| p.id),
        channel,
        q: q.q,
        from,
        to,
    };
    let page = conversations::list(&state.store, t.id, filter, after, limit).await?;
    Ok(Json(ConversationList {
        items: page.items,
        next_cursor: page.next.as_ref().map(encode_cursor),
        counts: page.counts,
    }))
}

/// Query of `GET /conversations/analytics`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsParams {
    /// ISO-8601 inclusive start (required).
    pub from: Option<String>,
    /// ISO-8601 exclusive end (required).
    pub to: Option<String>,
    /// `day` (default), `week` or `month`, in the tenant's time zone.
    #[schemars(with = "Option<GroupBy>")]
    pub group_by: Option<String>,
    /// Scope to one member (their stable ref).
    pub principal_ref: Option<String>,
}

/// `GET /api/v1/conversations/analytics`
pub async fn analytics(
    State(state): State<AppState>,
    q: Result<Query<AnalyticsParams>, QueryRejection>,
) -> Result<Json<Analytics>, ApiError> {
    let q = query(q)?;
    let t = tenant()?;
    let from = parse_time(
        "from",
        q.from
            .as_deref()
            .ok_or_else(|| ApiError::field("from", "is required"))?,
    )?;
    let to = parse_time(
        "to",
        q.to.as_deref()
            .ok_or_else(|| ApiError::field("to", "is required"))?,
    )?;
    if from >= to {
        return Err(ApiError::field("to", "must be after `from`"));
    }
    let group_by = match q.group_by.as_deref().map(str::trim) {
        None | Some("day") => GroupBy::Day,
        Some("week") => GroupBy::Week,
        Some("month") => GroupBy::Month,
        Some(other) => {
            return Err(ApiError::field(
                "group_by",
                format!("must be day, week or month (got {other:?})"),
            ));
        }
    };
    let who = principal(&state.store, &t, q.principal_ref.as_deref()).await?;
    let report = analytics::report(
        &state.store,
        &t,
        AnalyticsQuery {
            from,
            to,
            group_by,
            principal: who.map(|p| (p.id, p.ref_)),
        },
    )
    .await?;
    Ok(Json(report))
}

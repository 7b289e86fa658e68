//! The human-intervention queue over the API (§12.2 `POST/GET
//! /interventions`, §2.4 `human_interventions`): a tenant's backend opens
//! interventions, lists them by category and status, and moves them
//! through their statuses.
//!
//! Statuses: `open` and `in_progress` are live; `resolved` and `dismissed`
//! are closed by the team and may be reopened (`open`); `cancelled` (the
//! member withdrew, `cancel_human_intervention`) is final. Moving a row to
//! the status it already has changes nothing and is not an error.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;
use storage::{
    Channel, HumanIntervention, InterventionCategory, InterventionStatus, Json, Principal,
    RedbStore, Ts, key,
};
use uuid::Uuid;

use super::{InsightError, PageKey, cut_page, newest_first, principals_by_id};

/// Items per page by default.
pub const DEFAULT_LIMIT: usize = 50;
/// Largest page.
pub const MAX_LIMIT: usize = 200;
/// Longest title, in characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Longest details, in characters.
pub const MAX_DETAILS_CHARS: usize = 8000;

/// Whether an intervention may move from `from` to `to`.
pub fn transition_allowed(from: InterventionStatus, to: InterventionStatus) -> bool {
    use InterventionStatus::*;
    from == to
        || matches!(
            (from, to),
            (Open, InProgress | Resolved | Dismissed | Cancelled)
                | (InProgress, Open | Resolved | Dismissed | Cancelled)
                | (Resolved | Dismissed, Open)
        )
}

/// An intervention as the API shows it.
#[derive(Clone, Debug, Serialize, JsonSchema)]
pub struct InterventionView {
    /// The row id.
    pub id: Uuid,
    /// `request`, `escalation`, `missing_tool`, `system_failure` or `mistake_report`.
    pub category: String,
    /// `open`, `in_progress`, `resolved`, `dismissed` or `cancelled`.
    pub status: String,
    /// Where it came from: `slack`, `email`, `api` or `web`.
    pub channel: String,
    /// One line.
    pub title: String,
    /// More, if any.
    pub details: Option<String>,
    /// The member it concerns, when known.
    pub principal_ref: Option<String>,
    /// Free-form context.
    pub metadata: Value,
    /// When it was opened.
    #[schemars(with = "String")]
    pub created_at: Ts,
    /// Last change.
    #[schemars(with = "String")]
    pub updated_at: Ts,
}

impl InterventionView {
    fn of(row: HumanIntervention, principal: Option<&Principal>) -> Self {
        InterventionView {
            id: row.id,
            category: row.category.as_str().into(),
            status: row.status.as_str().into(),
            channel: row.channel.as_str().into(),
            title: row.title,
            details: row.details,
            principal_ref: principal.map(|p| p.ref_.clone()),
            metadata: row.metadata.0,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A new intervention.
#[derive(Clone, Debug)]
pub struct NewIntervention {
    /// Its category.
    pub category: InterventionCategory,
    /// Where it came from (the API when not said).
    pub channel: Channel,
    /// One line.
    pub title: String,
    /// More, if any.
    pub details: Option<String>,
    /// The member it concerns.
    pub principal: Option<Principal>,
    /// Free-form context (a JSON object).
    pub metadata: Value,
}

/// Store `new` as an `open` intervention at `now`.
pub async fn create(
    store: &RedbStore,
    tenant: Uuid,
    new: NewIntervention,
    now: Ts,
) -> Result<(HumanIntervention, InterventionView), InsightError> {
    let title = new.title.trim().to_string();
    if title.is_empty() {
        return Err(InsightError::invalid("title", "must not be blank"));
    }
    if title.chars().count() > MAX_TITLE_CHARS {
        return Err(InsightError::invalid(
            "title",
            format!("must be at most {MAX_TITLE_CHARS} characters"),
        ));
    }
    if new
        .details
        .as_ref()
        .is_some_and(|d| d.chars().count() > MAX_DETAILS_CHARS)
    {
        return Err(InsightError::invalid(
            "details",
            format!("must be at most {MAX_DETAILS_CHARS} characters"),
        ));
    }
    if !new.metadata.is_object() {
        return Err(InsightError::invalid("metadata", "must be a JSON object"));
    }
    let row = HumanIntervention {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        principal_id: new.principal.as_ref().map(|p| p.id),
        channel: new.channel,
        category: new.category,
        status: InterventionStatus::Open,
        title,
        details: new.details,
        metadata: Json(new.metadata),
        created_at: now,
        updated_at: now,
    };
    let row = storage::Store::insert(store, row).await?;
    let view = InterventionView::of(row.clone(), new.principal.as_ref());
    Ok((row, view))
}

/// Which interventions to list.
#[derive(Clone, Debug, Default)]
pub struct InterventionFilter {
    /// Only this category.
    pub category: Option<InterventionCategory>,
    /// Only these statuses (empty: all).
    pub statuses: Vec<InterventionStatus>,
}

/// A page of interventions, newest first, after `after`.
pub async fn list(
    store: &RedbStore,
    tenant: Uuid,
    filter: InterventionFilter,
    after: Option<PageKey>,
    limit: usize,
) -> Result<(Vec<InterventionView>, Option<PageKey>), InsightError> {
    Ok(store
        .snapshot(move |s| {
            let scan = newest_first(HumanIntervention::CREATED_AT_IDX, key(), None, None, after)
                .limit(limit + 1);
            let rows: Vec<HumanIntervention> =
                s.scan_filtered(Some(tenant), &scan, |r: &HumanIntervention| {
                    filter.category.is_none_or(|c| r.category == c)
                        && (filter.statuses.is_empty() || filter.statuses.contains(&r.status))
                })?;
            let (rows, next) = cut_page(rows, limit, |r| (r.created_at, r.id));
            let people = principals_by_id(s, tenant, rows.iter().filter_map(|r| r.principal_id))?;
            let items = rows
                .into_iter()
                .map(|r| {
                    let p = r.principal_id.and_then(|p| people.get(&p));
                    InterventionView::of(r, p)
                })
                .collect();
            Ok((items, next))
        })
        .await?)
}

/// Move intervention `id` to `to` at `now` (atomically: the check and the
/// write are one transaction).
pub async fn set_status(
    store: &RedbStore,
    tenant: Uuid,
    id: Uuid,
    to: InterventionStatus,
    now: Ts,
) -> Result<InterventionView, InsightError> {
    enum Outcome {
        Missing,
        Refused(InterventionStatus),
        Done(Box<(HumanIntervention, Option<Principal>)>),
    }
    let (outcome, _) = store
        .transact(move |tx| {
            let Some(mut row) = tx.get::<HumanIntervention>(Some(tenant), key().uuid(id))? else {
                return Ok(Outcome::Missing);
            };
            if !transition_allowed(row.status, to) {
                return Ok(Outcome::Refused(row.status));
            }
            if row.status != to {
                row.status = to;
                row.updated_at = now;
                tx.update(&row)?;
            }
            let p = match row.principal_id {
                Some(p) => tx.get::<Principal>(Some(tenant), key().uuid(p))?,
                None => None,
            };
            Ok(Outcome::Done(Box::new((row, p))))
        })
        .await?;
    match outcome {
        Outcome::Missing => Err(InsightError::NotFound(format!(
            "intervention {id}: not found"
        ))),
        Outcome::Refused(from) => Err(InsightError::Conflict(format!(
            "an intervention that is {} cannot become {}",
            from.as_str(),
            to.as_str()
        ))),
        Outcome::Done(done) => {
            let (row, p) = *done;
            Ok(InterventionView::of(row, p.as_ref()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use InterventionStatus::*;

    #[test]
    fn the_transition_table() {
        for to in [InProgress, Resolved, Dismissed, Cancelled] {
            assert!(transition_allowed(Open, to));
        }
        assert!(transition_allowed(InProgress, Open));
        assert!(transition_allowed(Resolved, Open));
        assert!(transition_allowed(Dismissed, Open));
        assert!(!transition_allowed(Resolved, InProgress));
        assert!(!transition_allowed(Dismissed, Resolved));
        for to in [Open, InProgress, Resolved, Dismissed] {
            assert!(!transition_allowed(Cancelled, to), "cancelled is final");
        }
        for s in InterventionStatus::ALL {
            assert!(transition_allowed(*s, *s), "a repeat is a no-op");
        }
    }
}

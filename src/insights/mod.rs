//! Read models over what Root recorded — conversation browsing, analytics
//! buckets, the human-intervention queue and mention leaderboards (§12.2
//! read routes). Storage reads only, each answer from one read snapshot
//! through the tables' indexes (never one read per row), and no HTTP, so
//! the REST routes and any other surface share the same answers.
//!
//! Lists are keyset-paged newest first on `(time, id)`: a page ends at the
//! last row returned, so rows inserted between requests never repeat or
//! skip an item.

pub mod analytics;
pub mod conversations;
pub mod interventions;
pub mod mentions;

use std::collections::HashMap;

use storage::{
    Key, Principal, RedbStore, Scan, Snapshot, StorageError, StorageResult, Store, Ts, key,
};
use uuid::Uuid;

/// The position after which a newest-first page continues: the
/// `(time, id)` of the last row of the previous page.
pub type PageKey = (Ts, Uuid);

/// Why a read or a change was refused.
#[derive(Debug, thiserror::Error)]
pub enum InsightError {
    /// A parameter is out of range (`field` names it).
    #[error("{message}")]
    Invalid {
        /// The parameter, as the client spelled it.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
    /// A named row does not exist in this tenant.
    #[error("{0}")]
    NotFound(String),
    /// The row's state does not allow the change.
    #[error("{0}")]
    Conflict(String),
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
}

impl InsightError {
    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        InsightError::Invalid {
            field,
            message: message.into(),
        }
    }
}

/// The tenant's principal with stable ref `principal_ref`; unknown → a
/// `NotFound` naming it.
pub async fn principal_by_ref(
    store: &RedbStore,
    tenant: Uuid,
    principal_ref: &str,
) -> Result<Principal, InsightError> {
    store
        .find_unique(Some(tenant), Principal::REF_KEY, key().str(principal_ref))
        .await?
        .ok_or_else(|| {
            InsightError::NotFound(format!(
                "principal_ref {principal_ref:?}: no such principal"
            ))
        })
}

/// The agent run named in a row's metadata (`trace_id`, written by the
/// turn runner on replies and by the hand-off tools on interventions) —
/// what the dashboard links to the trace viewer.
pub fn trace_of(metadata: &serde_json::Value) -> Option<Uuid> {
    metadata.get("trace_id")?.as_str()?.parse().ok()
}

/// A newest-first scan of a `(…, time, id)` index under `prefix`, within
/// `[from, to)` and strictly before `after` when continuing a page.
pub(crate) fn newest_first(
    index: &'static str,
    prefix: Key,
    from: Option<Ts>,
    to: Option<Ts>,
    after: Option<PageKey>,
) -> Scan {
    let until = match (after, to) {
        (Some((t, _)), Some(to)) if to <= t => Some(key().ts(to)),
        (Some((t, id)), _) => Some(key().ts(t).uuid(id)),
        (None, Some(to)) => Some(key().ts(to)),
        (None, None) => None,
    };
    Scan::index(index, prefix)
        .between(from.map(|f| key().ts(f)), until)
        .desc()
}

/// Cut a `limit + 1` read down to `limit` rows and the key the next page
/// continues after (`None` on the last page).
pub(crate) fn cut_page<T>(
    mut rows: Vec<T>,
    limit: usize,
    key_of: impl Fn(&T) -> PageKey,
) -> (Vec<T>, Option<PageKey>) {
    if rows.len() > limit {
        rows.truncate(limit);
        let next = rows.last().map(&key_of);
        (rows, next)
    } else {
        (rows, None)
    }
}

/// Principals by id, read in the same snapshot (absent ids are left out).
pub(crate) fn principals_by_id(
    s: &Snapshot<'_>,
    tenant: Uuid,
    ids: impl IntoIterator<Item = Uuid>,
) -> StorageResult<HashMap<Uuid, Principal>> {
    let mut ids: Vec<Uuid> = ids.into_iter().collect();
    ids.sort_unstable();
    ids.dedup();
    let pks: Vec<Key> = ids.iter().map(|id| key().uuid(*id)).collect();
    Ok(s.get_many::<Principal>(Some(tenant), &pks)?
        .into_iter()
        .flatten()
        .map(|p| (p.id, p))
        .collect())
}

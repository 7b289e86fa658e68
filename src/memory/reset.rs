//! Resetting a member's memory (§12.2 `POST /principals/memory/reset`):
//! the rolling summary is dropped and `conversation_memory_reset_at` set,
//! so the next compaction starts from messages after the reset and nothing
//! said before it is summarised again. The version is bumped, which makes a
//! compaction running at that moment fail its compare-and-set and retry
//! from the reset. `clear_preferences` also deactivates the member's
//! `member_preferences` and empties `principals.preferences` — all in one
//! transaction.

use serde::Serialize;
use storage::{MemberPreference, Principal, RedbStore, Scan, StorageResult, Ts, key};
use uuid::Uuid;

/// What a reset did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct MemoryReset {
    /// The principal.
    pub principal_id: Uuid,
    /// The new `conversation_memory_reset_at`.
    pub reset_at: Ts,
    /// Whether a memory was there to drop.
    pub had_memory: bool,
    /// Preferences deactivated (`clear_preferences`).
    pub preferences_deactivated: usize,
}

/// Reset `principal`'s memory in `tenant` at `now`; `None` when the
/// principal is gone.
pub async fn reset_memory(
    store: &RedbStore,
    tenant: Uuid,
    principal: Uuid,
    clear_preferences: bool,
    now: Ts,
) -> StorageResult<Option<MemoryReset>> {
    let (reset, _) = store
        .transact(move |tx| {
            let Some(mut row) = tx.get::<Principal>(Some(tenant), key().uuid(principal))? else {
                return Ok(None);
            };
            let had_memory = row.conversation_memory.is_some();
            row.conversation_memory = None;
            row.conversation_memory_reset_at = Some(now);
            row.conversation_memory_source_count = 0;
            row.conversation_memory_version = row.conversation_memory_version.saturating_add(1);
            row.conversation_memory_last_error = None;
            let mut deactivated = 0;
            if clear_preferences {
                row.preferences = storage::Json(serde_json::json!({}));
                let prefs: Vec<MemberPreference> = tx.scan(
                    Some(tenant),
                    Scan::index(MemberPreference::MEMBER_IDX, key().uuid(principal)),
                )?;
                for mut p in prefs.into_iter().filter(|p| p.active) {
                    p.active = false;
                    p.updated_at = now;
                    tx.update(&p)?;
                    deactivated += 1;
                }
            }
            tx.update(&row)?;
            Ok(Some(MemoryReset {
                principal_id: principal,
                reset_at: now,
                had_memory,
                preferences_deactivated: deactivated,
            }))
        })
        .await?;
    Ok(reset)
}

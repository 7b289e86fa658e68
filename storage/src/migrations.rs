//! Ordered, named migrations tracked in `schema_migrations`.
//!
//! Rules: never edit or renumber a shipped migration; a change to a row
//! struct bumps its `Record::VERSION` and ships a migration that rewrites the
//! old rows (decode with the old struct, encode with the new one).

use redb::WriteTransaction;

use crate::codec::{Json, Ts};
use crate::error::StorageResult;
use crate::schema::{
    ConversationLog, DashboardLoginLink, DashboardSession, FollowUp, ProcessedSlackMessage,
    ROOT_TENANT_ID, Tenant,
};
use crate::table::{self, Record};

/// One migration step, applied inside the same write transaction that records it.
pub(crate) struct Migration {
    pub version: u32,
    pub name: &'static str,
    pub apply: fn(&WriteTransaction) -> StorageResult<()>,
}

/// Every migration this binary ships, in order.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "0001_create_schema_and_seed_root_tenant",
        apply: m0001_initial,
    },
    Migration {
        version: 2,
        name: "0002_durable_job_queue",
        apply: ensure_tables,
    },
    Migration {
        version: 3,
        name: "0003_index_outbox",
        apply: ensure_tables,
    },
    Migration {
        version: 4,
        name: "0004_agent_traces",
        apply: ensure_tables,
    },
    Migration {
        version: 5,
        name: "0005_processed_slack_messages_user_idx",
        apply: m0005_slack_messages_by_user,
    },
    Migration {
        version: 6,
        name: "0006_follow_ups_processing_idx",
        apply: m0006_follow_ups_processing,
    },
    Migration {
        version: 7,
        name: "0007_conversation_logs_principal_idx",
        apply: m0007_conversation_logs_by_principal,
    },
    Migration {
        version: 8,
        name: "0008_dashboard_auth",
        apply: ensure_tables,
    },
    Migration {
        version: 9,
        name: "0009_dashboard_auth_expiry_idx",
        apply: m0009_dashboard_auth_expiry,
    },
    Migration {
        version: 10,
        name: "0010_platform_api_keys",
        apply: ensure_tables,
    },
];

/// Highest migration version this binary knows.
pub fn latest_version() -> u32 {
    MIGRATIONS.last().map(|m| m.version).unwrap_or(0)
}

/// Create every table of spec §2 (idempotent) — also run on every open so a
/// table added by a later release exists before anything reads it.
pub(crate) fn ensure_tables(w: &WriteTransaction) -> StorageResult<()> {
    for t in crate::schema::all_tables() {
        t.create(w)?;
    }
    Ok(())
}

fn m0001_initial(w: &WriteTransaction) -> StorageResult<()> {
    ensure_tables(w)?;
    let now = Ts::now();
    let root = Tenant {
        id: ROOT_TENANT_ID,
        slug: "root".into(),
        display_name: "Root".into(),
        agent_name: "Root".into(),
        settings: Json::empty_object(),
        created_at: now,
        updated_at: now,
        ..Tenant::new("root", "Root")
    };
    let pk = table::full_pk::<Tenant>(None, &root.local_pk())?;
    if table::get_in_write::<Tenant>(w, &pk)?.is_none() {
        table::insert(w, &root)?;
    }
    Ok(())
}

/// `processed_slack_messages` gained `USER_IDX` (a member's contributions):
/// index the rows stored before it existed.
pub(crate) fn m0005_slack_messages_by_user(w: &WriteTransaction) -> StorageResult<()> {
    ensure_tables(w)?;
    table::rewrite_entries::<ProcessedSlackMessage>(w)?;
    Ok(())
}

/// `follow_ups` gained `PROCESSING_IDX` (the sweep's lease recovery): index
/// the rows stored before it existed.
pub(crate) fn m0006_follow_ups_processing(w: &WriteTransaction) -> StorageResult<()> {
    ensure_tables(w)?;
    table::rewrite_entries::<FollowUp>(w)?;
    Ok(())
}

/// `conversation_logs` gained `PRINCIPAL_MESSAGE_AT_IDX` (a member's
/// messages, for conversation memory): index the rows stored before it existed.
pub(crate) fn m0007_conversation_logs_by_principal(w: &WriteTransaction) -> StorageResult<()> {
    ensure_tables(w)?;
    table::rewrite_entries::<ConversationLog>(w)?;
    Ok(())
}

/// `dashboard_login_links` gained `EXPIRES_IDX` and `dashboard_sessions`
/// `ENDS_IDX` (retention of sign-in rows, §14.1): index the rows stored
/// before they existed.
pub(crate) fn m0009_dashboard_auth_expiry(w: &WriteTransaction) -> StorageResult<()> {
    ensure_tables(w)?;
    table::rewrite_entries::<DashboardLoginLink>(w)?;
    table::rewrite_entries::<DashboardSession>(w)?;
    Ok(())
}

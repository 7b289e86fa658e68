//! Row types for every table of spec §2, grouped as the spec groups them.
//! Each struct is one table; its `Record` impl declares the table's unique
//! constraints, secondary indexes and foreign keys (see `table.rs`).
//!
//! Column names follow the spec. Columns the spec lists without a type get
//! the narrowest type that fits their use; see `docs/decisions.md`.

// Row fields are the spec's column names; their docs live in spec §2.
#![allow(missing_docs)]

mod auth;
mod channels;
mod core;
mod knowledge;
mod members;
mod ops;
mod slack;
mod trace;

pub use self::auth::*;
pub use self::channels::*;
pub use self::core::*;
pub use self::knowledge::*;
pub use self::members::*;
pub use self::ops::*;
pub use self::slack::*;
pub use self::trace::*;

use crate::table::{DynTable, Handle};

/// `tenants` table name (its delete purges the tenant's rows everywhere).
pub const TENANTS: &str = "tenants";

/// The fixed id of the root tenant seeded by migration 1.
pub const ROOT_TENANT_ID: uuid::Uuid = uuid::uuid!("11111111-1111-4111-8111-111111111111");

/// Implements `tenant()` and `local_pk()` for rows with `tenant_id` + `id: Uuid`.
macro_rules! tenant_row {
    () => {
        fn tenant(&self) -> Option<uuid::Uuid> {
            Some(self.tenant_id)
        }
        fn local_pk(&self) -> crate::key::Key {
            crate::key::key().uuid(self.id)
        }
    };
}
pub(crate) use tenant_row;

/// Lower-cased form used by case-insensitive email constraints.
pub(crate) fn lower(s: &str) -> String {
    s.trim().to_lowercase()
}

/// Every table, in creation order.
pub(crate) fn all_tables() -> &'static [&'static dyn DynTable] {
    &[
        &Handle::<Tenant>::NEW,
        &Handle::<TenantCredential>::NEW,
        &Handle::<Integration>::NEW,
        &Handle::<Principal>::NEW,
        &Handle::<ConversationLog>::NEW,
        &Handle::<RootPrompt>::NEW,
        &Handle::<RootPromptVersion>::NEW,
        &Handle::<LlmTokenUsage>::NEW,
        &Handle::<ApiRequestUsage>::NEW,
        &Handle::<IntegrationToolCall>::NEW,
        &Handle::<SlackLog>::NEW,
        &Handle::<EmailLog>::NEW,
        &Handle::<PlatformAdmin>::NEW,
        &Handle::<TenantUser>::NEW,
        &Handle::<TenantApiKey>::NEW,
        &Handle::<PlatformSetting>::NEW,
        &Handle::<PlatformApiKey>::NEW,
        &Handle::<DashboardLoginLink>::NEW,
        &Handle::<DashboardSession>::NEW,
        &Handle::<TenantChannel>::NEW,
        &Handle::<TenantAsset>::NEW,
        &Handle::<MemberPreference>::NEW,
        &Handle::<FollowUp>::NEW,
        &Handle::<FollowUpRun>::NEW,
        &Handle::<RootActionAlert>::NEW,
        &Handle::<RootActionAlertTrigger>::NEW,
        &Handle::<HumanIntervention>::NEW,
        &Handle::<EmailDelegation>::NEW,
        &Handle::<WebLinkToken>::NEW,
        &Handle::<WebBrowserSession>::NEW,
        &Handle::<ConversationWorkSaved>::NEW,
        &Handle::<ReplyMention>::NEW,
        &Handle::<ReplySourceUsage>::NEW,
        &Handle::<KnowledgeSource>::NEW,
        &Handle::<KnowledgePage>::NEW,
        &Handle::<KnowledgeChunk>::NEW,
        &Handle::<KnowledgeSyncRun>::NEW,
        &Handle::<ProcessedSlackMessage>::NEW,
        &Handle::<SlackThreadArtifact>::NEW,
        &Handle::<SlackMessageEnrichment>::NEW,
        &Handle::<SlackKnowledgeExtraction>::NEW,
        &Handle::<SlackExtractionState>::NEW,
        &Handle::<CommunityBuildListing>::NEW,
        &Handle::<CommunityBuildInstall>::NEW,
        &Handle::<CommunityBuildToolRun>::NEW,
        &Handle::<QueueJobEvent>::NEW,
        &Handle::<SchemaMigration>::NEW,
        &Handle::<crate::queue::Job>::NEW,
        &Handle::<crate::index_outbox::IndexOutboxEntry>::NEW,
        &Handle::<crate::index_outbox::IndexState>::NEW,
        &Handle::<crate::index_outbox::IndexOutboxSeq>::NEW,
        &Handle::<AgentTrace>::NEW,
        &Handle::<AgentTraceSpan>::NEW,
    ]
}

/// Names of every table of spec §2 (for docs, dumps and tests).
pub fn table_names() -> Vec<&'static str> {
    all_tables().iter().map(|t| t.def().name).collect()
}

//! What Root keeps from a conversation once it is over (§6, §13): a rolling
//! per-member memory (`conversation-memory`) and a per-exchange estimate of
//! the human work the reply saved (`conversation-work-saved`).
//!
//! Both run as queued jobs after the exchange, never inside the member's
//! turn: the reply is not delayed by them, and a provider failure becomes a
//! job retry instead of a failed turn. [`after_exchange`] is the one place a
//! channel turn hands an exchange over.
//!
//! - [`compaction`]: the member's new `conversation_logs` + the old memory →
//!   the new `principals.conversation_memory`.
//! - [`reset`]: `POST /principals/memory/reset` — forget, and never
//!   summarise again, what came before.
//! - [`work_saved`]: one exchange → a `conversation_work_saved` row (live
//!   tenants only).

pub mod compaction;
pub mod reset;
pub mod work_saved;

use storage::{Environment, Tenant};
use uuid::Uuid;

use crate::queue::Queues;

pub use compaction::{ConversationMemoryJob, MemoryCompaction};
pub use work_saved::{WorkSavedEstimator, WorkSavedJob};

/// Queue the jobs that follow one finished exchange of `tenant`: the
/// memory compaction of its member (when the member has a principal row)
/// and, on a live tenant, the work-saved estimate. An enqueue failure is
/// logged, never the member's problem: the reply already went out.
pub async fn after_exchange(
    queues: &Queues,
    tenant: &Tenant,
    principal_id: Option<Uuid>,
    exchange_key: &str,
) {
    if let Some(principal) = principal_id
        && let Err(e) = compaction::enqueue(queues, tenant.id, principal).await
    {
        tracing::warn!(error = %e, queue = crate::queue::registry::CONVERSATION_MEMORY, "memory compaction not queued");
    }
    if tenant.environment == Environment::Live
        && let Err(e) = work_saved::enqueue(queues, tenant.id, exchange_key).await
    {
        tracing::warn!(error = %e, queue = crate::queue::registry::CONVERSATION_WORK_SAVED, "work-saved estimate not queued");
    }
}

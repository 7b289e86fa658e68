//! Per-tenant fan-out of a scheduled tick (§13 "fan-out per tenant"). The
//! scheduler's tick carries no tenant; its handler calls [`fan_out`], which
//! enqueues one job per active tenant on the same queue with the same
//! payload. Each tenant's run then has the queue's own attempts and backoff,
//! runs inside that tenant's scope, and one tenant failing retries that
//! tenant alone.

use storage::{EnqueueMode, EnqueueOutcome, StorageResult, TenantStatus, TenantStore, Ts};

use super::job::{JobOptions, QueuePayload};
use super::runtime::Queues;

/// The id of tenant `tenant`'s job for the tick of `slot`: once per tenant
/// per slot, so a retried or repeated tick never queues a tenant twice.
pub fn tenant_job_id(queue: &str, tenant: uuid::Uuid, slot: Ts) -> String {
    format!("{queue}:{tenant}:{}", slot.micros())
}

/// Enqueue `payload` once for every active tenant (job id
/// [`tenant_job_id`], `EnqueueMode::Once`); returns how many jobs are new.
pub async fn fan_out<P: QueuePayload>(
    queues: &Queues,
    payload: &P,
    slot: Ts,
) -> StorageResult<usize> {
    let tenants = queues.store().list_tenants().await?;
    let mut queued = 0;
    for tenant in tenants
        .into_iter()
        .filter(|t| t.status == TenantStatus::Active)
    {
        let (outcome, _) = queues
            .enqueue_job(
                payload,
                JobOptions {
                    id: Some(tenant_job_id(P::QUEUE, tenant.id, slot)),
                    tenant_id: Some(tenant.id),
                    delay_ms: 0,
                    mode: EnqueueMode::Once,
                },
            )
            .await?;
        if outcome != EnqueueOutcome::Deduplicated {
            queued += 1;
        }
    }
    Ok(queued)
}

//! Repeatables (§13): each registered queue with a schedule gets a cron job
//! (tokio-cron-scheduler) that enqueues one tick per time slot. The job id is
//! `<queue>:<slot>` with `EnqueueMode::Once`, so a restart or a second
//! scheduler never produces two runs of one slot.

use storage::{EnqueueMode, EnqueueOutcome, StorageResult, Ts};
use tokio_cron_scheduler::{Job as CronJob, JobScheduler};

use super::registry::QueueSpec;
use super::runtime::{Enqueue, Queues};

/// The slot a tick at `now` belongs to: the nearest period boundary, so a
/// timer firing a few ms early or late lands in the same slot.
pub fn slot(now: Ts, every_secs: i64) -> i64 {
    let every = every_secs.max(1) * 1_000_000;
    (now.micros() + every / 2).div_euclid(every)
}

/// The payload of every tick: when it fired. Each repeatable queue reads it
/// as its own type (`queue::job`'s tick payloads).
pub fn tick_payload(now: Ts) -> serde_json::Value {
    serde_json::json!({ "scheduled_for": now })
}

/// Enqueue the tick of `spec` for the slot of `now`.
pub async fn enqueue_tick(
    queues: &Queues,
    spec: &QueueSpec,
    now: Ts,
) -> StorageResult<EnqueueOutcome> {
    let Some(repeat) = spec.repeat else {
        return Ok(EnqueueOutcome::Deduplicated);
    };
    let id = format!("{}:{}", spec.name, slot(now, repeat.every_secs));
    let (outcome, _) = queues
        .enqueue_with_spec(
            spec,
            Enqueue {
                id: Some(id),
                payload: tick_payload(now),
                mode: EnqueueMode::Once,
                ..Default::default()
            },
        )
        .await?;
    Ok(outcome)
}

/// Start a scheduler with one cron job per registered repeatable.
pub async fn start(queues: Queues, specs: Vec<QueueSpec>) -> anyhow::Result<JobScheduler> {
    let sched = JobScheduler::new().await?;
    for spec in specs.into_iter().filter(|s| s.repeat.is_some()) {
        let repeat = spec.repeat.expect("filtered");
        let queues = queues.clone();
        let job = CronJob::new_async(repeat.cron, move |_id, _lock| {
            let queues = queues.clone();
            Box::pin(async move {
                let now = queues.clock().now();
                match enqueue_tick(&queues, &spec, now).await {
                    Ok(outcome) => tracing::debug!(queue = spec.name, ?outcome, "tick"),
                    Err(e) => tracing::error!(queue = spec.name, error = %e, "tick not enqueued"),
                }
            })
        })?;
        sched.add(job).await?;
        tracing::info!(
            queue = spec.name,
            cron = repeat.cron,
            "repeatable registered"
        );
    }
    sched.start().await?;
    Ok(sched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tick_a_little_early_or_late_names_the_same_slot() {
        let boundary = Ts::from_secs(1_800_000_000); // a multiple of 60
        let s = slot(boundary, 60);
        assert_eq!(slot(boundary.plus_micros(-3_000), 60), s);
        assert_eq!(slot(boundary.plus_micros(250_000), 60), s);
        assert_eq!(slot(boundary.plus_micros(60_000_000), 60), s + 1);
    }
}

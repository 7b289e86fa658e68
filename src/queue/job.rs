//! Typed jobs (like `TypedTool` for tools): each §13 queue has one payload
//! type that names its queue, so a producer cannot put a payload on the
//! wrong queue and a handler receives the parsed payload, never raw JSON.
//! A payload that does not parse fails the job permanently (retrying the
//! same bytes cannot help) with a message naming the queue.

use async_trait::async_trait;
use serde::Serialize;
use serde::de::DeserializeOwned;
use storage::{EnqueueMode, EnqueueOutcome, Job, StorageResult, Ts};
use uuid::Uuid;

use super::registry;
use super::runtime::{Enqueue, HandlerResult, JobContext, JobError, JobHandler, Queues};

/// The payload of one §13 queue.
pub trait QueuePayload: Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The queue it travels on (a [`registry`] constant).
    const QUEUE: &'static str;
}

/// The runner of one queue's jobs, given the parsed payload.
#[async_trait]
pub trait TypedJobHandler: Send + Sync + 'static {
    /// The queue's payload (its `QUEUE` names the queue handled).
    type Payload: QueuePayload;

    /// Run one job. Runs inside the job's tenant context when it has one.
    async fn run(&self, payload: Self::Payload, ctx: &mut JobContext) -> HandlerResult;
}

/// Adapts a [`TypedJobHandler`] to the runtime's untyped [`JobHandler`].
pub(crate) struct Typed<H>(pub H);

#[async_trait]
impl<H: TypedJobHandler> JobHandler for Typed<H> {
    async fn run(&self, ctx: &mut JobContext) -> HandlerResult {
        let payload = parse_payload::<H::Payload>(ctx.payload())?;
        self.0.run(payload, ctx).await
    }
}

/// Parse a stored payload as `P`; a mismatch is a permanent failure.
pub fn parse_payload<P: QueuePayload>(raw: &serde_json::Value) -> Result<P, JobError> {
    P::deserialize(raw).map_err(|e| {
        JobError::Permanent(format!(
            "payload of a {} job does not match its type: {e}",
            P::QUEUE
        ))
    })
}

/// How to enqueue a typed job (the payload travels separately).
#[derive(Clone, Debug, Default)]
pub struct JobOptions {
    /// Job id (dedupe key); `None` = a fresh UUID.
    pub id: Option<String>,
    /// Tenant the job acts for.
    pub tenant_id: Option<Uuid>,
    /// Delay before the job is due.
    pub delay_ms: u64,
    /// Dedupe / coalesce / once.
    pub mode: EnqueueMode,
}

impl Queues {
    /// Enqueue `payload` durably on its own queue ([`QueuePayload::QUEUE`]).
    pub async fn enqueue_job<P: QueuePayload>(
        &self,
        payload: &P,
        opts: JobOptions,
    ) -> StorageResult<(EnqueueOutcome, Job)> {
        let payload = serde_json::to_value(payload).map_err(|e| storage::StorageError::Check {
            column: "payload",
            message: format!("a {} payload does not serialize: {e}", P::QUEUE),
        })?;
        self.enqueue(
            P::QUEUE,
            Enqueue {
                id: opts.id,
                tenant_id: opts.tenant_id,
                payload,
                delay_ms: opts.delay_ms,
                mode: opts.mode,
            },
        )
        .await
    }
}

/// Declares the payload of a repeatable queue: the scheduler's tick
/// (`{"scheduled_for": <ts>}`, see `scheduler::enqueue_tick`).
macro_rules! tick_payload {
    ($(#[$doc:meta])* $name:ident => $queue:path) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
        pub struct $name {
            /// When the scheduler fired (the slot's time).
            pub scheduled_for: Ts,
        }

        impl QueuePayload for $name {
            const QUEUE: &'static str = $queue;
        }
    };
}

tick_payload!(
    /// `follow-up-sweep` (every minute).
    FollowUpSweepTick => registry::FOLLOW_UP_SWEEP
);
tick_payload!(
    /// `embedding-audit` (every 5 minutes).
    EmbeddingAuditTick => registry::EMBEDDING_AUDIT
);
tick_payload!(
    /// `knowledge-source-scheduler` (every minute).
    KnowledgeSourceSchedulerTick => registry::KNOWLEDGE_SOURCE_SCHEDULER
);
tick_payload!(
    /// `slack-knowledge-extraction` (hourly).
    SlackKnowledgeExtractionTick => registry::SLACK_KNOWLEDGE_EXTRACTION
);
tick_payload!(
    /// `channel-join-sweep` (every 6 hours).
    ChannelJoinSweepTick => registry::CHANNEL_JOIN_SWEEP
);
tick_payload!(
    /// `principal-roster-sweep` (every 6 hours).
    PrincipalRosterSweepTick => registry::PRINCIPAL_ROSTER_SWEEP
);
tick_payload!(
    /// `reply-mention-sweep` (hourly).
    ReplyMentionSweepTick => registry::REPLY_MENTION_SWEEP
);
tick_payload!(
    /// `queue-metrics` (every minute).
    QueueMetricsTick => registry::QUEUE_METRICS
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Every tick payload names a repeatable queue of the §13 table, and
    /// parses what the scheduler enqueues.
    #[test]
    fn tick_payloads_match_the_scheduler_and_the_table() {
        fn check<P: QueuePayload>() {
            let spec = registry::spec(P::QUEUE).expect("a §13 queue");
            assert!(spec.repeat.is_some(), "{} is repeatable", P::QUEUE);
            let now = Ts::from_secs(1_800_000_000);
            let raw = super::super::scheduler::tick_payload(now);
            let parsed: P = parse_payload(&raw).unwrap();
            assert_eq!(serde_json::to_value(&parsed).unwrap(), raw);
        }
        check::<FollowUpSweepTick>();
        check::<EmbeddingAuditTick>();
        check::<KnowledgeSourceSchedulerTick>();
        check::<SlackKnowledgeExtractionTick>();
        check::<ChannelJoinSweepTick>();
        check::<PrincipalRosterSweepTick>();
        check::<ReplyMentionSweepTick>();
        check::<QueueMetricsTick>();
        let repeatables = registry::QUEUES
            .iter()
            .filter(|q| q.repeat.is_some())
            .count();
        assert_eq!(
            repeatables, 8,
            "a new repeatable needs its tick payload here"
        );
    }

    #[test]
    fn a_payload_of_the_wrong_shape_fails_permanently_naming_the_queue() {
        let err = parse_payload::<QueueMetricsTick>(&serde_json::json!({"nope": 1})).unwrap_err();
        match err {
            JobError::Permanent(m) => assert!(m.contains("queue-metrics"), "{m}"),
            other => panic!("expected a permanent failure, got {other:?}"),
        }
    }
}

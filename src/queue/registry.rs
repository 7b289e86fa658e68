//! The queues of spec §13 as data: names (verbatim — they are stable once
//! deployed), concurrency, attempts and backoff, schedules and rate limits.

/// `email-inbound`
pub const EMAIL_INBOUND: &str = "email-inbound";
/// `conversation-memory`
pub const CONVERSATION_MEMORY: &str = "conversation-memory";
/// `conversation-work-saved`
pub const CONVERSATION_WORK_SAVED: &str = "conversation-work-saved";
/// `follow-up-sweep`
pub const FOLLOW_UP_SWEEP: &str = "follow-up-sweep";
/// `slack-knowledge-ingest`
pub const SLACK_KNOWLEDGE_INGEST: &str = "slack-knowledge-ingest";
/// `slack-thread-distill`
pub const SLACK_THREAD_DISTILL: &str = "slack-thread-distill";
/// `embedding-audit`
pub const EMBEDDING_AUDIT: &str = "embedding-audit";
/// `knowledge-source-scheduler`
pub const KNOWLEDGE_SOURCE_SCHEDULER: &str = "knowledge-source-scheduler";
/// `knowledge-source-sync`
pub const KNOWLEDGE_SOURCE_SYNC: &str = "knowledge-source-sync";
/// `slack-knowledge-extraction`
pub const SLACK_KNOWLEDGE_EXTRACTION: &str = "slack-knowledge-extraction";
/// `channel-join-sweep`
pub const CHANNEL_JOIN_SWEEP: &str = "channel-join-sweep";
/// `slack-admin-broadcast`
pub const SLACK_ADMIN_BROADCAST: &str = "slack-admin-broadcast";
/// `principal-roster-sweep`
pub const PRINCIPAL_ROSTER_SWEEP: &str = "principal-roster-sweep";
/// `reply-mention-sweep`
pub const REPLY_MENTION_SWEEP: &str = "reply-mention-sweep";
/// `queue-metrics`
pub const QUEUE_METRICS: &str = "queue-metrics";

/// A cron schedule (6 fields, with seconds, UTC) and its period in seconds
/// (the period names the time slot a tick belongs to).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Repeat {
    /// Cron expression aligned to wall-clock boundaries.
    pub cron: &'static str,
    /// Period in seconds.
    pub every_secs: i64,
}

/// Which limiter a queue's jobs pass before running.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateLimit {
    /// §13/§15.3: 60/min global + `ROOT_SLACK_INGEST_PER_TENANT_PER_MINUTE`
    /// per tenant (tenant override `settings.limits.slack_ingest_per_tenant_per_minute`).
    SlackIngest,
    /// §15.3: at most `ROOT_KNOWLEDGE_SYNC_PER_TENANT_CAP` jobs of one
    /// tenant run at once (tenant override
    /// `settings.limits.knowledge_sync_per_tenant_cap`); the others wait.
    KnowledgeSyncPerTenant,
}

/// One row of the §13 table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueSpec {
    /// Queue name.
    pub name: &'static str,
    /// Jobs of this queue run at most this many at once.
    pub concurrency: usize,
    /// Attempts per job.
    pub attempts: u32,
    /// Exponential backoff base (ms).
    pub backoff_ms: u64,
    /// A scheduled tick (repeatable), if any.
    pub repeat: Option<Repeat>,
    /// A rate limit, if any.
    pub rate_limit: Option<RateLimit>,
}

const fn q(name: &'static str, concurrency: usize, attempts: u32, backoff_ms: u64) -> QueueSpec {
    QueueSpec {
        name,
        concurrency,
        attempts,
        backoff_ms,
        repeat: None,
        rate_limit: None,
    }
}

const fn tick(name: &'static str, cron: &'static str, every_secs: i64) -> QueueSpec {
    QueueSpec {
        name,
        concurrency: 1,
        attempts: 1,
        backoff_ms: 0,
        repeat: Some(Repeat { cron, every_secs }),
        rate_limit: None,
    }
}

/// Spec §13, row by row.
pub const QUEUES: &[QueueSpec] = &[
    q(EMAIL_INBOUND, 4, 5, 10_000),
    q(CONVERSATION_MEMORY, 2, 3, 5_000),
    q(CONVERSATION_WORK_SAVED, 2, 3, 10_000),
    tick(FOLLOW_UP_SWEEP, "0 * * * * *", 60),
    QueueSpec {
        rate_limit: Some(RateLimit::SlackIngest),
        ..q(SLACK_KNOWLEDGE_INGEST, 2, 3, 5_000)
    },
    q(SLACK_THREAD_DISTILL, 2, 2, 60_000),
    QueueSpec {
        concurrency: 1,
        attempts: 2,
        backoff_ms: 60_000,
        ..tick(EMBEDDING_AUDIT, "0 */5 * * * *", 300)
    },
    tick(KNOWLEDGE_SOURCE_SCHEDULER, "0 * * * * *", 60),
    QueueSpec {
        rate_limit: Some(RateLimit::KnowledgeSyncPerTenant),
        ..q(KNOWLEDGE_SOURCE_SYNC, 3, 4, 30_000)
    },
    QueueSpec {
        concurrency: 2,
        attempts: 3,
        backoff_ms: 60_000,
        ..tick(SLACK_KNOWLEDGE_EXTRACTION, "0 0 * * * *", 3600)
    },
    QueueSpec {
        concurrency: 2,
        attempts: 3,
        backoff_ms: 5_000,
        ..tick(CHANNEL_JOIN_SWEEP, "0 0 */6 * * *", 6 * 3600)
    },
    q(SLACK_ADMIN_BROADCAST, 1, 1, 0),
    QueueSpec {
        concurrency: 2,
        attempts: 3,
        backoff_ms: 60_000,
        ..tick(PRINCIPAL_ROSTER_SWEEP, "0 0 */6 * * *", 6 * 3600)
    },
    tick(REPLY_MENTION_SWEEP, "0 0 * * * *", 3600),
    tick(QUEUE_METRICS, "0 * * * * *", 60),
];

/// The spec row of `name`.
pub fn spec(name: &str) -> Option<&'static QueueSpec> {
    QUEUES.iter().find(|q| q.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_matches_spec_13() {
        let row = |n: &str| {
            let s = spec(n).unwrap();
            (s.concurrency, s.attempts, s.backoff_ms)
        };
        assert_eq!(row("email-inbound"), (4, 5, 10_000));
        assert_eq!(row("conversation-memory"), (2, 3, 5_000));
        assert_eq!(row("conversation-work-saved"), (2, 3, 10_000));
        assert_eq!(row("follow-up-sweep"), (1, 1, 0));
        assert_eq!(row("slack-knowledge-ingest"), (2, 3, 5_000));
        assert_eq!(row("slack-thread-distill"), (2, 2, 60_000));
        assert_eq!(row("embedding-audit"), (1, 2, 60_000));
        assert_eq!(row("knowledge-source-scheduler"), (1, 1, 0));
        assert_eq!(row("knowledge-source-sync"), (3, 4, 30_000));
        assert_eq!(row("slack-knowledge-extraction"), (2, 3, 60_000));
        assert_eq!(row("channel-join-sweep"), (2, 3, 5_000));
        assert_eq!(row("slack-admin-broadcast"), (1, 1, 0));
        assert_eq!(row("principal-roster-sweep"), (2, 3, 60_000));
        assert_eq!(row("reply-mention-sweep"), (1, 1, 0));
        assert_eq!(row("queue-metrics"), (1, 1, 0));
        assert_eq!(QUEUES.len(), 15);
        let every = |n: &str| spec(n).unwrap().repeat.map(|r| r.every_secs);
        assert_eq!(every("follow-up-sweep"), Some(60));
        assert_eq!(every("embedding-audit"), Some(300));
        assert_eq!(every("knowledge-source-scheduler"), Some(60));
        assert_eq!(every("slack-knowledge-extraction"), Some(3600));
        assert_eq!(every("channel-join-sweep"), Some(21_600));
        assert_eq!(every("principal-roster-sweep"), Some(21_600));
        assert_eq!(every("reply-mention-sweep"), Some(3600));
        assert_eq!(every("queue-metrics"), Some(60));
        assert_eq!(every("email-inbound"), None);
        assert_eq!(
            spec("knowledge-source-sync").unwrap().rate_limit,
            Some(RateLimit::KnowledgeSyncPerTenant)
        );
        assert_eq!(
            spec("slack-knowledge-ingest").unwrap().rate_limit,
            Some(RateLimit::SlackIngest)
        );
    }
}

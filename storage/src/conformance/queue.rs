//! Checks of the durable job queue (`JobQueue`): delays, exponential
//! backoff, permanent errors, id dedupe, coalescing, lease expiry with
//! checkpoints, stats / events / retention, complete-and-claim.

use super::{FullStore, migrated};
use crate::codec::Ts;
use crate::enums::*;
use crate::queue::*;

const SEC: i64 = 1_000_000;

fn job(queue: &str, id: Option<&str>) -> NewJob {
    NewJob {
        queue: queue.into(),
        id: id.map(Into::into),
        tenant_id: None,
        payload: serde_json::json!({"n": 1}),
        max_attempts: 3,
        backoff_ms: 10_000,
        delay_ms: 0,
        mode: EnqueueMode::Dedupe,
    }
}

/// Delayed jobs are not claimed before `run_at`.
pub async fn queue_delayed_jobs_wait_for_run_at<S: FullStore>(s: S) {
    migrated(&s).await;
    let t0 = Ts::now();
    let (out, j) = s
        .enqueue(
            NewJob {
                delay_ms: 5_000,
                ..job("q", Some("later"))
            },
            t0,
        )
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Created);
    assert_eq!(j.state, JobState::Delayed);
    assert!(
        s.claim("q", "w1", t0.plus_micros(4 * SEC), 30_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        s.next_due("q").await.unwrap(),
        Some(t0.plus_micros(5 * SEC))
    );
    let got = s
        .claim("q", "w1", t0.plus_micros(5 * SEC), 30_000, 10)
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].state, JobState::Active);
    assert_eq!(got[0].attempts_made, 1);
    assert!(
        s.claim("other", "w1", t0.plus_micros(60 * SEC), 30_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "queues are separate"
    );
}

/// `base × 2^(attempt−1)`; after the last attempt the job is `failed` with an event.
pub async fn queue_retries_back_off_exponentially_then_fail<S: FullStore>(s: S) {
    migrated(&s).await;
    let mut now = Ts::now();
    s.enqueue(job("q", Some("r")), now).await.unwrap();
    for attempt in 1..=3u32 {
        let got = s.claim("q", "w", now, 30_000, 1).await.unwrap();
        assert_eq!(got.len(), 1, "attempt {attempt} is due");
        assert_eq!(got[0].attempts_made, attempt);
        let j = s
            .fail("q", "r", "w", "boom", false, now)
            .await
            .unwrap()
            .unwrap();
        if attempt < 3 {
            let wait = 10 * SEC * (1 << (attempt - 1));
            assert_eq!(j.state, JobState::Delayed);
            assert_eq!(j.run_at, now.plus_micros(wait), "attempt {attempt}");
            assert!(
                s.claim("q", "w", now.plus_micros(wait - 1), 30_000, 1)
                    .await
                    .unwrap()
                    .is_empty()
            );
            now = now.plus_micros(wait);
        } else {
            assert_eq!(j.state, JobState::Failed);
            assert_eq!(j.error.as_deref(), Some("boom"));
        }
    }
    assert_eq!(Job::backoff_for(10_000, 1), 10_000);
    assert_eq!(Job::backoff_for(10_000, 4), 80_000);
    let events = s.recent_events("q", 10).await.unwrap();
    assert_eq!(
        events.len(),
        1,
        "one event per finished job, not per attempt"
    );
    assert_eq!(events[0].status, JobEventStatus::Failed);
    assert_eq!(events[0].job_id, "r");
}

/// A handler can mark an error permanent: no retry.
pub async fn queue_permanent_errors_do_not_retry<S: FullStore>(s: S) {
    migrated(&s).await;
    let now = Ts::now();
    s.enqueue(job("q", Some("p")), now).await.unwrap();
    s.claim("q", "w", now, 30_000, 1).await.unwrap();
    let j = s
        .fail("q", "p", "w", "bad payload", true, now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((j.state, j.attempts_made), (JobState::Failed, 1));
    assert!(
        s.fail("q", "p", "w", "again", false, now)
            .await
            .unwrap()
            .is_none(),
        "no lease any more"
    );
}

/// An id that is waiting, delayed or active creates nothing new; a finished id is replaced.
pub async fn queue_job_ids_dedupe_while_live<S: FullStore>(s: S) {
    migrated(&s).await;
    let now = Ts::now();
    let (_, first) = s
        .enqueue(
            NewJob {
                delay_ms: 1000,
                ..job("q", Some("d"))
            },
            now,
        )
        .await
        .unwrap();
    let (out, same) = s
        .enqueue(
            NewJob {
                payload: serde_json::json!({"n": 2}),
                ..job("q", Some("d"))
            },
            now,
        )
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Deduplicated);
    assert_eq!(same, first, "delayed: unchanged");
    s.claim("q", "w", now.plus_micros(SEC), 30_000, 1)
        .await
        .unwrap();
    assert_eq!(
        s.enqueue(job("q", Some("d")), now).await.unwrap().0,
        EnqueueOutcome::Deduplicated,
        "active"
    );
    assert_eq!(s.stats("q", now.plus_micros(SEC)).await.unwrap().active, 1);
    s.complete("q", "d", "w", None, now.plus_micros(2 * SEC))
        .await
        .unwrap()
        .unwrap();
    let (out, fresh) = s
        .enqueue(job("q", Some("d")), now.plus_micros(3 * SEC))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Created, "completed ids can run again");
    assert_eq!(fresh.attempts_made, 0);
    // Once: a finished id is not run again (scheduled tick slots).
    let once = |id: &str| NewJob {
        mode: EnqueueMode::Once,
        ..job("tick", Some(id))
    };
    s.enqueue(once("tick:1"), now).await.unwrap();
    s.claim("tick", "w", now, 30_000, 1).await.unwrap();
    s.complete("tick", "tick:1", "w", None, now).await.unwrap();
    assert_eq!(
        s.enqueue(once("tick:1"), now).await.unwrap().0,
        EnqueueOutcome::Deduplicated
    );
    assert!(
        s.claim("tick", "w", now, 30_000, 1)
            .await
            .unwrap()
            .is_empty()
    );
    let (_, a) = s.enqueue(job("q", None), now).await.unwrap();
    let (_, b) = s.enqueue(job("q", None), now).await.unwrap();
    assert_ne!(a.id, b.id, "no id: always a new job");
}

/// Coalescing: a waiting re-add resets the timer; an active re-add guarantees exactly one more run.
pub async fn queue_coalescing_resets_timers_and_reruns_after_active<S: FullStore>(s: S) {
    migrated(&s).await;
    let t0 = Ts::now();
    let co = |delay_ms, n: i32| NewJob {
        delay_ms,
        mode: EnqueueMode::Coalesce,
        payload: serde_json::json!({"n": n}),
        ..job("distill", Some("thread-1"))
    };
    s.enqueue(co(600_000, 1), t0).await.unwrap();
    let (out, j) = s
        .enqueue(co(600_000, 2), t0.plus_micros(60 * SEC))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Rescheduled);
    assert_eq!(
        j.run_at,
        t0.plus_micros(660 * SEC),
        "timer reset by the re-add"
    );
    assert!(
        s.claim("distill", "w", t0.plus_micros(600 * SEC), 30_000, 5)
            .await
            .unwrap()
            .is_empty()
    );
    let running = s
        .claim("distill", "w", t0.plus_micros(660 * SEC), 30_000, 5)
        .await
        .unwrap();
    assert_eq!(running[0].payload.0["n"], 2);
    // Two updates arrive while it runs: one more run, with the latest payload.
    s.enqueue(co(600_000, 3), t0.plus_micros(670 * SEC))
        .await
        .unwrap();
    let (out, _) = s
        .enqueue(co(600_000, 4), t0.plus_micros(680 * SEC))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::RerunScheduled);
    assert_eq!(
        s.stats("distill", t0.plus_micros(680 * SEC))
            .await
            .unwrap()
            .waiting,
        0,
        "never two runs at once"
    );
    let after = s
        .complete("distill", "thread-1", "w", None, t0.plus_micros(700 * SEC))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.state, JobState::Delayed);
    assert_eq!(after.run_at, t0.plus_micros(1280 * SEC));
    let rerun = s
        .claim("distill", "w", t0.plus_micros(1280 * SEC), 30_000, 5)
        .await
        .unwrap();
    assert_eq!(rerun.len(), 1);
    assert_eq!(rerun[0].payload.0["n"], 4);
    let done = s
        .complete("distill", "thread-1", "w", None, t0.plus_micros(1300 * SEC))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.state, JobState::Completed, "exactly one extra run");
    assert_eq!(s.recent_events("distill", 10).await.unwrap().len(), 2);
}

/// A lease that expires (worker killed) returns the job to waiting with its checkpoint; the old owner is fenced off.
pub async fn queue_expired_leases_return_jobs_with_their_checkpoint<S: FullStore>(s: S) {
    migrated(&s).await;
    let now = Ts::now();
    s.enqueue(job("email-inbound", Some("m1")), now)
        .await
        .unwrap();
    s.claim("email-inbound", "dead", now, 30_000, 1)
        .await
        .unwrap();
    assert!(
        s.save_checkpoint(
            "email-inbound",
            "m1",
            "dead",
            serde_json::json!({"reply": "prepared"})
        )
        .await
        .unwrap()
    );
    assert!(
        !s.save_checkpoint("email-inbound", "m1", "intruder", serde_json::json!({}))
            .await
            .unwrap()
    );
    assert!(
        s.renew_lease("email-inbound", "m1", "dead", now.plus_micros(60 * SEC))
            .await
            .unwrap()
    );
    assert!(
        s.reclaim_expired(now.plus_micros(59 * SEC))
            .await
            .unwrap()
            .is_empty(),
        "renewed lease holds"
    );
    assert_eq!(
        s.next_lease_expiry().await.unwrap(),
        Some(now.plus_micros(60 * SEC))
    );
    let back = s.reclaim_expired(now.plus_micros(61 * SEC)).await.unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].state, JobState::Waiting);
    assert_eq!(back[0].attempts_made, 0, "a dead attempt is not counted");
    assert_eq!(back[0].checkpoint.as_ref().unwrap().0["reply"], "prepared");
    let again = s
        .claim(
            "email-inbound",
            "alive",
            now.plus_micros(61 * SEC),
            30_000,
            1,
        )
        .await
        .unwrap();
    assert_eq!(again[0].checkpoint.as_ref().unwrap().0["reply"], "prepared");
    assert!(
        s.complete(
            "email-inbound",
            "m1",
            "dead",
            None,
            now.plus_micros(62 * SEC)
        )
        .await
        .unwrap()
        .is_none(),
        "fenced"
    );
    assert!(
        s.complete(
            "email-inbound",
            "m1",
            "alive",
            None,
            now.plus_micros(62 * SEC)
        )
        .await
        .unwrap()
        .is_some()
    );
    // Release gives a job back without counting the attempt.
    s.enqueue(job("q", Some("rel")), now).await.unwrap();
    s.claim("q", "w", now, 30_000, 1).await.unwrap();
    assert!(
        s.release("q", "rel", "w", now.plus_micros(5 * SEC))
            .await
            .unwrap()
    );
    let j = s.job("q", "rel").await.unwrap().unwrap();
    assert_eq!((j.state, j.attempts_made), (JobState::Delayed, 0));
    // A job whose worker keeps dying is failed after MAX_STALLS.
    s.enqueue(job("poison", Some("x")), now).await.unwrap();
    let mut t = now;
    for _ in 0..crate::MAX_STALLS {
        s.claim("poison", "w", t, 1_000, 1).await.unwrap();
        t = t.plus_micros(2 * SEC);
        s.reclaim_expired(t).await.unwrap();
    }
    assert_eq!(
        s.job("poison", "x").await.unwrap().unwrap().state,
        JobState::Failed
    );
}

/// Depth/lag stats, events, and the §13 retention (completed 1 day / 200, failed 7 days).
pub async fn queue_stats_and_events_and_retention<S: FullStore>(s: S) {
    migrated(&s).await;
    let t0 = Ts::now();
    for i in 0..3 {
        s.enqueue(job("q", Some(&format!("due{i}"))), t0.plus_micros(i * SEC))
            .await
            .unwrap();
    }
    s.enqueue(
        NewJob {
            delay_ms: 60_000,
            ..job("q", Some("later"))
        },
        t0,
    )
    .await
    .unwrap();
    let st = s.stats("q", t0.plus_micros(10 * SEC)).await.unwrap();
    assert_eq!((st.waiting, st.delayed, st.active), (3, 1, 0));
    assert_eq!(st.oldest_due_at, Some(t0));
    assert_eq!(st.lag_ms, 10_000);
    // 250 completed jobs: retention keeps the newest 200, and none older than a day.
    let mut batch_time = t0;
    for i in 0..250 {
        let id = format!("c{i}");
        s.enqueue(job("tick", Some(&id)), batch_time).await.unwrap();
        s.claim("tick", "w", batch_time, 30_000, 1).await.unwrap();
        s.complete("tick", &id, "w", None, batch_time)
            .await
            .unwrap();
        batch_time = batch_time.plus_micros(1000);
    }
    s.enqueue(job("tick", Some("f")), t0).await.unwrap();
    s.claim("tick", "w", t0, 30_000, 1).await.unwrap();
    s.fail("tick", "f", "w", "x", true, t0).await.unwrap();
    let removed = s
        .prune_finished("tick", TICK_RETENTION, batch_time)
        .await
        .unwrap();
    assert_eq!(removed, 50);
    let st = s.stats("tick", batch_time).await.unwrap();
    assert_eq!((st.completed, st.failed), (200, 1));
    assert!(
        s.job("tick", "c0").await.unwrap().is_none()
            && s.job("tick", "c249").await.unwrap().is_some()
    );
    let day = 24 * 3600 * SEC;
    s.prune_finished("tick", TICK_RETENTION, batch_time.plus_micros(day + SEC))
        .await
        .unwrap();
    let st = s
        .stats("tick", batch_time.plus_micros(day + SEC))
        .await
        .unwrap();
    assert_eq!((st.completed, st.failed), (0, 1), "failed jobs stay 7 days");
    s.prune_finished("tick", TICK_RETENTION, t0.plus_micros(7 * day + SEC))
        .await
        .unwrap();
    assert_eq!(s.stats("tick", t0).await.unwrap().failed, 0);
    let events = s.recent_events("tick", 50).await.unwrap();
    assert_eq!(events.len(), 50);
    assert!(
        events
            .windows(2)
            .all(|w| w[0].created_at >= w[1].created_at),
        "newest first"
    );
    assert_eq!(
        s.prune_events(batch_time.plus_micros(1)).await.unwrap(),
        251
    );
    assert!(s.recent_events("tick", 5).await.unwrap().is_empty());
}

/// Completing a job can claim the next due one in the same transaction.
pub async fn queue_complete_and_claim_hands_over_the_next_job<S: FullStore>(s: S) {
    migrated(&s).await;
    let now = Ts::now();
    for id in ["a", "b"] {
        s.enqueue(job("q", Some(id)), now).await.unwrap();
    }
    s.enqueue(
        NewJob {
            delay_ms: 60_000,
            ..job("q", Some("later"))
        },
        now,
    )
    .await
    .unwrap();
    let first = s
        .claim("q", "w", now, 30_000, 1)
        .await
        .unwrap()
        .pop()
        .unwrap();
    let (done, next) = s
        .complete_and_claim("q", &first.id, "w", None, now, 30_000)
        .await
        .unwrap();
    assert_eq!(done.unwrap().state, JobState::Completed);
    let next = next.expect("the other due job");
    assert_eq!(
        (next.state, next.lease_owner.as_deref()),
        (JobState::Active, Some("w"))
    );
    let (_, none) = s
        .complete_and_claim("q", &next.id, "w", None, now, 30_000)
        .await
        .unwrap();
    assert!(none.is_none(), "the delayed job is not due");
    let (lost, none) = s
        .complete_and_claim("q", &next.id, "w", None, now, 30_000)
        .await
        .unwrap();
    assert!(
        lost.is_none() && none.is_none(),
        "no lease: nothing completed, nothing claimed"
    );
}

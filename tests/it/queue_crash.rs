//! Crash test (issue: "kill the worker between checkpoint and completion").
//! A worker in a child process runs a job that records a side effect, saves
//! a checkpoint and then hangs; the parent kills it with SIGKILL, starts a
//! new worker, and checks that the job runs again from the checkpoint, the
//! side effect is not repeated, and the job completes exactly once.
//! `cargo test queue_crash` selects it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use serde_json::json;
use storage::{JobQueue, JobState, MigrationStore, RedbStore, Ts};

use root::app::AppState;
use root::config::Config;
use root::platform::clock::{ManualClock, SystemClock};
use root::queue::registry::QueueSpec;
use root::queue::{Enqueue, HandlerResult, JobContext, JobHandler, Outcome, WorkerConfig, Workers};

const CHILD_ENV: &str = "ROOT_QUEUE_CRASH_CHILD_DIR";
const SPEC: QueueSpec = QueueSpec {
    name: "crash-test",
    concurrency: 1,
    attempts: 3,
    backoff_ms: 1_000,
    repeat: None,
    rate_limit: None,
};

/// Sends "the email" once: side effect, then checkpoint; a retry that finds
/// the checkpoint only finishes.
struct SendOnce {
    dir: PathBuf,
    hang_after_checkpoint: bool,
}

fn append(dir: &Path, line: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join("effects.log"))
        .unwrap();
    writeln!(f, "{line}").unwrap();
    f.sync_all().unwrap();
}

#[async_trait]
impl JobHandler for SendOnce {
    async fn run(&self, ctx: &mut JobContext) -> HandlerResult {
        if ctx.checkpoint().is_none() {
            append(&self.dir, "side-effect");
            ctx.save_checkpoint(json!({"sent": true})).await?;
            if self.hang_after_checkpoint {
                std::fs::write(self.dir.join("checkpointed"), b"1").unwrap();
                std::future::pending::<()>().await;
            }
        } else {
            append(&self.dir, "resumed-from-checkpoint");
        }
        Ok(Some(json!({"done": true})))
    }
}

fn state(store: &RedbStore, clock: Arc<dyn root::platform::clock::Clock>) -> AppState {
    AppState::new(Config::from_vars(Vec::new()).unwrap(), store.clone(), clock).unwrap()
}

/// Child entry point: a no-op unless started by the crash test.
#[tokio::test]
async fn queue_crash_child_worker() {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let store = RedbStore::open(&dir.join("root.redb")).unwrap();
    let st = state(&store, Arc::new(SystemClock));
    let mut w = Workers::new(
        st.queues.clone(),
        st.tenants.clone(),
        st.config.limits,
        WorkerConfig::default(),
    );
    w.register(
        SPEC,
        Arc::new(SendOnce {
            dir: dir.clone(),
            hang_after_checkpoint: true,
        }),
    );
    let out = w.run_one_job(None).await.unwrap();
    panic!("the child should hang before finishing, got {out:?}");
}

#[tokio::test]
async fn queue_crash_sigkill_between_checkpoint_and_completion_resumes_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("root.redb");
    {
        let store = RedbStore::open(&db).unwrap();
        store.migrate().await.unwrap();
        let st = state(&store, Arc::new(SystemClock));
        st.queues
            .enqueue_with_spec(
                &SPEC,
                Enqueue {
                    id: Some("mail-1".into()),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        store.close().await;
    }
    crate::support::run_child_until_marker_then_sigkill(
        "queue_crash::queue_crash_child_worker",
        CHILD_ENV,
        dir.path(),
        "checkpointed",
        Duration::from_secs(30),
    )
    .await;

    // A new worker, its clock past the dead worker's 30 s lease.
    let store = RedbStore::open(&db).expect("the lock died with the child");
    store.migrate().await.unwrap();
    let mid = store.job("crash-test", "mail-1").await.unwrap().unwrap();
    assert_eq!(
        mid.state,
        JobState::Active,
        "the killed worker still holds it"
    );
    assert_eq!(
        mid.checkpoint.as_ref().unwrap().0["sent"],
        true,
        "the checkpoint was durable"
    );
    let clock = ManualClock::new(Ts::now().plus_micros(31_000_000));
    let st = state(&store, Arc::new(clock.clone()));
    let mut w = Workers::new(
        st.queues.clone(),
        st.tenants.clone(),
        st.config.limits,
        WorkerConfig::default(),
    );
    w.register(
        SPEC,
        Arc::new(SendOnce {
            dir: dir.path().to_path_buf(),
            hang_after_checkpoint: false,
        }),
    );
    assert_eq!(
        w.run_one_job(None).await.unwrap(),
        Outcome::Completed {
            queue: "crash-test".into(),
            id: "mail-1".into()
        }
    );
    assert_eq!(
        w.run_one_job(None).await.unwrap(),
        Outcome::Idle,
        "exactly once"
    );
    let effects = std::fs::read_to_string(dir.path().join("effects.log")).unwrap();
    assert_eq!(
        effects, "side-effect\nresumed-from-checkpoint\n",
        "the side effect before the checkpoint is not repeated"
    );
    let job = store.job("crash-test", "mail-1").await.unwrap().unwrap();
    assert_eq!(job.state, JobState::Completed);
    assert_eq!(job.stalls, 1);
    let events = store.recent_events("crash-test", 10).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].status, storage::JobEventStatus::Completed);
}

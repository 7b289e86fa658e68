//! Relaxed writes (metering, traces, hook rows) survive a SIGKILL once the
//! writer's flush interval has passed, without any durable write after them.

use std::path::PathBuf;
use std::time::Duration;

use storage::{
    LlmTokenUsage, MigrationStore, RELAXED_FLUSH_INTERVAL, RedbStore, Store, TenantStore, Ts, key,
};
use uuid::Uuid;

use crate::support::run_child_until_marker_then_sigkill;

const CHILD_ENV: &str = "ROOT_RELAXED_CRASH_CHILD_DIR";
const ROW_ID: Uuid = uuid::uuid!("0b5a1f7e-1111-4222-8333-444455556666");

/// Child entry point: a no-op unless started by the crash test.
#[tokio::test]
async fn relaxed_crash_child_writer() {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let store = RedbStore::open(&dir.join("root.redb")).unwrap();
    store.migrate().await.unwrap();
    let root = store.tenant_by_slug("root").await.unwrap().unwrap();
    store
        .insert_relaxed(LlmTokenUsage {
            id: ROW_ID,
            tenant_id: root.id,
            purpose: "agent.planning".into(),
            model: "m".into(),
            created_at: Ts::now(),
            ..Default::default()
        })
        .await
        .unwrap();
    // No further writes: only the writer's own timer can flush the row.
    tokio::time::sleep(RELAXED_FLUSH_INTERVAL * 4).await;
    std::fs::write(dir.join("flushed"), b"").unwrap();
    tokio::time::sleep(Duration::from_secs(600)).await;
}

#[tokio::test]
async fn relaxed_crash_sigkill_after_the_flush_interval_keeps_the_row() {
    let dir = tempfile::tempdir().unwrap();
    run_child_until_marker_then_sigkill(
        "relaxed_crash::relaxed_crash_child_writer",
        CHILD_ENV,
        dir.path(),
        "flushed",
        Duration::from_secs(60),
    )
    .await;
    let store = RedbStore::open(&dir.path().join("root.redb")).unwrap();
    let root = store.tenant_by_slug("root").await.unwrap().unwrap();
    let row: Option<LlmTokenUsage> = store.get(Some(root.id), key().uuid(ROW_ID)).await.unwrap();
    assert!(row.is_some(), "the relaxed row was flushed by the timer");
}

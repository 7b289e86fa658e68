//! Running queued jobs to completion deterministically: the real worker
//! runtime (`build_workers`, every registered handler) stepped one job at a
//! time on the test's clock, no background workers, no polling.

use root::app::{AppState, build_workers};
use root::queue::{Outcome, WorkerConfig};

/// Run the due jobs of `queue` until none is due; the outcomes in order.
pub async fn drain_jobs(state: &AppState, queue: &str) -> Vec<Outcome> {
    build_workers(state, WorkerConfig::default())
        .run_until_idle(Some(queue))
        .await
        .expect("jobs run")
}

//! How many sandbox children may live at once (review L-4): at most
//! [`max_children`] in this process and [`MAX_CHILDREN_PER_TENANT`] per
//! community. Without a cap, 32 turns in flight × 16 calls per batch could
//! start 512 children with 256 MB heaps each. A run waits for its slots at
//! most [`SLOT_WAIT`] (then the tool call fails with a clear reason);
//! the community's slot is taken first, so one busy community queues
//! behind its own calls instead of holding the process's slots.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use uuid::Uuid;

/// Children per CPU core the process allows.
pub const CHILDREN_PER_CORE: usize = 2;
/// The process allows at least this many children, however few the cores.
pub const MIN_CHILDREN_PER_PROCESS: usize = 4;
/// Children one community may have at once.
pub const MAX_CHILDREN_PER_TENANT: usize = 2;
/// The longest a run waits for its slots before the tool call fails.
pub const SLOT_WAIT: Duration = Duration::from_secs(30);

/// The process-wide cap: [`CHILDREN_PER_CORE`] × cores, at least
/// [`MIN_CHILDREN_PER_PROCESS`].
pub fn max_children() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (CHILDREN_PER_CORE * cores).max(MIN_CHILDREN_PER_PROCESS)
}

/// Sandbox children holding a slot right now (all communities).
pub fn live_children() -> usize {
    max_children().saturating_sub(SLOTS.process.available_permits())
}

struct Slots {
    process: Arc<Semaphore>,
    /// A community's semaphore lives while a run holds or awaits it.
    tenants: Mutex<HashMap<Uuid, Arc<Semaphore>>>,
}

static SLOTS: LazyLock<Slots> = LazyLock::new(|| Slots {
    process: Arc::new(Semaphore::new(max_children())),
    tenants: Mutex::new(HashMap::new()),
});

/// The slots one run holds; released on drop.
pub(super) struct Slot {
    tenant: Option<(Uuid, OwnedSemaphorePermit)>,
    _process: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some((id, permit)) = self.tenant.take() {
            drop(permit);
            forget_idle(id);
        }
    }
}

/// Drop `id`'s semaphore when no run holds or awaits it (clones are only
/// made under the lock, so the count is exact here).
fn forget_idle(id: Uuid) {
    let mut tenants = SLOTS
        .tenants
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if tenants.get(&id).is_some_and(|s| Arc::strong_count(s) == 1) {
        tenants.remove(&id);
    }
}

/// Take a slot for a run of `tenant` (none: only the process cap), waiting
/// at most `wait`. The error is the tool call's failure reason.
pub(super) async fn acquire(tenant: Option<Uuid>, wait: Duration) -> Result<Slot, String> {
    let deadline = tokio::time::Instant::now() + wait;
    let tenant_permit = match tenant {
        None => None,
        Some(id) => {
            let semaphore = {
                let mut tenants = SLOTS
                    .tenants
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                tenants
                    .entry(id)
                    .or_insert_with(|| Arc::new(Semaphore::new(MAX_CHILDREN_PER_TENANT)))
                    .clone()
            };
            let got = tokio::time::timeout_at(deadline, semaphore.acquire_owned()).await;
            match got {
                Ok(Ok(permit)) => Some((id, permit)),
                _ => {
                    forget_idle(id);
                    tracing::warn!(tenant = %id, limit = MAX_CHILDREN_PER_TENANT, waited_ms = millis(wait),
                        "community build tool refused: the community's sandbox slots stayed busy");
                    return Err(format!(
                        "the sandbox is busy: this community already runs {MAX_CHILDREN_PER_TENANT} \
                         tools at once and none finished within {} s; try again shortly",
                        wait.as_secs_f32()
                    ));
                }
            }
        }
    };
    let got = tokio::time::timeout_at(deadline, SLOTS.process.clone().acquire_owned()).await;
    match got {
        Ok(Ok(permit)) => Ok(Slot {
            tenant: tenant_permit,
            _process: permit,
        }),
        _ => {
            if let Some((id, permit)) = tenant_permit {
                drop(permit);
                forget_idle(id);
            }
            let max = max_children();
            tracing::warn!(
                limit = max,
                waited_ms = millis(wait),
                "community build tool refused: every sandbox slot of this server stayed busy"
            );
            Err(format!(
                "the sandbox is busy: the server already runs {max} tools at once and none \
                 finished within {} s; try again shortly",
                wait.as_secs_f32()
            ))
        }
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

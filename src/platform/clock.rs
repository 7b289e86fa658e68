//! Time as a dependency: production reads the system clock; tests advance a
//! [`ManualClock`] so time-dependent logic (delays, backoff, leases, rate
//! limits) is exercised without sleeping.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use storage::Ts;

/// A source of "now".
pub trait Clock: Send + Sync + 'static {
    /// The current instant.
    fn now(&self) -> Ts;
}

/// The system clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Ts {
        Ts::now()
    }
}

/// A clock that moves only when told to.
#[derive(Clone, Debug)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// Start at `at`.
    pub fn new(at: Ts) -> Self {
        ManualClock(Arc::new(AtomicI64::new(at.micros())))
    }
    /// Move forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms.saturating_mul(1000), Ordering::SeqCst);
    }
    /// Jump to `at`.
    pub fn set(&self, at: Ts) {
        self.0.store(at.micros(), Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Ts {
        Ts(self.0.load(Ordering::SeqCst))
    }
}

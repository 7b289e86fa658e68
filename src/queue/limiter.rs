//! Rate limits for queues (§13 `slack-knowledge-ingest`: 60/min global and
//! 30/min per tenant, overridable). A small GCRA over our [`Clock`] rather
//! than `governor`, so tests drive it with a manual clock (see
//! `docs/decisions.md`).

use std::collections::HashMap;
use std::sync::Mutex;

use storage::Ts;
use uuid::Uuid;

const MINUTE_MICROS: i64 = 60_000_000;

/// "At most `per_minute` events in any 60 s window", as a GCRA.
#[derive(Clone, Debug)]
struct Gcra {
    per_minute: u32,
    /// Theoretical arrival time of the next event.
    tat: i64,
}

impl Gcra {
    fn new(per_minute: u32) -> Self {
        Gcra {
            per_minute: per_minute.max(1),
            tat: i64::MIN,
        }
    }
    fn interval(&self) -> i64 {
        MINUTE_MICROS / self.per_minute as i64
    }
    /// `Ok(new_tat)` if an event may happen at `now`, else the wait in micros.
    fn probe(&self, now: i64) -> Result<i64, i64> {
        let interval = self.interval();
        let tolerance = interval * (self.per_minute as i64 - 1);
        let tat = self.tat.max(now);
        if tat - now > tolerance {
            Err(tat - now - tolerance)
        } else {
            Ok(tat + interval)
        }
    }
}

/// A global limiter plus one limiter per tenant; an event passes only when both allow it.
#[derive(Debug)]
pub struct TenantRateLimiter {
    global: Mutex<Gcra>,
    per_tenant: Mutex<HashMap<Uuid, Gcra>>,
}

impl TenantRateLimiter {
    /// `global_per_minute` across all tenants.
    pub fn new(global_per_minute: u32) -> Self {
        TenantRateLimiter {
            global: Mutex::new(Gcra::new(global_per_minute)),
            per_tenant: Mutex::new(HashMap::new()),
        }
    }

    /// Take one slot for `tenant` (limit `tenant_per_minute`) at `now`, or
    /// return how long to wait (ms) before trying again. Nothing is consumed
    /// on refusal.
    pub fn try_acquire(
        &self,
        tenant: Option<Uuid>,
        tenant_per_minute: u32,
        now: Ts,
    ) -> Result<(), u64> {
        let now = now.micros();
        let mut global = self.global.lock().unwrap_or_else(|p| p.into_inner());
        let mut tenants = self.per_tenant.lock().unwrap_or_else(|p| p.into_inner());
        let g = global.probe(now).map_err(to_ms)?;
        let t = match tenant {
            Some(id) => {
                let lim = tenants
                    .entry(id)
                    .or_insert_with(|| Gcra::new(tenant_per_minute));
                if lim.per_minute != tenant_per_minute.max(1) {
                    // The tenant's override changed: start its window afresh.
                    *lim = Gcra::new(tenant_per_minute);
                }
                Some((id, lim.probe(now).map_err(to_ms)?))
            }
            None => None,
        };
        global.tat = g;
        if let Some((id, tat)) = t
            && let Some(lim) = tenants.get_mut(&id)
        {
            lim.tat = tat;
        }
        Ok(())
    }
}

fn to_ms(micros: i64) -> u64 {
    ((micros + 999) / 1000).max(1) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: f64) -> Ts {
        Ts((secs * 1e6) as i64)
    }

    #[test]
    fn per_tenant_limit_allows_thirty_a_minute_then_waits() {
        let l = TenantRateLimiter::new(60);
        let t = Some(Uuid::new_v4());
        for i in 0..30 {
            assert!(l.try_acquire(t, 30, at(0.0)).is_ok(), "event {i}");
        }
        let wait = l.try_acquire(t, 30, at(0.0)).unwrap_err();
        assert_eq!(wait, 2_000, "one slot every 2 s after the burst");
        assert!(l.try_acquire(t, 30, at(2.0)).is_ok());
        // Another tenant is not blocked by the first one's limit.
        assert!(l.try_acquire(Some(Uuid::new_v4()), 30, at(2.0)).is_ok());
    }

    #[test]
    fn the_global_limit_caps_all_tenants_together() {
        let l = TenantRateLimiter::new(60);
        for i in 0..60 {
            assert!(
                l.try_acquire(Some(Uuid::new_v4()), 30, at(0.0)).is_ok(),
                "event {i}"
            );
        }
        assert_eq!(
            l.try_acquire(Some(Uuid::new_v4()), 30, at(0.0))
                .unwrap_err(),
            1_000
        );
        assert!(l.try_acquire(None, 30, at(1.0)).is_ok());
    }

    #[test]
    fn a_refusal_consumes_nothing_and_overrides_apply() {
        let l = TenantRateLimiter::new(60);
        let t = Some(Uuid::new_v4());
        for _ in 0..5 {
            l.try_acquire(t, 5, at(0.0)).unwrap();
        }
        assert!(l.try_acquire(t, 5, at(0.0)).is_err());
        // The global limiter was not charged by the refused attempt: 55 more fit.
        for _ in 0..55 {
            l.try_acquire(None, 5, at(0.0)).unwrap();
        }
        assert!(l.try_acquire(None, 5, at(0.0)).is_err());
    }
}

//! GCRA rate limits over our [`Clock`](crate::platform::clock::Clock): the
//! queues' (§13 `slack-knowledge-ingest`: 60/min global and 30/min per
//! tenant, overridable) and the request limits of `crate::limits` (turns,
//! tool executes, KB search and writes per tenant and per API key,
//! interventions per principal per hour). One small GCRA rather than
//! `governor`, so tests drive it with a manual clock (see `docs/decisions.md`).

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;

use storage::Ts;
use uuid::Uuid;

const MINUTE_MICROS: i64 = 60_000_000;
const HOUR_MICROS: i64 = 60 * MINUTE_MICROS;

/// Keyed limiters keep at most about this many idle entries: past it, entries
/// whose window has fully drained (indistinguishable from fresh ones) are dropped.
const KEYED_PRUNE_ABOVE: usize = 4096;

/// "`count` events per `period`, at most `burst` of them back to back".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rate {
    count: u32,
    period_micros: i64,
    burst: u32,
}

impl Rate {
    /// `n` per minute, all of them allowed at once (`n` in any 60 s window).
    pub fn per_minute(n: u32) -> Rate {
        Rate::new(n, MINUTE_MICROS)
    }

    /// `n` per hour, all of them allowed at once.
    pub fn per_hour(n: u32) -> Rate {
        Rate::new(n, HOUR_MICROS)
    }

    fn new(count: u32, period_micros: i64) -> Rate {
        let count = count.max(1);
        Rate {
            count,
            period_micros,
            burst: count,
        }
    }

    /// At most `burst` events back to back (clamped to 1..=count).
    pub fn with_burst(mut self, burst: u32) -> Rate {
        self.burst = burst.clamp(1, self.count);
        self
    }

    fn interval(&self) -> i64 {
        (self.period_micros / self.count as i64).max(1)
    }
}

/// One GCRA cell.
#[derive(Clone, Debug)]
struct Gcra {
    rate: Rate,
    /// Theoretical arrival time of the next event.
    tat: i64,
}

impl Gcra {
    fn new(rate: Rate) -> Self {
        Gcra {
            rate,
            tat: i64::MIN,
        }
    }
    /// `Ok(new_tat)` if an event may happen at `now`, else the wait in micros.
    fn probe(&self, now: i64) -> Result<i64, i64> {
        let interval = self.rate.interval();
        let tolerance = interval * (self.rate.burst as i64 - 1);
        let tat = self.tat.max(now);
        if tat - now > tolerance {
            Err(tat - now - tolerance)
        } else {
            Ok(tat + interval)
        }
    }
}

/// One GCRA per key (tenant, API key, principal…); keys come and go, the
/// map is pruned of drained entries so it cannot grow without bound.
#[derive(Debug)]
pub struct KeyedRateLimiter<K> {
    cells: Mutex<HashMap<K, Gcra>>,
}

impl<K: Hash + Eq + Clone> Default for KeyedRateLimiter<K> {
    fn default() -> Self {
        KeyedRateLimiter {
            cells: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Hash + Eq + Clone> KeyedRateLimiter<K> {
    /// Take one event for every `(key, rate)` at `now`, or return the wait
    /// (ms, ≥ 1) of the most restrictive refusing one. All or nothing: a
    /// refusal consumes nothing. A key whose rate changed (a tenant override)
    /// starts afresh.
    pub fn try_acquire_all(&self, keys: &[(K, Rate)], now: Ts) -> Result<(), u64> {
        let now = now.micros();
        let mut cells = self.cells.lock().unwrap_or_else(|p| p.into_inner());
        if cells.len() > KEYED_PRUNE_ABOVE {
            cells.retain(|_, g| g.tat > now);
        }
        let mut next = Vec::with_capacity(keys.len());
        let mut wait: Option<i64> = None;
        for (key, rate) in keys {
            let cell = match cells.get(key) {
                Some(g) if g.rate == *rate => g.clone(),
                _ => Gcra::new(*rate),
            };
            match cell.probe(now) {
                Ok(tat) => next.push((key.clone(), Gcra { tat, ..cell })),
                Err(w) => wait = Some(wait.map_or(w, |m: i64| m.max(w))),
            }
        }
        if let Some(w) = wait {
            return Err(to_ms(w));
        }
        for (key, cell) in next {
            cells.insert(key, cell);
        }
        Ok(())
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
            global: Mutex::new(Gcra::new(Rate::per_minute(global_per_minute))),
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
                    .or_insert_with(|| Gcra::new(Rate::per_minute(tenant_per_minute)));
                if lim.rate != Rate::per_minute(tenant_per_minute) {
                    // The tenant's override changed: start its window afresh.
                    *lim = Gcra::new(Rate::per_minute(tenant_per_minute));
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

    #[test]
    fn a_burst_allows_that_many_back_to_back_then_one_per_interval() {
        let l = KeyedRateLimiter::default();
        let rate = Rate::per_minute(30).with_burst(10);
        for i in 0..10 {
            assert!(l.try_acquire_all(&[("t", rate)], at(0.0)).is_ok(), "{i}");
        }
        assert_eq!(l.try_acquire_all(&[("t", rate)], at(0.0)), Err(2_000));
        assert!(l.try_acquire_all(&[("t", rate)], at(2.0)).is_ok());
        assert_eq!(l.try_acquire_all(&[("t", rate)], at(2.0)), Err(2_000));
    }

    #[test]
    fn keyed_acquire_is_all_or_nothing_and_reports_the_longest_wait() {
        let l = KeyedRateLimiter::default();
        let tenant = Rate::per_minute(5);
        let key = Rate::per_minute(2);
        for _ in 0..2 {
            l.try_acquire_all(&[("tenant", tenant), ("key-a", key)], at(0.0))
                .unwrap();
        }
        // key-a is spent (30 s per slot); the tenant was not charged by the refusal.
        assert_eq!(
            l.try_acquire_all(&[("tenant", tenant), ("key-a", key)], at(0.0)),
            Err(30_000)
        );
        for _ in 0..3 {
            l.try_acquire_all(
                &[("tenant", tenant), ("key-b", Rate::per_minute(3))],
                at(0.0),
            )
            .unwrap();
        }
        assert_eq!(
            l.try_acquire_all(&[("tenant", tenant), ("key-c", key)], at(0.0)),
            Err(12_000),
            "now the tenant's 5/min is spent"
        );
    }

    #[test]
    fn an_hourly_rate_refills_over_the_hour() {
        let l = KeyedRateLimiter::default();
        let rate = Rate::per_hour(10);
        for _ in 0..10 {
            l.try_acquire_all(&[(1u8, rate)], at(0.0)).unwrap();
        }
        assert_eq!(l.try_acquire_all(&[(1u8, rate)], at(0.0)), Err(360_000));
        assert!(l.try_acquire_all(&[(1u8, rate)], at(360.0)).is_ok());
    }
}

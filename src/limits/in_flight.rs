//! Turns in flight (security finding M1): a per-tenant cap and a
//! process-wide cap on concurrent agent turns, so one tenant cannot take
//! every model connection and the process cannot be driven into unbounded
//! concurrent work. A [`TurnPermit`] holds one place of each until dropped.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use uuid::Uuid;

/// Which cap refused a turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CapScope {
    /// The tenant's in-flight cap.
    Tenant,
    /// The process-wide cap.
    Global,
}

#[derive(Default)]
struct Counts {
    global: u32,
    tenants: HashMap<Uuid, u32>,
}

/// In-flight turn counts. Cheap to clone.
#[derive(Clone, Default)]
pub struct TurnSlots {
    counts: Arc<Mutex<Counts>>,
}

impl TurnSlots {
    /// Take a place for `tenant` when it has fewer than `tenant_cap` turns in
    /// flight and the process fewer than `global_cap`.
    pub fn try_enter(
        &self,
        tenant: Uuid,
        tenant_cap: u32,
        global_cap: u32,
    ) -> Result<TurnPermit, CapScope> {
        let mut c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if c.global >= global_cap {
            return Err(CapScope::Global);
        }
        let mine = c.tenants.get(&tenant).copied().unwrap_or(0);
        if mine >= tenant_cap {
            return Err(CapScope::Tenant);
        }
        c.global += 1;
        c.tenants.insert(tenant, mine + 1);
        Ok(TurnPermit {
            slots: self.clone(),
            tenant,
        })
    }

    /// Turns in flight (process, tenant).
    pub fn in_flight(&self, tenant: Uuid) -> (u32, u32) {
        let c = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        (c.global, c.tenants.get(&tenant).copied().unwrap_or(0))
    }
}

/// One turn's place; released on drop (also when the turn's future is
/// cancelled, e.g. the client went away).
pub struct TurnPermit {
    slots: TurnSlots,
    tenant: Uuid,
}

impl std::fmt::Debug for TurnPermit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnPermit")
            .field("tenant", &self.tenant)
            .finish()
    }
}

impl Drop for TurnPermit {
    fn drop(&mut self) {
        let mut c = self.slots.counts.lock().unwrap_or_else(|p| p.into_inner());
        c.global = c.global.saturating_sub(1);
        if let Some(n) = c.tenants.get_mut(&self.tenant) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                c.tenants.remove(&self.tenant);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_and_global_caps_hold_until_permits_drop() {
        let slots = TurnSlots::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let p1 = slots.try_enter(a, 2, 3).unwrap();
        let _p2 = slots.try_enter(a, 2, 3).unwrap();
        assert_eq!(slots.try_enter(a, 2, 3).unwrap_err(), CapScope::Tenant);
        let _p3 = slots.try_enter(b, 2, 3).unwrap();
        assert_eq!(slots.try_enter(b, 2, 3).unwrap_err(), CapScope::Global);
        drop(p1);
        assert_eq!(slots.in_flight(a), (2, 1));
        assert!(slots.try_enter(a, 2, 3).is_ok());
    }
}

//! The `principal-roster-sweep` queue (§7.3 `identity_roster`, §13: every
//! 6 h, fan-out per tenant): keep the tenant's principals in step with what
//! its backends say, so members the platform has never met yet already have
//! a row (a tier, a name, a Slack id) before their first message.
//!
//! The scheduler's tick (no tenant) only fans out: one job per active tenant
//! (`queue::fan_out`). A tenant's job asks each active integration, in name
//! order, for its roster and upserts every entry with the same rules as
//! identity resolve (`Identity::merge`). An entry of a reserved tier is
//! skipped; a person several backends list is taken from the first (the
//! order identity resolve asks them in), so two backends never flip a row
//! back and forth. A principal whose `tier_resolved_at` is after the sweep's
//! start came from a fresher identity resolve and is left alone — checked
//! again inside the write transaction. A row whose identity fields would
//! not change is not written, so a second sweep is a no-op.
//!
//! A roster answering 404 is `Unsupported`: not an error. Any other failure
//! of one integration is logged and the others go on; the job fails into
//! the queue's retries only when every integration failed.

use std::collections::HashSet;

use async_trait::async_trait;
use serde::Serialize;
use storage::{Principal, StorageError, Store, TenantStatus, Ts, key};
use uuid::Uuid;

use super::{Identity, Merge, RowKey, TIER_SOURCE_INTEGRATION, normalize_email};
use crate::integrations::client::{CallError, ResolvedPrincipal};
use crate::integrations::registry::IntegrationError;
use crate::platform::tenancy;
use crate::platform::tiers::is_reserved_tier;
use crate::queue::fan_out::fan_out;
use crate::queue::job::{PrincipalRosterSweepTick, TypedJobHandler};
use crate::queue::{HandlerResult, JobContext, JobError, Queues};
use storage::IntegrationStatus;

/// What one tenant's sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RosterReport {
    /// Active integrations asked.
    pub integrations: usize,
    /// Integrations without a roster endpoint (404).
    pub unsupported: usize,
    /// Integrations whose roster could not be read (logged).
    pub failed: usize,
    /// New principals.
    pub created: usize,
    /// Principals rewritten.
    pub updated: usize,
    /// Entries whose principal already said the same.
    pub unchanged: usize,
    /// Entries of a reserved tier.
    pub reserved: usize,
    /// Principals a fresher identity resolve wrote (left alone).
    pub fresher: usize,
    /// Entries another integration earlier in the order already listed.
    pub duplicates: usize,
    /// Entries matching a Slack principal by email only (kept read-only, as
    /// identity resolve does).
    pub read_only: usize,
    /// Entries that collided with a concurrent write (the next sweep retries).
    pub conflicts: usize,
}

/// What happened to one roster (or synced) entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Applied {
    Created,
    Updated,
    Unchanged,
    Fresher,
    ReadOnly,
    Conflict,
}

/// The fields a roster (or a resolve) speaks for; everything else of the
/// row (memory, preferences) belongs to other features.
fn same_identity(a: &Principal, b: &Principal) -> bool {
    a.ref_ == b.ref_
        && a.display_name == b.display_name
        && a.tier == b.tier
        && a.is_admin == b.is_admin
        && a.traits == b.traits
        && a.slack_user_id == b.slack_user_id
        && a.email == b.email
        && a.profile_context == b.profile_context
}

fn copy_identity(from: &Principal, to: &mut Principal) {
    to.ref_ = from.ref_.clone();
    to.display_name = from.display_name.clone();
    to.tier = from.tier.clone();
    to.is_admin = from.is_admin;
    to.traits = from.traits.clone();
    to.slack_user_id = from.slack_user_id.clone();
    to.email = from.email.clone();
    to.profile_context = from.profile_context.clone();
}

fn fresher_than(row: &Principal, started: Ts) -> bool {
    row.tier_resolved_at.is_some_and(|at| at > started)
}

impl Identity {
    /// Upsert one roster entry of the current tenant as of `started` (the
    /// sweep's start), stamped `tier_source`. Keyed by its Slack id when it
    /// has one, else by its ref, else by its email (identity resolve's keys).
    pub(super) async fn apply_roster_entry(
        &self,
        tenant: Uuid,
        p: &ResolvedPrincipal,
        started: Ts,
        tier_source: &str,
    ) -> anyhow::Result<Applied> {
        let slack = p
            .slack_user_id
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty());
        let email = p
            .email
            .as_deref()
            .map(normalize_email)
            .filter(|e| e.contains('@'));
        let (handle, existing) = match slack {
            Some(id) => (
                RowKey::Slack(id),
                self.existing_row(tenant, RowKey::Slack(id), &p.principal_ref)
                    .await?,
            ),
            None => match (
                self.by_handle(tenant, RowKey::Ref(&p.principal_ref))
                    .await?,
                email.as_deref(),
            ) {
                (Some(row), _) => (RowKey::Ref(&p.principal_ref), Some(row)),
                (None, Some(addr)) => (
                    RowKey::Email(addr),
                    self.existing_row(tenant, RowKey::Email(addr), &p.principal_ref)
                        .await?,
                ),
                (None, None) => (RowKey::Ref(&p.principal_ref), None),
            },
        };
        if existing.as_ref().is_some_and(|r| fresher_than(r, started)) {
            return Ok(Applied::Fresher);
        }
        let merged = self
            .merge(tenant, handle, existing, p, tier_source, started)
            .await?;
        let now = self.clock.now();
        match merged {
            Merge::Keep(_) => Ok(Applied::ReadOnly),
            Merge::Insert(row) => match self.store.insert(row).await {
                Ok(_) => Ok(Applied::Created),
                Err(StorageError::Conflict { .. }) => Ok(Applied::Conflict),
                Err(e) => Err(e.into()),
            },
            Merge::Update(merged) => {
                // Re-read in the write: a resolve that landed since is
                // fresher, and other features' columns are kept as they are.
                let id = merged.id;
                let result = self
                    .store
                    .transact(move |tx| {
                        let Some(mut row) = tx.get::<Principal>(Some(tenant), key().uuid(id))?
                        else {
                            return Ok(Applied::Conflict);
                        };
                        if fresher_than(&row, started) {
                            return Ok(Applied::Fresher);
                        }
                        if same_identity(&row, &merged) {
                            return Ok(Applied::Unchanged);
                        }
                        copy_identity(&merged, &mut row);
                        row.tier_resolved_at = Some(started);
                        row.updated_at = now;
                        tx.update(&row)?;
                        Ok(Applied::Updated)
                    })
                    .await;
                match result {
                    Ok((applied, _)) => Ok(applied),
                    Err(StorageError::Conflict { .. }) => Ok(Applied::Conflict),
                    Err(e) => Err(e.into()),
                }
            }
        }
    }

    /// Sweep the current tenant's rosters (see the module docs).
    pub async fn sweep_roster(&self) -> Result<RosterReport, JobError> {
        let ctx = tenancy::current()
            .ok_or_else(|| JobError::Permanent("roster sweep outside a tenant".into()))?;
        let tenant = ctx.id();
        let started = self.clock.now();
        let integrations: Vec<_> = self
            .integrations
            .list()
            .await
            .map_err(|e| JobError::Retry(format!("listing integrations: {e}")))?
            .into_iter()
            .filter(|i| i.status == IntegrationStatus::Active)
            .collect();
        let mut report = RosterReport {
            integrations: integrations.len(),
            ..RosterReport::default()
        };
        let mut seen: HashSet<String> = HashSet::new();
        for integration in &integrations {
            let entries = match self.integrations.roster(&integration.name).await {
                Ok(entries) => entries,
                Err(IntegrationError::Refresh {
                    source: CallError::Unsupported { .. },
                    ..
                }) => {
                    report.unsupported += 1;
                    tracing::debug!(tenant = %tenant, integration = %integration.name,
                        "roster not supported");
                    continue;
                }
                Err(e) => {
                    report.failed += 1;
                    tracing::warn!(tenant = %tenant, integration = %integration.name,
                        error = %e, "roster sweep: roster not read");
                    continue;
                }
            };
            for entry in &entries {
                if is_reserved_tier(&entry.tier) {
                    report.reserved += 1;
                    continue;
                }
                let slack_key = entry
                    .slack_user_id
                    .as_deref()
                    .map(|s| format!("slack:{}", s.trim()));
                let ref_key = format!("ref:{}", entry.principal_ref);
                if seen.contains(&ref_key) || slack_key.as_ref().is_some_and(|k| seen.contains(k)) {
                    report.duplicates += 1;
                    continue;
                }
                seen.insert(ref_key);
                seen.extend(slack_key);
                let applied = self
                    .apply_roster_entry(tenant, entry, started, TIER_SOURCE_INTEGRATION)
                    .await
                    .map_err(|e| JobError::Retry(format!("roster upsert: {e}")))?;
                match applied {
                    Applied::Created => report.created += 1,
                    Applied::Updated => report.updated += 1,
                    Applied::Unchanged => report.unchanged += 1,
                    Applied::Fresher => report.fresher += 1,
                    Applied::ReadOnly => report.read_only += 1,
                    Applied::Conflict => {
                        report.conflicts += 1;
                        tracing::info!(tenant = %tenant, integration = %integration.name,
                            principal_ref = %entry.principal_ref,
                            "roster entry collided with a concurrent write; next sweep");
                    }
                }
            }
        }
        tracing::info!(tenant = %tenant, ?report, "principal roster sweep");
        if report.failed > 0 && report.failed == report.integrations {
            return Err(JobError::Retry(format!(
                "every integration's roster failed ({})",
                report.failed
            )));
        }
        Ok(report)
    }
}

/// The `principal-roster-sweep` handler. Cheap to clone.
#[derive(Clone)]
pub struct PrincipalRosterSweep {
    identity: Identity,
    queues: Queues,
}

impl PrincipalRosterSweep {
    /// The sweep over `identity`'s integrations and principals; the tick
    /// fans out through `queues`.
    pub fn new(identity: Identity, queues: Queues) -> Self {
        PrincipalRosterSweep { identity, queues }
    }
}

#[async_trait]
impl TypedJobHandler for PrincipalRosterSweep {
    type Payload = PrincipalRosterSweepTick;

    async fn run(&self, tick: PrincipalRosterSweepTick, _ctx: &mut JobContext) -> HandlerResult {
        match tenancy::current() {
            Some(ctx) if ctx.tenant.status != TenantStatus::Active => Ok(None),
            Some(_) => {
                let report = self.identity.sweep_roster().await?;
                Ok(serde_json::to_value(report).ok())
            }
            None => {
                let queued = fan_out(&self.queues, &tick, tick.scheduled_for)
                    .await
                    .map_err(|e| JobError::Retry(format!("roster fan-out: {e}")))?;
                Ok(Some(serde_json::json!({ "tenants_queued": queued })))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_fields_decide_whether_a_row_is_rewritten() {
        let a = Principal {
            ref_: "m-1".into(),
            tier: "member".into(),
            display_name: Some("Ada".into()),
            ..Principal::default()
        };
        let mut b = a.clone();
        b.conversation_memory = Some("likes tea".into());
        b.tier_resolved_at = Some(Ts::from_secs(5));
        assert!(same_identity(&a, &b), "memory and stamps are not identity");
        b.tier = "mentor".into();
        assert!(!same_identity(&a, &b));
        let mut c = b.clone();
        copy_identity(&a, &mut c);
        assert_eq!(c.tier, "member");
        assert_eq!(c.conversation_memory.as_deref(), Some("likes tea"));
    }

    #[test]
    fn only_a_later_stamp_is_fresher() {
        let at = Ts::from_secs(100);
        let row = |t: Option<Ts>| Principal {
            tier_resolved_at: t,
            ..Principal::default()
        };
        assert!(fresher_than(&row(Some(Ts::from_secs(101))), at));
        assert!(!fresher_than(&row(Some(at)), at));
        assert!(!fresher_than(&row(None), at));
    }
}

//! Identity (§6, §9): who a Slack user is. `resolve_slack_member` asks the
//! tenant's integrations first (a non-reserved tier always wins), upserts
//! the principal, and falls back to the access policy's channel trust
//! (stamping `traits.tier_source`); nobody resolved ⇒ the reserved
//! `unresolved` tier. Results are cached per (tenant, Slack user): 5 minutes,
//! 30 seconds while unresolved, so a member who is fixed upstream is seen
//! quickly.

use std::sync::Arc;
use std::time::Duration;

use moka::sync::Cache;
use serde_json::{Value, json};
use storage::{Principal, RedbStore, Store, key};
use uuid::Uuid;

use crate::integrations::client::{IdentityQuery, ResolvedPrincipal};
use crate::integrations::registry::Integrations;
use crate::platform::clock::Clock;
use crate::platform::settings::AccessPolicy;
use crate::platform::tenancy;
use crate::tools::gating::TIER_UNRESOLVED;

/// How long a resolved tier is cached (§6).
pub const TIER_CACHE_TTL: Duration = Duration::from_secs(5 * 60);
/// How long an unresolved result is cached (§6).
pub const UNRESOLVED_CACHE_TTL: Duration = Duration::from_secs(30);

/// Where a member's tier came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierSource {
    /// The integration's identity resolve.
    Integration,
    /// The access policy's channel trust.
    ChannelTrust,
    /// Nobody vouched for them.
    Unresolved,
}

/// A resolved Slack member.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// Their principal row (absent when unresolved).
    pub principal: Option<Principal>,
    /// The tier for gating.
    pub tier: String,
    /// Admin principal.
    pub is_admin: bool,
    /// Where the tier came from.
    pub source: TierSource,
}

/// Resolves members. Cheap to clone.
#[derive(Clone)]
pub struct Identity {
    store: RedbStore,
    integrations: Integrations,
    clock: Arc<dyn Clock>,
    resolved: Cache<(Uuid, String), Arc<Member>>,
    unresolved: Cache<(Uuid, String), Arc<Member>>,
}

impl Identity {
    /// A resolver over the tenant's integrations and principals.
    pub fn new(store: RedbStore, integrations: Integrations, clock: Arc<dyn Clock>) -> Self {
        Identity {
            store,
            integrations,
            clock,
            resolved: Cache::builder()
                .max_capacity(50_000)
                .time_to_live(TIER_CACHE_TTL)
                .build(),
            unresolved: Cache::builder()
                .max_capacity(50_000)
                .time_to_live(UNRESOLVED_CACHE_TTL)
                .build(),
        }
    }

    /// Forget cached results (e.g. after an access-policy change).
    pub fn invalidate_all(&self) {
        self.resolved.invalidate_all();
        self.unresolved.invalidate_all();
    }

    /// `resolveSlackMember` for the current tenant.
    pub async fn resolve_slack_member(&self, slack_user_id: &str) -> anyhow::Result<Member> {
        let ctx = tenancy::current().ok_or_else(|| anyhow::anyhow!("no tenant context"))?;
        let tenant = ctx.id();
        let cache_key = (tenant, slack_user_id.to_string());
        if let Some(m) = self
            .resolved
            .get(&cache_key)
            .or_else(|| self.unresolved.get(&cache_key))
        {
            return Ok((*m).clone());
        }
        let query = IdentityQuery {
            channel: "slack".into(),
            slack_user_id: Some(slack_user_id.to_string()),
            email: None,
        };
        // 1. The integration (a non-reserved tier always wins).
        let from_integration = match self
            .integrations
            .resolve_identity_via_integrations(&query)
            .await
        {
            Ok(r) => r.and_then(|r| r.principal),
            Err(e) => {
                tracing::warn!(error = %e, "identity resolve via integrations failed");
                None
            }
        };
        let member = if let Some(p) = from_integration {
            let row = self
                .upsert(tenant, slack_user_id, &p, "integration")
                .await?;
            Member {
                tier: row.tier.clone(),
                is_admin: row.is_admin,
                principal: Some(row),
                source: TierSource::Integration,
            }
        } else if let Some(grant) =
            AccessPolicy::from_settings(&ctx.tenant.settings.0).slack_trust()
        {
            // 2. Channel trust, stamped so it can be revoked.
            let p = ResolvedPrincipal {
                principal_ref: slack_user_id.to_string(),
                display_name: None,
                tier: grant.tier.clone(),
                is_admin: false,
                traits: None,
                email: None,
                profile_context: None,
                slack_user_id: Some(slack_user_id.to_string()),
            };
            let row = self
                .upsert(tenant, slack_user_id, &p, grant.tier_source)
                .await?;
            Member {
                tier: row.tier.clone(),
                is_admin: row.is_admin,
                principal: Some(row),
                source: TierSource::ChannelTrust,
            }
        } else {
            // 3. Nobody vouched: the reserved unresolved tier.
            let m = Member {
                principal: None,
                tier: TIER_UNRESOLVED.into(),
                is_admin: false,
                source: TierSource::Unresolved,
            };
            self.unresolved.insert(cache_key, Arc::new(m.clone()));
            return Ok(m);
        };
        self.resolved.insert(cache_key, Arc::new(member.clone()));
        Ok(member)
    }

    /// Insert or update the principal for this Slack user with `p`,
    /// stamping `traits.tier_source`.
    async fn upsert(
        &self,
        tenant: Uuid,
        slack_user_id: &str,
        p: &ResolvedPrincipal,
        tier_source: &str,
    ) -> anyhow::Result<Principal> {
        let now = self.clock.now();
        let by_slack: Option<Principal> = self
            .store
            .find_unique(
                Some(tenant),
                Principal::SLACK_USER_KEY,
                key().str(slack_user_id),
            )
            .await?;
        let existing = match by_slack {
            Some(row) => Some(row),
            None => {
                self.store
                    .find_unique(
                        Some(tenant),
                        Principal::REF_KEY,
                        key().str(&p.principal_ref),
                    )
                    .await?
            }
        };
        let mut traits = match &p.traits {
            Some(Value::Object(t)) => Value::Object(t.clone()),
            _ => existing
                .as_ref()
                .map(|r| r.traits.0.clone())
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({})),
        };
        traits["tier_source"] = json!(tier_source);
        let row = match existing {
            Some(mut row) => {
                // Keep the row's ref unless the integration names a new one
                // that no other principal holds.
                if row.ref_ != p.principal_ref {
                    let taken: Option<Principal> = self
                        .store
                        .find_unique(
                            Some(tenant),
                            Principal::REF_KEY,
                            key().str(&p.principal_ref),
                        )
                        .await?;
                    if taken.is_none() {
                        row.ref_ = p.principal_ref.clone();
                    }
                }
                row.tier = p.tier.clone();
                row.is_admin = p.is_admin;
                row.slack_user_id = Some(slack_user_id.to_string());
                if p.display_name.is_some() {
                    row.display_name = p.display_name.clone();
                }
                if p.email.is_some() {
                    row.email = p.email.clone();
                }
                if p.profile_context.is_some() {
                    row.profile_context = p.profile_context.clone();
                }
                row.traits = storage::Json(traits);
                row.tier_resolved_at = Some(now);
                row.updated_at = now;
                self.store.update(row).await?
            }
            None => {
                self.store
                    .insert(Principal {
                        id: Uuid::new_v4(),
                        tenant_id: tenant,
                        ref_: p.principal_ref.clone(),
                        display_name: p.display_name.clone(),
                        tier: p.tier.clone(),
                        is_admin: p.is_admin,
                        traits: storage::Json(traits),
                        slack_user_id: Some(slack_user_id.to_string()),
                        email: p.email.clone(),
                        profile_context: p.profile_context.clone(),
                        tier_resolved_at: Some(now),
                        created_at: now,
                        updated_at: now,
                        ..Principal::default()
                    })
                    .await?
            }
        };
        Ok(row)
    }
}

//! Identity (§6, §9): who a Slack user or an email sender is. Both ask the
//! tenant's integrations first (a non-reserved tier always wins), upsert the
//! principal, and fall back to the access policy's channel trust (stamping
//! `traits.tier_source`). Nobody vouched ⇒ the reserved `unresolved` tier on
//! Slack, the `public_email` surface for email (whose synthetic principal ref
//! is `email:<address>`). Results are cached per (tenant, handle): 5
//! minutes, 30 seconds while unresolved, so a member who is fixed upstream is
//! seen quickly.
//!
//! Two rules keep one channel's answer from clobbering what another
//! established: when an integration cannot answer, a principal whose tier
//! came from an integration is used as stored, read-only (never rewritten to
//! a channel-trust tier); and the email path never writes a Slack principal
//! (a row with a Slack user id) — it runs the turn as that row, unchanged.

use std::sync::Arc;
use std::time::Duration;

use moka::sync::Cache;
use serde_json::{Value, json};
use storage::{Principal, RedbStore, Scan, Store, TenantUser, Ts, key};
use uuid::Uuid;

use crate::integrations::client::{ActsFor, IdentityQuery, ResolvedPrincipal};
use crate::integrations::registry::{IdentityLookup, Integrations};
use crate::platform::clock::Clock;
use crate::platform::settings::AccessPolicy;
use crate::platform::tenancy;
use crate::platform::tiers::Tier;

pub mod roster;
pub mod sync;

pub use roster::{PrincipalRosterSweep, RosterReport};

/// How long a resolved tier is cached (§6).
pub const TIER_CACHE_TTL: Duration = Duration::from_secs(5 * 60);
/// How long an unresolved result is cached (§6).
pub const UNRESOLVED_CACHE_TTL: Duration = Duration::from_secs(30);

/// `traits.tier_source` of a principal whose tier an integration gave.
pub const TIER_SOURCE_INTEGRATION: &str = "integration";

/// A row's `traits.tier_source`, if it has one.
fn tier_source(row: &Principal) -> Option<&str> {
    row.traits.0.get("tier_source").and_then(Value::as_str)
}

/// Where a member's tier came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TierSource {
    /// The integration's identity resolve.
    Integration,
    /// The community's portal (`POST /principals/sync`), used when no
    /// integration answers for the member.
    Synced,
    /// The access policy's channel trust.
    ChannelTrust,
    /// Nobody vouched for them (Slack: `unresolved`; email: `public_email`).
    Unresolved,
}

/// A resolved Slack member or email sender.
#[derive(Clone, Debug, PartialEq)]
pub struct Member {
    /// Their principal row (absent when nobody vouched for them).
    pub principal: Option<Principal>,
    /// The stable ref: the row's, else the synthetic one (`email:<addr>`,
    /// or the Slack user id).
    pub principal_ref: String,
    /// The tier for gating (stored and remote tiers parsed failing
    /// closed: the `__admin__` marker or a malformed name is `unresolved`).
    pub tier: Tier,
    /// Admin principal.
    pub is_admin: bool,
    /// Where the tier came from.
    pub source: TierSource,
    /// Email only: the account the sender may act for (§8.3 delegation),
    /// as the integration answered.
    pub acts_for: Option<ActsFor>,
}

impl Member {
    /// An email sender whose `From` nobody authenticated (security H-1):
    /// the public email tier, no principal row, no admin rights — whatever
    /// the address would resolve to. Identity is not asked, so a forged
    /// `From` never reaches the integration's resolve either.
    pub fn unauthenticated_email(address: &str) -> Member {
        Member {
            principal: None,
            principal_ref: email_ref(address),
            tier: Tier::PublicEmail,
            is_admin: false,
            source: TierSource::Unresolved,
            acts_for: None,
        }
    }
}

/// The synthetic principal ref of a non-Slack sender (§6).
pub fn email_ref(address: &str) -> String {
    format!("email:{}", normalize_email(address))
}

/// Email addresses compare case-insensitively, without surrounding space.
pub fn normalize_email(address: &str) -> String {
    address.trim().to_lowercase()
}

/// Which handle a principal is known by on the channel being resolved.
#[derive(Clone, Copy)]
enum Handle<'a> {
    Slack(&'a str),
    Email(&'a str),
}

impl Handle<'_> {
    fn cache_key(self) -> String {
        match self {
            Handle::Slack(id) => format!("slack:{id}"),
            Handle::Email(addr) => email_ref(addr),
        }
    }
    fn query(self) -> IdentityQuery {
        match self {
            Handle::Slack(id) => IdentityQuery {
                channel: "slack".into(),
                slack_user_id: Some(id.to_string()),
                email: None,
            },
            Handle::Email(addr) => IdentityQuery {
                channel: "email".into(),
                slack_user_id: None,
                email: Some(normalize_email(addr)),
            },
        }
    }
    /// The ref a channel-trusted principal gets when nobody names one.
    fn synthetic_ref(self) -> String {
        match self {
            Handle::Slack(id) => id.to_string(),
            Handle::Email(addr) => email_ref(addr),
        }
    }
    /// The tier of someone nobody vouched for.
    fn fallback_tier(self) -> Tier {
        match self {
            Handle::Slack(_) => Tier::Unresolved,
            Handle::Email(_) => Tier::PublicEmail,
        }
    }
}

/// How a principal row is found and written: by the channel handle, or by
/// ref for an `acts_for` account that has no email.
#[derive(Clone, Copy)]
enum RowKey<'a> {
    Slack(&'a str),
    Email(&'a str),
    Ref(&'a str),
}

impl<'a> From<Handle<'a>> for RowKey<'a> {
    fn from(h: Handle<'a>) -> Self {
        match h {
            Handle::Slack(id) => RowKey::Slack(id),
            Handle::Email(addr) => RowKey::Email(addr),
        }
    }
}

/// What an upsert does to the stored row ([`Identity::merge`]).
enum Merge {
    /// Keep the row as stored (an email identity matching a Slack principal).
    Keep(Principal),
    /// Rewrite the existing row.
    Update(Principal),
    /// A new principal.
    Insert(Principal),
}

/// How an API caller names a principal (`ref`, `email` or `slack_user_id`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PrincipalLookup {
    /// `principals.ref`.
    Ref(String),
    /// An email address (normalised before the lookup).
    Email(String),
    /// A Slack user id.
    SlackUserId(String),
}

impl PrincipalLookup {
    /// Exactly one of the three, or `Err` with the message for the client.
    pub fn one_of(
        r: Option<&str>,
        email: Option<&str>,
        slack_user_id: Option<&str>,
    ) -> Result<PrincipalLookup, &'static str> {
        let nonempty = |v: Option<&str>| {
            v.map(str::trim)
                .filter(|v| !v.is_empty())
                .map(str::to_string)
        };
        match (nonempty(r), nonempty(email), nonempty(slack_user_id)) {
            (Some(r), None, None) => Ok(PrincipalLookup::Ref(r)),
            (None, Some(e), None) => Ok(PrincipalLookup::Email(e)),
            (None, None, Some(s)) => Ok(PrincipalLookup::SlackUserId(s)),
            (None, None, None) => Err("give one of ref, email or slack_user_id"),
            _ => Err("give only one of ref, email or slack_user_id"),
        }
    }
}

impl std::fmt::Display for PrincipalLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrincipalLookup::Ref(r) => write!(f, "ref {r:?}"),
            PrincipalLookup::Email(e) => write!(f, "email {e:?}"),
            PrincipalLookup::SlackUserId(s) => write!(f, "slack_user_id {s:?}"),
        }
    }
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

    /// The current tenant's principal named by `lookup` (an email matching
    /// several rows gives the one identity resolve would use).
    pub async fn find_principal(
        &self,
        lookup: &PrincipalLookup,
    ) -> anyhow::Result<Option<Principal>> {
        let tenant = tenancy::current_tenant_id()?;
        match lookup {
            PrincipalLookup::Ref(r) => self.by_handle(tenant, RowKey::Ref(r.trim())).await,
            PrincipalLookup::SlackUserId(id) => {
                self.by_handle(tenant, RowKey::Slack(id.trim())).await
            }
            PrincipalLookup::Email(addr) => {
                self.by_handle(tenant, RowKey::Email(&normalize_email(addr)))
                    .await
            }
        }
    }

    /// Forget cached results (e.g. after an access-policy change).
    pub fn invalidate_all(&self) {
        self.resolved.invalidate_all();
        self.unresolved.invalidate_all();
    }

    /// `resolveSlackMember` for the current tenant.
    pub async fn resolve_slack_member(&self, slack_user_id: &str) -> anyhow::Result<Member> {
        self.resolve(Handle::Slack(slack_user_id)).await
    }

    /// An email sender for the current tenant (§6, §9): integration first,
    /// then email trust (listed addresses/domains, dashboard users), else
    /// the `public_email` surface under the synthetic ref `email:<addr>`.
    pub async fn resolve_email_sender(&self, address: &str) -> anyhow::Result<Member> {
        let addr = normalize_email(address);
        if !addr.contains('@') {
            anyhow::bail!("not an email address");
        }
        self.resolve(Handle::Email(&addr)).await
    }

    /// The account an email sender acts for (`acts_for` of the sender's
    /// identity answer, §7.3 / §8.3): upserted like any principal an
    /// integration names — found by its email when it has one, else by its
    /// ref — and returned with the tier the integration gave.
    pub async fn resolve_account(&self, account: &ResolvedPrincipal) -> anyhow::Result<Member> {
        let ctx = tenancy::current().ok_or_else(|| anyhow::anyhow!("no tenant context"))?;
        let email = account
            .email
            .as_deref()
            .map(normalize_email)
            .filter(|e| e.contains('@'));
        let key = match &email {
            Some(addr) => RowKey::Email(addr),
            None => RowKey::Ref(&account.principal_ref),
        };
        let row = self
            .upsert(ctx.id(), key, account, TIER_SOURCE_INTEGRATION)
            .await?;
        Ok(Member {
            principal_ref: row.ref_.clone(),
            tier: Tier::parse_or_unresolved(&account.tier),
            is_admin: account.is_admin,
            principal: Some(row),
            source: TierSource::Integration,
            acts_for: None,
        })
    }

    async fn resolve(&self, handle: Handle<'_>) -> anyhow::Result<Member> {
        let ctx = tenancy::current().ok_or_else(|| anyhow::anyhow!("no tenant context"))?;
        let tenant = ctx.id();
        let cache_key = (tenant, handle.cache_key());
        if let Some(m) = self
            .resolved
            .get(&cache_key)
            .or_else(|| self.unresolved.get(&cache_key))
        {
            return Ok((*m).clone());
        }
        // 1. The integration (a non-reserved tier always wins).
        let lookup = match self.integrations.lookup_identity(&handle.query()).await {
            Ok(l) => l,
            Err(e) => {
                tracing::warn!(error = %e, "identity resolve via integrations failed");
                IdentityLookup {
                    resolution: None,
                    unavailable: vec!["(registry)".into()],
                }
            }
        };
        let (from_integration, acts_for) = match lookup.resolution {
            Some(r) => (r.principal, r.acts_for),
            None => (None, None),
        };
        if from_integration.is_none() && !lookup.unavailable.is_empty() {
            // An integration could not answer: a tier it gave earlier stands,
            // read-only, for this turn (retried after the short TTL).
            if let Some(row) = self.by_handle(tenant, handle.into()).await?
                && tier_source(&row) == Some(TIER_SOURCE_INTEGRATION)
            {
                tracing::warn!(
                    event = "identity.integration_unavailable",
                    integrations = ?lookup.unavailable,
                    principal_ref = %row.ref_,
                    "integration identity unavailable: using the stored principal read-only"
                );
                let m = Member {
                    principal_ref: row.ref_.clone(),
                    tier: Tier::parse_or_unresolved(&row.tier),
                    is_admin: row.is_admin,
                    principal: Some(row),
                    source: TierSource::Integration,
                    acts_for: None,
                };
                self.unresolved.insert(cache_key, Arc::new(m.clone()));
                return Ok(m);
            }
        }
        if from_integration.is_none()
            && let Some(row) = self.by_handle(tenant, handle.into()).await?
            && tier_source(&row) == Some(sync::TIER_SOURCE_API_SYNC)
        {
            // The portal synced this member: its tier beats channel trust.
            let m = Member {
                principal_ref: row.ref_.clone(),
                tier: Tier::parse_or_unresolved(&row.tier),
                is_admin: row.is_admin,
                principal: Some(row),
                source: TierSource::Synced,
                acts_for: None,
            };
            self.resolved.insert(cache_key, Arc::new(m.clone()));
            return Ok(m);
        }
        let policy = AccessPolicy::from_settings(&ctx.tenant.settings.0);
        let trust = match handle {
            Handle::Slack(_) => policy.slack_trust(),
            Handle::Email(addr) if from_integration.is_none() => {
                let dashboard_user = self.is_dashboard_user(tenant, addr).await?;
                policy.email_trust(addr, dashboard_user)
            }
            Handle::Email(_) => None,
        };
        let member = if let Some(p) = from_integration {
            let row = self
                .upsert(tenant, handle.into(), &p, TIER_SOURCE_INTEGRATION)
                .await?;
            Member {
                principal_ref: row.ref_.clone(),
                tier: Tier::parse_or_unresolved(&p.tier),
                is_admin: p.is_admin,
                principal: Some(row),
                source: TierSource::Integration,
                acts_for,
            }
        } else if let Some(grant) = trust {
            // 2. Channel trust, stamped so it can be revoked.
            let p = ResolvedPrincipal {
                principal_ref: handle.synthetic_ref(),
                display_name: None,
                tier: grant.tier.clone(),
                is_admin: false,
                traits: None,
                email: None,
                profile_context: None,
                slack_user_id: None,
            };
            let row = self
                .upsert(tenant, handle.into(), &p, grant.tier_source)
                .await?;
            Member {
                principal_ref: row.ref_.clone(),
                tier: Tier::parse_or_unresolved(&p.tier),
                is_admin: false,
                principal: Some(row),
                source: TierSource::ChannelTrust,
                acts_for: None,
            }
        } else {
            // 3. Nobody vouched: the reserved tier of the channel.
            let m = Member {
                principal: None,
                principal_ref: handle.synthetic_ref(),
                tier: handle.fallback_tier(),
                is_admin: false,
                source: TierSource::Unresolved,
                acts_for: None,
            };
            self.unresolved.insert(cache_key, Arc::new(m.clone()));
            return Ok(m);
        };
        self.resolved.insert(cache_key, Arc::new(member.clone()));
        Ok(member)
    }

    /// A `tenant_users` row exists for this address (§9 `dashboard_users`).
    async fn is_dashboard_user(&self, tenant: Uuid, addr: &str) -> anyhow::Result<bool> {
        let row: Option<TenantUser> = self
            .store
            .find_unique(Some(tenant), TenantUser::EMAIL_KEY, key().str(addr))
            .await?;
        Ok(row.is_some())
    }

    /// The principal row known by the channel handle (Slack id / email) or ref.
    async fn by_handle(
        &self,
        tenant: Uuid,
        handle: RowKey<'_>,
    ) -> anyhow::Result<Option<Principal>> {
        Ok(match handle {
            RowKey::Slack(id) => {
                self.store
                    .find_unique(Some(tenant), Principal::SLACK_USER_KEY, key().str(id))
                    .await?
            }
            RowKey::Email(addr) => self.first_by_email(tenant, addr).await?,
            RowKey::Ref(r) => {
                self.store
                    .find_unique(Some(tenant), Principal::REF_KEY, key().str(r))
                    .await?
            }
        })
    }

    /// Insert or update the principal known by `handle` with `p`, stamping
    /// `traits.tier_source`. Lookup order: the channel handle (Slack id /
    /// email), then the ref. The email path returns a Slack principal it
    /// finds unchanged (the caller runs the turn with `p`'s tier).
    async fn upsert(
        &self,
        tenant: Uuid,
        handle: RowKey<'_>,
        p: &ResolvedPrincipal,
        tier_source: &str,
    ) -> anyhow::Result<Principal> {
        let now = self.clock.now();
        let existing = self.existing_row(tenant, handle, &p.principal_ref).await?;
        Ok(
            match self
                .merge(tenant, handle, existing, p, tier_source, now)
                .await?
            {
                Merge::Keep(row) => row,
                Merge::Update(row) => self.store.update(row).await?,
                Merge::Insert(row) => self.store.insert(row).await?,
            },
        )
    }

    /// The row an upsert of `principal_ref` known by `handle` writes: the
    /// one holding the handle, else the one holding the ref.
    async fn existing_row(
        &self,
        tenant: Uuid,
        handle: RowKey<'_>,
        principal_ref: &str,
    ) -> anyhow::Result<Option<Principal>> {
        Ok(match self.by_handle(tenant, handle).await? {
            Some(row) => Some(row),
            None => {
                self.store
                    .find_unique(Some(tenant), Principal::REF_KEY, key().str(principal_ref))
                    .await?
            }
        })
    }

    /// What writing `p` (known by `handle`) over `existing` means, stamped
    /// `tier_resolved_at = now`: the identity rules of every upsert, no write.
    async fn merge(
        &self,
        tenant: Uuid,
        handle: RowKey<'_>,
        existing: Option<Principal>,
        p: &ResolvedPrincipal,
        tier_source: &str,
        now: Ts,
    ) -> anyhow::Result<Merge> {
        let mut traits = match &p.traits {
            Some(Value::Object(t)) => Value::Object(t.clone()),
            _ => existing
                .as_ref()
                .map(|r| r.traits.0.clone())
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({})),
        };
        traits["tier_source"] = json!(tier_source);
        // The email path never writes a Slack id: Slack ids are unique and
        // only the Slack path can vouch for one.
        let (slack_user_id, email) = match handle {
            RowKey::Slack(id) => (Some(id.to_string()), p.email.clone()),
            RowKey::Email(addr) => (None, Some(addr.to_string())),
            RowKey::Ref(_) => (None, p.email.as_deref().map(normalize_email)),
        };
        Ok(match existing {
            Some(row) if !matches!(handle, RowKey::Slack(_)) && row.slack_user_id.is_some() => {
                tracing::info!(
                    principal_ref = %row.ref_,
                    "email identity matches a Slack principal: used read-only"
                );
                Merge::Keep(row)
            }
            Some(mut row) => {
                // Keep the row's ref unless the integration names a new one
                // that no other principal holds.
                if row.ref_ != p.principal_ref
                    && (tier_source == TIER_SOURCE_INTEGRATION
                        || tier_source == sync::TIER_SOURCE_API_SYNC)
                {
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
                if slack_user_id.is_some() {
                    row.slack_user_id = slack_user_id;
                }
                if p.display_name.is_some() {
                    row.display_name = p.display_name.clone();
                }
                if email.is_some() {
                    row.email = email;
                }
                if p.profile_context.is_some() {
                    row.profile_context = p.profile_context.clone();
                }
                row.traits = storage::Json(traits);
                row.tier_resolved_at = Some(now);
                row.updated_at = now;
                Merge::Update(row)
            }
            None => Merge::Insert(Principal {
                id: Uuid::new_v4(),
                tenant_id: tenant,
                ref_: p.principal_ref.clone(),
                display_name: p.display_name.clone(),
                tier: p.tier.clone(),
                is_admin: p.is_admin,
                traits: storage::Json(traits),
                slack_user_id,
                email,
                profile_context: p.profile_context.clone(),
                tier_resolved_at: Some(now),
                created_at: now,
                updated_at: now,
                ..Principal::default()
            }),
        })
    }

    /// The oldest principal with this email (the index is not unique).
    async fn first_by_email(&self, tenant: Uuid, addr: &str) -> anyhow::Result<Option<Principal>> {
        let rows: Vec<Principal> = self
            .store
            .scan(
                Some(tenant),
                Scan::index(Principal::EMAIL_IDX, key().str(addr)).limit(8),
            )
            .await?;
        Ok(rows.into_iter().min_by_key(|r| r.created_at))
    }
}

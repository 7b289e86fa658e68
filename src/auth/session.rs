//! Dashboard sessions: who is signed in, which communities they belong to
//! (their `tenant_users` rows, or every tenant for a platform admin), the
//! one the dashboard shows (live or its dev shadow), and what their role
//! lets them do.

use storage::{
    DashboardSession, PlatformAdmin, Scan, Store, Tenant, TenantRole, TenantStore, TenantUser, key,
};
use uuid::Uuid;

use super::{DashboardAuth, SESSION_DAYS, new_token, token_hash};

/// A community the user may open, with their role there.
#[derive(Clone, Debug)]
pub struct Membership {
    /// The live tenant row.
    pub tenant: Tenant,
    /// `tenant_users.role` (`owner` for a platform admin without a row).
    pub role: TenantRole,
    /// A `tenant_users` row of theirs (false: a platform admin opening a
    /// community that is not theirs).
    pub member: bool,
}

/// The signed-in user of a request.
#[derive(Clone, Debug)]
pub struct SignedIn {
    /// `dashboard_sessions.id`.
    pub session_id: Uuid,
    /// Lower-cased address.
    pub email: String,
    /// In `platform_admins`.
    pub platform_admin: bool,
    /// Every community they may open, by slug.
    pub memberships: Vec<Membership>,
    /// The tenant the dashboard shows (a live row or its dev shadow).
    pub tenant: Tenant,
    /// Their role in it (through its live row).
    pub role: TenantRole,
    /// A platform admin viewing a community without a `tenant_users` row
    /// of theirs (§14.1 impersonation; the header says so).
    pub impersonating: bool,
}

impl SignedIn {
    /// Owners, admins and platform admins change settings; viewers read.
    pub fn can_change(&self) -> bool {
        self.platform_admin || matches!(self.role, TenantRole::Owner | TenantRole::Admin)
    }

    /// Members have no dashboard beyond their own sign-in.
    pub fn can_view(&self) -> bool {
        self.can_change() || self.role == TenantRole::Viewer
    }

    /// Whether the dashboard shows the dev shadow.
    pub fn is_dev(&self) -> bool {
        self.tenant.live_tenant_id.is_some()
    }
}

impl DashboardAuth {
    /// Whether `email` (normalised) may sign in at all.
    pub(super) async fn may_sign_in(&self, email: &str) -> anyhow::Result<bool> {
        let (memberships, admin) = self.memberships(email).await?;
        Ok(admin || !memberships.is_empty())
    }

    /// The live communities of `email` and whether it is a platform admin,
    /// from one read snapshot.
    pub async fn memberships(&self, email: &str) -> anyhow::Result<(Vec<Membership>, bool)> {
        let email = email.trim().to_lowercase();
        let tenants: Vec<Tenant> = self
            .store
            .list_tenants()
            .await?
            .into_iter()
            .filter(|t| t.live_tenant_id.is_none())
            .collect();
        let (rows, admin) = self
            .store
            .snapshot(move |snap| {
                let k = key().str(&email);
                let admin = !snap
                    .find_unique_many::<PlatformAdmin>(
                        None,
                        PlatformAdmin::EMAIL_KEY,
                        std::slice::from_ref(&k),
                    )?
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .is_empty();
                let mut rows = Vec::new();
                for t in tenants {
                    let user = snap
                        .find_unique_many::<TenantUser>(
                            Some(t.id),
                            TenantUser::EMAIL_KEY,
                            std::slice::from_ref(&k),
                        )?
                        .into_iter()
                        .flatten()
                        .next();
                    match (user, admin) {
                        (Some(u), _) => rows.push((t, u.role, true)),
                        (None, true) => rows.push((t, TenantRole::Owner, false)),
                        (None, false) => {}
                    }
                }
                Ok((rows, admin))
            })
            .await?;
        let memberships = rows
            .into_iter()
            .map(|(tenant, role, member)| Membership {
                tenant,
                role,
                member,
            })
            .collect();
        Ok((memberships, admin))
    }

    /// A new session for `email` (already allowed), showing their first
    /// community: the raw cookie value.
    pub async fn open_session(&self, email: &str) -> anyhow::Result<String> {
        let email = email.trim().to_lowercase();
        let (memberships, _) = self.memberships(&email).await?;
        self.prune_sign_in_rows().await;
        let raw = new_token();
        let now = self.clock.now();
        self.store
            .insert(DashboardSession {
                id: Uuid::new_v4(),
                email: email.clone(),
                session_hash: token_hash(&raw),
                tenant_id: memberships.first().map(|m| m.tenant.id),
                expires_at: now.plus_micros(SESSION_DAYS * 86_400_000_000),
                revoked_at: None,
                created_at: now,
            })
            .await?;
        tracing::info!(email = %email, "dashboard session opened");
        Ok(raw)
    }

    async fn session_row(&self, raw: &str) -> anyhow::Result<Option<DashboardSession>> {
        let row: Option<DashboardSession> = self
            .store
            .find_unique(
                None,
                DashboardSession::SESSION_KEY,
                key().str(&token_hash(raw)),
            )
            .await?;
        let now = self.clock.now();
        Ok(row.filter(|s| s.revoked_at.is_none() && s.expires_at > now))
    }

    /// Who the session cookie `raw` signs in, or `None` (unknown, expired,
    /// revoked, or no longer allowlisted anywhere).
    pub async fn signed_in(&self, raw: &str) -> anyhow::Result<Option<SignedIn>> {
        let Some(session) = self.session_row(raw).await? else {
            return Ok(None);
        };
        let (memberships, platform_admin) = self.memberships(&session.email).await?;
        let Some(first) = memberships.first() else {
            return Ok(None);
        };
        // The shown tenant must still be one of theirs (or its dev shadow).
        let shown = match session.tenant_id {
            Some(id) => self.store.get::<Tenant>(None, key().uuid(id)).await?,
            None => None,
        };
        let chosen = shown.and_then(|t| {
            let live = t.live_tenant_id.unwrap_or(t.id);
            memberships
                .iter()
                .find(|m| m.tenant.id == live)
                .map(|m| (t, m.role, m.member))
        });
        let (tenant, role, member) =
            chosen.unwrap_or_else(|| (first.tenant.clone(), first.role, first.member));
        Ok(Some(SignedIn {
            session_id: session.id,
            email: session.email,
            platform_admin,
            memberships,
            tenant,
            role,
            impersonating: platform_admin && !member,
        }))
    }

    /// Show `tenant_id` (one of the user's communities or its dev shadow)
    /// in the session `who`; `false` when it is not theirs.
    pub async fn switch_tenant(&self, who: &SignedIn, tenant_id: Uuid) -> anyhow::Result<bool> {
        let Some(target) = self
            .store
            .get::<Tenant>(None, key().uuid(tenant_id))
            .await?
        else {
            return Ok(false);
        };
        let live = target.live_tenant_id.unwrap_or(target.id);
        if !who.memberships.iter().any(|m| m.tenant.id == live) {
            return Ok(false);
        }
        let Some(mut session) = self
            .store
            .get::<DashboardSession>(None, key().uuid(who.session_id))
            .await?
        else {
            return Ok(false);
        };
        session.tenant_id = Some(target.id);
        self.store.update(session).await?;
        Ok(true)
    }

    /// The dev shadow of `live` for `who`: opened (created, as a dev API key
    /// would) when they may change things, else only an existing one.
    pub async fn dev_environment(
        &self,
        who: &SignedIn,
        live: &Tenant,
    ) -> anyhow::Result<Option<Tenant>> {
        if who.can_change() {
            return Ok(Some(self.store.ensure_dev_shadow(live.id).await?));
        }
        self.dev_shadow(live).await
    }

    /// The dev shadow of `live`, when it has one.
    async fn dev_shadow(&self, live: &Tenant) -> anyhow::Result<Option<Tenant>> {
        let rows: Vec<Tenant> = self
            .store
            .scan(
                None,
                Scan::index(Tenant::LIVE_TENANT_KEY, key().uuid(live.id)).limit(1),
            )
            .await?;
        Ok(rows.into_iter().next())
    }

    /// End the session of cookie `raw` (idempotent).
    pub async fn sign_out(&self, raw: &str) -> anyhow::Result<()> {
        if let Some(mut s) = self.session_row(raw).await? {
            s.revoked_at = Some(self.clock.now());
            let email = s.email.clone();
            self.store.update(s).await?;
            tracing::info!(email = %email, "dashboard session closed");
        }
        Ok(())
    }
}

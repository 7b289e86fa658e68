//! The community's dashboard users (`tenant_users`, the sign-in allowlist,
//! §14.1) and the rules for changing them — the one place both the
//! dashboard's `/team` page and the dashboard chat's team tools (§5.1)
//! call. Users belong to the live community (a dev shadow has none of its
//! own). Owners and platform admins change anything; admins manage admins,
//! viewers and members but never touch an owner or make one; viewers and
//! members change nothing. Every change runs in one write transaction that
//! re-reads the rows it judges, so the last owner can never be removed or
//! demoted, even by two owners acting at once. Access follows at the next
//! request: `DashboardAuth::signed_in` re-reads memberships every time.

use storage::{RedbStore, Scan, StorageError, Tenant, TenantRole, TenantUser, Ts, Tx, key};
use uuid::Uuid;

use super::SignedIn;

/// Who asks for a change: a signed-in dashboard user's address, their role
/// in the community and whether they are a platform admin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TeamActor {
    /// Lower-cased address (logged as who made the change).
    pub email: String,
    /// Their role in the community.
    pub role: TenantRole,
    /// In `platform_admins`.
    pub platform_admin: bool,
}

impl SignedIn {
    /// This user as the one asking for a team change.
    pub fn team_actor(&self) -> TeamActor {
        TeamActor {
            email: self.email.clone(),
            role: self.role,
            platform_admin: self.platform_admin,
        }
    }
}

/// Whether `who` may change a user whose role is `from` (`None`: a new
/// user) to `to` (`None`: removed). Owners and platform admins may do
/// anything; admins never touch an owner nor make one; viewers nothing.
pub fn may_manage(who: &TeamActor, from: Option<TenantRole>, to: Option<TenantRole>) -> bool {
    if who.platform_admin || who.role == TenantRole::Owner {
        return true;
    }
    who.role == TenantRole::Admin
        && from != Some(TenantRole::Owner)
        && to != Some(TenantRole::Owner)
}

/// The roles `who` may give.
pub fn grantable(who: &TeamActor) -> Vec<&'static str> {
    TenantRole::ALL
        .iter()
        .filter(|r| may_manage(who, None, Some(**r)))
        .map(|r| r.as_str())
        .collect()
}

/// The live tenant whose users a tenant (live or dev shadow) has.
pub fn live_tenant_id(tenant: &Tenant) -> Uuid {
    tenant.live_tenant_id.unwrap_or(tenant.id)
}

/// A role as typed (`owner`, `admin`, `viewer`, `member`).
pub fn parse_role(raw: &str) -> Option<TenantRole> {
    raw.trim().parse().ok()
}

/// What a role that is not one of the four is told.
pub const ROLE_CHOICES: &str = "Choose owner, admin, viewer or member.";
/// The refusal of a change only an owner may make.
pub const NOT_OWNER: &str = "Only an owner can make someone an owner or change an owner's access.";
/// The refusal of a change that would leave no owner.
pub const LAST_OWNER: &str =
    "This is the community's last owner. Make someone else an owner first.";

/// Which user a change is about.
#[derive(Clone, Debug)]
pub enum UserRef {
    /// `tenant_users.id` (the page's forms).
    Id(Uuid),
    /// Their address, any case (the chat tools).
    Email(String),
}

/// How a change ended inside its transaction.
#[derive(Clone, Debug, PartialEq)]
pub enum TeamOutcome {
    /// Made: the user's row as it now is (as it was, for a removal).
    Done(TenantUser),
    /// No such user in this community.
    Missing,
    /// The asker's role may not make this change.
    NotAllowed,
    /// It would leave the community without an owner.
    LastOwner,
    /// The address is already a user here.
    Duplicate,
}

/// The users of the live tenant `tenant`, by role then address.
pub async fn list_users(store: &RedbStore, tenant: Uuid) -> Result<Vec<TenantUser>, StorageError> {
    let mut rows: Vec<TenantUser> = storage::Store::scan(store, Some(tenant), Scan::all()).await?;
    rows.sort_by(|a, b| (a.role, &a.email).cmp(&(b.role, &b.email)));
    Ok(rows)
}

/// Owners of `tenant` as this transaction sees them.
fn owners(tx: &Tx<'_>, tenant: Uuid) -> Result<usize, StorageError> {
    Ok(tx
        .scan::<TenantUser>(Some(tenant), Scan::all())?
        .iter()
        .filter(|u| u.role == TenantRole::Owner)
        .count())
}

/// The user `who` of `tenant` as this transaction sees them.
fn find(tx: &Tx<'_>, tenant: Uuid, who: &UserRef) -> Result<Option<TenantUser>, StorageError> {
    match who {
        UserRef::Id(id) => tx.get::<TenantUser>(Some(tenant), key().uuid(*id)),
        UserRef::Email(raw) => {
            let email = raw.trim().to_lowercase();
            Ok(tx
                .scan::<TenantUser>(
                    Some(tenant),
                    Scan::index(TenantUser::EMAIL_KEY, key().str(&email)),
                )?
                .into_iter()
                .find(|u| u.email.trim().eq_ignore_ascii_case(&email)))
        }
    }
}

/// Add `email` (already normalised) as a `role` user of the live tenant
/// `tenant`, when `by` may give that role and the address is not a user yet.
pub async fn add_user(
    store: &RedbStore,
    by: &TeamActor,
    tenant: Uuid,
    email: &str,
    role: TenantRole,
    now: Ts,
) -> Result<TeamOutcome, StorageError> {
    if !may_manage(by, None, Some(role)) {
        tracing::warn!(by = %by.email, "an admin tried to add an owner");
        return Ok(TeamOutcome::NotAllowed);
    }
    let row = TenantUser {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        email: email.to_string(),
        role,
        created_at: now,
    };
    let result = store
        .transact(move |tx| {
            let taken = find(tx, tenant, &UserRef::Email(row.email.clone()))?.is_some();
            if taken {
                return Ok(TeamOutcome::Duplicate);
            }
            tx.insert(&row)?;
            Ok(TeamOutcome::Done(row))
        })
        .await;
    let outcome = match result {
        Ok((o, _)) => o,
        Err(StorageError::Conflict {
            constraint: TenantUser::EMAIL_KEY,
        }) => TeamOutcome::Duplicate,
        Err(e) => return Err(e),
    };
    if matches!(outcome, TeamOutcome::Done(_)) {
        tracing::info!(tenant = %tenant, user = %email, role = %role, by = %by.email, "dashboard user added");
    }
    Ok(outcome)
}

/// Give `user` of the live tenant `tenant` the role `to`.
pub async fn set_role(
    store: &RedbStore,
    by: &TeamActor,
    tenant: Uuid,
    user: UserRef,
    to: TenantRole,
) -> Result<TeamOutcome, StorageError> {
    let who = by.clone();
    let (outcome, _) = store
        .transact(move |tx| {
            let Some(mut row) = find(tx, tenant, &user)? else {
                return Ok(TeamOutcome::Missing);
            };
            if !may_manage(&who, Some(row.role), Some(to)) {
                return Ok(TeamOutcome::NotAllowed);
            }
            if row.role == TenantRole::Owner && to != TenantRole::Owner && owners(tx, tenant)? <= 1
            {
                return Ok(TeamOutcome::LastOwner);
            }
            if row.role != to {
                row.role = to;
                tx.update(&row)?;
            }
            Ok(TeamOutcome::Done(row))
        })
        .await?;
    logged(&outcome, tenant, by, "dashboard role changed");
    Ok(outcome)
}

/// Remove `user` from the live tenant `tenant`.
pub async fn remove_user(
    store: &RedbStore,
    by: &TeamActor,
    tenant: Uuid,
    user: UserRef,
) -> Result<TeamOutcome, StorageError> {
    let who = by.clone();
    let (outcome, _) = store
        .transact(move |tx| {
            let Some(row) = find(tx, tenant, &user)? else {
                return Ok(TeamOutcome::Missing);
            };
            if !may_manage(&who, Some(row.role), None) {
                return Ok(TeamOutcome::NotAllowed);
            }
            if row.role == TenantRole::Owner && owners(tx, tenant)? <= 1 {
                return Ok(TeamOutcome::LastOwner);
            }
            tx.delete::<TenantUser>(Some(tenant), key().uuid(row.id))?;
            Ok(TeamOutcome::Done(row))
        })
        .await?;
    logged(&outcome, tenant, by, "dashboard user removed");
    Ok(outcome)
}

/// Log how a role change or removal ended.
fn logged(outcome: &TeamOutcome, tenant: Uuid, by: &TeamActor, what: &str) {
    match outcome {
        TeamOutcome::Done(u) => {
            tracing::info!(tenant = %tenant, user = %u.id, role = %u.role, by = %by.email, "{what}");
        }
        TeamOutcome::NotAllowed => {
            tracing::warn!(tenant = %tenant, by = %by.email, "an admin tried to change an owner");
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(role: TenantRole, platform_admin: bool) -> TeamActor {
        TeamActor {
            email: "a@example.org".into(),
            platform_admin,
            role,
        }
    }

    #[test]
    fn admins_never_touch_owners_and_viewers_change_nothing() {
        use TenantRole::*;
        let roles = [None, Some(Owner), Some(Admin), Some(Viewer), Some(Member)];
        for from in roles {
            for to in roles {
                assert!(may_manage(&who(Owner, false), from, to));
                assert!(may_manage(&who(Member, true), from, to), "platform admin");
                let admin_may = from != Some(Owner) && to != Some(Owner);
                assert_eq!(may_manage(&who(Admin, false), from, to), admin_may);
                assert!(!may_manage(&who(Viewer, false), from, to));
                assert!(!may_manage(&who(Member, false), from, to));
            }
        }
        assert_eq!(
            grantable(&who(Admin, false)),
            vec!["admin", "viewer", "member"]
        );
        assert_eq!(grantable(&who(Owner, false)).len(), 4);
    }

    #[test]
    fn users_belong_to_the_live_tenant() {
        let live = Tenant::new("acme", "Acme");
        let mut shadow = Tenant::new("acme-dev", "Acme");
        shadow.live_tenant_id = Some(live.id);
        assert_eq!(live_tenant_id(&live), live.id);
        assert_eq!(live_tenant_id(&shadow), live.id);
        assert_eq!(parse_role(" admin "), Some(TenantRole::Admin));
        assert_eq!(parse_role("boss"), None);
    }
}

//! `/team` (§14.2, §14.1): the community's dashboard users (`tenant_users`,
//! the sign-in allowlist) — address, role, when added — with forms to add a
//! user, change a role and remove a user. Users belong to the live
//! community: in the dev environment the page shows and edits the live
//! tenant's users. Owners and platform admins change anything; admins
//! manage admins, viewers and members but never touch an owner or make
//! one; viewers read. Every change runs in one write transaction that
//! re-reads the rows it judges, so the last owner can never be removed or
//! demoted, even by two owners acting at once. Access follows at the next
//! request: `DashboardAuth::signed_in` re-reads memberships every time.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use storage::{Scan, StorageError, Store, TenantRole, TenantUser, Tx, key};
use uuid::Uuid;

use super::{Chrome, Dashboard, Done, PageForm, failed, forbidden, harden, page_notice};
use crate::auth::{SignedIn, normalize_email};
use crate::state::AppState;
use crate::web::pages::render_page;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/team", get(list).post(add))
        .route("/team/{id}/role", post(change_role))
        .route("/team/{id}/remove", post(remove))
}

/// What a role means on the dashboard, as the page explains it.
fn role_meaning(role: TenantRole) -> &'static str {
    match role {
        TenantRole::Owner => "changes everything, including who is an owner",
        TenantRole::Admin => "changes settings and manages admins, viewers and members",
        TenantRole::Viewer => "reads the dashboard, changes nothing",
        TenantRole::Member => {
            "no dashboard; their email gets the default tier when the access policy trusts dashboard users"
        }
    }
}

/// Whether `who` may change a user whose role is `from` (`None`: a new
/// user) to `to` (`None`: removed). Owners and platform admins may do
/// anything; admins never touch an owner nor make one; viewers nothing.
pub fn may_manage(who: &SignedIn, from: Option<TenantRole>, to: Option<TenantRole>) -> bool {
    if who.platform_admin || who.role == TenantRole::Owner {
        return true;
    }
    who.role == TenantRole::Admin
        && from != Some(TenantRole::Owner)
        && to != Some(TenantRole::Owner)
}

/// The roles `who` may give.
fn grantable(who: &SignedIn) -> Vec<&'static str> {
    TenantRole::ALL
        .iter()
        .filter(|r| may_manage(who, None, Some(**r)))
        .map(|r| r.as_str())
        .collect()
}

/// The live tenant whose users the page manages (users belong to it, not
/// to its dev shadow).
fn live_id(d: &Dashboard) -> Uuid {
    d.user.tenant.live_tenant_id.unwrap_or(d.user.tenant.id)
}

/// A user as the page lists it.
struct UserRow {
    id: Uuid,
    email: String,
    role: &'static str,
    added: String,
    /// The signed-in user may change or remove this row.
    editable: bool,
    /// The row of the signed-in user.
    is_you: bool,
}

/// A refusal shown in one user's row.
struct RowError {
    id: Uuid,
    message: String,
}

#[derive(Template)]
#[template(path = "dashboard/team.html")]
struct TeamPage {
    chrome: Chrome,
    users: Vec<UserRow>,
    /// `(role, meaning)` for the legend.
    roles: Vec<(&'static str, &'static str)>,
    /// The roles the form offers.
    grantable: Vec<&'static str>,
    /// The dashboard shows the dev shadow (users are the live community's).
    dev: bool,
    email: String,
    role: String,
    email_error: Option<String>,
    role_error: Option<String>,
    row_error: Option<RowError>,
}

/// What the add form had, and what was wrong with it.
#[derive(Default)]
struct Typed {
    email: String,
    role: String,
    email_error: Option<String>,
    role_error: Option<String>,
    row_error: Option<RowError>,
}

async fn users(state: &AppState, tenant: Uuid) -> Result<Vec<TenantUser>, StorageError> {
    let mut rows: Vec<TenantUser> = state.store.scan(Some(tenant), Scan::all()).await?;
    rows.sort_by(|a, b| (a.role, &a.email).cmp(&(b.role, &b.email)));
    Ok(rows)
}

async fn page(
    state: &AppState,
    d: &Dashboard,
    chrome: Chrome,
    status: StatusCode,
    typed: Typed,
) -> Response {
    let rows = match users(state, live_id(d)).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(tenant = %live_id(d), error = %e, "team page failed");
            return failed("The team could not be loaded.");
        }
    };
    let can_change = d.user.can_change();
    let users = rows
        .into_iter()
        .map(|u| UserRow {
            id: u.id,
            editable: can_change && may_manage(&d.user, Some(u.role), None),
            is_you: u.email.trim().eq_ignore_ascii_case(&d.user.email),
            email: u.email,
            role: u.role.as_str(),
            added: u.created_at.to_string(),
        })
        .collect();
    let role = if typed.role.is_empty() {
        TenantRole::Viewer.as_str().to_string()
    } else {
        typed.role
    };
    let body = TeamPage {
        chrome,
        users,
        roles: TenantRole::ALL
            .iter()
            .map(|r| (r.as_str(), role_meaning(*r)))
            .collect(),
        grantable: grantable(&d.user),
        dev: d.user.is_dev(),
        email: typed.email,
        role,
        email_error: typed.email_error,
        role_error: typed.role_error,
        row_error: typed.row_error,
    };
    harden((status, render_page(&body, "team", ())).into_response())
}

async fn list(State(state): State<AppState>, d: Dashboard, Query(done): Query<Done>) -> Response {
    let chrome = Chrome::of(&d, "/team").with_flash(done.done.as_deref());
    page(&state, &d, chrome, StatusCode::OK, Typed::default()).await
}

/// How a change ended inside its transaction.
enum Outcome {
    Done,
    /// No such user in this community.
    Missing,
    /// The signed-in user's role may not make this change.
    NotAllowed,
    /// It would leave the community without an owner.
    LastOwner,
    /// The address is already a user here.
    Duplicate,
}

/// Owners of `tenant` as this transaction sees them.
fn owners(tx: &Tx<'_>, tenant: Uuid) -> Result<usize, StorageError> {
    Ok(tx
        .scan::<TenantUser>(Some(tenant), Scan::all())?
        .iter()
        .filter(|u| u.role == TenantRole::Owner)
        .count())
}

/// Parse a posted role.
fn parse_role(raw: &str) -> Option<TenantRole> {
    raw.trim().parse().ok()
}

const NOT_OWNER: &str = "Only an owner can make someone an owner or change an owner's access.";
const LAST_OWNER: &str = "This is the community's last owner. Make someone else an owner first.";

/// The add form.
#[derive(Debug, Deserialize)]
pub struct AddForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    role: String,
}

async fn add(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<AddForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let chrome = Chrome::of(&d, "/team");
    let email = normalize_email(&form.email);
    let role = parse_role(&form.role);
    let mut typed = Typed {
        email: form.email.clone(),
        role: form.role.clone(),
        email_error: email
            .is_none()
            .then(|| "Enter one email address, like ada@example.org.".to_string()),
        role_error: role
            .is_none()
            .then(|| "Choose owner, admin, viewer or member.".to_string()),
        row_error: None,
    };
    let (Some(email), Some(role)) = (email, role) else {
        return page(&state, &d, chrome, StatusCode::UNPROCESSABLE_ENTITY, typed).await;
    };
    if !may_manage(&d.user, None, Some(role)) {
        tracing::warn!(by = %d.user.email, "an admin tried to add an owner");
        return forbidden(NOT_OWNER);
    }
    let tenant = live_id(&d);
    let now = state.clock.now();
    let row = TenantUser {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        email: email.clone(),
        role,
        created_at: now,
    };
    let result = state
        .store
        .transact(move |tx| {
            let taken = tx
                .scan::<TenantUser>(
                    Some(tenant),
                    Scan::index(TenantUser::EMAIL_KEY, key().str(&row.email)),
                )?
                .iter()
                .any(|u| u.email.trim().eq_ignore_ascii_case(&row.email));
            if taken {
                return Ok(Outcome::Duplicate);
            }
            tx.insert(&row)?;
            Ok(Outcome::Done)
        })
        .await;
    match result {
        Ok((Outcome::Done, _)) => {
            tracing::info!(tenant = %tenant, user = %email, role = %role, by = %d.user.email, "dashboard user added");
            Redirect::to("/team?done=user-added").into_response()
        }
        Ok((Outcome::Duplicate, _))
        | Err(StorageError::Conflict {
            constraint: TenantUser::EMAIL_KEY,
        }) => {
            typed.email_error = Some(format!("{email} is already a user of this community."));
            page(&state, &d, chrome, StatusCode::UNPROCESSABLE_ENTITY, typed).await
        }
        Ok(_) => failed("The user could not be added."),
        Err(e) => {
            tracing::error!(tenant = %tenant, error = %e, "adding a dashboard user failed");
            failed("The user could not be added.")
        }
    }
}

/// The role form.
#[derive(Debug, Deserialize)]
pub struct RoleForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    role: String,
}

async fn change_role(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<Uuid>,
    PageForm(form): PageForm<RoleForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let Some(to) = parse_role(&form.role) else {
        let typed = Typed {
            row_error: Some(RowError {
                id,
                message: "Choose owner, admin, viewer or member.".into(),
            }),
            ..Typed::default()
        };
        let chrome = Chrome::of(&d, "/team");
        return page(&state, &d, chrome, StatusCode::UNPROCESSABLE_ENTITY, typed).await;
    };
    let who = d.user.clone();
    let tenant = live_id(&d);
    let result = state
        .store
        .transact(move |tx| {
            let Some(mut user) = tx.get::<TenantUser>(Some(tenant), key().uuid(id))? else {
                return Ok(Outcome::Missing);
            };
            if !may_manage(&who, Some(user.role), Some(to)) {
                return Ok(Outcome::NotAllowed);
            }
            if user.role == TenantRole::Owner && to != TenantRole::Owner && owners(tx, tenant)? <= 1
            {
                return Ok(Outcome::LastOwner);
            }
            if user.role != to {
                user.role = to;
                tx.update(&user)?;
            }
            Ok(Outcome::Done)
        })
        .await;
    finish(
        &state,
        &d,
        id,
        result,
        "role changed",
        "/team?done=role-changed",
    )
    .await
}

/// The remove form.
#[derive(Debug, Deserialize)]
pub struct RemoveForm {
    #[serde(default)]
    csrf: String,
}

async fn remove(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<Uuid>,
    PageForm(form): PageForm<RemoveForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let who = d.user.clone();
    let tenant = live_id(&d);
    let result = state
        .store
        .transact(move |tx| {
            let Some(user) = tx.get::<TenantUser>(Some(tenant), key().uuid(id))? else {
                return Ok(Outcome::Missing);
            };
            if !may_manage(&who, Some(user.role), None) {
                return Ok(Outcome::NotAllowed);
            }
            if user.role == TenantRole::Owner && owners(tx, tenant)? <= 1 {
                return Ok(Outcome::LastOwner);
            }
            tx.delete::<TenantUser>(Some(tenant), key().uuid(id))?;
            Ok(Outcome::Done)
        })
        .await;
    finish(
        &state,
        &d,
        id,
        result,
        "user removed",
        "/team?done=user-removed",
    )
    .await
}

/// The answer to a role change or removal of user `id`.
async fn finish(
    state: &AppState,
    d: &Dashboard,
    id: Uuid,
    result: Result<(Outcome, Option<u64>), StorageError>,
    what: &str,
    done: &str,
) -> Response {
    match result {
        Ok((Outcome::Done, _)) => {
            tracing::info!(tenant = %live_id(d), user = %id, by = %d.user.email, "dashboard {what}");
            Redirect::to(done).into_response()
        }
        Ok((Outcome::Missing, _)) => page_notice(
            StatusCode::NOT_FOUND,
            "No such user",
            "This community has no dashboard user with that id.",
        ),
        Ok((Outcome::NotAllowed, _)) => {
            tracing::warn!(by = %d.user.email, user = %id, "an admin tried to change an owner");
            forbidden(NOT_OWNER)
        }
        Ok((Outcome::LastOwner, _)) => {
            let typed = Typed {
                row_error: Some(RowError {
                    id,
                    message: LAST_OWNER.into(),
                }),
                ..Typed::default()
            };
            let chrome = Chrome::of(d, "/team");
            page(state, d, chrome, StatusCode::CONFLICT, typed).await
        }
        Ok((Outcome::Duplicate, _)) => failed("The change could not be made."),
        Err(e) => {
            tracing::error!(tenant = %live_id(d), error = %e, "dashboard team change failed");
            failed("The change could not be made.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use storage::Tenant;

    fn who(role: TenantRole, platform_admin: bool) -> SignedIn {
        SignedIn {
            session_id: Uuid::nil(),
            email: "a@example.org".into(),
            platform_admin,
            memberships: Vec::new(),
            tenant: Tenant::new("acme", "Acme"),
            role,
            impersonating: false,
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
}

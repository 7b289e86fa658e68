//! `/team` (§14.2, §14.1): the community's dashboard users (`tenant_users`,
//! the sign-in allowlist) — address, role, when added — with forms to add a
//! user, change a role and remove a user. Users belong to the live
//! community: in the dev environment the page shows and edits the live
//! tenant's users. The rules — owners and platform admins change anything,
//! admins never touch an owner or make one, viewers read, the last owner
//! stays, one write transaction per change — are `auth::team`'s, the
//! functions the dashboard chat's team tools call too; this is the HTML.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use storage::{StorageError, TenantRole};
use uuid::Uuid;

use super::{Chrome, Dashboard, Done, PageForm, failed, forbidden, harden, page_notice};
use crate::auth::normalize_email;
use crate::auth::team::{
    LAST_OWNER, NOT_OWNER, ROLE_CHOICES, TeamOutcome, UserRef, add_user, grantable, list_users,
    live_tenant_id, may_manage, parse_role, remove_user, set_role,
};
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

/// The live tenant whose users the page manages (users belong to it, not
/// to its dev shadow).
fn live_id(d: &Dashboard) -> Uuid {
    live_tenant_id(&d.user.tenant)
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

async fn page(
    state: &AppState,
    d: &Dashboard,
    chrome: Chrome,
    status: StatusCode,
    typed: Typed,
) -> Response {
    let rows = match list_users(&state.store, live_id(d)).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(tenant = %live_id(d), error = %e, "team page failed");
            return failed("The team could not be loaded.");
        }
    };
    let can_change = d.user.can_change();
    let actor = d.user.team_actor();
    let users = rows
        .into_iter()
        .map(|u| UserRow {
            id: u.id,
            editable: can_change && may_manage(&actor, Some(u.role), None),
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
        grantable: grantable(&actor),
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
        role_error: role.is_none().then(|| ROLE_CHOICES.to_string()),
        row_error: None,
    };
    let (Some(email), Some(role)) = (email, role) else {
        return page(&state, &d, chrome, StatusCode::UNPROCESSABLE_ENTITY, typed).await;
    };
    let tenant = live_id(&d);
    let now = state.clock.now();
    let by = d.user.team_actor();
    match add_user(&state.store, &by, tenant, &email, role, now).await {
        Ok(TeamOutcome::Done(_)) => Redirect::to("/team?done=user-added").into_response(),
        Ok(TeamOutcome::NotAllowed) => forbidden(NOT_OWNER),
        Ok(TeamOutcome::Duplicate) => {
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
                message: ROLE_CHOICES.into(),
            }),
            ..Typed::default()
        };
        let chrome = Chrome::of(&d, "/team");
        return page(&state, &d, chrome, StatusCode::UNPROCESSABLE_ENTITY, typed).await;
    };
    let by = d.user.team_actor();
    let result = set_role(&state.store, &by, live_id(&d), UserRef::Id(id), to).await;
    finish(&state, &d, id, result, "/team?done=role-changed").await
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
    let by = d.user.team_actor();
    let result = remove_user(&state.store, &by, live_id(&d), UserRef::Id(id)).await;
    finish(&state, &d, id, result, "/team?done=user-removed").await
}

/// The answer to a role change or removal of user `id` (the service
/// logged it).
async fn finish(
    state: &AppState,
    d: &Dashboard,
    id: Uuid,
    result: Result<TeamOutcome, StorageError>,
    done: &str,
) -> Response {
    match result {
        Ok(TeamOutcome::Done(_)) => Redirect::to(done).into_response(),
        Ok(TeamOutcome::Missing) => page_notice(
            StatusCode::NOT_FOUND,
            "No such user",
            "This community has no dashboard user with that id.",
        ),
        Ok(TeamOutcome::NotAllowed) => forbidden(NOT_OWNER),
        Ok(TeamOutcome::LastOwner) => {
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
        Ok(TeamOutcome::Duplicate) => failed("The change could not be made."),
        Err(e) => {
            tracing::error!(tenant = %live_id(d), error = %e, "dashboard team change failed");
            failed("The change could not be made.")
        }
    }
}

//! `/platform` (§14.1, §14.2), platform admins only: every live community
//! (slug, name, status, created, dashboard users, its dev shadow), creating
//! one with its first owner, suspending and reactivating it, and
//! impersonation — opening a community as its owner without a membership
//! row. `POST /dashboard/community` is the header's community picker for
//! anyone with several communities; both go through [`open_community`],
//! which keeps the choice on the server-side session row and logs every
//! impersonation.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use storage::{
    Scan, StorageError, Store, Tenant, TenantRole, TenantStatus, TenantStore, TenantUser, key,
};
use uuid::Uuid;

use super::{Chrome, Dashboard, Done, PageForm, failed, forbidden, harden, page_notice};
use crate::auth::normalize_email;
use crate::platform::tenancy::slug_problem;
use crate::state::AppState;
use crate::web::pages::render_page;

/// Longest community display name.
pub const NAME_MAX_CHARS: usize = 200;

/// What a suspended community loses, as the code does it.
pub const SUSPENDED_EFFECT: &str = "A suspended community's API keys (live and dev, REST and MCP) \
     are refused with 403, inbound email to it is not routed, and its scheduled per-community jobs \
     (channel joins, roster and mention sweeps, fan-out jobs) skip it. Its data and this dashboard \
     stay as they are.";

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/platform", get(list).post(create))
        .route("/platform/{id}/status", post(set_status))
        .route("/platform/{id}/impersonate", post(impersonate))
        .route("/dashboard/community", post(pick))
}

const NOT_ADMIN: &str = "Community management is for platform admins.";

/// A community as the page lists it.
struct TenantRow {
    id: Uuid,
    slug: String,
    name: String,
    status: String,
    suspended: bool,
    created_at: String,
    users: usize,
    dev: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/platform.html")]
struct PlatformPage {
    chrome: Chrome,
    tenants: Vec<TenantRow>,
    suspended_effect: &'static str,
    form: CreateForm,
    slug_error: Option<String>,
    name_error: Option<String>,
    email_error: Option<String>,
}

async fn rows(state: &AppState) -> Result<Vec<TenantRow>, StorageError> {
    let all = state.store.list_tenants().await?;
    let mut rows = Vec::new();
    for t in all.iter().filter(|t| t.live_tenant_id.is_none()) {
        let users: Vec<TenantUser> = state.store.scan(Some(t.id), Scan::all()).await?;
        rows.push(TenantRow {
            id: t.id,
            slug: t.slug.clone(),
            name: t.display_name.clone(),
            status: t.status.to_string(),
            suspended: t.status == TenantStatus::Suspended,
            created_at: t.created_at.to_string(),
            users: users.len(),
            dev: all
                .iter()
                .find(|s| s.live_tenant_id == Some(t.id))
                .map(|s| s.slug.clone()),
        });
    }
    rows.sort_by(|a, b| a.slug.cmp(&b.slug));
    Ok(rows)
}

/// The new-community form's field errors (shared with the signup gate).
#[derive(Default)]
pub(super) struct Errors {
    pub(super) slug: Option<String>,
    pub(super) name: Option<String>,
    pub(super) email: Option<String>,
}

async fn page(
    state: &AppState,
    chrome: Chrome,
    status: StatusCode,
    form: CreateForm,
    errors: Errors,
) -> Response {
    let tenants = match rows(state).await {
        Ok(r) => r,
        Err(e) => {
            tracing::error!(error = %e, "listing communities failed");
            return failed("The communities could not be read.");
        }
    };
    let page = PlatformPage {
        chrome,
        tenants,
        suspended_effect: SUSPENDED_EFFECT,
        form,
        slug_error: errors.slug,
        name_error: errors.name,
        email_error: errors.email,
    };
    let mut resp = render_page(&page, "platform communities", ());
    if resp.status() == StatusCode::OK {
        *resp.status_mut() = status;
    }
    harden(resp)
}

async fn list(State(state): State<AppState>, d: Dashboard, Query(done): Query<Done>) -> Response {
    if !d.user.platform_admin {
        return forbidden(NOT_ADMIN);
    }
    let chrome = Chrome::of(&d, "/platform").with_flash(done.done.as_deref());
    page(
        &state,
        chrome,
        StatusCode::OK,
        CreateForm::default(),
        Errors::default(),
    )
    .await
}

/// The new-community form (also the signup gate's community form).
#[derive(Debug, Default, Deserialize)]
pub struct CreateForm {
    #[serde(default)]
    pub(super) csrf: String,
    #[serde(default)]
    pub(super) slug: String,
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) owner_email: String,
}

/// How creating a community ended.
pub enum Created {
    /// The tenant and its owner row.
    Done(Box<Tenant>),
    /// The slug is taken (or reserved).
    SlugTaken,
}

/// Create the live tenant `slug` named `name` with `owner` (normalised) as
/// its first owner, in one transaction.
pub async fn create_community(
    state: &AppState,
    slug: &str,
    name: &str,
    owner: &str,
) -> Result<Created, StorageError> {
    let tenant = Tenant::new(slug, name);
    let user = TenantUser {
        id: Uuid::new_v4(),
        tenant_id: tenant.id,
        email: owner.to_string(),
        role: TenantRole::Owner,
        created_at: state.clock.now(),
    };
    let result = state
        .store
        .transact(move |tx| {
            tx.insert(&tenant)?;
            tx.insert(&user)?;
            Ok(tenant)
        })
        .await;
    match result {
        Ok((t, _)) => Ok(Created::Done(Box::new(t))),
        Err(StorageError::Conflict {
            constraint: Tenant::SLUG_KEY,
        }) => Ok(Created::SlugTaken),
        Err(e) => Err(e),
    }
}

/// The form's values checked: `(slug, name, owner)` or the field errors.
pub(super) fn checked(form: &CreateForm) -> Result<(String, String, String), Errors> {
    let slug = form.slug.trim().to_string();
    let name = form.name.trim().to_string();
    let mut errors = Errors {
        slug: slug_problem(&slug),
        ..Errors::default()
    };
    if name.is_empty() || name.chars().count() > NAME_MAX_CHARS {
        errors.name = Some(format!(
            "Give the community a name of 1-{NAME_MAX_CHARS} characters."
        ));
    }
    let owner = normalize_email(&form.owner_email);
    if owner.is_none() {
        errors.email = Some("Enter the owner's email address, like ada@example.org.".into());
    }
    match (owner, &errors) {
        (
            Some(owner),
            Errors {
                slug: None,
                name: None,
                email: None,
            },
        ) => Ok((slug, name, owner)),
        _ => Err(errors),
    }
}

async fn create(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<CreateForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    if !d.user.platform_admin {
        return forbidden(NOT_ADMIN);
    }
    let chrome = Chrome::of(&d, "/platform");
    let (slug, name, owner) = match checked(&form) {
        Ok(v) => v,
        Err(errors) => {
            return page(
                &state,
                chrome,
                StatusCode::UNPROCESSABLE_ENTITY,
                form,
                errors,
            )
            .await;
        }
    };
    match create_community(&state, &slug, &name, &owner).await {
        Ok(Created::Done(t)) => {
            tracing::info!(tenant = %t.id, slug = %t.slug, owner = %owner, by = %d.user.email, "community created from /platform");
            Redirect::to("/platform?done=community-created").into_response()
        }
        Ok(Created::SlugTaken) => {
            let errors = Errors {
                slug: Some(format!("{slug} is already taken.")),
                ..Errors::default()
            };
            page(
                &state,
                chrome,
                StatusCode::UNPROCESSABLE_ENTITY,
                form,
                errors,
            )
            .await
        }
        Err(e) => {
            tracing::error!(slug = %slug, error = %e, "creating a community failed");
            failed("The community could not be created.")
        }
    }
}

/// The suspend / reactivate form.
#[derive(Debug, Deserialize)]
pub struct StatusForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    status: String,
}

async fn set_status(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<String>,
    PageForm(form): PageForm<StatusForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    if !d.user.platform_admin {
        return forbidden(NOT_ADMIN);
    }
    let status = match form.status.as_str() {
        "active" => TenantStatus::Active,
        "suspended" => TenantStatus::Suspended,
        _ => {
            return page_notice(
                StatusCode::BAD_REQUEST,
                "Bad form",
                "A community is either active or suspended.",
            );
        }
    };
    let Ok(id) = Uuid::parse_str(&id) else {
        return no_such_community();
    };
    let now = state.clock.now();
    let result = state
        .store
        .transact(move |tx| {
            let Some(mut tenant) = tx.get::<Tenant>(None, key().uuid(id))? else {
                return Ok(None);
            };
            if tenant.live_tenant_id.is_some() {
                return Ok(None);
            }
            tenant.status = status;
            tenant.updated_at = now;
            tx.update(&tenant)?;
            Ok(Some(tenant))
        })
        .await;
    match result {
        Ok((Some(tenant), _)) => {
            state.tenants.invalidate(&tenant);
            if let Ok(Some(shadow)) = state.store.dev_shadow_of(tenant.id).await {
                state.tenants.invalidate(&shadow);
            }
            tracing::info!(tenant = %tenant.id, slug = %tenant.slug, status = %status, by = %d.user.email, "community status changed from /platform");
            let done = match status {
                TenantStatus::Suspended => "community-suspended",
                _ => "community-reactivated",
            };
            Redirect::to(&format!("/platform?done={done}")).into_response()
        }
        Ok((None, _)) => no_such_community(),
        Err(e) => {
            tracing::error!(tenant = %id, error = %e, "changing a community's status failed");
            failed("The community's status could not be changed.")
        }
    }
}

fn no_such_community() -> Response {
    page_notice(
        StatusCode::NOT_FOUND,
        "No such community",
        "That community does not exist (a dev shadow follows its live community).",
    )
}

/// A form that only carries the CSRF token.
#[derive(Debug, Deserialize)]
pub struct CsrfOnly {
    #[serde(default)]
    csrf: String,
}

async fn impersonate(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<String>,
    PageForm(form): PageForm<CsrfOnly>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    if !d.user.platform_admin {
        return forbidden(NOT_ADMIN);
    }
    let Ok(id) = Uuid::parse_str(&id) else {
        return no_such_community();
    };
    open_community(&state, &d, id).await
}

/// The header's community picker.
#[derive(Debug, Deserialize)]
pub struct PickForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    tenant: String,
}

async fn pick(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<PickForm>,
) -> Response {
    if let Some(refused) = d.csrf_refusal(&form.csrf) {
        return refused;
    }
    let Ok(id) = Uuid::parse_str(form.tenant.trim()) else {
        return no_such_community();
    };
    open_community(&state, &d, id).await
}

/// Show the live community `id` in this session (one of the user's, or any
/// for a platform admin — logged as an impersonation when they have no
/// `tenant_users` row there).
async fn open_community(state: &AppState, d: &Dashboard, id: Uuid) -> Response {
    let Some(m) = d.user.memberships.iter().find(|m| m.tenant.id == id) else {
        return forbidden("That community is not yours.");
    };
    match state.auth.switch_tenant(&d.user, id).await {
        Ok(true) => {
            if !m.member {
                tracing::info!(target: "audit", tenant = %m.tenant.id, slug = %m.tenant.slug, admin = %d.user.email, "platform admin impersonating a community");
            }
            Redirect::to("/dashboard").into_response()
        }
        Ok(false) => forbidden("That community is not yours."),
        Err(e) => {
            tracing::error!(error = %e, "opening a community failed");
            page_notice(
                StatusCode::SERVICE_UNAVAILABLE,
                "Try again",
                "The community could not be opened right now.",
            )
        }
    }
}

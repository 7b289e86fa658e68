//! `/api-keys` (§14.2, §12.1): the community's API keys — name, prefix,
//! environment, when minted and revoked. Minting shows the raw key once, on
//! the answer to the form, and stores only its hash (`platform::api_keys`,
//! the function `root keys mint` uses); in the dev environment the key is a
//! `dev_` key of the shadow. Revoking is immediate and final.

use askama::Template;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use storage::{ApiKeyStore, Scan, Store, TenantApiKey};
use uuid::Uuid;

use super::{Chrome, Dashboard, Done, PageForm, failed, harden, page_notice};
use crate::platform::api_keys::{KeyKind, mint};
use crate::state::AppState;
use crate::web::pages::render_page;

/// Longest key name.
pub const KEY_NAME_MAX_CHARS: usize = 100;

pub(super) fn router() -> Router<AppState> {
    Router::new()
        .route("/api-keys", get(list).post(create))
        .route("/api-keys/{id}/revoke", post(revoke))
}

/// A key as the page lists it.
struct KeyRow {
    id: Uuid,
    name: String,
    prefix: String,
    environment: String,
    created_at: String,
    revoked_at: Option<String>,
}

#[derive(Template)]
#[template(path = "dashboard/api_keys.html")]
struct KeysPage {
    chrome: Chrome,
    keys: Vec<KeyRow>,
    /// The raw key just minted (shown once).
    minted: Option<String>,
    name: String,
    name_error: Option<String>,
}

async fn keys(state: &AppState, d: &Dashboard) -> Result<Vec<KeyRow>, storage::StorageError> {
    let mut rows: Vec<TenantApiKey> = state
        .store
        .scan(Some(d.user.tenant.id), Scan::all())
        .await?;
    rows.sort_by_key(|k| std::cmp::Reverse(k.created_at));
    Ok(rows
        .into_iter()
        .map(|k| KeyRow {
            id: k.id,
            name: k.name,
            prefix: k.token_prefix,
            environment: k.environment.to_string(),
            created_at: k.created_at.to_string(),
            revoked_at: k.revoked_at.map(|t| t.to_string()),
        })
        .collect())
}

async fn page(
    state: &AppState,
    d: &Dashboard,
    chrome: Chrome,
    minted: Option<String>,
    name: String,
    name_error: Option<String>,
) -> Response {
    let keys = match keys(state, d).await {
        Ok(k) => k,
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "api keys page failed");
            return failed("The keys could not be loaded.");
        }
    };
    let status = if name_error.is_some() {
        StatusCode::UNPROCESSABLE_ENTITY
    } else {
        StatusCode::OK
    };
    let body = KeysPage {
        chrome,
        keys,
        minted,
        name,
        name_error,
    };
    harden((status, render_page(&body, "api keys", ())).into_response())
}

async fn list(State(state): State<AppState>, d: Dashboard, Query(done): Query<Done>) -> Response {
    let chrome = Chrome::of(&d, "/api-keys").with_flash(done.done.as_deref());
    page(&state, &d, chrome, None, String::new(), None).await
}

/// The mint form.
#[derive(Debug, Deserialize)]
pub struct MintForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    name: String,
}

async fn create(
    State(state): State<AppState>,
    d: Dashboard,
    PageForm(form): PageForm<MintForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    let chrome = Chrome::of(&d, "/api-keys");
    let name = form.name.trim().to_string();
    let error = if name.is_empty() {
        Some("Give the key a name that says who uses it.".to_string())
    } else if name.chars().count() > KEY_NAME_MAX_CHARS {
        Some(format!("At most {KEY_NAME_MAX_CHARS} characters."))
    } else {
        None
    };
    if error.is_some() {
        return page(&state, &d, chrome, None, form.name, error).await;
    }
    let kind = if d.user.is_dev() {
        KeyKind::Dev
    } else {
        KeyKind::Live
    };
    match mint(&state.store, &d.user.tenant, &name, kind, state.clock.now()).await {
        Ok(minted) => {
            tracing::info!(tenant = %d.user.tenant.id, key = %minted.row.id, by = %d.user.email, "api key minted from the dashboard");
            page(&state, &d, chrome, Some(minted.raw), String::new(), None).await
        }
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "api key mint failed");
            failed("The key could not be minted.")
        }
    }
}

/// The revoke form.
#[derive(Debug, Deserialize)]
pub struct RevokeForm {
    #[serde(default)]
    csrf: String,
}

async fn revoke(
    State(state): State<AppState>,
    d: Dashboard,
    Path(id): Path<Uuid>,
    PageForm(form): PageForm<RevokeForm>,
) -> Response {
    if let Some(refused) = d.change_refusal(&form.csrf) {
        return refused;
    }
    match state.store.revoke_api_key(d.user.tenant.id, id).await {
        Ok(true) => {
            tracing::info!(tenant = %d.user.tenant.id, key = %id, by = %d.user.email, "api key revoked from the dashboard");
            Redirect::to("/api-keys?done=key-revoked").into_response()
        }
        Ok(false) => page_notice(
            StatusCode::NOT_FOUND,
            "No such key",
            "This community has no key with that id.",
        ),
        Err(e) => {
            tracing::error!(tenant = %d.user.tenant.id, error = %e, "api key revoke failed");
            failed("The key could not be revoked.")
        }
    }
}

//! Community builds (§15.1): `GET /community-builds/listings` (the
//! platform catalog), `POST /community-builds/installs` (`{listing,
//! config}`, config validated against the listing's schema) and
//! `GET/PATCH/DELETE /community-builds/installs/{id}` — thin handlers over
//! [`crate::builds::catalog`]. Secrets (`writeOnly` config properties) are
//! never answered.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use schemars::JsonSchema;
use serde::Serialize;
use uuid::Uuid;

use super::json::ApiJson;
use super::read_params::tenant;
use crate::builds::catalog::{
    self, CatalogError, InstallBody, InstallPatch, InstallView, ListingView,
};
use crate::state::AppState;
use crate::web::error::ApiError;

impl From<CatalogError> for ApiError {
    fn from(e: CatalogError) -> Self {
        match e {
            CatalogError::Invalid { field, message } => ApiError::field(field, message),
            CatalogError::NotFound(m) => ApiError::NotFound(m),
            CatalogError::Conflict(m) => ApiError::StateConflict(m),
            CatalogError::Storage(s) => s.into(),
        }
    }
}

/// `{listings: […]}`.
#[derive(Serialize, JsonSchema)]
pub struct ListingList {
    listings: Vec<ListingView>,
}

/// `{installs: […]}`.
#[derive(Serialize, JsonSchema)]
pub struct InstallList {
    installs: Vec<InstallView>,
}

/// `GET /api/v1/community-builds/listings`
pub async fn listings(State(state): State<AppState>) -> Result<Json<ListingList>, ApiError> {
    Ok(Json(ListingList {
        listings: catalog::listings(&state.store).await?,
    }))
}

/// `GET /api/v1/community-builds/installs`
pub async fn installs(State(state): State<AppState>) -> Result<Json<InstallList>, ApiError> {
    let t = tenant()?;
    Ok(Json(InstallList {
        installs: catalog::install_views(&state.store, t.id).await?,
    }))
}

/// `POST /api/v1/community-builds/installs` — 201.
pub async fn install(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<InstallBody>,
) -> Result<(StatusCode, Json<InstallView>), ApiError> {
    let t = tenant()?;
    let view = catalog::install(&state.store, t.id, body, state.clock.now()).await?;
    tracing::info!(tenant = %t.id, install = %view.id, listing = ?view.listing, "community build installed");
    Ok((StatusCode::CREATED, Json(view)))
}

fn install_id(raw: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(raw).map_err(|_| ApiError::NotFound(format!("install {raw}: not found")))
}

/// `GET /api/v1/community-builds/installs/{id}`
pub async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<InstallView>, ApiError> {
    let t = tenant()?;
    let id = install_id(&id)?;
    Ok(Json(catalog::install_view(&state.store, t.id, id).await?))
}

/// `PATCH /api/v1/community-builds/installs/{id}`
pub async fn patch(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiJson(body): ApiJson<InstallPatch>,
) -> Result<Json<InstallView>, ApiError> {
    let t = tenant()?;
    let id = install_id(&id)?;
    let view = catalog::patch_install(&state.store, t.id, id, body, state.clock.now()).await?;
    tracing::info!(tenant = %t.id, install = %id, enabled = view.enabled, "community build install changed");
    Ok(Json(view))
}

/// `DELETE /api/v1/community-builds/installs/{id}` — 204.
pub async fn delete(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let t = tenant()?;
    let id = install_id(&id)?;
    catalog::delete_install(&state.store, t.id, id).await?;
    tracing::info!(tenant = %t.id, install = %id, "community build uninstalled");
    Ok(StatusCode::NO_CONTENT)
}

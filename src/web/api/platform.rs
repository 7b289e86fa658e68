//! The platform-admin API, `/api/v1/platform/*` (§15.1, §2.6, §15.4):
//! publishing community-build listings, and exporting or deleting a
//! tenant — what `root builds publish` and `root tenant export|delete` do,
//! for platform admins while the server runs.
//!
//! Authenticated by platform keys (`rpa_…`, [`crate::platform::platform_keys`]),
//! never by tenant keys: a missing, unknown or revoked key, or one whose
//! email left `platform_admins`, is one opaque 401 (the reason logged at
//! info, never the key); a tenant key is a 403. Every request takes one
//! token of the key's own rate ([`crate::limits::RequestLimiter::check_platform`]).

use std::path::{Path as FsPath, PathBuf};

use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use uuid::Uuid;

use super::auth::bearer_token;
use super::json::{ApiJson, ApiQuery};
use crate::builds::catalog::{self, ListingView};
use crate::builds::format::{Build, FormatError};
use crate::ops::tenant::{TenantRefusal, export_tenant};
use crate::platform::api_keys::{self, AuthError};
use crate::platform::platform_keys::{self, PlatformAuthError};
use crate::state::AppState;
use crate::web::error::ApiError;

/// The platform key a request was authenticated with (request extension).
#[derive(Clone, Debug)]
pub struct PlatformCaller {
    /// The key's id.
    pub key_id: Uuid,
    /// Its display prefix (for logs).
    pub key_prefix: String,
}

fn unauthorized(reason: &dyn std::fmt::Display) -> Response {
    tracing::info!(%reason, "platform key refused");
    ApiError::Unauthorized.into_response()
}

/// Middleware of the platform routes: a platform key, still of a platform
/// admin, within its rate.
pub async fn require_platform_key(
    State(state): State<AppState>,
    mut req: Request,
    next: Next,
) -> Response {
    let Some(raw) = bearer_token(&req) else {
        return unauthorized(&"missing bearer token");
    };
    if api_keys::parse_token(&raw).is_some() {
        return match api_keys::authenticate(&state.store, &state.tenants, &raw).await {
            Ok(_) | Err(AuthError::InactiveTenant(_)) => {
                tracing::info!("tenant API key used on a platform route");
                ApiError::Forbidden(
                    "platform routes take a platform-admin key (rpa_…), not a tenant API key"
                        .into(),
                )
                .into_response()
            }
            Err(AuthError::Storage(e)) => ApiError::from(e).into_response(),
            Err(reason) => unauthorized(&reason),
        };
    }
    let key = match platform_keys::authenticate(&state.store, &raw).await {
        Ok(key) => key,
        Err(PlatformAuthError::Storage(e)) => return ApiError::from(e).into_response(),
        Err(reason) => return unauthorized(&reason),
    };
    if let Err(limited) = state.limits.check_platform(key.id) {
        return ApiError::from(limited).into_response();
    }
    req.extensions_mut().insert(PlatformCaller {
        key_id: key.id,
        key_prefix: key.token_prefix,
    });
    next.run(req).await
}

fn caller(req: &axum::http::Extensions) -> Result<PlatformCaller, ApiError> {
    req.get::<PlatformCaller>()
        .cloned()
        .ok_or(ApiError::Unauthorized)
}

impl<S: Send + Sync> axum::extract::FromRequestParts<S> for PlatformCaller {
    type Rejection = ApiError;
    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _: &S,
    ) -> Result<Self, ApiError> {
        caller(&parts.extensions)
    }
}

/// `POST /platform/community-builds/listings` body: `build.json` as an
/// object and `index.js` as text.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PublishBody {
    /// The `build.json` object (`docs/community-builds.md`).
    pub build: Value,
    /// The `index.js` module source.
    pub source: String,
}

/// A build check's field, as the body names it: `index.js` is `source`,
/// the manifest's fields are under `build`.
fn body_field(e: FormatError) -> ApiError {
    let field = match e.field.as_str() {
        "index.js" => "source".to_string(),
        "build.json" => "build".to_string(),
        other => format!("build.{other}"),
    };
    ApiError::UnprocessableField {
        field,
        message: e.message,
    }
}

/// `POST /api/v1/platform/community-builds/listings` — 201 for a new
/// listing, 200 for a new version of one; 422 naming the field.
pub async fn publish(
    State(state): State<AppState>,
    who: PlatformCaller,
    ApiJson(body): ApiJson<PublishBody>,
) -> Result<(StatusCode, Json<ListingView>), ApiError> {
    let build = Build::from_value(body.build, body.source).map_err(body_field)?;
    let done = catalog::publish(&state.store, &build, state.clock.now()).await?;
    tracing::info!(
        platform_key = %who.key_prefix,
        listing = %done.listing.slug,
        version = %done.listing.version,
        created = done.created,
        "community build published"
    );
    let status = if done.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(ListingView::of(&done.listing))))
}

fn refusal(e: anyhow::Error) -> ApiError {
    match e.downcast_ref::<TenantRefusal>() {
        Some(r @ TenantRefusal::Unknown(_)) => ApiError::NotFound(r.to_string()),
        Some(r @ TenantRefusal::DevShadow(_)) => ApiError::Unprocessable(r.to_string()),
        Some(r @ TenantRefusal::RootTenant(_)) => ApiError::Forbidden(r.to_string()),
        None => ApiError::Internal(e),
    }
}

/// `GET /api/v1/platform/tenants/{slug}/export` — the `root tenant export`
/// directory (the tenant and its dev shadow, secrets omitted) as one tar.
pub async fn export(
    State(state): State<AppState>,
    who: PlatformCaller,
    Path(slug): Path<String>,
) -> Result<Response, ApiError> {
    // A private (0700) directory next to the database: exports can be large
    // and hold every row of the tenant.
    let tmp = tempfile::Builder::new()
        .prefix(".export-")
        .tempdir_in(&state.config.data_dir)
        .map_err(|e| ApiError::Internal(e.into()))?;
    let out = tmp.path().join("export");
    let summary = export_tenant(&state.store, &slug, &out)
        .await
        .map_err(refusal)?;
    let archive = tmp.path().join("export.tar");
    let (src, dst) = (out.clone(), archive.clone());
    tokio::task::spawn_blocking(move || write_tar(&src, &dst))
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .map_err(|e| ApiError::Internal(e.into()))?;
    let file = tokio::fs::File::open(&archive)
        .await
        .map_err(|e| ApiError::Internal(e.into()))?;
    let len = file
        .metadata()
        .await
        .map_err(|e| ApiError::Internal(e.into()))?
        .len();
    // The open handle keeps the archive readable; the directory goes now.
    drop(tmp);
    let rows: u64 = summary
        .tenants
        .iter()
        .map(|t| t.tables.values().sum::<u64>())
        .sum();
    tracing::info!(platform_key = %who.key_prefix, tenant = %slug, rows, bytes = len, "tenant exported");
    let stream = tokio_util::io::ReaderStream::new(file);
    Ok((
        [
            (header::CONTENT_TYPE, "application/x-tar".to_string()),
            (header::CONTENT_LENGTH, len.to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{slug}-export.tar\""),
            ),
        ],
        Body::from_stream(stream),
    )
        .into_response())
}

/// Every file under `dir`, paths relative to it, sorted.
fn files_under(dir: &FsPath) -> std::io::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let mut todo = vec![PathBuf::new()];
    while let Some(rel) = todo.pop() {
        for entry in std::fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let path = rel.join(entry.file_name());
            if entry.file_type()?.is_dir() {
                todo.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    Ok(out)
}

/// Write the export directory `src` as a tar at `dst` (the same layout).
fn write_tar(src: &FsPath, dst: &FsPath) -> std::io::Result<()> {
    let file = std::fs::File::create(dst)?;
    let mut tar = tar::Builder::new(std::io::BufWriter::new(file));
    tar.mode(tar::HeaderMode::Deterministic);
    for rel in files_under(src)? {
        tar.append_path_with_name(src.join(&rel), &rel)?;
    }
    let mut w = tar.into_inner()?;
    std::io::Write::flush(&mut w)?;
    Ok(())
}

/// `DELETE /platform/tenants/{slug}` query: the slug again (the CLI's `--yes`).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteQuery {
    /// The tenant's slug, repeated to confirm.
    pub confirm: Option<String>,
}

/// One deleted tenant row.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DeletedTenant {
    /// Its slug.
    pub slug: String,
    /// Its id.
    pub id: Uuid,
    /// Rows removed with it.
    pub rows: u64,
}

/// What a tenant delete removed.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TenantDeleted {
    /// The tenant and its dev shadow.
    pub tenants: Vec<DeletedTenant>,
    /// Index directories removed.
    pub index_dirs: usize,
    /// Queued jobs removed.
    pub jobs: usize,
}

/// `DELETE /api/v1/platform/tenants/{slug}?confirm=<slug>` — the tenant,
/// its dev shadow, every row, queued job, open index and cache of both.
pub async fn delete_tenant(
    State(state): State<AppState>,
    who: PlatformCaller,
    Path(slug): Path<String>,
    ApiQuery(q): ApiQuery<DeleteQuery>,
) -> Result<Json<TenantDeleted>, ApiError> {
    if q.confirm.as_deref() != Some(slug.as_str()) {
        return Err(ApiError::field(
            "confirm",
            "repeat the tenant's slug in `confirm` to delete it and its dev shadow",
        ));
    }
    let done = state.delete_tenant(&slug).await.map_err(refusal)?;
    tracing::info!(
        platform_key = %who.key_prefix,
        tenant = %slug,
        jobs = done.jobs,
        index_dirs = done.index_dirs.len(),
        "tenant deleted"
    );
    Ok(Json(TenantDeleted {
        tenants: done
            .tenants
            .into_iter()
            .map(|(slug, id, rows)| DeletedTenant { slug, id, rows })
            .collect(),
        index_dirs: done.index_dirs.len(),
        jobs: done.jobs,
    }))
}

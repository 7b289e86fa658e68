//! `/health` and `/ready` (§14.3). Anonymous callers — and any session that
//! is not a platform admin's — get only `{"status":"ok"|"down"}` with
//! 200/503; a request carrying a platform admin's `root_session` gets
//! `/health` with diagnostics: storage (ping, migrations applied), the
//! search indexes (outbox backlog, open indexes), the worker heartbeat and
//! every queue's depth. No secrets: names, counts and times only.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use storage::{IndexOutboxStore, MigrationStore, Store};

use crate::auth::SESSION_COOKIE;
use crate::queue::metrics::queue_overview;
use crate::state::{AppState, WORKER_HEARTBEAT_MAX_AGE_MS};
use crate::web::pages::cookie_value;

/// Liveness: the process answers and its storage is usable.
pub async fn health(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let ok = state.store.ping().await.is_ok();
    if platform_admin(&state, &headers).await {
        let diagnostics = diagnostics(&state, ok).await;
        let status = if ok { "ok" } else { "down" };
        let code = if ok {
            StatusCode::OK
        } else {
            StatusCode::SERVICE_UNAVAILABLE
        };
        return (
            code,
            Json(HealthDiagnostics {
                status,
                diagnostics,
            }),
        )
            .into_response();
    }
    status(ok).into_response()
}

/// Readiness: storage is usable and, when this process runs workers, their
/// heartbeat is younger than 30 s.
pub async fn ready(State(state): State<AppState>) -> (StatusCode, Json<HealthStatus>) {
    let storage_ok = match state.store.ping().await {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(error = %e, "readiness: storage unusable");
            false
        }
    };
    let workers_ok = match &state.worker_heartbeat {
        None => true,
        Some(hb) => {
            let fresh = hb.is_fresh(state.clock.now(), WORKER_HEARTBEAT_MAX_AGE_MS);
            if !fresh {
                tracing::warn!(last = ?hb.last(), "readiness: worker heartbeat is stale");
            }
            fresh
        }
    };
    status(storage_ok && workers_ok)
}

/// Whether the request's `root_session` belongs to a platform admin.
async fn platform_admin(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(raw) = cookie_value(headers, SESSION_COOKIE) else {
        return false;
    };
    match state.auth.signed_in(raw).await {
        Ok(Some(u)) => u.platform_admin,
        Ok(None) => false,
        Err(e) => {
            tracing::warn!(error = %e, "health: session lookup failed");
            false
        }
    }
}

/// `{"status": "ok" | "down"}`.
#[derive(Debug, Serialize)]
pub struct HealthStatus {
    status: &'static str,
}

/// `/health` for a platform admin.
#[derive(Debug, Serialize)]
pub struct HealthDiagnostics {
    status: &'static str,
    diagnostics: Diagnostics,
}

/// What a platform admin checks when something is off.
#[derive(Debug, Serialize)]
pub struct Diagnostics {
    storage: StorageDiag,
    indexes: IndexDiag,
    workers: WorkerDiag,
    queues: Vec<QueueDiag>,
    /// Parts that could not be read (their sections stay empty).
    errors: Vec<String>,
}

/// The embedded database.
#[derive(Debug, Serialize)]
pub struct StorageDiag {
    ping: bool,
    migrations_applied: usize,
    latest_migration: Option<String>,
}

/// The search indexes and the outbox that feeds them.
#[derive(Debug, Serialize)]
pub struct IndexDiag {
    outbox_last_seq: u64,
    backlog: Vec<IndexState>,
    open: Vec<IndexState>,
}

/// One tenant's corpus index.
#[derive(Debug, Serialize)]
pub struct IndexState {
    tenant_id: String,
    corpus: &'static str,
    /// The outbox sequence its searches see (open indexes only).
    #[serde(skip_serializing_if = "Option::is_none")]
    applied_seq: Option<u64>,
}

/// The worker runtime of this process.
#[derive(Debug, Serialize)]
pub struct WorkerDiag {
    in_process: bool,
    heartbeat_age_ms: Option<i64>,
    fresh: bool,
}

/// One queue's depth.
#[derive(Debug, Serialize)]
pub struct QueueDiag {
    name: String,
    waiting: u64,
    delayed: u64,
    active: u64,
    failed: u64,
    lag_ms: i64,
}

async fn diagnostics(state: &AppState, ping: bool) -> Diagnostics {
    let mut errors = Vec::new();
    let migrations = match state.store.applied_migrations().await {
        Ok(m) => m,
        Err(e) => {
            errors.push(format!("migrations: {e}"));
            Vec::new()
        }
    };
    let backlog = match state.store.outbox_backlog().await {
        Ok(b) => b,
        Err(e) => {
            errors.push(format!("index outbox: {e}"));
            Vec::new()
        }
    };
    let outbox_last_seq = match state.store.outbox_last_seq().await {
        Ok(s) => s,
        Err(e) => {
            errors.push(format!("index outbox: {e}"));
            0
        }
    };
    let now = state.clock.now();
    let queues = match queue_overview(&state.store, now).await {
        Ok(q) => q
            .into_iter()
            .map(|q| QueueDiag {
                name: q.stats.queue,
                waiting: q.stats.waiting,
                delayed: q.stats.delayed,
                active: q.stats.active,
                failed: q.stats.failed,
                lag_ms: q.stats.lag_ms,
            })
            .collect(),
        Err(e) => {
            errors.push(format!("queues: {e}"));
            Vec::new()
        }
    };
    let workers = match &state.worker_heartbeat {
        None => WorkerDiag {
            in_process: false,
            heartbeat_age_ms: None,
            fresh: false,
        },
        Some(hb) => WorkerDiag {
            in_process: true,
            heartbeat_age_ms: hb.last().map(|t| (now.micros() - t.micros()) / 1000),
            fresh: hb.is_fresh(now, WORKER_HEARTBEAT_MAX_AGE_MS),
        },
    };
    Diagnostics {
        storage: StorageDiag {
            ping,
            migrations_applied: migrations.len(),
            latest_migration: migrations
                .iter()
                .max_by_key(|m| m.version)
                .map(|m| format!("{} {}", m.version, m.name)),
        },
        indexes: IndexDiag {
            outbox_last_seq,
            backlog: backlog
                .into_iter()
                .map(|(t, c)| IndexState {
                    tenant_id: t.to_string(),
                    corpus: c.dir_name(),
                    applied_seq: None,
                })
                .collect(),
            open: state
                .retrieval
                .registry()
                .open_indexes()
                .into_iter()
                .map(|(t, c, seq)| IndexState {
                    tenant_id: t.to_string(),
                    corpus: c.dir_name(),
                    applied_seq: Some(seq),
                })
                .collect(),
        },
        workers,
        queues,
        errors,
    }
}

fn status(ok: bool) -> (StatusCode, Json<HealthStatus>) {
    if ok {
        (StatusCode::OK, Json(HealthStatus { status: "ok" }))
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(HealthStatus { status: "down" }),
        )
    }
}

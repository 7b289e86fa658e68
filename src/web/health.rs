//! `/health` and `/ready` (§14.3). Anonymous callers get only
//! `{"status":"ok"|"down"}` with 200/503.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Serialize;
use storage::Store;

use crate::state::{AppState, WORKER_HEARTBEAT_MAX_AGE_MS};

/// Liveness: the process answers and its storage is usable.
pub async fn health(State(state): State<AppState>) -> (StatusCode, Json<HealthStatus>) {
    status(state.store.ping().await.is_ok())
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

/// `{"status": "ok" | "down"}`.
#[derive(Debug, Serialize)]
pub struct HealthStatus {
    status: &'static str,
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

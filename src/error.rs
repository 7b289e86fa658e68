//! The one HTTP error type. Every failure that reaches a client goes through
//! [`ApiError`]'s `IntoResponse`: JSON `{"error":{"code","message"}}`, the
//! right status, a log line, and never internal details in the body.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use storage::StorageError;

/// An error answered to an HTTP client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 — the request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// 401 — no hint which check failed.
    #[error("invalid or missing API key")]
    Unauthorized,
    /// 403
    #[error("{0}")]
    Forbidden(String),
    /// 404
    #[error("{0}")]
    NotFound(String),
    /// 405
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 409 — a constraint was violated; the name is part of the contract.
    #[error("conflict: {constraint}")]
    Conflict {
        /// The violated constraint.
        constraint: &'static str,
    },
    /// 422 — a CHECK constraint / validation failure.
    #[error("{0}")]
    Unprocessable(String),
    /// 503 — a dependency (storage, queue) is unavailable.
    #[error("{0}")]
    Unavailable(String),
    /// 500 — our bug or an I/O failure; details are logged, not returned.
    #[error("internal error")]
    Internal(#[source] anyhow::Error),
}

impl From<StorageError> for ApiError {
    fn from(e: StorageError) -> Self {
        // Exhaustive on purpose: a new storage error forces a decision here.
        match e {
            StorageError::NotFound { table } => ApiError::NotFound(format!("{table}: not found")),
            StorageError::Conflict { constraint } | StorageError::ForeignKey { constraint } => {
                ApiError::Conflict { constraint }
            }
            StorageError::Check { .. } => ApiError::Unprocessable(e.to_string()),
            StorageError::AlreadyOpen { .. } => ApiError::Unavailable("storage unavailable".into()),
            StorageError::Corrupted { .. }
            | StorageError::NewerSchema { .. }
            | StorageError::Backend(_) => ApiError::Internal(e.into()),
        }
    }
}

impl ApiError {
    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
            ApiError::Unprocessable(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unprocessable"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        match &self {
            ApiError::Internal(e) => tracing::error!(error = ?e, "request failed"),
            ApiError::Unavailable(m) => tracing::warn!(%m, "dependency unavailable"),
            other => tracing::info!(status = status.as_u16(), error = %other, "request refused"),
        }
        let mut body = json!({ "error": { "code": code, "message": self.to_string() } });
        if let ApiError::Conflict { constraint } = &self {
            body["error"]["constraint"] = json!(constraint);
        }
        let mut resp = (status, Json(body)).into_response();
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        resp
    }
}

//! The one HTTP error type. Every failure that reaches a client goes through
//! [`ApiError`]'s `IntoResponse`: JSON `{"error":{"code","message"}}`, the
//! right status, a log line, and never internal details in the body.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use storage::StorageError;

/// An error answered to an HTTP client.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400 — the request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// 400 naming the offending field (`field` in the body): a missing,
    /// malformed or out-of-range parameter.
    #[error("{message}")]
    InvalidField {
        /// The parameter or body field, as the client spelled it
        /// (`limit`, `principals[3].email`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// 400 listing every field at fault (a batch validated all or
    /// nothing): `fields` in the body, `field` = the first.
    #[error("{message}")]
    InvalidFields {
        /// Summary.
        message: String,
        /// Each offending field with what is wrong with it.
        fields: Vec<FieldError>,
    },
    /// 401 — no hint which check failed.
    #[error("invalid or missing API key")]
    Unauthorized,
    /// 401 for a webhook: its signature is missing, malformed, stale or
    /// wrong (no hint which).
    #[error("invalid or stale webhook signature")]
    BadSignature,
    /// 403
    #[error("{0}")]
    Forbidden(String),
    /// 404
    #[error("{0}")]
    NotFound(String),
    /// 405
    #[error("method not allowed")]
    MethodNotAllowed,
    /// 413 — the body is over the size limit.
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 409 — a constraint was violated; the name is part of the contract.
    #[error("conflict: {constraint}")]
    Conflict {
        /// The violated constraint.
        constraint: &'static str,
    },
    /// 409 — the resource is in a state that does not allow this (the
    /// message says which).
    #[error("{0}")]
    StateConflict(String),
    /// 422 — a CHECK constraint / validation failure.
    #[error("{0}")]
    Unprocessable(String),
    /// 422 naming the field at fault (`field` in the body): well-formed
    /// JSON whose content fails validation (a community build).
    #[error("{field}: {message}")]
    UnprocessableField {
        /// The field (`build.tools[0].name`, `source`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// 421 — the request's `Host` is not this server's public name (a
    /// browser-facing route refusing a DNS-rebinding attempt).
    #[error("{0}")]
    MisdirectedRequest(String),
    /// 429 — a rate, concurrency or budget limit (security finding M1);
    /// answered with `Retry-After: <retry_after_secs>`. `code` is
    /// `rate_limited`, `concurrency_limited` or `llm_budget_exhausted`.
    #[error("{message}")]
    TooManyRequests {
        /// Machine-readable reason.
        code: &'static str,
        /// What the client should know.
        message: String,
        /// Whole seconds to wait (≥ 1).
        retry_after_secs: u64,
    },
    /// 502 — an upstream the request depends on (a tenant's integration
    /// backend) failed; the message says how.
    #[error("{0}")]
    BadGateway(String),
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

impl From<crate::limits::LimitExceeded> for ApiError {
    fn from(e: crate::limits::LimitExceeded) -> Self {
        ApiError::TooManyRequests {
            code: if e.concurrency {
                "concurrency_limited"
            } else {
                "rate_limited"
            },
            message: e.message,
            retry_after_secs: e.retry_after_secs,
        }
    }
}

impl ApiError {
    /// A 400 naming `field`.
    pub fn field(field: impl Into<String>, message: impl Into<String>) -> ApiError {
        ApiError::InvalidField {
            field: field.into(),
            message: message.into(),
        }
    }

    /// The HTTP status this error answers with.
    pub fn status(&self) -> StatusCode {
        self.status_and_code().0
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            ApiError::InvalidField { .. } => (StatusCode::BAD_REQUEST, "invalid_field"),
            ApiError::InvalidFields { .. } => (StatusCode::BAD_REQUEST, "invalid_fields"),
            ApiError::Unauthorized => (StatusCode::UNAUTHORIZED, "unauthorized"),
            ApiError::BadSignature => (StatusCode::UNAUTHORIZED, "invalid_signature"),
            ApiError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
            ApiError::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::Conflict { .. } => (StatusCode::CONFLICT, "conflict"),
            ApiError::StateConflict(_) => (StatusCode::CONFLICT, "conflict"),
            ApiError::PayloadTooLarge(_) => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::Unprocessable(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unprocessable"),
            ApiError::UnprocessableField { .. } => {
                (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field")
            }
            ApiError::MisdirectedRequest(_) => {
                (StatusCode::MISDIRECTED_REQUEST, "misdirected_request")
            }
            ApiError::TooManyRequests { code, .. } => (StatusCode::TOO_MANY_REQUESTS, code),
            ApiError::BadGateway(_) => (StatusCode::BAD_GATEWAY, "bad_gateway"),
            ApiError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        }
    }
}

/// Every error answer: `{"error": {code, message, field?, constraint?, retry_after_secs?}}`.
#[derive(Debug, Serialize)]
pub struct ErrorBody {
    /// The one error.
    pub error: ErrorDetail,
}

/// One field at fault in an `invalid_fields` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct FieldError {
    /// The field (`principals[3].email`).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

/// What went wrong, for clients to branch on (`code`) and people to read.
#[derive(Debug, Serialize)]
pub struct ErrorDetail {
    /// Stable machine code (`bad_request`, `conflict`, a 429's limit, …).
    pub code: &'static str,
    /// Human-readable message (never a 5xx's detail).
    pub message: String,
    /// 400 / 422 `invalid_field` only: the field at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// 400 `invalid_fields` only: every field at fault.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldError>>,
    /// 409 only: the PostgreSQL-style name of the violated constraint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub constraint: Option<&'static str>,
    /// 429 only: seconds until a retry can succeed (also `Retry-After`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_after_secs: Option<u64>,
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let (status, code) = self.status_and_code();
        match &self {
            ApiError::Internal(e) => tracing::error!(error = ?e, "request failed"),
            ApiError::Unavailable(m) => tracing::warn!(%m, "dependency unavailable"),
            // The limiter already logged the refusal with tenant and key ids.
            ApiError::TooManyRequests { .. } => {}
            other => tracing::info!(status = status.as_u16(), error = %other, "request refused"),
        }
        let retry_after = match &self {
            ApiError::TooManyRequests {
                retry_after_secs, ..
            } => Some((*retry_after_secs).max(1)),
            _ => None,
        };
        let body = ErrorBody {
            error: ErrorDetail {
                code,
                message: self.to_string(),
                field: match &self {
                    ApiError::InvalidField { field, .. }
                    | ApiError::UnprocessableField { field, .. } => Some(field.clone()),
                    ApiError::InvalidFields { fields, .. } => {
                        fields.first().map(|f| f.field.clone())
                    }
                    _ => None,
                },
                fields: match &self {
                    ApiError::InvalidFields { fields, .. } => Some(fields.clone()),
                    _ => None,
                },
                constraint: match &self {
                    ApiError::Conflict { constraint } => Some(constraint),
                    _ => None,
                },
                retry_after_secs: retry_after,
            },
        };
        let mut resp = (status, Json(body)).into_response();
        if let Some(secs) = retry_after {
            resp.headers_mut().insert(
                axum::http::header::RETRY_AFTER,
                axum::http::HeaderValue::from(secs),
            );
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(e: ApiError) -> (StatusCode, serde_json::Value) {
        let resp = e.into_response();
        let status = resp.status();
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn a_constraint_violation_is_a_409_naming_the_constraint() {
        let (status, json) = body(
            StorageError::Conflict {
                constraint: "knowledge_pages_tenant_id_slug_key",
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(json["error"]["code"], "conflict");
        assert_eq!(
            json["error"]["constraint"],
            "knowledge_pages_tenant_id_slug_key"
        );
        let (status, json) = body(
            StorageError::ForeignKey {
                constraint: "knowledge_chunks_knowledge_page_id_fkey",
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT);
        assert_eq!(
            json["error"]["constraint"],
            "knowledge_chunks_knowledge_page_id_fkey"
        );
    }

    #[tokio::test]
    async fn too_many_requests_carries_retry_after_in_header_and_body() {
        let resp = ApiError::TooManyRequests {
            code: "rate_limited",
            message: "slow down".into(),
            retry_after_secs: 0,
        }
        .into_response();
        assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(resp.headers()["retry-after"], "1", "at least one second");
        let bytes = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let json: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(json["error"]["code"], "rate_limited");
        assert_eq!(json["error"]["message"], "slow down");
        assert_eq!(json["error"]["retry_after_secs"], 1);
    }

    #[tokio::test]
    async fn internal_errors_do_not_leak_details() {
        let (status, json) =
            body(StorageError::Backend("disk /dev/sda1 exploded at 0xdeadbeef".into()).into())
                .await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        assert!(!json.to_string().contains("sda1"), "{json}");
        assert_eq!(json["error"]["message"], "internal error");
        let (status, _) = body(
            StorageError::Check {
                column: "x",
                message: "bad".into(),
            }
            .into(),
        )
        .await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
        let (status, _) = body(StorageError::NotFound { table: "tenants" }.into()).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}

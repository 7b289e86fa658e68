//! `ApiJson<T>` / `ApiQuery<T>`: axum's JSON extractor with our error shape. A malformed body,
//! a wrong content type or a schema mismatch is a 400 whose message says
//! what was wrong (serde's path and reason), never axum's plain-text 422.

use axum::extract::rejection::JsonRejection;
use axum::extract::{FromRequest, Request};
use serde::de::DeserializeOwned;

use crate::web::error::ApiError;

/// A JSON request body deserialised into `T`.
pub struct ApiJson<T>(pub T);

impl<T, S> FromRequest<S> for ApiJson<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        match axum::Json::<T>::from_request(req, state).await {
            Ok(axum::Json(v)) => Ok(ApiJson(v)),
            Err(rejection) => {
                let message = match &rejection {
                    JsonRejection::MissingJsonContentType(_) => {
                        "expected a JSON body (Content-Type: application/json)".to_string()
                    }
                    other => other.body_text(),
                };
                tracing::info!(status = %rejection.status(), %message, "rejected request body");
                if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
                    return Err(ApiError::PayloadTooLarge(message));
                }
                Err(ApiError::BadRequest(message))
            }
        }
    }
}

/// A query string deserialised into `T`: a malformed or unknown parameter
/// is a 400 saying which (serde's message), never axum's plain-text answer.
pub struct ApiQuery<T>(pub T);

impl<T, S> axum::extract::FromRequestParts<S> for ApiQuery<T>
where
    T: DeserializeOwned,
    S: Send + Sync,
{
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        match axum::extract::Query::<T>::from_request_parts(parts, state).await {
            Ok(axum::extract::Query(v)) => Ok(ApiQuery(v)),
            Err(rejection) => {
                let message = rejection.body_text();
                tracing::info!(%message, "rejected query string");
                Err(ApiError::BadRequest(message))
            }
        }
    }
}

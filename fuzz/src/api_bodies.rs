//! Target `api_bodies`: the JSON body of every `/api/v1` route (and the dev
//! harness's `POST /dev/simulate-message`) through [`ApiJson`], the one
//! extractor those routes use, as an axum `Request` → `FromRequest` call
//! without a server. The content type cycles through JSON and non-JSON
//! values, so the rejection mapping is exercised too. A register body's
//! fields also go through the registry's pure validators (name, base URL,
//! `endpoint_paths`) exactly as `POST /api/v1/integrations` does next.
//!
//! Invariants checked: a body is accepted exactly when it is JSON of the
//! route's type sent as JSON; every refusal is a 400 whose JSON
//! error says what was wrong; accepted validator output is well formed.

use std::sync::OnceLock;

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use root::integrations::EndpointPaths;
use root::integrations::endpoints::EndpointKey;
use root::integrations::registry::{normalize_base_url, validate_name};
use root::web::api::json::ApiJson;
use root::web::api::{ExecuteBody, PageBody, RegisterBody, ResolveBody, SearchBody, TurnBody};
use root::web::dev::SimulateBody;
use root::web::error::ApiError;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Content types sent, with whether axum reads them as JSON
/// (`application/json` or an `application/*+json` suffix).
const CONTENT_TYPES: [(Option<&str>, bool); 6] = [
    (Some("application/json"), true),
    (Some("application/json; charset=utf-8"), true),
    (Some("application/merge-patch+json"), true),
    (Some("text/plain"), false),
    (None, false),
    (Some("multipart/form-data; boundary=x"), false),
];

/// The message of a refusal for a missing or non-JSON content type.
const NOT_JSON_MESSAGE: &str = "expected a JSON body (Content-Type: application/json)";

fn runtime() -> &'static tokio::runtime::Runtime {
    static RUNTIME: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RUNTIME.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a current-thread runtime")
    })
}

/// Extract one body as every route's body type.
pub fn run(data: &[u8]) {
    // Mostly JSON content types; the choice follows the input so a
    // reproduced input takes the same path.
    let (content_type, is_json) = CONTENT_TYPES[data.len() % CONTENT_TYPES.len()];
    runtime().block_on(async {
        extract::<TurnBody>(data, content_type, is_json).await;
        extract::<ExecuteBody>(data, content_type, is_json).await;
        extract::<PageBody>(data, content_type, is_json).await;
        extract::<SearchBody>(data, content_type, is_json).await;
        extract::<ResolveBody>(data, content_type, is_json).await;
        extract::<SimulateBody>(data, content_type, is_json).await;
        if extract::<RegisterBody>(data, content_type, is_json).await {
            check_register_fields(data);
        }
    });
}

/// Run `ApiJson<T>` over `body`; true when it was accepted.
async fn extract<T: DeserializeOwned>(
    body: &[u8],
    content_type: Option<&str>,
    is_json: bool,
) -> bool {
    let mut request = Request::builder().method("POST").uri("/api/v1/fuzz");
    if let Some(ct) = content_type {
        request = request.header(header::CONTENT_TYPE, ct);
    }
    let request = request
        .body(Body::from(body.to_vec()))
        .expect("a request from a static method, URI and header");
    let parses = serde_json::from_slice::<T>(body).is_ok();
    match ApiJson::<T>::from_request(request, &()).await {
        Ok(_) => {
            assert!(
                is_json && parses,
                "accepted a body serde refuses or a non-JSON content type"
            );
            true
        }
        Err(e) => {
            assert!(!(is_json && parses), "refused a valid JSON body: {e}");
            let expected = if is_json {
                None
            } else {
                Some(NOT_JSON_MESSAGE)
            };
            check_refusal(e, expected).await;
            false
        }
    }
}

async fn check_refusal(e: ApiError, expected_message: Option<&str>) {
    let is_bad_request = matches!(e, ApiError::BadRequest(_));
    assert!(is_bad_request, "a body refusal is a 400, got {e:?}");
    let response = e.into_response();
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
        .await
        .expect("an error body in memory");
    let json: Value = serde_json::from_slice(&bytes).expect("a JSON error body");
    assert_eq!(json["error"]["code"], "bad_request");
    let message = json["error"]["message"].as_str().unwrap_or_default();
    assert!(!message.is_empty(), "the refusal says what was wrong");
    if let Some(expected) = expected_message {
        assert_eq!(message, expected);
    }
}

/// The registry's validators over an accepted register body's fields.
fn check_register_fields(data: &[u8]) {
    let body: Value = serde_json::from_slice(data).expect("accepted JSON parses as a value");
    if let Some(name) = body["name"].as_str()
        && validate_name(name).is_ok()
    {
        assert!((2..=64).contains(&name.len()));
    }
    if let Some(raw) = body["base_url"].as_str()
        && let Ok(url) = normalize_base_url(raw)
    {
        assert!(url.starts_with("http://") || url.starts_with("https://"));
        assert!(!url.ends_with('/'));
        assert_eq!(
            normalize_base_url(&url).ok().as_deref(),
            Some(url.as_str()),
            "a normalized base URL is stable"
        );
    }
    if let Some(paths) = body.get("endpoint_paths")
        && let Ok(paths) = EndpointPaths::from_json(paths)
    {
        for key in EndpointKey::ALL {
            let path = paths.path(key);
            assert!(path.starts_with('/') && !path.chars().any(char::is_whitespace));
        }
        let tool_path = paths.tool_path("look up/é");
        assert!(!tool_path.chars().any(char::is_whitespace));
        assert_eq!(
            EndpointPaths::from_json(&paths.to_json()).as_ref(),
            Ok(&paths),
            "stored endpoint paths read back"
        );
    }
}

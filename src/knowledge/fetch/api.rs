//! The `api_pull` kind (§11.1): call the tenant's API (`http_method`,
//! `request_headers`, `request_body`, auth per `auth_type`) and read the
//! answer per `response_mode` — JSON through the source's [`Mapping`], or
//! one HTML / text document.
//!
//! API sources do not follow redirects: an API that moved should be
//! re-registered, and a redirect would carry its credentials to a host the
//! admin never named. Credentials are read from `secrets` only here, into
//! headers marked sensitive (reqwest then never prints them).

use base64::Engine;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::Value;
use storage::{AuthType, HttpMethod, KnowledgeSource, ResponseMode};

use super::mapping::Mapping;
use super::web::{decode_text, html_document};
use super::{
    FetchError, Fetched, Fetcher, MAX_API_BYTES, RawDocument, media_type, on_blocking_pool,
    read_body, secret, send, source_url, status_error,
};
use crate::outbound::body::{parse_json, parse_sized};

/// The `api_key` header when `auth_config.header_name` is unset (§2.5).
pub const DEFAULT_API_KEY_HEADER: &str = "x-api-key";
/// Headers `request_headers` may not set: they frame the request itself.
const RESERVED_HEADERS: &[&str] = &["host", "content-length", "transfer-encoding", "connection"];

/// Fetch an `api_pull` source.
pub(super) async fn fetch(f: &Fetcher, source: &KnowledgeSource) -> Result<Fetched, FetchError> {
    let url = source_url(source)?;
    // A broken mapping fails the run before the tenant's API is called.
    let mapping = Mapping::compile(&source.mapping.0).map_err(FetchError::new)?;
    let headers = request_headers(source)?;
    let method = match source.http_method {
        HttpMethod::Get => reqwest::Method::GET,
        HttpMethod::Post => reqwest::Method::POST,
    };
    let mut req = f.request(method, url)?.headers(headers);
    if source.http_method == HttpMethod::Post
        && let Some(body) = &source.request_body
    {
        req = req
            .header(CONTENT_TYPE, "application/json")
            .body(body.0.to_string());
    }
    let deadline = f.deadline();
    let resp = f.within(deadline, send(req)).await?;
    if !resp.status().is_success() {
        return Err(status_error(&resp));
    }
    let status = resp.status().as_u16();
    let media = media_type(&resp);
    let body = f
        .within(deadline, read_body(resp, MAX_API_BYTES))
        .await
        .map_err(|e| e.with_status(status))?;
    let mode = match source.response_mode {
        ResponseMode::Auto => mode_of(media.as_deref()),
        mode => mode,
    };
    let (documents, documents_total) = match mode {
        ResponseMode::Html => {
            let text = decode_text(&body);
            let page = on_blocking_pool(move || html_document(&text))
                .await
                .map_err(|e| e.with_status(status))?;
            let document = RawDocument {
                external_id: Some(url.to_string()),
                title: page.title.or_else(|| Some(source.name.clone())),
                content_html: page.content_html,
                content_text: page.content_text,
                source_url: Some(url.to_string()),
                ..RawDocument::default()
            };
            (vec![document], 1)
        }
        ResponseMode::Text => {
            let document = RawDocument {
                external_id: Some(url.to_string()),
                title: Some(source.name.clone()),
                content_text: Some(decode_text(&body)),
                source_url: Some(url.to_string()),
                ..RawDocument::default()
            };
            (vec![document], 1)
        }
        ResponseMode::Json | ResponseMode::Auto => map_json(body, mapping)
            .await
            .map_err(|e| e.with_status(status))?,
    };
    Ok(Fetched {
        documents,
        documents_total,
        http_status: Some(status),
    })
}

/// The `auto` mode's choice by media type: JSON (`application/json`,
/// `…+json`), HTML, or else text.
fn mode_of(media_type: Option<&str>) -> ResponseMode {
    match media_type {
        Some(m) if m.ends_with("/json") || m.ends_with("+json") => ResponseMode::Json,
        Some("text/html" | "application/xhtml+xml") => ResponseMode::Html,
        _ => ResponseMode::Text,
    }
}

/// Parse `body` as JSON and map it (both off the async thread when the
/// body is big); zero documents is an error.
async fn map_json(
    body: Vec<u8>,
    mapping: Mapping,
) -> Result<(Vec<RawDocument>, usize), FetchError> {
    let len = body.len();
    let root: Value = parse_json(body)
        .await
        .map_err(|e| FetchError::new(format!("the response is not JSON: {e}")))?;
    let (documents, total) = parse_sized(len, move || mapping.documents(&root))
        .await
        .map_err(|e| FetchError::new(format!("the response could not be mapped ({e})")))?;
    if total == 0 {
        return Err(FetchError::new(
            "the response mapped to zero documents (check mapping.documents_path and the field paths)",
        ));
    }
    Ok((documents, total))
}

/// The request's headers: an `Accept` for the response mode, then
/// `request_headers` (which may replace it), then the auth header (which
/// replaces a same-named request header, so the stored credential is the
/// one sent).
fn request_headers(source: &KnowledgeSource) -> Result<HeaderMap, FetchError> {
    let mut headers = HeaderMap::new();
    headers.insert(
        ACCEPT,
        HeaderValue::from_static(accept(source.response_mode)),
    );
    match &source.request_headers.expose().0 {
        Value::Null => {}
        Value::Object(object) => {
            for (name, value) in object {
                let shown: String = name.chars().take(64).collect();
                let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
                    FetchError::new(format!(
                        "request_headers.{shown} is not a valid header name"
                    ))
                })?;
                if RESERVED_HEADERS.contains(&header.as_str()) {
                    return Err(FetchError::new(format!(
                        "request_headers.{shown} cannot be set (the client sets it)"
                    )));
                }
                let Value::String(value) = value else {
                    return Err(FetchError::new(format!(
                        "request_headers.{shown} must be a string"
                    )));
                };
                // Request headers may carry tokens too: never echo a value.
                let mut value = HeaderValue::from_str(value).map_err(|_| {
                    FetchError::new(format!(
                        "request_headers.{shown} is not a valid header value"
                    ))
                })?;
                value.set_sensitive(true);
                headers.insert(header, value);
            }
        }
        _ => {
            return Err(FetchError::new(
                "request_headers must be a JSON object of header names to string values",
            ));
        }
    }
    if let Some((name, value)) = auth_header(source)? {
        headers.insert(name, value);
    }
    Ok(headers)
}

/// What to ask for in each response mode.
fn accept(mode: ResponseMode) -> &'static str {
    match mode {
        ResponseMode::Json => "application/json",
        ResponseMode::Html => "text/html, application/xhtml+xml;q=0.9, */*;q=0.1",
        ResponseMode::Text => "text/plain, */*;q=0.1",
        ResponseMode::Auto => "application/json, text/html;q=0.9, text/plain;q=0.8, */*;q=0.1",
    }
}

/// The auth header of `auth_type`: `Authorization: Bearer {token}`,
/// `Authorization: Basic base64(username:password)`, or
/// `{header_name}: {token}` — from `auth_config` and `secrets`.
fn auth_header(source: &KnowledgeSource) -> Result<Option<(HeaderName, HeaderValue)>, FetchError> {
    let needs = |what: &str| {
        FetchError::new(format!(
            "auth_type {} needs {what}",
            source.auth_type.as_str()
        ))
    };
    let config_str = |key: &str| {
        source
            .auth_config
            .0
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
    };
    let (name, value) = match source.auth_type {
        AuthType::None => return Ok(None),
        AuthType::Bearer => {
            let token = secret(source, "token").ok_or_else(|| needs("secrets.token"))?;
            (AUTHORIZATION, format!("Bearer {token}"))
        }
        AuthType::Basic => {
            let username = config_str("username").ok_or_else(|| needs("auth_config.username"))?;
            let password = secret(source, "password").ok_or_else(|| needs("secrets.password"))?;
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
            (AUTHORIZATION, format!("Basic {encoded}"))
        }
        AuthType::ApiKey => {
            let header = config_str("header_name").unwrap_or(DEFAULT_API_KEY_HEADER);
            let name = HeaderName::from_bytes(header.as_bytes()).map_err(|_| {
                FetchError::new("auth_config.header_name is not a valid header name")
            })?;
            let token = secret(source, "token").ok_or_else(|| needs("secrets.token"))?;
            (name, token.to_string())
        }
    };
    // The message names the secret, never its value.
    let mut value = HeaderValue::from_str(&value).map_err(|_| {
        FetchError::new(format!(
            "the {} credential contains characters a header cannot carry",
            source.auth_type.as_str()
        ))
    })?;
    value.set_sensitive(true);
    Ok(Some((name, value)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use storage::{Json, Redacted};

    fn source(auth_type: AuthType, config: Value, secrets: Value) -> KnowledgeSource {
        KnowledgeSource {
            auth_type,
            auth_config: Json(config),
            secrets: Redacted::new(Json(secrets)),
            request_headers: Json(json!({})).into(),
            ..KnowledgeSource::default()
        }
    }

    fn header(h: &HeaderMap, name: &str) -> Option<String> {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    }

    #[test]
    fn auto_mode_follows_the_media_type() {
        assert_eq!(mode_of(Some("application/json")), ResponseMode::Json);
        assert_eq!(
            mode_of(Some("application/vnd.api+json")),
            ResponseMode::Json
        );
        assert_eq!(mode_of(Some("text/html")), ResponseMode::Html);
        assert_eq!(mode_of(Some("text/plain")), ResponseMode::Text);
        assert_eq!(mode_of(Some("text/csv")), ResponseMode::Text);
        assert_eq!(mode_of(None), ResponseMode::Text);
    }

    #[test]
    fn missing_credentials_name_what_is_missing_and_leak_nothing() {
        let bearer = source(AuthType::Bearer, json!({}), json!({}));
        assert_eq!(
            request_headers(&bearer).unwrap_err().message,
            "auth_type bearer needs secrets.token"
        );
        let basic = source(AuthType::Basic, json!({}), json!({"password": "pw"}));
        assert_eq!(
            request_headers(&basic).unwrap_err().message,
            "auth_type basic needs auth_config.username"
        );
        let basic = source(AuthType::Basic, json!({"username": "u"}), json!({}));
        assert_eq!(
            request_headers(&basic).unwrap_err().message,
            "auth_type basic needs secrets.password"
        );
        let key = source(AuthType::ApiKey, json!({}), json!({"token": ""}));
        assert_eq!(
            request_headers(&key).unwrap_err().message,
            "auth_type api_key needs secrets.token"
        );
        let bad = source(AuthType::Bearer, json!({}), json!({"token": "s3cret\nx"}));
        let e = request_headers(&bad).unwrap_err().message;
        assert!(!e.contains("s3cret"), "{e}");
    }

    #[test]
    fn request_headers_must_be_strings_and_may_not_frame_the_request() {
        let mut s = source(AuthType::None, json!({}), json!({}));
        s.request_headers =
            Json(json!({"X-Team": "docs", "Accept": "application/vnd.x+json"})).into();
        let h = request_headers(&s).unwrap();
        assert_eq!(header(&h, "x-team").as_deref(), Some("docs"));
        assert_eq!(
            header(&h, "accept").as_deref(),
            Some("application/vnd.x+json")
        );
        s.request_headers = Json(json!({"X-Count": 3})).into();
        assert_eq!(
            request_headers(&s).unwrap_err().message,
            "request_headers.X-Count must be a string"
        );
        s.request_headers = Json(json!({"Host": "internal"})).into();
        assert!(
            request_headers(&s)
                .unwrap_err()
                .message
                .starts_with("request_headers.Host cannot be set")
        );
        s.request_headers = Json(json!({"bad name": "x"})).into();
        assert_eq!(
            request_headers(&s).unwrap_err().message,
            "request_headers.bad name is not a valid header name"
        );
        s.request_headers = Json(json!(["x"])).into();
        assert!(request_headers(&s).is_err());
        s.request_headers = Json(Value::Null).into();
        assert!(request_headers(&s).is_ok());
    }

    #[test]
    fn the_stored_credential_replaces_a_same_named_request_header() {
        let mut s = source(AuthType::Bearer, json!({}), json!({"token": "real"}));
        s.request_headers = Json(json!({"Authorization": "Bearer stale"})).into();
        let h = request_headers(&s).unwrap();
        assert_eq!(h.get_all(AUTHORIZATION).iter().count(), 1);
        assert_eq!(header(&h, "authorization").as_deref(), Some("Bearer real"));
        assert!(h.get(AUTHORIZATION).is_some_and(HeaderValue::is_sensitive));
    }
}

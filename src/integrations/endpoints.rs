//! The six root-int/1 endpoints (§7.2): their keys, default paths, methods
//! and timeouts, and the per-integration `endpoint_paths` overrides.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde_json::{Map, Value};

/// Default bound of a tool invocation when the manifest gives no `timeout_ms`.
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest accepted override path.
pub const MAX_PATH_CHARS: usize = 512;
/// Largest manifest / identity / links / escalations answer.
pub const MAX_JSON_RESPONSE_BYTES: usize = 1024 * 1024;
/// Largest identity roster answer.
pub const MAX_ROSTER_BYTES: usize = 8 * 1024 * 1024;
/// The placeholder a `tool_invoke` path must contain.
pub const NAME_PLACEHOLDER: &str = ":name";

/// HTTP method of an endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// `GET` (signed over the empty string).
    Get,
    /// `POST` with a JSON body.
    Post,
}

/// One of the six endpoints a backend exposes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EndpointKey {
    /// `GET /integration/manifest`
    Manifest,
    /// `POST /integration/tools/:name`
    ToolInvoke,
    /// `POST /integration/identity/resolve`
    IdentityResolve,
    /// `GET /integration/identity/roster`
    IdentityRoster,
    /// `POST /integration/links/issue`
    LinksIssue,
    /// `POST /integration/escalations`
    Escalations,
}

impl EndpointKey {
    /// Every key, in the spec's order.
    pub const ALL: [EndpointKey; 6] = [
        EndpointKey::Manifest,
        EndpointKey::ToolInvoke,
        EndpointKey::IdentityResolve,
        EndpointKey::IdentityRoster,
        EndpointKey::LinksIssue,
        EndpointKey::Escalations,
    ];

    /// The key as written in `endpoint_paths`.
    pub fn as_str(self) -> &'static str {
        match self {
            EndpointKey::Manifest => "manifest",
            EndpointKey::ToolInvoke => "tool_invoke",
            EndpointKey::IdentityResolve => "identity_resolve",
            EndpointKey::IdentityRoster => "identity_roster",
            EndpointKey::LinksIssue => "links_issue",
            EndpointKey::Escalations => "escalations",
        }
    }

    /// Parse a key of `endpoint_paths`.
    pub fn parse(s: &str) -> Option<EndpointKey> {
        EndpointKey::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The spec's default path.
    pub fn default_path(self) -> &'static str {
        match self {
            EndpointKey::Manifest => "/integration/manifest",
            EndpointKey::ToolInvoke => "/integration/tools/:name",
            EndpointKey::IdentityResolve => "/integration/identity/resolve",
            EndpointKey::IdentityRoster => "/integration/identity/roster",
            EndpointKey::LinksIssue => "/integration/links/issue",
            EndpointKey::Escalations => "/integration/escalations",
        }
    }

    /// The endpoint's method.
    pub fn method(self) -> Method {
        match self {
            EndpointKey::Manifest | EndpointKey::IdentityRoster => Method::Get,
            EndpointKey::ToolInvoke
            | EndpointKey::IdentityResolve
            | EndpointKey::LinksIssue
            | EndpointKey::Escalations => Method::Post,
        }
    }

    /// The spec's timeout; for `tool_invoke` the default when the tool
    /// declares no `timeout_ms` (see [`tool_timeout`]).
    pub fn timeout(self) -> Duration {
        match self {
            EndpointKey::Manifest => Duration::from_secs(15),
            EndpointKey::ToolInvoke => DEFAULT_TOOL_TIMEOUT,
            EndpointKey::IdentityResolve => Duration::from_secs(10),
            EndpointKey::IdentityRoster => Duration::from_secs(30),
            EndpointKey::LinksIssue => Duration::from_secs(10),
            EndpointKey::Escalations => Duration::from_secs(120),
        }
    }
}

impl EndpointKey {
    /// Largest 2xx body read from this endpoint; a bigger one is a bad
    /// response. Tool results have their own caps (see `client`).
    pub fn max_response_bytes(self) -> usize {
        match self {
            // A roster lists every member: tens of thousands of entries.
            EndpointKey::IdentityRoster => MAX_ROSTER_BYTES,
            EndpointKey::ToolInvoke => super::client::MAX_TOOL_RESULT_BYTES,
            EndpointKey::Manifest
            | EndpointKey::IdentityResolve
            | EndpointKey::LinksIssue
            | EndpointKey::Escalations => MAX_JSON_RESPONSE_BYTES,
        }
    }
}

impl fmt::Display for EndpointKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The bound of one tool invocation: the tool's `timeout_ms` ?? 120 s.
pub fn tool_timeout(timeout_ms: Option<u64>) -> Duration {
    timeout_ms.map_or(DEFAULT_TOOL_TIMEOUT, Duration::from_millis)
}

/// A rejected `endpoint_paths` value; the message names the key and the rule.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("endpoint_paths: {0}")]
pub struct EndpointPathError(pub String);

/// An integration's endpoint paths: the defaults plus validated overrides.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointPaths {
    overrides: BTreeMap<EndpointKey, String>,
}

impl EndpointPaths {
    /// Validate `endpoint_paths` (an object; `null` or `{}` = all defaults).
    /// Each value is a path starting with `/`, at most 512 characters, with
    /// no whitespace; `tool_invoke` must contain `:name`; unknown keys are
    /// rejected. A `null` value keeps the default.
    pub fn from_json(value: &Value) -> Result<EndpointPaths, EndpointPathError> {
        let map = match value {
            Value::Null => return Ok(EndpointPaths::default()),
            Value::Object(m) => m,
            _ => {
                return Err(EndpointPathError(
                    "must be an object of endpoint key → path".into(),
                ));
            }
        };
        let mut overrides = BTreeMap::new();
        for (k, v) in map {
            let key = EndpointKey::parse(k).ok_or_else(|| {
                let known: Vec<&str> = EndpointKey::ALL.iter().map(|k| k.as_str()).collect();
                EndpointPathError(format!("unknown key {k:?} (known: {})", known.join(", ")))
            })?;
            let path = match v {
                Value::Null => continue,
                Value::String(s) => s,
                _ => return Err(EndpointPathError(format!("{k}: must be a string"))),
            };
            validate_path(key, path)?;
            overrides.insert(key, path.clone());
        }
        Ok(EndpointPaths { overrides })
    }

    /// The path of `key` (override or default), placeholders unexpanded.
    pub fn path(&self, key: EndpointKey) -> &str {
        self.overrides
            .get(&key)
            .map_or(key.default_path(), String::as_str)
    }

    /// The `tool_invoke` path with every `:name` replaced by the
    /// percent-encoded tool name.
    pub fn tool_path(&self, tool: &str) -> String {
        self.path(EndpointKey::ToolInvoke)
            .replace(NAME_PLACEHOLDER, &percent_encode(tool))
    }

    /// The overrides as stored on the row (only keys that differ from the
    /// spec's default are meaningful, but all given keys are kept).
    pub fn to_json(&self) -> Value {
        Value::Object(
            self.overrides
                .iter()
                .map(|(k, v)| (k.as_str().to_string(), Value::String(v.clone())))
                .collect::<Map<_, _>>(),
        )
    }
}

fn validate_path(key: EndpointKey, path: &str) -> Result<(), EndpointPathError> {
    if !path.starts_with('/') {
        return Err(EndpointPathError(format!("{key}: path must start with /")));
    }
    if path.chars().count() > MAX_PATH_CHARS {
        return Err(EndpointPathError(format!(
            "{key}: path must be at most {MAX_PATH_CHARS} characters"
        )));
    }
    if path.chars().any(char::is_whitespace) {
        return Err(EndpointPathError(format!(
            "{key}: path must not contain whitespace"
        )));
    }
    if key == EndpointKey::ToolInvoke && !path.contains(NAME_PLACEHOLDER) {
        return Err(EndpointPathError(format!(
            "{key}: path must contain {NAME_PLACEHOLDER}"
        )));
    }
    Ok(())
}

/// RFC 3986 percent-encoding of a path segment: everything except the
/// unreserved characters `A–Z a–z 0–9 - . _ ~` is `%XX` (UTF-8 bytes).
pub fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_are_the_spec_table() {
        let p = EndpointPaths::default();
        let table: Vec<(&str, &str, Method, u64)> = EndpointKey::ALL
            .iter()
            .map(|k| (k.as_str(), p.path(*k), k.method(), k.timeout().as_secs()))
            .collect();
        assert_eq!(
            table,
            vec![
                ("manifest", "/integration/manifest", Method::Get, 15),
                ("tool_invoke", "/integration/tools/:name", Method::Post, 120),
                (
                    "identity_resolve",
                    "/integration/identity/resolve",
                    Method::Post,
                    10
                ),
                (
                    "identity_roster",
                    "/integration/identity/roster",
                    Method::Get,
                    30
                ),
                ("links_issue", "/integration/links/issue", Method::Post, 10),
                ("escalations", "/integration/escalations", Method::Post, 120),
            ]
        );
        assert_eq!(tool_timeout(None), Duration::from_secs(120));
        assert_eq!(tool_timeout(Some(2_500)), Duration::from_millis(2_500));
    }

    #[test]
    fn overrides_replace_defaults_and_tool_names_are_percent_encoded() {
        let p = EndpointPaths::from_json(&json!({
            "manifest": "/v2/root/manifest",
            "tool_invoke": "/v2/root/tools/:name/run",
            "escalations": null
        }))
        .unwrap();
        assert_eq!(p.path(EndpointKey::Manifest), "/v2/root/manifest");
        assert_eq!(p.path(EndpointKey::Escalations), "/integration/escalations");
        assert_eq!(p.tool_path("book_room"), "/v2/root/tools/book_room/run");
        assert_eq!(
            EndpointPaths::default().tool_path("a b/c?é"),
            "/integration/tools/a%20b%2Fc%3F%C3%A9"
        );
        assert_eq!(
            p.to_json(),
            json!({"manifest": "/v2/root/manifest", "tool_invoke": "/v2/root/tools/:name/run"})
        );
        assert_eq!(
            EndpointPaths::from_json(&Value::Null).unwrap(),
            EndpointPaths::default()
        );
    }

    #[test]
    fn bad_overrides_are_rejected_with_a_reason() {
        let err = |v: Value| EndpointPaths::from_json(&v).unwrap_err().to_string();
        assert!(err(json!({"manifest": "integration/manifest"})).contains("start with /"));
        assert!(err(json!({"manifest": format!("/{}", "a".repeat(512))})).contains("512"));
        assert!(err(json!({"manifest": "/a b"})).contains("whitespace"));
        assert!(err(json!({"manifest": "/a\tb"})).contains("whitespace"));
        assert!(err(json!({"tool_invoke": "/tools/run"})).contains(":name"));
        assert!(err(json!({"webhooks": "/x"})).contains("unknown key \"webhooks\""));
        assert!(err(json!({"manifest": 3})).contains("must be a string"));
        assert!(err(json!(["/x"])).contains("must be an object"));
        // Exactly 512 characters is fine.
        let ok = format!("/{}", "a".repeat(511));
        assert!(EndpointPaths::from_json(&json!({ "manifest": ok })).is_ok());
    }
}

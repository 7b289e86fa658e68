//! Registering knowledge sources (§2.5, §12.2 `/kb/sources`): one input
//! type for create and patch, validated field by field (errors name the
//! field), the kind's requirements checked on the merged row, and a view
//! that never carries a secret (`secrets_set` names which are set;
//! request header values are hidden too — they often hold credentials).
//!
//! Also the two ways documents arrive from outside: `POST /kb/sync`
//! (api_push) and the signed callback of a triggered webhook run.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value, json};
use storage::{
    AuthType, Json, KnowledgeSource, KnowledgeSyncRun, Redacted, Scan, SourceKind, SourceStatus,
    StorageError, Store, SyncTrigger, Tenant, key,
};
use uuid::Uuid;

use super::KnowledgeSync;
use super::fetch::mapping::validate_mapping;
use super::runs::{RunOptions, StartError};
use crate::outbound::OutboundPolicy;

/// Secret keys a source may hold (§2.5).
pub const SECRET_KEYS: [&str; 3] = ["token", "password", "webhook_signing_secret"];
/// `auth_config` keys.
pub const AUTH_CONFIG_KEYS: [&str; 2] = ["username", "header_name"];
/// Request headers per source.
pub const MAX_REQUEST_HEADERS: usize = 50;
/// Largest `request_body` (serialized).
pub const MAX_REQUEST_BODY_BYTES: usize = 64 * 1024;
/// Longest `ai_cleanup_instructions`.
pub const MAX_INSTRUCTIONS_CHARS: usize = 4_000;

/// Why a source operation was refused.
#[derive(Debug, thiserror::Error)]
pub enum SourceError {
    /// A field is wrong (the message names it).
    #[error("{0}")]
    Invalid(String),
    /// No such source / run.
    #[error("{0}")]
    NotFound(String),
    /// A state conflict (a taken key, a run that is not waiting).
    #[error("{0}")]
    Conflict(String),
    /// A signature did not verify.
    #[error("invalid or stale signature")]
    BadSignature,
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// The run could not be queued.
    #[error(transparent)]
    Start(#[from] StartError),
}

pub(super) fn invalid<T>(m: impl Into<String>) -> Result<T, SourceError> {
    Err(SourceError::Invalid(m.into()))
}

/// `Some(None)` for an explicit `null`, `None` when absent.
fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// Create / patch body of a source. On create `source_key`, `name` and
/// `source_kind` are required; on patch every field is optional and an
/// explicit `null` clears a nullable one. `secrets` merge: a key with a
/// string sets it, a key with `null` removes it, absent keys stay.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceInput {
    #[serde(default)]
    source_key: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    source_kind: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    url: Option<Option<String>>,
    #[serde(default)]
    http_method: Option<String>,
    #[serde(default)]
    request_headers: Option<Value>,
    #[serde(default, deserialize_with = "nullable")]
    request_body: Option<Option<Value>>,
    #[serde(default)]
    auth_type: Option<String>,
    #[serde(default)]
    auth_config: Option<Value>,
    #[serde(default)]
    secrets: Option<Map<String, Value>>,
    #[serde(default)]
    response_mode: Option<String>,
    #[serde(default)]
    mapping: Option<Value>,
    #[serde(default, deserialize_with = "nullable")]
    schedule_interval_minutes: Option<Option<i64>>,
    #[serde(default)]
    replace_missing: Option<bool>,
    #[serde(default)]
    ai_cleanup: Option<bool>,
    #[serde(default, deserialize_with = "nullable")]
    ai_cleanup_instructions: Option<Option<String>>,
}

/// The fields of a source that carry credentials: secret values, and
/// request headers (their values are hidden in every view for that reason).
pub const CREDENTIAL_FIELDS: [&str; 2] = ["secrets", "request_headers"];

impl SourceInput {
    /// The [`CREDENTIAL_FIELDS`] this input sets. The dashboard chat's
    /// source tools refuse them: a tool call's arguments are kept in the
    /// run's trace (and exported), so credentials are set through the API
    /// or the dashboard instead.
    pub fn credential_fields(&self) -> Vec<&'static str> {
        let set = [self.secrets.is_some(), self.request_headers.is_some()];
        CREDENTIAL_FIELDS
            .iter()
            .zip(set)
            .filter_map(|(f, s)| s.then_some(*f))
            .collect()
    }
}

fn parse_enum<T: std::str::FromStr>(field: &str, v: &str, allowed: &str) -> Result<T, SourceError> {
    v.parse()
        .map_err(|_| SourceError::Invalid(format!("{field} must be one of {allowed}")))
}

fn check_key(k: &str) -> Result<(), SourceError> {
    let ok = !k.is_empty()
        && k.len() <= 100
        && k.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        invalid(
            "source_key must be 1–100 characters of a-z, 0-9, '.', '_' or '-', starting with a letter or digit",
        )
    }
}

fn string_object(field: &str, v: &Value, max: usize) -> Result<Map<String, Value>, SourceError> {
    let Some(obj) = v.as_object() else {
        return invalid(format!("{field} must be an object"));
    };
    if obj.len() > max {
        return invalid(format!("{field} may have at most {max} entries"));
    }
    for (k, v) in obj {
        if !v.is_string() {
            return invalid(format!("{field}.{k} must be a string"));
        }
    }
    Ok(obj.clone())
}

impl SourceInput {
    /// Apply this input to `row` (a new default row on create).
    fn apply(
        self,
        row: &mut KnowledgeSource,
        creating: bool,
        policy: OutboundPolicy,
    ) -> Result<(), SourceError> {
        if let Some(k) = self.source_key {
            check_key(k.trim())?;
            row.source_key = k.trim().to_string();
        } else if creating {
            return invalid("source_key is required");
        }
        if let Some(n) = self.name {
            let n = n.trim();
            if n.is_empty() || n.chars().count() > 200 {
                return invalid("name must be 1–200 characters");
            }
            row.name = n.to_string();
        } else if creating {
            return invalid("name is required");
        }
        match (self.source_kind, creating) {
            (Some(k), true) => {
                row.source_kind =
                    parse_enum("source_kind", &k, "web_page, api_pull, webhook, api_push")?
            }
            (None, true) => return invalid("source_kind is required"),
            (Some(k), false) if k != row.source_kind.as_str() => {
                return invalid("source_kind cannot change; create a new source");
            }
            _ => {}
        }
        if let Some(s) = self.status {
            row.status = match s.as_str() {
                "active" => SourceStatus::Active,
                "paused" => SourceStatus::Paused,
                _ => return invalid("status must be active or paused"),
            };
            if row.status == SourceStatus::Active {
                row.consecutive_failures = 0;
            }
        }
        if let Some(u) = self.url {
            row.url = match u.map(|u| u.trim().to_string()).filter(|u| !u.is_empty()) {
                Some(u) => {
                    policy
                        .parse_url(&u)
                        .map_err(|e| SourceError::Invalid(format!("url: {e}")))?;
                    Some(u)
                }
                None => None,
            };
        }
        if let Some(m) = self.http_method {
            row.http_method = parse_enum("http_method", &m.to_uppercase(), "GET, POST")?;
        }
        if let Some(h) = self.request_headers {
            let headers = string_object("request_headers", &h, MAX_REQUEST_HEADERS)?;
            for name in headers.keys() {
                if reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    return invalid(format!("request_headers: {name:?} is not a header name"));
                }
            }
            row.request_headers = Json(Value::Object(headers)).into();
        }
        if let Some(b) = self.request_body {
            if let Some(v) = &b
                && v.to_string().len() > MAX_REQUEST_BODY_BYTES
            {
                return invalid(format!(
                    "request_body must be at most {MAX_REQUEST_BODY_BYTES} bytes"
                ));
            }
            row.request_body = b.map(Json);
        }
        if let Some(a) = self.auth_type {
            row.auth_type = parse_enum("auth_type", &a, "none, bearer, basic, api_key")?;
        }
        if let Some(c) = self.auth_config {
            let cfg = string_object("auth_config", &c, AUTH_CONFIG_KEYS.len())?;
            if let Some(k) = cfg.keys().find(|k| !AUTH_CONFIG_KEYS.contains(&k.as_str())) {
                return invalid(format!(
                    "auth_config.{k} is not a known key (username, header_name)"
                ));
            }
            if let Some(h) = cfg.get("header_name").and_then(Value::as_str)
                && reqwest::header::HeaderName::from_bytes(h.as_bytes()).is_err()
            {
                return invalid("auth_config.header_name is not a header name");
            }
            row.auth_config = Json(Value::Object(cfg));
        }
        if let Some(changes) = self.secrets {
            let mut secrets = row
                .secrets
                .expose()
                .0
                .as_object()
                .cloned()
                .unwrap_or_default();
            for (k, v) in changes {
                if !SECRET_KEYS.contains(&k.as_str()) {
                    return invalid(format!(
                        "secrets.{k} is not a known key (token, password, webhook_signing_secret)"
                    ));
                }
                match v {
                    Value::Null => {
                        secrets.remove(&k);
                    }
                    Value::String(s) if !s.is_empty() && s.len() <= 4096 => {
                        secrets.insert(k, Value::String(s));
                    }
                    _ => {
                        return invalid(format!(
                            "secrets.{k} must be a non-empty string (≤ 4096 bytes) or null"
                        ));
                    }
                }
            }
            row.secrets = Redacted::new(Json(Value::Object(secrets)));
        }
        if let Some(r) = self.response_mode {
            row.response_mode = parse_enum("response_mode", &r, "auto, html, text, json")?;
        }
        if let Some(m) = self.mapping {
            validate_mapping(&m).map_err(SourceError::Invalid)?;
            row.mapping = Json(m);
        }
        if let Some(i) = self.schedule_interval_minutes {
            row.schedule_interval_minutes = match i {
                None => None,
                Some(m) if (5..=43_200).contains(&m) => Some(m as i32),
                Some(_) => {
                    return invalid(
                        "schedule_interval_minutes must be null or between 5 and 43200",
                    );
                }
            };
        }
        if let Some(r) = self.replace_missing {
            row.replace_missing = r;
        }
        if let Some(a) = self.ai_cleanup {
            row.ai_cleanup = a;
        }
        if let Some(i) = self.ai_cleanup_instructions {
            let i = i.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
            if i.as_ref()
                .is_some_and(|s| s.chars().count() > MAX_INSTRUCTIONS_CHARS)
            {
                return invalid(format!(
                    "ai_cleanup_instructions must be at most {MAX_INSTRUCTIONS_CHARS} characters"
                ));
            }
            row.ai_cleanup_instructions = i;
        }
        requirements(row)
    }
}

/// Is secret `k` set (non-empty)?
pub(super) fn secret_set(row: &KnowledgeSource, k: &str) -> bool {
    row.secrets
        .expose()
        .0
        .get(k)
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
}

/// What a kind and an auth type need, checked on the merged row.
fn requirements(row: &KnowledgeSource) -> Result<(), SourceError> {
    let needs_url = !matches!(row.source_kind, SourceKind::ApiPush);
    if needs_url && row.url.is_none() {
        return invalid(format!(
            "url is required for a {} source",
            row.source_kind.as_str()
        ));
    }
    if row.source_kind == SourceKind::Webhook && !secret_set(row, "webhook_signing_secret") {
        return invalid("secrets.webhook_signing_secret is required for a webhook source");
    }
    if row.source_kind == SourceKind::ApiPull {
        match row.auth_type {
            AuthType::Bearer | AuthType::ApiKey if !secret_set(row, "token") => {
                return invalid(format!(
                    "secrets.token is required for auth_type {}",
                    row.auth_type.as_str()
                ));
            }
            AuthType::Basic
                if !secret_set(row, "password")
                    || row
                        .auth_config
                        .0
                        .get("username")
                        .and_then(Value::as_str)
                        .is_none() =>
            {
                return invalid("auth_type basic needs auth_config.username and secrets.password");
            }
            _ => {}
        }
    }
    Ok(())
}

impl KnowledgeSync {
    /// Register a source for `tenant` (within its source limit).
    pub async fn create_source(
        &self,
        tenant: &Tenant,
        input: SourceInput,
        policy: OutboundPolicy,
    ) -> Result<KnowledgeSource, SourceError> {
        let limits = self.limits_for(&tenant.settings.0);
        let count = self
            .inner
            .store
            .count::<KnowledgeSource>(Some(tenant.id))
            .await?;
        if count >= u64::from(limits.max_sources) {
            return invalid(format!(
                "this community already has {count} knowledge sources (the limit is {})",
                limits.max_sources
            ));
        }
        let now = self.inner.clock.now();
        let mut row = KnowledgeSource {
            id: Uuid::new_v4(),
            tenant_id: tenant.id,
            request_headers: Json(json!({})).into(),
            auth_config: Json(json!({})),
            secrets: Redacted::new(Json(json!({}))),
            mapping: Json(json!({})),
            created_at: now,
            updated_at: now,
            ..KnowledgeSource::default()
        };
        input.apply(&mut row, true, policy)?;
        row.next_sync_at = row.schedule_interval_minutes.map(|_| now);
        match self.inner.store.insert(row).await {
            Ok(r) => Ok(r),
            Err(StorageError::Conflict { .. }) => Err(SourceError::Conflict(
                "a source with this source_key already exists".into(),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Patch a source.
    pub async fn update_source(
        &self,
        tenant: Uuid,
        id_or_key: &str,
        input: SourceInput,
        policy: OutboundPolicy,
    ) -> Result<KnowledgeSource, SourceError> {
        let mut row = self.source(tenant, id_or_key).await?;
        let interval = row.schedule_interval_minutes;
        input.apply(&mut row, false, policy)?;
        let now = self.inner.clock.now();
        if row.schedule_interval_minutes != interval {
            row.next_sync_at = row.schedule_interval_minutes.map(|_| now);
        }
        row.updated_at = now;
        match self.inner.store.update(row).await {
            Ok(r) => Ok(r),
            Err(StorageError::Conflict { .. }) => Err(SourceError::Conflict(
                "a source with this source_key already exists".into(),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Delete a source and its runs (its pages stay, detached: §2.5).
    pub async fn delete_source(&self, tenant: Uuid, id_or_key: &str) -> Result<(), SourceError> {
        let row = self.source(tenant, id_or_key).await?;
        self.inner
            .store
            .delete::<KnowledgeSource>(Some(tenant), key().uuid(row.id))
            .await?;
        Ok(())
    }

    /// A source by id or `source_key`.
    pub async fn source(
        &self,
        tenant: Uuid,
        id_or_key: &str,
    ) -> Result<KnowledgeSource, SourceError> {
        let store = &self.inner.store;
        let found = match Uuid::parse_str(id_or_key) {
            Ok(id) => store.get(Some(tenant), key().uuid(id)).await?,
            Err(_) => None,
        };
        let found = match found {
            Some(s) => Some(s),
            None => {
                store
                    .find_unique(
                        Some(tenant),
                        KnowledgeSource::SOURCE_KEY,
                        key().str(id_or_key),
                    )
                    .await?
            }
        };
        found.ok_or_else(|| SourceError::NotFound(format!("no knowledge source {id_or_key:?}")))
    }

    /// Every source of the tenant (key order).
    pub async fn sources(&self, tenant: Uuid) -> Result<Vec<KnowledgeSource>, SourceError> {
        Ok(self
            .inner
            .store
            .scan(
                Some(tenant),
                Scan::index(KnowledgeSource::SOURCE_KEY, key()),
            )
            .await?)
    }

    /// `POST /kb/sources/:id/sync`: a manual run (not for api_push sources).
    pub async fn sync_now(
        &self,
        tenant: Uuid,
        id_or_key: &str,
        options: Option<RunOptions>,
    ) -> Result<KnowledgeSyncRun, SourceError> {
        let source = self.source(tenant, id_or_key).await?;
        if source.source_kind == SourceKind::ApiPush {
            return invalid("an api_push source receives documents through POST /api/v1/kb/sync");
        }
        Ok(self
            .start_run(
                &source,
                SyncTrigger::Manual,
                Some(json!({"options": options})),
            )
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::knowledge::views::SourceView;

    fn input(v: Value) -> SourceInput {
        serde_json::from_value(v).unwrap()
    }

    fn create(v: Value) -> Result<KnowledgeSource, SourceError> {
        let mut row = KnowledgeSource {
            request_headers: Json(json!({})).into(),
            auth_config: Json(json!({})),
            secrets: Redacted::new(Json(json!({}))),
            mapping: Json(json!({})),
            ..KnowledgeSource::default()
        };
        input(v).apply(&mut row, true, OutboundPolicy::strict())?;
        Ok(row)
    }

    fn err(v: Value) -> String {
        create(v).unwrap_err().to_string()
    }

    #[test]
    fn credential_fields_names_secrets_and_headers_only() {
        let plain = input(json!({"name": "Docs", "url": "https://docs.example.org"}));
        assert!(plain.credential_fields().is_empty());
        let both = input(json!({"secrets": {"token": null}, "request_headers": {}}));
        assert_eq!(both.credential_fields(), ["secrets", "request_headers"]);
    }

    #[test]
    fn each_kind_needs_what_it_uses() {
        let base = |kind: &str| json!({"source_key": "docs", "name": "Docs", "source_kind": kind});
        assert!(err(base("web_page")).contains("url is required"));
        assert!(create(base("api_push")).is_ok());
        let mut w = base("webhook");
        w["url"] = json!("https://cms.example.org/hook");
        assert!(err(w.clone()).contains("webhook_signing_secret"));
        w["secrets"] = json!({"webhook_signing_secret": "s3cret"});
        assert!(create(w).is_ok());
        let mut a = base("api_pull");
        a["url"] = json!("https://portal.example.org/api/docs");
        a["auth_type"] = json!("bearer");
        assert!(err(a.clone()).contains("secrets.token"));
        a["auth_type"] = json!("basic");
        a["secrets"] = json!({"password": "p"});
        assert!(err(a.clone()).contains("auth_config.username"));
        a["auth_config"] = json!({"username": "u"});
        assert!(create(a).is_ok());
    }

    #[test]
    fn fields_are_validated_with_their_names() {
        let ok = json!({"source_key": "docs", "name": "Docs", "source_kind": "api_push"});
        let with = |k: &str, v: Value| {
            let mut b = ok.clone();
            b[k] = v;
            err(b)
        };
        assert!(with("source_key", json!("Bad Key")).starts_with("source_key"));
        assert!(
            with("schedule_interval_minutes", json!(4)).starts_with("schedule_interval_minutes")
        );
        assert!(
            with("schedule_interval_minutes", json!(43_201))
                .starts_with("schedule_interval_minutes")
        );
        assert!(with("secrets", json!({"api": "x"})).starts_with("secrets.api"));
        assert!(with("request_headers", json!({"X-A": 1})).starts_with("request_headers.X-A"));
        assert!(with("auth_type", json!("oauth")).starts_with("auth_type"));
        assert!(with("url", json!("http://169.254.169.254/latest")).starts_with("url:"));
        assert!(with("url", json!("ftp://x.example/")).starts_with("url:"));
        assert!(serde_json::from_value::<SourceInput>(json!({"bogus": 1})).is_err());
    }

    #[test]
    fn views_never_carry_secrets_or_header_values() {
        let row = create(
            json!({"source_key": "portal", "name": "Portal", "source_kind": "api_pull",
            "url": "https://portal.example.org/api", "auth_type": "bearer",
            "secrets": {"token": "tok-123"}, "request_headers": {"X-Tenant": "acme-secret"}}),
        )
        .unwrap();
        let v = serde_json::to_string(&SourceView::from(&row)).unwrap();
        assert!(!v.contains("tok-123") && !v.contains("acme-secret"), "{v}");
        assert!(v.contains(r#""secrets_set":["token"]"#));
        assert!(v.contains(r#""X-Tenant":"[hidden]""#));
    }
}

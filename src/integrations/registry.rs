//! `Integrations`: the per-tenant registry of root-int/1 backends (§7,
//! §12.2). Registration, secret rotation, disabling, the 60 s in-process
//! manifest cache, and `prime` — what the tool layer calls at turn start.
//!
//! Every method acts for `tenancy::current()`: rows are read through the
//! tenant's key prefix, so a tenant can never see or call another tenant's
//! integration.
//!
//! Cache: one slot per integration (keyed by its id) holding the time of the
//! last fetch attempt and the last good manifest. A slot is fresh for
//! [`MANIFEST_CACHE_TTL`] after any attempt — a failed refresh keeps the
//! stale manifest and still stamps the slot, so a down host is asked at most
//! once a minute. A successful, validated fetch stores the manifest and
//! `manifest_fetched_at` on the row and promotes `pending` to `active`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use storage::{
    Environment, Integration, IntegrationStatus, Json, Redacted, RedbStore, Scan, StorageError,
    Store, key,
};
use tokio::sync::mpsc;

use super::client::{
    CallError, Escalation, IdentityQuery, IdentityResolution, IntegrationClient, InvokeRequest,
    ResolvedPrincipal,
};
use super::endpoints::EndpointPaths;
use super::manifest::{
    LinkDestinations, Manifest, ManifestTool, effective_tools, is_reserved_tier,
    link_destinations_for, materialize_tools, parse_tool_overrides, prompt_sections_for,
};
use super::signing;
use crate::platform::clock::Clock;
use crate::platform::tenancy::{self, NoTenantContext};
use crate::platform::tool_result::ToolResult;

/// How long a fetched (or failed) manifest is served before the next fetch.
pub const MANIFEST_CACHE_TTL: Duration = Duration::from_secs(60);
/// Longest accepted `base_url`.
pub const MAX_BASE_URL_CHARS: usize = 2048;
/// Shortest signing secret a caller may supply.
pub const MIN_SECRET_CHARS: usize = 16;
/// Longest signing secret a caller may supply.
pub const MAX_SECRET_CHARS: usize = 256;

/// A failed registry operation.
#[derive(Debug, thiserror::Error)]
pub enum IntegrationError {
    /// The request is malformed (name, base_url, endpoint_paths, secret).
    #[error("{0}")]
    Invalid(String),
    /// An active or pending integration already has this name.
    #[error("an integration named {0:?} already exists")]
    Duplicate(String),
    /// No integration of this tenant has this name.
    #[error("no integration named {0:?}")]
    NotFound(String),
    /// The integration is disabled.
    #[error("integration {0:?} is disabled")]
    Disabled(String),
    /// The backend did not deliver a valid manifest.
    #[error("manifest refresh of {name:?} failed: {source}")]
    Refresh {
        /// The integration.
        name: String,
        /// What went wrong.
        #[source]
        source: CallError,
    },
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// Called outside a tenant scope (a bug).
    #[error(transparent)]
    NoTenant(#[from] NoTenantContext),
}

/// What the integrations said about one person (§6).
#[derive(Clone, Debug, Default)]
pub struct IdentityLookup {
    /// The first answer with a non-reserved tier.
    pub resolution: Option<IdentityResolution>,
    /// Integrations that could not answer (network, HTTP or bad response):
    /// without a resolution, "nobody knows them" is then not established.
    pub unavailable: Vec<String>,
}

/// `POST /integrations` input.
#[derive(Clone, Debug, Default)]
pub struct NewIntegration {
    /// `^[a-z0-9][a-z0-9_-]{1,63}$`
    pub name: String,
    /// `http(s)://host[:port][/prefix]`
    pub base_url: String,
    /// Supplied secret; generated when absent.
    pub signing_secret: Option<String>,
    /// Endpoint path overrides.
    pub endpoint_paths: Option<Value>,
}

/// A registration (or rotation) with the secret to show once.
#[derive(Clone)]
pub struct WithSecret {
    /// The row.
    pub integration: Integration,
    /// The signing secret, in clear, for this answer only.
    pub signing_secret: String,
}

/// An active integration with its manifest and effective tools (overrides
/// applied), ready for materialization.
#[derive(Clone)]
pub struct PrimedIntegration {
    /// The row (holds the signing secret: never log it).
    pub integration: Arc<Integration>,
    /// The last good manifest.
    pub manifest: Arc<Manifest>,
    /// `effective_tools(manifest, tool_overrides)`.
    pub tools: Vec<ManifestTool>,
}

impl std::fmt::Debug for PrimedIntegration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PrimedIntegration")
            .field("name", &self.integration.name)
            .field("id", &self.integration.id)
            .field(
                "tools",
                &self
                    .tools
                    .iter()
                    .map(|t| t.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl PrimedIntegration {
    /// The integration's name.
    pub fn name(&self) -> &str {
        &self.integration.name
    }

    /// An effective tool by name (not audience-filtered).
    pub fn tool(&self, name: &str) -> Option<&ManifestTool> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// §7.5: the tools offered to this principal on this channel.
    pub fn tools_for(&self, channel: &str, tier: &str, is_admin: bool) -> Vec<ManifestTool> {
        materialize_tools(&self.tools, channel, tier, is_admin)
    }

    /// §7.5: the prompt sections for this audience.
    pub fn prompt_sections_for(&self, channel: &str, tier: &str, is_admin: bool) -> Vec<String> {
        prompt_sections_for(&self.manifest, channel, tier, is_admin)
    }

    /// §7.5: the link destinations for this audience.
    pub fn link_destinations_for(
        &self,
        channel: &str,
        tier: &str,
        is_admin: bool,
    ) -> LinkDestinations {
        link_destinations_for(&self.manifest, channel, tier, is_admin)
    }
}

#[derive(Default)]
struct Slot {
    /// Last fetch attempt (or the stored `manifest_fetched_at` on first use).
    checked_at: Option<storage::Ts>,
    /// Last good manifest.
    manifest: Option<Arc<Manifest>>,
    /// Whether the slot was seeded from the row.
    seeded: bool,
}

struct Inner {
    store: RedbStore,
    client: IntegrationClient,
    clock: Arc<dyn Clock>,
    ttl_micros: i64,
    slots: Mutex<HashMap<uuid::Uuid, Arc<tokio::sync::Mutex<Slot>>>>,
}

/// The integrations service (`AppState::integrations`). Cheap to clone.
#[derive(Clone)]
pub struct Integrations {
    inner: Arc<Inner>,
}

impl Integrations {
    /// The service with the spec's 60 s manifest cache.
    pub fn new(store: RedbStore, client: IntegrationClient, clock: Arc<dyn Clock>) -> Self {
        Self::with_ttl(store, client, clock, MANIFEST_CACHE_TTL)
    }

    /// The service with another cache TTL (measured on `clock`).
    pub fn with_ttl(
        store: RedbStore,
        client: IntegrationClient,
        clock: Arc<dyn Clock>,
        ttl: Duration,
    ) -> Self {
        Integrations {
            inner: Arc::new(Inner {
                store,
                client,
                clock,
                ttl_micros: i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX),
                slots: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The store the rows live in (for the registry's sibling modules).
    pub(super) fn store(&self) -> &RedbStore {
        &self.inner.store
    }

    /// The signed-HTTP client.
    pub fn client(&self) -> &IntegrationClient {
        &self.inner.client
    }

    fn tenant() -> Result<(uuid::Uuid, Environment), IntegrationError> {
        let ctx = tenancy::current().ok_or(NoTenantContext)?;
        Ok((ctx.tenant.id, ctx.tenant.environment))
    }

    fn slot(&self, id: uuid::Uuid) -> Arc<tokio::sync::Mutex<Slot>> {
        self.inner
            .slots
            .lock()
            .expect("slot map lock")
            .entry(id)
            .or_default()
            .clone()
    }

    fn drop_slot(&self, id: uuid::Uuid) {
        self.inner.slots.lock().expect("slot map lock").remove(&id);
    }

    /// The current tenant's integrations, by name.
    pub async fn list(&self) -> Result<Vec<Integration>, IntegrationError> {
        let (tenant, env) = Self::tenant()?;
        let rows: Vec<Integration> = self
            .inner
            .store
            .scan(Some(tenant), Scan::index(Integration::NAME_KEY, key()))
            .await?;
        Ok(rows.into_iter().filter(|r| r.environment == env).collect())
    }

    async fn find(&self, name: &str) -> Result<Option<Integration>, IntegrationError> {
        let (tenant, env) = Self::tenant()?;
        Ok(self
            .inner
            .store
            .find_unique(
                Some(tenant),
                Integration::NAME_KEY,
                key().str(name).str(env.as_str()),
            )
            .await?)
    }

    /// The current tenant's integration called `name`.
    pub async fn get(&self, name: &str) -> Result<Integration, IntegrationError> {
        self.find(name)
            .await?
            .ok_or_else(|| IntegrationError::NotFound(name.to_string()))
    }

    /// Register a backend (status `pending` until its manifest validates).
    /// A disabled integration of the same name is re-registered in place
    /// (keeping its `tool_overrides`); an active or pending one is a
    /// [`IntegrationError::Duplicate`].
    pub async fn register(&self, new: NewIntegration) -> Result<WithSecret, IntegrationError> {
        let (tenant, env) = Self::tenant()?;
        validate_name(&new.name)?;
        let base_url = normalize_base_url(&new.base_url)?;
        // IP literals and the scheme are checked now; names when resolved.
        if let Err(e) = self.inner.client.policy().parse_url(&base_url) {
            tracing::info!(integration = %new.name, %base_url, error = %e, "integration base_url refused");
            return Err(IntegrationError::Invalid(format!("base_url {e}")));
        }
        let paths = match &new.endpoint_paths {
            Some(v) => {
                EndpointPaths::from_json(v).map_err(|e| IntegrationError::Invalid(e.to_string()))?
            }
            None => EndpointPaths::default(),
        };
        let secret = match new.signing_secret {
            Some(s) => {
                validate_secret(&s)?;
                s
            }
            None => signing::generate_secret(),
        };
        let existing = self.find(&new.name).await?;
        let row = match existing {
            Some(row) if row.status != IntegrationStatus::Disabled => {
                return Err(IntegrationError::Duplicate(new.name));
            }
            Some(mut row) => {
                row.base_url = base_url;
                row.signing_secret = Redacted::new(secret.clone());
                row.endpoint_paths = Json(paths.to_json());
                row.status = IntegrationStatus::Pending;
                row.manifest = None;
                row.manifest_fetched_at = None;
                self.drop_slot(row.id);
                self.inner.store.update(row).await?
            }
            None => {
                let mut row = Integration::new(tenant, &new.name, base_url, secret.clone());
                row.status = IntegrationStatus::Pending;
                row.environment = env;
                row.endpoint_paths = Json(paths.to_json());
                row.created_at = self.inner.clock.now();
                match self.inner.store.insert(row).await {
                    Ok(r) => r,
                    Err(StorageError::Conflict { .. }) => {
                        return Err(IntegrationError::Duplicate(new.name));
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        tracing::info!(integration = %row.name, base_url = %row.base_url, "integration registered");
        Ok(WithSecret {
            integration: row,
            signing_secret: secret,
        })
    }

    /// Replace the signing secret with a fresh one (shown once).
    pub async fn rotate_secret(&self, name: &str) -> Result<WithSecret, IntegrationError> {
        let mut row = self.get(name).await?;
        let secret = signing::generate_secret();
        row.signing_secret = Redacted::new(secret.clone());
        let row = self.inner.store.update(row).await?;
        tracing::info!(integration = %row.name, "integration signing secret rotated");
        Ok(WithSecret {
            integration: row,
            signing_secret: secret,
        })
    }

    /// Set `status = disabled`: no tools, no identity, no refreshes.
    pub async fn disable(&self, name: &str) -> Result<Integration, IntegrationError> {
        let mut row = self.get(name).await?;
        row.status = IntegrationStatus::Disabled;
        let row = self.inner.store.update(row).await?;
        self.drop_slot(row.id);
        tracing::info!(integration = %row.name, "integration disabled");
        Ok(row)
    }

    /// Fetch the manifest now, whatever the cache says. On failure the
    /// stale manifest stays and the cache is stamped.
    pub async fn refresh(&self, name: &str) -> Result<(Integration, Manifest), IntegrationError> {
        let row = self.get(name).await?;
        if row.status == IntegrationStatus::Disabled {
            return Err(IntegrationError::Disabled(row.name));
        }
        let (row, cached, outcome) = self.refresh_row(row, true).await;
        match outcome {
            Some(Ok(m)) => Ok((row, (*m).clone())),
            Some(Err(source)) => Err(IntegrationError::Refresh {
                name: row.name,
                source,
            }),
            // `force` always fetches; were it not to, the cache is the answer.
            None => cached
                .map(|m| (row.clone(), (*m).clone()))
                .ok_or(IntegrationError::NotFound(row.name)),
        }
    }

    /// Refresh `row`'s manifest when stale (or `force`). Returns the row as
    /// stored afterwards, the manifest to serve, and the fetch outcome when
    /// a fetch happened.
    async fn refresh_row(
        &self,
        row: Integration,
        force: bool,
    ) -> (
        Integration,
        Option<Arc<Manifest>>,
        Option<Result<Arc<Manifest>, CallError>>,
    ) {
        let slot = self.slot(row.id);
        let mut s = slot.lock().await;
        if !s.seeded {
            s.seeded = true;
            s.checked_at = row.manifest_fetched_at;
            s.manifest = stored_manifest(&row).map(Arc::new);
        }
        let now = self.inner.clock.now();
        let fresh = s
            .checked_at
            .is_some_and(|t| now.micros().saturating_sub(t.micros()) < self.inner.ttl_micros);
        if fresh && !force {
            return (row, s.manifest.clone(), None);
        }
        s.checked_at = Some(now);
        match self.inner.client.fetch_manifest(&row).await {
            Ok(manifest) => {
                let manifest = Arc::new(manifest);
                s.manifest = Some(manifest.clone());
                let row = match self.store_manifest(&row, &manifest, now).await {
                    Ok(r) => r,
                    Err(e) => {
                        tracing::warn!(integration = %row.name, error = %e, "fetched manifest not stored");
                        row
                    }
                };
                (row, Some(manifest.clone()), Some(Ok(manifest)))
            }
            Err(e) => {
                tracing::warn!(
                    integration = %row.name,
                    error = %e,
                    stale = s.manifest.is_some(),
                    "manifest refresh failed; keeping the last good manifest for {} s",
                    self.inner.ttl_micros / 1_000_000
                );
                (row, s.manifest.clone(), Some(Err(e)))
            }
        }
    }

    /// Store a validated manifest on the row as it is now (a concurrent
    /// disable wins), promoting `pending` to `active`.
    async fn store_manifest(
        &self,
        row: &Integration,
        manifest: &Manifest,
        now: storage::Ts,
    ) -> Result<Integration, IntegrationError> {
        let Some(mut current) = self
            .inner
            .store
            .get::<Integration>(Some(row.tenant_id), key().uuid(row.id))
            .await?
        else {
            return Err(IntegrationError::NotFound(row.name.clone()));
        };
        current.manifest = Some(Json(
            serde_json::to_value(manifest).map_err(|e| IntegrationError::Invalid(e.to_string()))?,
        ));
        current.manifest_fetched_at = Some(now);
        if current.status == IntegrationStatus::Pending {
            current.status = IntegrationStatus::Active;
            tracing::info!(integration = %current.name, "integration active: manifest validated");
        }
        Ok(self.inner.store.update(current).await?)
    }

    /// Turn start (§7.5): refresh the stale manifests of the tenant's
    /// integrations concurrently (pending ones too, so they can become
    /// active) and return every active integration with a manifest, its
    /// overrides applied. An integration whose `tool_overrides` cannot be
    /// parsed contributes nothing (fail closed) and is logged.
    pub async fn prime(&self) -> Result<Vec<PrimedIntegration>, IntegrationError> {
        let rows: Vec<Integration> = self
            .list()
            .await?
            .into_iter()
            .filter(|r| r.status != IntegrationStatus::Disabled)
            .collect();
        let refreshed =
            futures_util::future::join_all(rows.into_iter().map(|r| self.refresh_row(r, false)))
                .await;
        let mut out = Vec::new();
        for (row, manifest, _) in refreshed {
            let Some(manifest) = manifest else { continue };
            if row.status != IntegrationStatus::Active {
                continue;
            }
            let overrides = match parse_tool_overrides(&row.tool_overrides.0) {
                Ok(o) => o,
                Err(e) => {
                    tracing::warn!(integration = %row.name, error = %e, "tool_overrides unreadable: integration offers no tools");
                    continue;
                }
            };
            let tools = effective_tools(&manifest, &overrides);
            out.push(PrimedIntegration {
                integration: Arc::new(row),
                manifest,
                tools,
            });
        }
        Ok(out)
    }

    /// Invoke an effective tool of a primed integration (see
    /// [`IntegrationClient::invoke_tool`]). Refuses integrations of another
    /// tenant and tools not in the integration's effective list.
    pub async fn invoke(
        &self,
        primed: &PrimedIntegration,
        tool: &str,
        request: InvokeRequest,
        progress: Option<mpsc::Sender<String>>,
    ) -> ToolResult {
        let mine = tenancy::current_tenant_id().is_ok_and(|t| t == primed.integration.tenant_id);
        let Some(def) = primed.tool(tool).filter(|_| mine) else {
            tracing::warn!(integration = %primed.name(), %tool, same_tenant = mine, "integration tool refused");
            return ToolResult::failed(format!("The {tool} tool is not available."));
        };
        self.inner
            .client
            .invoke_tool(
                &primed.integration,
                &def.name,
                def.timeout_ms,
                request,
                progress,
            )
            .await
    }

    async fn active(&self) -> Result<Vec<Integration>, IntegrationError> {
        Ok(self
            .list()
            .await?
            .into_iter()
            .filter(|r| r.status == IntegrationStatus::Active)
            .collect())
    }

    /// §6: ask each active integration (by name) until one resolves the
    /// person to a non-reserved tier. `None` = no integration knows them;
    /// the caller falls back to the access policy (§9). Backend failures
    /// are logged and skipped (see [`Self::lookup_identity`] to tell them
    /// apart from "unknown").
    pub async fn resolve_identity_via_integrations(
        &self,
        query: &IdentityQuery,
    ) -> Result<Option<IdentityResolution>, IntegrationError> {
        Ok(self.lookup_identity(query).await?.resolution)
    }

    /// Ask each active integration (by name) until one resolves the person
    /// to a non-reserved tier, recording which integrations could not
    /// answer (backend down, bad response). A reserved tier — including the
    /// `__admin__` marker, in any case — never resolves anyone.
    pub async fn lookup_identity(
        &self,
        query: &IdentityQuery,
    ) -> Result<IdentityLookup, IntegrationError> {
        let mut unavailable = Vec::new();
        for row in self.active().await? {
            match self.inner.client.resolve_identity(&row, query).await {
                Ok(r) => match &r.principal {
                    Some(p) if !is_reserved_tier(&p.tier) => {
                        return Ok(IdentityLookup {
                            resolution: Some(r),
                            unavailable,
                        });
                    }
                    Some(p) => {
                        tracing::info!(integration = %row.name, tier = %p.tier, "identity answer with a reserved tier does not resolve");
                    }
                    None => {}
                },
                Err(e) => {
                    tracing::warn!(integration = %row.name, error = %e, "identity resolve failed");
                    unavailable.push(row.name.clone());
                }
            }
        }
        Ok(IdentityLookup {
            resolution: None,
            unavailable,
        })
    }

    /// The roster of one active integration.
    pub async fn roster(&self, name: &str) -> Result<Vec<ResolvedPrincipal>, IntegrationError> {
        let row = self.get_active(name).await?;
        self.inner
            .client
            .roster(&row)
            .await
            .map_err(|source| IntegrationError::Refresh {
                name: row.name.clone(),
                source,
            })
    }

    /// A link minted by one active integration.
    pub async fn issue_link(
        &self,
        name: &str,
        destination: &str,
        principal_ref: &str,
    ) -> Result<String, CallError> {
        let row = self
            .get_active(name)
            .await
            .map_err(|e| CallError::Config(e.to_string()))?;
        self.inner
            .client
            .issue_link(&row, destination, principal_ref)
            .await
    }

    /// §15.2: post to the escalations webhook of every active integration
    /// (best effort; each outcome returned by integration name).
    pub async fn post_escalation(
        &self,
        escalation: &Escalation,
    ) -> Result<Vec<(String, Result<Value, CallError>)>, IntegrationError> {
        let mut out = Vec::new();
        for row in self.active().await? {
            let r = self.inner.client.post_escalation(&row, escalation).await;
            if let Err(e) = &r {
                tracing::warn!(integration = %row.name, error = %e, "escalation webhook failed");
            }
            out.push((row.name.clone(), r));
        }
        Ok(out)
    }

    async fn get_active(&self, name: &str) -> Result<Integration, IntegrationError> {
        let row = self.get(name).await?;
        if row.status == IntegrationStatus::Disabled {
            return Err(IntegrationError::Disabled(row.name));
        }
        Ok(row)
    }
}

fn stored_manifest(row: &Integration) -> Option<Manifest> {
    let value = row.manifest.as_ref()?;
    match Manifest::parse(&value.0) {
        Ok(m) => Some(m),
        Err(e) => {
            tracing::warn!(integration = %row.name, error = %e, "stored manifest no longer validates");
            None
        }
    }
}

/// `^[a-z0-9][a-z0-9_-]{1,63}$` (§12.2).
pub fn validate_name(name: &str) -> Result<(), IntegrationError> {
    let bytes = name.as_bytes();
    let ok = (2..=64).contains(&bytes.len())
        && (bytes[0].is_ascii_lowercase() || bytes[0].is_ascii_digit())
        && bytes[1..]
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-');
    if ok {
        Ok(())
    } else {
        Err(IntegrationError::Invalid(
            "name must match ^[a-z0-9][a-z0-9_-]{1,63}$".into(),
        ))
    }
}

/// An absolute `http`/`https` URL with a host, no credentials, query or
/// fragment; trailing slashes removed.
pub fn normalize_base_url(raw: &str) -> Result<String, IntegrationError> {
    let bad = |why: &str| IntegrationError::Invalid(format!("base_url {why}"));
    let raw = raw.trim();
    if raw.chars().count() > MAX_BASE_URL_CHARS {
        return Err(bad(&format!(
            "must be at most {MAX_BASE_URL_CHARS} characters"
        )));
    }
    let url = reqwest::Url::parse(raw).map_err(|e| bad(&format!("is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("must use http or https"));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(bad("must have a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not contain credentials"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(bad("must not have a query or fragment"));
    }
    Ok(url.as_str().trim_end_matches('/').to_string())
}

fn validate_secret(secret: &str) -> Result<(), IntegrationError> {
    let n = secret.chars().count();
    if !(MIN_SECRET_CHARS..=MAX_SECRET_CHARS).contains(&n)
        || secret.chars().any(char::is_whitespace)
    {
        return Err(IntegrationError::Invalid(format!(
            "signing_secret must be {MIN_SECRET_CHARS}–{MAX_SECRET_CHARS} characters without whitespace"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_spec_regex() {
        let longest = "a".repeat(64);
        let too_long = "a".repeat(65);
        for ok in ["ab", "foundations", "0x", "a-b_c", longest.as_str()] {
            assert!(validate_name(ok).is_ok(), "{ok}");
        }
        for bad in [
            "a",
            "",
            "-ab",
            "_ab",
            "Abc",
            "a b",
            "a.b",
            too_long.as_str(),
            "café",
        ] {
            assert!(validate_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn base_urls_are_absolute_http_without_credentials_or_query() {
        assert_eq!(
            normalize_base_url(" https://api.example.org/root/ ").unwrap(),
            "https://api.example.org/root"
        );
        assert_eq!(
            normalize_base_url("http://127.0.0.1:8080").unwrap(),
            "http://127.0.0.1:8080"
        );
        for bad in [
            "ftp://x.org",
            "not a url",
            "/relative",
            "https://u:p@x.org",
            "https://x.org/?a=1",
            "https://x.org/#f",
        ] {
            assert!(normalize_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn supplied_secrets_must_be_long_enough() {
        assert!(validate_secret("0123456789abcdef").is_ok());
        assert!(validate_secret("short").is_err());
        assert!(validate_secret("0123456789 abcdef").is_err());
    }
}

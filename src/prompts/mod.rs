//! The prompt system (spec §4.5 + Appendix A).
//!
//! Flow of one turn: the agent loop calls [`Prompts::load`] once (the
//! current tenant's additions, cached 60 s, plus its custom character), then
//! [`system::assemble_system_prompt`] (or [`Prompts::system_prompt`]) with a
//! plain [`SystemPromptInput`], and [`PromptSet::render`] for any other key
//! (internal classifier prompts, repair suffix, gates).
//!
//! - [`registry`]: every Appendix A key → verbatim default text (compiled in
//!   from `templates/prompts/<key>.txt`) + group/channel metadata.
//! - [`render`](mod@render): the `{{var}}` rules (non-recursive, missing → `""`).
//! - [`guidance`]: the A.7 code-built builders, pure functions of the tool
//!   set, tier and channel.
//! - [`system`]: the master template `shared.system.base` assembled with
//!   every §4.5 section for the slack, email, api and web channels.
//! - this module: [`PromptSet`] (defaults + a tenant's additions, the
//!   append-only rule and its custom-character exception) and [`Prompts`]
//!   (the `root_prompts` / `root_prompt_versions` service).
//!
//! Tenant edits never replace a default: the stored `root_prompts.content`
//! is the tenant's *addition*, appended after the built-in text. The one
//! exception (§4.5) is the custom character/voice (`settings.agent_character`),
//! which replaces the chat/email tone template; the addition is still
//! appended after it.

pub mod guidance;
pub mod platform;
pub mod registry;
pub mod render;
pub mod system;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use moka::sync::Cache;
use storage::key as row_key;
use storage::{RedbStore, RootPrompt, RootPromptVersion, Scan, StorageError, Store, Ts};
use uuid::Uuid;

use crate::platform::clock::Clock;
use crate::platform::tenancy::{self, NoTenantContext};

pub use registry::{
    PromptChannel, PromptGroup, PromptTemplate, TEMPLATES, all_templates, keys, template,
};
pub use render::{PromptVars, render};
pub use system::{
    Channel, EmailContext, LinkDestination, LinkState, SystemPromptInput, TenantVoice,
    assemble_system_prompt,
};

/// How long a tenant's additions are served from memory (§4.5: 60 s).
pub const PROMPT_CACHE_TTL: Duration = Duration::from_secs(60);

/// Separator between a built-in default and the tenant's addition.
pub const ADDITION_SEPARATOR: &str = "\n\n";

/// Why a prompt could not be produced or saved.
#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    /// The key is not an Appendix A template (§4.5: unknown keys throw).
    #[error("unknown prompt key: {0}")]
    UnknownKey(String),
    /// Called outside a tenant scope (a bug in the caller).
    #[error(transparent)]
    NoTenant(#[from] NoTenantContext),
    /// Reading or writing `root_prompts` failed.
    #[error("prompt storage: {0}")]
    Storage(#[from] StorageError),
}

/// The keys whose built-in text a custom character replaces (§4.5: "the
/// built-in chat/email tone template").
pub const CHARACTER_KEYS: [&str; 2] =
    [keys::SLACK_IDENTITY_ADDENDUM, keys::EMAIL_IDENTITY_ADDENDUM];

/// The templates as one tenant sees them: built-in defaults, the tenant's
/// additions, and its custom character. Cheap to clone; pure to render.
#[derive(Clone, Debug, Default)]
pub struct PromptSet {
    additions: Arc<HashMap<String, String>>,
    custom_character: Option<String>,
}

impl PromptSet {
    /// Built-in defaults only (no tenant additions, no character).
    pub fn defaults() -> Self {
        PromptSet::default()
    }

    /// Defaults plus `additions` (key → addition text) and an optional custom
    /// character (blank counts as none).
    pub fn new(additions: HashMap<String, String>, custom_character: Option<String>) -> Self {
        PromptSet {
            additions: Arc::new(additions),
            custom_character: custom_character.filter(|c| !c.trim().is_empty()),
        }
    }

    /// The same set with another custom character.
    pub fn with_custom_character(mut self, character: Option<String>) -> Self {
        self.custom_character = character.filter(|c| !c.trim().is_empty());
        self
    }

    /// The tenant's addition for `key`, when it has a non-blank one.
    pub fn addition(&self, key: &str) -> Option<&str> {
        self.additions
            .get(key)
            .map(|a| a.trim())
            .filter(|a| !a.is_empty())
    }

    /// The custom character in effect, if any.
    pub fn custom_character(&self) -> Option<&str> {
        self.custom_character.as_deref()
    }

    /// The unrendered text for `key`: the built-in default (or, for the two
    /// tone keys, the custom character when one is set), then the tenant's
    /// addition after [`ADDITION_SEPARATOR`]. Unknown key → error.
    pub fn template_text(&self, key: &str) -> Result<String, PromptError> {
        let t = template(key)?;
        let base = match (&self.custom_character, CHARACTER_KEYS.contains(&t.key)) {
            // The bot-mention line is identity, not tone (its own key): a
            // custom character replaces the tone lines but Slack keeps it.
            (Some(c), true) if t.key == keys::SLACK_IDENTITY_ADDENDUM => {
                format!("{}{{{{botMentionLine}}}}", c.trim())
            }
            (Some(c), true) => c.trim().to_string(),
            _ => t.default_text.to_string(),
        };
        Ok(match self.addition(key) {
            None => base,
            Some(a) if base.is_empty() => a.to_string(),
            Some(a) => format!("{base}{ADDITION_SEPARATOR}{a}"),
        })
    }

    /// Render `key` with `vars` (§4.5 rules: one pass, non-recursive,
    /// missing/empty → `""`). Placeholders inside the tenant's addition or
    /// character resolve too, in the same single pass.
    pub fn render(&self, key: &str, vars: &PromptVars) -> Result<String, PromptError> {
        Ok(render::render(&self.template_text(key)?, vars))
    }
}

/// One key as the dashboard lists it.
#[derive(Clone, Debug)]
pub struct PromptView {
    /// Registry entry (key, group, channel, description, default text).
    pub template: &'static PromptTemplate,
    /// The tenant's stored addition, if any row exists.
    pub addition: Option<RootPrompt>,
}

#[derive(Debug)]
struct CachedAdditions {
    loaded_at: Ts,
    additions: Arc<HashMap<String, String>>,
}

/// The prompt service over `root_prompts` / `root_prompt_versions`. Every
/// method acts for the current tenant (`tenancy::current`), never a
/// parameter.
#[derive(Clone)]
pub struct Prompts {
    store: RedbStore,
    clock: Arc<dyn Clock>,
    ttl_micros: i64,
    cache: Cache<Uuid, Arc<CachedAdditions>>,
}

impl Prompts {
    /// The service with the spec's 60 s cache.
    pub fn new(store: RedbStore, clock: Arc<dyn Clock>) -> Self {
        Self::with_ttl(store, clock, PROMPT_CACHE_TTL)
    }

    /// The service with another cache lifetime (measured on `clock`, so
    /// tests expire entries by advancing a `ManualClock`).
    pub fn with_ttl(store: RedbStore, clock: Arc<dyn Clock>, ttl: Duration) -> Self {
        Prompts {
            store,
            clock,
            ttl_micros: i64::try_from(ttl.as_micros()).unwrap_or(i64::MAX),
            cache: Cache::builder().max_capacity(10_000).build(),
        }
    }

    /// The current tenant's prompt set: cached additions plus the custom
    /// character from the tenant's settings.
    pub async fn load(&self) -> Result<PromptSet, PromptError> {
        let tenant = tenancy::current().ok_or(NoTenantContext)?;
        let additions = self.additions(tenant.id()).await?;
        let character = TenantVoice::of(&tenant.tenant).custom_character;
        Ok(PromptSet {
            additions,
            custom_character: character,
        })
    }

    /// Render one key for the current tenant.
    pub async fn render(&self, key: &str, vars: &PromptVars) -> Result<String, PromptError> {
        template(key)?;
        self.load().await?.render(key, vars)
    }

    /// The assembled system prompt for the current tenant.
    pub async fn system_prompt(&self, input: &SystemPromptInput) -> Result<String, PromptError> {
        assemble_system_prompt(&self.load().await?, input)
    }

    /// Save the current tenant's addition for `key` (empty clears it) and
    /// append a `root_prompt_versions` row, in one transaction. The cache
    /// entry of this tenant is dropped, so this process sees the change at
    /// once (other processes within [`PROMPT_CACHE_TTL`]).
    pub async fn save(
        &self,
        key: &str,
        content: &str,
        saved_by: Option<&str>,
    ) -> Result<RootPrompt, PromptError> {
        let t = template(key)?;
        let tenant_id = tenancy::current_tenant_id()?;
        let now = self.clock.now();
        let content = content.to_string();
        let saved_by = saved_by.map(str::to_string);
        let (row, _) = self
            .store
            .transact(move |tx| {
                let existing: Option<RootPrompt> = tx.get(Some(tenant_id), row_key().str(t.key))?;
                let row = RootPrompt {
                    tenant_id,
                    key: t.key.to_string(),
                    content: content.clone(),
                    description: existing
                        .as_ref()
                        .and_then(|e| e.description.clone())
                        .or_else(|| (!t.description.is_empty()).then(|| t.description.to_string())),
                    updated_by: saved_by.clone(),
                    created_at: existing.as_ref().map_or(now, |e| e.created_at),
                    updated_at: now,
                };
                tx.upsert(&row)?;
                tx.insert(&RootPromptVersion {
                    id: Uuid::new_v4(),
                    tenant_id,
                    key: t.key.to_string(),
                    content,
                    saved_at: now,
                    saved_by,
                })?;
                Ok(row)
            })
            .await?;
        self.cache.invalidate(&tenant_id);
        Ok(row)
    }

    /// Saved versions of `key` for the current tenant, newest first.
    pub async fn versions(&self, key: &str) -> Result<Vec<RootPromptVersion>, PromptError> {
        let t = template(key)?;
        let tenant_id = tenancy::current_tenant_id()?;
        Ok(self
            .store
            .scan(
                Some(tenant_id),
                Scan::index(RootPromptVersion::KEY_SAVED_AT_IDX, row_key().str(t.key)).desc(),
            )
            .await?)
    }

    /// Every registry key with the current tenant's stored addition.
    pub async fn list(&self) -> Result<Vec<PromptView>, PromptError> {
        let tenant_id = tenancy::current_tenant_id()?;
        let rows: Vec<RootPrompt> = self.store.scan(Some(tenant_id), Scan::all()).await?;
        let mut by_key: HashMap<String, RootPrompt> =
            rows.into_iter().map(|r| (r.key.clone(), r)).collect();
        Ok(all_templates()
            .map(|t| PromptView {
                template: t,
                addition: by_key.remove(t.key),
            })
            .collect())
    }

    /// Drop the cached additions of the current tenant (a save in another
    /// process, a tenant purge).
    pub fn invalidate_current(&self) -> Result<(), PromptError> {
        self.forget(tenancy::current_tenant_id()?);
        Ok(())
    }

    /// Drop the cached additions of `tenant` (a deleted tenant).
    pub fn forget(&self, tenant: Uuid) {
        self.cache.invalidate(&tenant);
    }

    async fn additions(&self, tenant: Uuid) -> Result<Arc<HashMap<String, String>>, PromptError> {
        let now = self.clock.now();
        if let Some(c) = self.cache.get(&tenant)
            && now.micros().saturating_sub(c.loaded_at.micros()) < self.ttl_micros
        {
            return Ok(c.additions.clone());
        }
        let rows: Vec<RootPrompt> = self.store.scan(Some(tenant), Scan::all()).await?;
        // Rows for keys the registry no longer knows are ignored, not errors:
        // a rendered key is always checked against the registry first.
        let additions: Arc<HashMap<String, String>> = Arc::new(
            rows.into_iter()
                .filter(|r| template(&r.key).is_ok())
                .map(|r| (r.key, r.content))
                .collect(),
        );
        self.cache.insert(
            tenant,
            Arc::new(CachedAdditions {
                loaded_at: now,
                additions: additions.clone(),
            }),
        );
        Ok(additions)
    }
}

#[cfg(test)]
mod tests;

//! §2.1 Core: tenants, credentials, integrations, principals, conversation
//! logs, prompts and metering.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{TENANTS, lower, tenant_row};
use crate::codec::{Json, Redacted, Ts};
use crate::enums::*;
use crate::key::{Key, key};
use crate::table::{FkDef, IndexDef, OnDelete, Record, Scope, TableDef};

/// `tenants` — one community (or its `--dev` shadow, §1.1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Tenant {
    pub id: Uuid,
    pub slug: String,
    pub display_name: String,
    pub agent_name: String,
    pub status: TenantStatus,
    pub timezone: String,
    pub settings: Json,
    pub stytch_org_id: Option<String>,
    pub environment: Environment,
    /// Set on a dev shadow: the live tenant it shadows.
    pub live_tenant_id: Option<Uuid>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl Tenant {
    /// `tenants_slug_key`
    pub const SLUG_KEY: &'static str = "tenants_slug_key";
    /// unique partial: one shadow per live tenant.
    pub const LIVE_TENANT_KEY: &'static str = "tenants_live_tenant_id_key";
    /// FK `live_tenant_id → tenants ON DELETE CASCADE`.
    pub const LIVE_TENANT_FKEY: &'static str = "tenants_live_tenant_id_fkey";

    /// A live tenant with the spec's defaults (agent `Root`, LA time zone, `{}` settings).
    pub fn new(slug: impl Into<String>, display_name: impl Into<String>) -> Self {
        let now = Ts::now();
        Tenant {
            id: Uuid::new_v4(),
            slug: slug.into(),
            display_name: display_name.into(),
            agent_name: "Root".into(),
            status: TenantStatus::Active,
            timezone: "America/Los_Angeles".into(),
            settings: Json::empty_object(),
            stytch_org_id: None,
            environment: Environment::Live,
            live_tenant_id: None,
            created_at: now,
            updated_at: now,
        }
    }
    /// Slug of this tenant's dev shadow (`<slug>--dev`).
    pub fn dev_slug(&self) -> String {
        format!("{}--dev", self.slug)
    }
}

impl Record for Tenant {
    const DEF: TableDef = TableDef {
        name: TENANTS,
        scope: Scope::Global,
        pkey: "tenants_pkey",
        indexes: &[
            IndexDef::unique(Tenant::SLUG_KEY),
            IndexDef::unique(Tenant::LIVE_TENANT_KEY),
        ],
        fks: &[FkDef {
            name: Tenant::LIVE_TENANT_FKEY,
            parent: TENANTS,
            on_delete: OnDelete::Cascade,
        }],
    };
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().uuid(self.id)
    }
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.slug)),
            self.live_tenant_id.map(|l| key().uuid(l)),
        ]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![self.live_tenant_id.map(|l| key().uuid(l))]
    }
    fn check(&self) -> crate::StorageResult<()> {
        let ok = !self.slug.is_empty()
            && self.slug.len() <= 64
            && self
                .slug
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
        if !ok {
            return Err(crate::StorageError::Check {
                column: "tenants.slug",
                message: format!("{:?} must be 1-64 chars of a-z, 0-9 and '-'", self.slug),
            });
        }
        if (self.environment == Environment::Dev) != self.live_tenant_id.is_some() {
            return Err(crate::StorageError::Check {
                column: "tenants.live_tenant_id",
                message: "a dev tenant must shadow a live tenant, and only a dev tenant may".into(),
            });
        }
        Ok(())
    }
}

/// `tenant_credentials` — per-tenant secrets (Slack tokens etc.).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct TenantCredential {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub kind: String,
    /// The secret; redacted in `Debug`, stored as the plain string.
    pub value: Redacted<String>,
    pub metadata: Json,
    pub updated_at: Ts,
}

impl TenantCredential {
    /// `UNIQUE (tenant_id, kind)`
    pub const KIND_KEY: &'static str = "tenant_credentials_tenant_id_kind_key";
}

impl Record for TenantCredential {
    const DEF: TableDef = TableDef {
        name: "tenant_credentials",
        scope: Scope::Tenant,
        pkey: "tenant_credentials_pkey",
        indexes: &[IndexDef::unique(TenantCredential::KIND_KEY)],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["value"];
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.kind))]
    }
}

/// `integrations` — a tenant backend speaking root-int/1 (§7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Integration {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub name: String,
    pub base_url: String,
    /// Redacted in `Debug`; stored as the plain string.
    pub signing_secret: Redacted<String>,
    pub callback_token: Option<Redacted<String>>,
    pub status: IntegrationStatus,
    pub manifest: Option<Json>,
    pub manifest_fetched_at: Option<Ts>,
    /// `{ tool: { removed?, description?, channels?, tiers?, admin_only? } }`
    pub tool_overrides: Json,
    /// Keys: manifest, tool_invoke, identity_resolve, identity_roster, links_issue, escalations.
    pub endpoint_paths: Json,
    pub environment: Environment,
    pub created_at: Ts,
}

impl Integration {
    /// `UNIQUE (tenant_id, name, environment)`
    pub const NAME_KEY: &'static str = "integrations_tenant_id_name_environment_key";
    /// index `(tenant_id, environment)`
    pub const ENV_IDX: &'static str = "integrations_tenant_id_environment_idx";

    /// A registration with the spec's defaults (`status='active'`, `environment='dev'`).
    pub fn new(
        tenant_id: Uuid,
        name: impl Into<String>,
        base_url: impl Into<String>,
        signing_secret: impl Into<String>,
    ) -> Self {
        Integration {
            id: Uuid::new_v4(),
            tenant_id,
            name: name.into(),
            base_url: base_url.into(),
            signing_secret: Redacted::new(signing_secret.into()),
            callback_token: None,
            status: IntegrationStatus::Active,
            manifest: None,
            manifest_fetched_at: None,
            tool_overrides: Json::empty_object(),
            endpoint_paths: Json::empty_object(),
            environment: Environment::Dev,
            created_at: Ts::now(),
        }
    }
}

impl Record for Integration {
    const DEF: TableDef = TableDef {
        name: "integrations",
        scope: Scope::Tenant,
        pkey: "integrations_pkey",
        indexes: &[
            IndexDef::unique(Integration::NAME_KEY),
            IndexDef::secondary(Integration::ENV_IDX),
        ],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["signing_secret", "callback_token"];
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.name).str(self.environment.as_str())),
            Some(key().str(self.environment.as_str())),
        ]
    }
}

/// `principals` — one row per known person per tenant (§6).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Principal {
    pub id: Uuid,
    pub tenant_id: Uuid,
    /// Stable external ref (`ref` in the spec).
    #[serde(rename = "ref")]
    pub ref_: String,
    pub display_name: Option<String>,
    pub tier: String,
    pub is_admin: bool,
    pub traits: Json,
    pub slack_user_id: Option<String>,
    pub email: Option<String>,
    pub profile_context: Option<String>,
    pub preferences: Json,
    pub tier_resolved_at: Option<Ts>,
    pub conversation_memory: Option<String>,
    pub conversation_memory_updated_at: Option<Ts>,
    pub conversation_memory_source_count: i32,
    pub conversation_memory_version: i32,
    pub conversation_memory_reset_at: Option<Ts>,
    pub conversation_memory_last_attempted_at: Option<Ts>,
    pub conversation_memory_last_error: Option<String>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl Principal {
    /// `UNIQUE (tenant_id, ref)`
    pub const REF_KEY: &'static str = "principals_tenant_id_ref_key";
    /// unique partial `(tenant_id, slack_user_id) WHERE slack_user_id IS NOT NULL`
    pub const SLACK_USER_KEY: &'static str = "principals_tenant_id_slack_user_id_key";
    /// index `(tenant_id, lower(email))`
    pub const EMAIL_IDX: &'static str = "principals_tenant_id_email_idx";

    /// A principal with the spec's defaults (tier `unresolved`, memory version 1).
    pub fn new(tenant_id: Uuid, ref_: impl Into<String>) -> Self {
        let now = Ts::now();
        Principal {
            id: Uuid::new_v4(),
            tenant_id,
            ref_: ref_.into(),
            tier: "unresolved".into(),
            traits: Json::empty_object(),
            preferences: Json::empty_object(),
            conversation_memory_version: 1,
            created_at: now,
            updated_at: now,
            ..Default::default()
        }
    }
}

impl Record for Principal {
    const DEF: TableDef = TableDef {
        name: "principals",
        scope: Scope::Tenant,
        pkey: "principals_pkey",
        indexes: &[
            IndexDef::unique(Principal::REF_KEY),
            IndexDef::unique(Principal::SLACK_USER_KEY),
            IndexDef::secondary(Principal::EMAIL_IDX),
        ],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.ref_)),
            self.slack_user_id.as_deref().map(|s| key().str(s)),
            self.email.as_deref().map(|e| key().str(&lower(e))),
        ]
    }
}

/// `conversation_logs` — every inbound/outbound message on every channel.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ConversationLog {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub principal_id: Option<Uuid>,
    pub dedupe_key: Option<String>,
    pub exchange_key: Option<String>,
    pub member_id: Option<String>,
    pub channel: Channel,
    pub direction: Direction,
    pub source: String,
    pub status: String,
    pub message_text: Option<String>,
    pub subject: Option<String>,
    pub message_at: Ts,
    pub external_message_id: Option<String>,
    pub thread_key: Option<String>,
    pub slack_user_id: Option<String>,
    pub slack_channel_id: Option<String>,
    pub slack_thread_ts: Option<String>,
    pub slack_message_ts: Option<String>,
    pub from_email: Option<String>,
    pub to_email: Option<String>,
    pub cc_emails: Vec<String>,
    pub in_reply_to: Option<String>,
    pub references: Option<String>,
    pub metadata: Json,
    pub created_at: Ts,
}

impl ConversationLog {
    /// `UNIQUE (tenant_id, dedupe_key)`
    pub const DEDUPE_KEY: &'static str = "conversation_logs_tenant_id_dedupe_key_key";
    /// index `(tenant_id, message_at DESC)` (scan it with `Order::Desc`).
    pub const MESSAGE_AT_IDX: &'static str = "conversation_logs_tenant_id_message_at_idx";
    /// index `thread_key` (ordered by `message_at` within a thread).
    pub const THREAD_KEY_IDX: &'static str = "conversation_logs_thread_key_idx";
    /// index `exchange_key`
    pub const EXCHANGE_KEY_IDX: &'static str = "conversation_logs_exchange_key_idx";
    /// index `external_message_id`
    pub const EXTERNAL_ID_IDX: &'static str = "conversation_logs_external_message_id_idx";
    /// FK `principal_id → principals ON DELETE SET NULL`
    pub const PRINCIPAL_FKEY: &'static str = "conversation_logs_principal_id_fkey";
    /// index `(tenant_id, principal_id, message_at)`: one member's messages
    /// in time order (conversation memory reads only what is new).
    pub const PRINCIPAL_MESSAGE_AT_IDX: &'static str =
        "conversation_logs_tenant_id_principal_id_message_at_idx";

    /// A row with the spec's defaults (`source='runtime'`, `status='recorded'`, now).
    pub fn new(tenant_id: Uuid, channel: Channel, direction: Direction) -> Self {
        let now = Ts::now();
        ConversationLog {
            id: Uuid::new_v4(),
            tenant_id,
            channel,
            direction,
            source: "runtime".into(),
            status: "recorded".into(),
            message_at: now,
            metadata: Json::empty_object(),
            created_at: now,
            ..Default::default()
        }
    }
}

impl Record for ConversationLog {
    const DEF: TableDef = TableDef {
        name: "conversation_logs",
        scope: Scope::Tenant,
        pkey: "conversation_logs_pkey",
        indexes: &[
            IndexDef::unique(ConversationLog::DEDUPE_KEY),
            IndexDef::secondary(ConversationLog::MESSAGE_AT_IDX),
            IndexDef::secondary(ConversationLog::THREAD_KEY_IDX),
            IndexDef::secondary(ConversationLog::EXCHANGE_KEY_IDX),
            IndexDef::secondary(ConversationLog::EXTERNAL_ID_IDX),
            IndexDef::secondary(ConversationLog::PRINCIPAL_MESSAGE_AT_IDX),
        ],
        fks: &[FkDef {
            name: ConversationLog::PRINCIPAL_FKEY,
            parent: "principals",
            on_delete: OnDelete::SetNull,
        }],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            self.dedupe_key.as_deref().map(|d| key().str(d)),
            Some(key().ts(self.message_at)),
            self.thread_key
                .as_deref()
                .map(|t| key().str(t).ts(self.message_at)),
            self.exchange_key.as_deref().map(|x| key().str(x)),
            self.external_message_id.as_deref().map(|x| key().str(x)),
            self.principal_id.map(|p| key().uuid(p).ts(self.message_at)),
        ]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![self.principal_id.map(|p| key().uuid(p))]
    }
    fn set_null(&mut self, fk: &str) {
        if fk == Self::PRINCIPAL_FKEY {
            self.principal_id = None;
        }
    }
}

/// `root_prompts` — editable prompt templates, PK `(tenant_id, key)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct RootPrompt {
    pub tenant_id: Uuid,
    pub key: String,
    pub content: String,
    pub description: Option<String>,
    pub updated_by: Option<String>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl Record for RootPrompt {
    const DEF: TableDef = TableDef {
        name: "root_prompts",
        scope: Scope::Tenant,
        pkey: "root_prompts_pkey",
        indexes: &[],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        Some(self.tenant_id)
    }
    fn local_pk(&self) -> Key {
        key().str(&self.key)
    }
}

/// `root_prompt_versions` — append-only prompt history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct RootPromptVersion {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub key: String,
    pub content: String,
    pub saved_at: Ts,
    pub saved_by: Option<String>,
}

impl RootPromptVersion {
    /// index `(tenant_id, key, saved_at DESC)`
    pub const KEY_SAVED_AT_IDX: &'static str = "root_prompt_versions_tenant_id_key_saved_at_idx";
}

impl Record for RootPromptVersion {
    const DEF: TableDef = TableDef {
        name: "root_prompt_versions",
        scope: Scope::Tenant,
        pkey: "root_prompt_versions_pkey",
        indexes: &[IndexDef::secondary(RootPromptVersion::KEY_SAVED_AT_IDX)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.key).ts(self.saved_at))]
    }
}

/// `llm_token_usage` — one row per LLM call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct LlmTokenUsage {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub purpose: String,
    pub model: String,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
    pub cost_usd: Option<f64>,
    pub created_at: Ts,
}

impl LlmTokenUsage {
    /// index `(tenant_id, created_at)`
    pub const CREATED_AT_IDX: &'static str = "llm_token_usage_tenant_id_created_at_idx";
}

impl Record for LlmTokenUsage {
    const DEF: TableDef = TableDef {
        name: "llm_token_usage",
        scope: Scope::Tenant,
        pkey: "llm_token_usage_pkey",
        indexes: &[IndexDef::secondary(LlmTokenUsage::CREATED_AT_IDX)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().ts(self.created_at))]
    }
}

/// `api_request_usage` — metering of API agent turns and tool executions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ApiRequestUsage {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub surface: ApiSurface,
    pub api_key_id: Option<Uuid>,
    pub llm_calls: i64,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub total_tokens: i64,
    pub cost_usd: f64,
    pub created_at: Ts,
}

impl ApiRequestUsage {
    /// index `(tenant_id, created_at)`
    pub const CREATED_AT_IDX: &'static str = "api_request_usage_tenant_id_created_at_idx";
}

impl Record for ApiRequestUsage {
    const DEF: TableDef = TableDef {
        name: "api_request_usage",
        scope: Scope::Tenant,
        pkey: "api_request_usage_pkey",
        indexes: &[IndexDef::secondary(ApiRequestUsage::CREATED_AT_IDX)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().ts(self.created_at))]
    }
}

/// `integration_tool_calls` — audit row per root-int/1 tool invocation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct IntegrationToolCall {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub integration_id: Option<Uuid>,
    pub integration_name: String,
    pub tool_name: String,
    pub principal_id: Option<Uuid>,
    pub duration_ms: i64,
    pub success: bool,
    pub error: Option<String>,
    pub created_at: Ts,
}

impl IntegrationToolCall {
    /// index `(tenant_id, created_at)`
    pub const CREATED_AT_IDX: &'static str = "integration_tool_calls_tenant_id_created_at_idx";
}

impl Record for IntegrationToolCall {
    const DEF: TableDef = TableDef {
        name: "integration_tool_calls",
        scope: Scope::Tenant,
        pkey: "integration_tool_calls_pkey",
        indexes: &[IndexDef::secondary(IntegrationToolCall::CREATED_AT_IDX)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().ts(self.created_at))]
    }
}

/// `slack_logs` — Slack API traffic (outbound posts, their status).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct SlackLog {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub direction: Direction,
    pub method: String,
    pub channel_id: Option<String>,
    pub user_id: Option<String>,
    pub thread_ts: Option<String>,
    pub message_ts: Option<String>,
    pub text: Option<String>,
    pub status: String,
    pub error: Option<String>,
    pub metadata: Json,
    pub created_at: Ts,
}

impl SlackLog {
    /// index `(tenant_id, created_at)`
    pub const CREATED_AT_IDX: &'static str = "slack_logs_tenant_id_created_at_idx";
}

impl Record for SlackLog {
    const DEF: TableDef = TableDef {
        name: "slack_logs",
        scope: Scope::Tenant,
        pkey: "slack_logs_pkey",
        indexes: &[IndexDef::secondary(SlackLog::CREATED_AT_IDX)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().ts(self.created_at))]
    }
}

/// `email_logs` — email traffic.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmailLog {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub direction: Direction,
    pub to_email: String,
    pub cc_emails: Vec<String>,
    pub subject: Option<String>,
    pub body_text: Option<String>,
    pub message_id: Option<String>,
    pub status: String,
    pub error: Option<String>,
    pub metadata: Json,
    pub created_at: Ts,
}

impl Default for EmailLog {
    /// Spec defaults: `direction='outbound'`, `status='sent'`.
    fn default() -> Self {
        EmailLog {
            id: Uuid::nil(),
            tenant_id: Uuid::nil(),
            direction: Direction::Outbound,
            to_email: String::new(),
            cc_emails: Vec::new(),
            subject: None,
            body_text: None,
            message_id: None,
            status: "sent".into(),
            error: None,
            metadata: Json::empty_object(),
            created_at: Ts::default(),
        }
    }
}

impl EmailLog {
    /// index `(tenant_id, created_at)`
    pub const CREATED_AT_IDX: &'static str = "email_logs_tenant_id_created_at_idx";
}

impl Record for EmailLog {
    const DEF: TableDef = TableDef {
        name: "email_logs",
        scope: Scope::Tenant,
        pkey: "email_logs_pkey",
        indexes: &[IndexDef::secondary(EmailLog::CREATED_AT_IDX)],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().ts(self.created_at))]
    }
}

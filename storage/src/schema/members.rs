//! §2.4 Member features: preferences, follow-ups, action alerts, human
//! interventions, delegations, private KB links, work-saved estimates and
//! reply attribution.
//!
//! `member_id` is the member's `principals.id`; deleting a principal deletes
//! the member's preferences, follow-ups, alerts and delegations.

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::{lower, tenant_row};
use crate::codec::{Json, Ts};
use crate::enums::*;
use crate::error::{StorageError, StorageResult};
use crate::key::{Key, key};
use crate::table::{FkDef, IndexDef, OnDelete, Record, Scope, TableDef};

const fn member_fk(name: &'static str) -> FkDef {
    FkDef {
        name,
        parent: "principals",
        on_delete: OnDelete::Cascade,
    }
}

/// `member_preferences` — durable per-member preferences.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct MemberPreference {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub member_id: Uuid,
    pub instructions: String,
    pub preference_type: PreferenceType,
    pub trigger_phrase: Option<String>,
    pub canonical_value: Option<String>,
    pub channel_scope: ChannelScope,
    pub active: bool,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl MemberPreference {
    /// index `(tenant_id, member_id)`
    pub const MEMBER_IDX: &'static str = "member_preferences_tenant_id_member_id_idx";
    /// FK `member_id → principals ON DELETE CASCADE`
    pub const MEMBER_FKEY: &'static str = "member_preferences_member_id_fkey";
}

impl Record for MemberPreference {
    const DEF: TableDef = TableDef {
        name: "member_preferences",
        scope: Scope::Tenant,
        pkey: "member_preferences_pkey",
        indexes: &[IndexDef::secondary(MemberPreference::MEMBER_IDX)],
        fks: &[member_fk(MemberPreference::MEMBER_FKEY)],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.member_id))]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.member_id))]
    }
}

/// `follow_ups` — scheduled agent work for a member.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct FollowUp {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub member_id: Uuid,
    pub instruction: String,
    pub schedule_type: ScheduleType,
    pub next_run_at: Option<Ts>,
    pub recurrence_spec: Option<Json>,
    pub status: FollowUpStatus,
    pub capability_snapshot: Json,
    /// Where the result is delivered (the creator's private DM), recorded at creation.
    pub delivery: Json,
    pub last_run_at: Option<Ts>,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl FollowUp {
    /// index `(tenant_id, member_id)`
    pub const MEMBER_IDX: &'static str = "follow_ups_tenant_id_member_id_idx";
    /// platform-wide partial index `(next_run_at) WHERE status='active'` for the sweep.
    pub const DUE_IDX: &'static str = "follow_ups_due_idx";
    /// platform-wide partial index `(updated_at) WHERE status='processing'`:
    /// the sweep's claims by claim time, so a claim whose run died (a crash
    /// mid-run) is found once its lease is over.
    pub const PROCESSING_IDX: &'static str = "follow_ups_processing_idx";
    /// FK `member_id → principals ON DELETE CASCADE`
    pub const MEMBER_FKEY: &'static str = "follow_ups_member_id_fkey";
}

impl Record for FollowUp {
    const DEF: TableDef = TableDef {
        name: "follow_ups",
        scope: Scope::Tenant,
        pkey: "follow_ups_pkey",
        indexes: &[
            IndexDef::secondary(FollowUp::MEMBER_IDX),
            IndexDef::global_secondary(FollowUp::DUE_IDX),
            IndexDef::global_secondary(FollowUp::PROCESSING_IDX),
        ],
        fks: &[member_fk(FollowUp::MEMBER_FKEY)],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        let due = match (self.status, self.next_run_at) {
            (FollowUpStatus::Active, Some(at)) => Some(key().ts(at)),
            _ => None,
        };
        let claimed =
            (self.status == FollowUpStatus::Processing).then(|| key().ts(self.updated_at));
        vec![Some(key().uuid(self.member_id)), due, claimed]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.member_id))]
    }
}

/// `follow_up_runs` — one execution of a follow-up.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct FollowUpRun {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub follow_up_id: Uuid,
    pub status: FollowUpRunStatus,
    pub tool_calls: Json,
    pub missing_capabilities: Json,
    pub response_text: Option<String>,
    pub error: Option<String>,
    pub started_at: Ts,
    pub finished_at: Option<Ts>,
}

impl FollowUpRun {
    /// index `(tenant_id, follow_up_id, started_at)`
    pub const FOLLOW_UP_IDX: &'static str = "follow_up_runs_follow_up_id_idx";
    /// FK `follow_up_id → follow_ups ON DELETE CASCADE`
    pub const FOLLOW_UP_FKEY: &'static str = "follow_up_runs_follow_up_id_fkey";
}

impl Record for FollowUpRun {
    const DEF: TableDef = TableDef {
        name: "follow_up_runs",
        scope: Scope::Tenant,
        pkey: "follow_up_runs_pkey",
        indexes: &[IndexDef::secondary(FollowUpRun::FOLLOW_UP_IDX)],
        fks: &[FkDef {
            name: FollowUpRun::FOLLOW_UP_FKEY,
            parent: "follow_ups",
            on_delete: OnDelete::Cascade,
        }],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.follow_up_id).ts(self.started_at))]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.follow_up_id))]
    }
}

/// `root_action_alerts` — "tell me when the agent calls tool X".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct RootActionAlert {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub member_id: Uuid,
    pub instruction: String,
    pub watch_tool_names: Vec<String>,
    pub notify_slack_id: Option<String>,
    /// Free text in the spec (`DEFAULT 'active'`).
    pub status: String,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl RootActionAlert {
    /// index `(tenant_id, member_id)`
    pub const MEMBER_IDX: &'static str = "root_action_alerts_tenant_id_member_id_idx";
    /// index `(tenant_id, status)` — the evaluator reads active alerts.
    pub const STATUS_IDX: &'static str = "root_action_alerts_tenant_id_status_idx";
    /// FK `member_id → principals ON DELETE CASCADE`
    pub const MEMBER_FKEY: &'static str = "root_action_alerts_member_id_fkey";
}

impl Record for RootActionAlert {
    const DEF: TableDef = TableDef {
        name: "root_action_alerts",
        scope: Scope::Tenant,
        pkey: "root_action_alerts_pkey",
        indexes: &[
            IndexDef::secondary(RootActionAlert::MEMBER_IDX),
            IndexDef::secondary(RootActionAlert::STATUS_IDX),
        ],
        fks: &[member_fk(RootActionAlert::MEMBER_FKEY)],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().uuid(self.member_id)),
            Some(key().str(&self.status)),
        ]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.member_id))]
    }
}

/// `root_action_alert_triggers` — one firing of an alert.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct RootActionAlertTrigger {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub alert_id: Uuid,
    pub matched_tools: Vec<String>,
    pub delivered: bool,
    pub run_id: Option<Uuid>,
    pub created_at: Ts,
}

impl RootActionAlertTrigger {
    /// index `(tenant_id, alert_id, created_at)`
    pub const ALERT_IDX: &'static str = "root_action_alert_triggers_alert_id_idx";
    /// FK `alert_id → root_action_alerts ON DELETE CASCADE`
    pub const ALERT_FKEY: &'static str = "root_action_alert_triggers_alert_id_fkey";
}

impl Record for RootActionAlertTrigger {
    const DEF: TableDef = TableDef {
        name: "root_action_alert_triggers",
        scope: Scope::Tenant,
        pkey: "root_action_alert_triggers_pkey",
        indexes: &[IndexDef::secondary(RootActionAlertTrigger::ALERT_IDX)],
        fks: &[FkDef {
            name: RootActionAlertTrigger::ALERT_FKEY,
            parent: "root_action_alerts",
            on_delete: OnDelete::Cascade,
        }],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.alert_id).ts(self.created_at))]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.alert_id))]
    }
}

/// `human_interventions` — requests, escalations, missing tools, failures, mistake reports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct HumanIntervention {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub principal_id: Option<Uuid>,
    pub channel: Channel,
    pub category: InterventionCategory,
    pub status: InterventionStatus,
    pub title: String,
    pub details: Option<String>,
    pub metadata: Json,
    pub created_at: Ts,
    pub updated_at: Ts,
}

impl HumanIntervention {
    /// index `(tenant_id, created_at)`
    pub const CREATED_AT_IDX: &'static str = "human_interventions_tenant_id_created_at_idx";
    /// index `(tenant_id, principal_id, created_at)`
    pub const PRINCIPAL_IDX: &'static str = "human_interventions_principal_id_idx";
    /// FK `principal_id → principals ON DELETE SET NULL`
    pub const PRINCIPAL_FKEY: &'static str = "human_interventions_principal_id_fkey";
}

impl Record for HumanIntervention {
    const DEF: TableDef = TableDef {
        name: "human_interventions",
        scope: Scope::Tenant,
        pkey: "human_interventions_pkey",
        indexes: &[
            IndexDef::secondary(HumanIntervention::CREATED_AT_IDX),
            IndexDef::secondary(HumanIntervention::PRINCIPAL_IDX),
        ],
        fks: &[FkDef {
            name: HumanIntervention::PRINCIPAL_FKEY,
            parent: "principals",
            on_delete: OnDelete::SetNull,
        }],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().ts(self.created_at)),
            self.principal_id.map(|p| key().uuid(p).ts(self.created_at)),
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

/// `email_delegations` — a person who may act for a principal over email.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct EmailDelegation {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub delegate_email: String,
    pub principal_id: Uuid,
    pub created_at: Ts,
}

impl EmailDelegation {
    /// `UNIQUE (tenant_id, delegate_email, principal_id)`
    pub const DELEGATE_KEY: &'static str =
        "email_delegations_tenant_id_delegate_email_principal_id_key";
    /// FK `principal_id → principals ON DELETE CASCADE`
    pub const PRINCIPAL_FKEY: &'static str = "email_delegations_principal_id_fkey";
}

impl Record for EmailDelegation {
    const DEF: TableDef = TableDef {
        name: "email_delegations",
        scope: Scope::Tenant,
        pkey: "email_delegations_pkey",
        indexes: &[IndexDef::unique(EmailDelegation::DELEGATE_KEY)],
        fks: &[member_fk(EmailDelegation::PRINCIPAL_FKEY)],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(
            key()
                .str(&lower(&self.delegate_email))
                .uuid(self.principal_id),
        )]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().uuid(self.principal_id))]
    }
}

/// `web_link_tokens` — principal-bound private KB links (§10.5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct WebLinkToken {
    pub id: Uuid,
    pub tenant_id: Uuid,
    /// SHA-256 hex of the token in the URL.
    pub token_hash: String,
    pub knowledge_page_id: Uuid,
    pub principal_id: Uuid,
    /// Bound on first open (`web_browser_sessions.id`).
    pub browser_session_id: Option<Uuid>,
    pub expires_at: Ts,
    pub created_at: Ts,
    pub last_used_at: Option<Ts>,
}

impl WebLinkToken {
    /// `UNIQUE (tenant_id, token_hash)`
    pub const TOKEN_KEY: &'static str = "web_link_tokens_tenant_id_token_hash_key";
    /// FK `knowledge_page_id → knowledge_pages ON DELETE CASCADE`
    pub const PAGE_FKEY: &'static str = "web_link_tokens_knowledge_page_id_fkey";
    /// FK `principal_id → principals ON DELETE CASCADE`
    pub const PRINCIPAL_FKEY: &'static str = "web_link_tokens_principal_id_fkey";
}

impl Record for WebLinkToken {
    const DEF: TableDef = TableDef {
        name: "web_link_tokens",
        scope: Scope::Tenant,
        pkey: "web_link_tokens_pkey",
        indexes: &[IndexDef::unique(WebLinkToken::TOKEN_KEY)],
        fks: &[
            FkDef {
                name: WebLinkToken::PAGE_FKEY,
                parent: "knowledge_pages",
                on_delete: OnDelete::Cascade,
            },
            member_fk(WebLinkToken::PRINCIPAL_FKEY),
        ],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["token_hash"];
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.token_hash))]
    }
    fn fk_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().uuid(self.knowledge_page_id)),
            Some(key().uuid(self.principal_id)),
        ]
    }
}

/// `web_browser_sessions` — the browser a private link was first opened in.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct WebBrowserSession {
    pub id: Uuid,
    pub tenant_id: Uuid,
    /// SHA-256 hex of the cookie value.
    pub session_hash: String,
    pub principal_id: Option<Uuid>,
    pub expires_at: Ts,
    pub created_at: Ts,
}

impl WebBrowserSession {
    /// `UNIQUE (tenant_id, session_hash)`
    pub const SESSION_KEY: &'static str = "web_browser_sessions_tenant_id_session_hash_key";
}

impl Record for WebBrowserSession {
    const DEF: TableDef = TableDef {
        name: "web_browser_sessions",
        scope: Scope::Tenant,
        pkey: "web_browser_sessions_pkey",
        indexes: &[IndexDef::unique(WebBrowserSession::SESSION_KEY)],
        fks: &[],
    };
    const SECRET_COLUMNS: &'static [&'static str] = &["session_hash"];
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![Some(key().str(&self.session_hash))]
    }
}

/// `conversation_work_saved` — LLM estimate of human minutes saved per exchange.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ConversationWorkSaved {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub exchange_key: String,
    pub principal_id: Option<Uuid>,
    /// CHECK 0–480.
    pub estimated_minutes: i32,
    /// CHECK 0–1.
    pub confidence: f64,
    pub rationale: Option<String>,
    pub model: Option<String>,
    pub created_at: Ts,
}

impl ConversationWorkSaved {
    /// `UNIQUE (tenant_id, exchange_key)`
    pub const EXCHANGE_KEY: &'static str = "conversation_work_saved_tenant_id_exchange_key_key";
    /// index `(tenant_id, created_at)`
    pub const CREATED_AT_IDX: &'static str = "conversation_work_saved_tenant_id_created_at_idx";
}

impl Record for ConversationWorkSaved {
    const DEF: TableDef = TableDef {
        name: "conversation_work_saved",
        scope: Scope::Tenant,
        pkey: "conversation_work_saved_pkey",
        indexes: &[
            IndexDef::unique(ConversationWorkSaved::EXCHANGE_KEY),
            IndexDef::secondary(ConversationWorkSaved::CREATED_AT_IDX),
        ],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(key().str(&self.exchange_key)),
            Some(key().ts(self.created_at)),
        ]
    }
    fn check(&self) -> StorageResult<()> {
        if !(0..=480).contains(&self.estimated_minutes) {
            return Err(StorageError::Check {
                column: "conversation_work_saved.estimated_minutes",
                message: format!("{} is outside 0–480", self.estimated_minutes),
            });
        }
        if !(0.0..=1.0).contains(&self.confidence) {
            return Err(StorageError::Check {
                column: "conversation_work_saved.confidence",
                message: format!("{} is outside 0–1", self.confidence),
            });
        }
        Ok(())
    }
}

/// `reply_mentions` — who the agent cited in replies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ReplyMention {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub conversation_log_id: Option<Uuid>,
    pub exchange_key: Option<String>,
    pub mentioned_principal_id: Option<Uuid>,
    pub mentioned_slack_user_id: Option<String>,
    pub mentioned_name: Option<String>,
    pub matched_via: MatchedVia,
    pub content_sourced: bool,
    pub message_at: Ts,
    pub created_at: Ts,
}

impl ReplyMention {
    /// index `(tenant_id, message_at)`
    pub const MESSAGE_AT_IDX: &'static str = "reply_mentions_tenant_id_message_at_idx";
    /// index `(tenant_id, mentioned_principal_id, message_at)`
    pub const PRINCIPAL_IDX: &'static str = "reply_mentions_mentioned_principal_id_idx";
    /// unique partial `(tenant_id, conversation_log_id, mentioned_slack_user_id|name)` — re-scans are idempotent.
    pub const LOG_MENTION_KEY: &'static str = "reply_mentions_log_mention_key";
}

impl Record for ReplyMention {
    const DEF: TableDef = TableDef {
        name: "reply_mentions",
        scope: Scope::Tenant,
        pkey: "reply_mentions_pkey",
        indexes: &[
            IndexDef::secondary(ReplyMention::MESSAGE_AT_IDX),
            IndexDef::secondary(ReplyMention::PRINCIPAL_IDX),
            IndexDef::unique(ReplyMention::LOG_MENTION_KEY),
        ],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        let who = self
            .mentioned_slack_user_id
            .clone()
            .or_else(|| self.mentioned_name.as_deref().map(lower));
        vec![
            Some(key().ts(self.message_at)),
            self.mentioned_principal_id
                .map(|p| key().uuid(p).ts(self.message_at)),
            match (self.conversation_log_id, who) {
                (Some(log), Some(who)) => Some(key().uuid(log).str(&who)),
                _ => None,
            },
        ]
    }
}

/// `reply_source_usage` — which sources a reply used (refs only, never content).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct ReplySourceUsage {
    pub id: Uuid,
    pub tenant_id: Uuid,
    pub run_id: Uuid,
    pub source_type: SourceUsageType,
    /// `channel:ts` or a page slug.
    pub source_ref: String,
    pub created_at: Ts,
}

impl ReplySourceUsage {
    /// `UNIQUE (tenant_id, run_id, source_type, source_ref)`
    pub const RUN_SOURCE_KEY: &'static str =
        "reply_source_usage_tenant_id_run_id_source_type_source_ref_key";
    /// index `(tenant_id, source_type, source_ref)`
    pub const SOURCE_IDX: &'static str = "reply_source_usage_source_idx";
}

impl Record for ReplySourceUsage {
    const DEF: TableDef = TableDef {
        name: "reply_source_usage",
        scope: Scope::Tenant,
        pkey: "reply_source_usage_pkey",
        indexes: &[
            IndexDef::unique(ReplySourceUsage::RUN_SOURCE_KEY),
            IndexDef::secondary(ReplySourceUsage::SOURCE_IDX),
        ],
        fks: &[],
    };
    tenant_row!();
    fn index_keys(&self) -> Vec<Option<Key>> {
        vec![
            Some(
                key()
                    .uuid(self.run_id)
                    .str(self.source_type.as_str())
                    .str(&self.source_ref),
            ),
            Some(key().str(self.source_type.as_str()).str(&self.source_ref)),
        ]
    }
}

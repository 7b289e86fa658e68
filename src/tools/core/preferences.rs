//! Preference tools (§5.1): `remember_user_preference`,
//! `list_user_preferences`, `forget_user_preference` over
//! `member_preferences`, and `set_dm_reply_style` /
//! `set_auto_reply_preference` stored in `principals.preferences`. Every one
//! needs a resolved member (a principal row) and touches only that member's
//! rows.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{ChannelScope, MemberPreference, PreferenceType, Principal, Scan, Store, key};
use uuid::Uuid;

use crate::agent::ToolResult;
use crate::platform::tool_names as names;
use crate::tools::spec::{TurnContext, TypedTool, internal_failure};

/// `list_user_preferences` returns at most this many (§5.1).
pub const LIST_PREFERENCES_LIMIT: usize = 500;

const NEEDS_MEMBER: &str = "Preferences can only be saved for a recognized community member.";

fn storage_failed(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "The preference could not be saved right now.", e)
}

/// `preference_type` as the model sends it.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PreferenceKind {
    /// A nickname or alias for someone or something.
    NicknameAlias,
    /// How replies are formatted.
    Formatting,
    /// Tone of replies.
    Tone,
    /// How a task should be done.
    Workflow,
    /// What to call things.
    Naming,
    /// Anything else.
    Custom,
}

impl From<PreferenceKind> for PreferenceType {
    fn from(k: PreferenceKind) -> Self {
        match k {
            PreferenceKind::NicknameAlias => PreferenceType::NicknameAlias,
            PreferenceKind::Formatting => PreferenceType::Formatting,
            PreferenceKind::Tone => PreferenceType::Tone,
            PreferenceKind::Workflow => PreferenceType::Workflow,
            PreferenceKind::Naming => PreferenceType::Naming,
            PreferenceKind::Custom => PreferenceType::Custom,
        }
    }
}

/// `channel_scope` as the model sends it.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every channel.
    All,
    /// Slack only.
    Slack,
    /// Email only.
    Email,
}

impl From<Scope> for ChannelScope {
    fn from(s: Scope) -> Self {
        match s {
            Scope::All => ChannelScope::All,
            Scope::Slack => ChannelScope::Slack,
            Scope::Email => ChannelScope::Email,
        }
    }
}

/// `remember_user_preference(instructions, preference_type?, trigger_phrase?, canonical_value?, channel_scope?)`.
pub struct RememberUserPreference;

/// Arguments of `remember_user_preference`.
#[derive(Deserialize, JsonSchema)]
pub struct RememberArgs {
    /// The preference in the member's words, as an instruction to follow.
    pub instructions: String,
    /// Kind of preference (default custom).
    pub preference_type: Option<PreferenceKind>,
    /// Phrase that triggers it, e.g. a nickname.
    pub trigger_phrase: Option<String>,
    /// What the trigger stands for.
    pub canonical_value: Option<String>,
    /// Where it applies (default all).
    pub channel_scope: Option<Scope>,
}

#[async_trait]
impl TypedTool for RememberUserPreference {
    type Args = RememberArgs;
    fn name(&self) -> &'static str {
        names::REMEMBER_USER_PREFERENCE
    }
    fn description(&self) -> &'static str {
        "Remember a lasting preference of this member (formatting, tone, nicknames, workflows)."
    }
    async fn run(&self, a: RememberArgs, ctx: &TurnContext) -> ToolResult {
        let Some(member) = ctx.principal.id else {
            return ToolResult::failed(NEEDS_MEMBER);
        };
        if a.instructions.trim().is_empty() {
            return ToolResult::failed("A preference needs instructions.");
        }
        let now = ctx.services.clock.now();
        let row = MemberPreference {
            id: Uuid::new_v4(),
            tenant_id: ctx.tenant_id,
            member_id: member,
            instructions: a.instructions.trim().to_string(),
            preference_type: a.preference_type.unwrap_or(PreferenceKind::Custom).into(),
            trigger_phrase: a.trigger_phrase,
            canonical_value: a.canonical_value,
            channel_scope: a.channel_scope.unwrap_or(Scope::All).into(),
            active: true,
            created_at: now,
            updated_at: now,
        };
        match ctx.services.store.insert(row).await {
            Ok(row) => ToolResult::ok(json!({
                "preference_id": row.id,
                "instructions": row.instructions,
                "preference_type": row.preference_type.as_str(),
                "channel_scope": row.channel_scope.as_str(),
            })),
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

/// `list_user_preferences()`.
pub struct ListUserPreferences;

/// Arguments of `list_user_preferences` (none).
#[derive(Deserialize, JsonSchema)]
pub struct NoArgs {}

#[async_trait]
impl TypedTool for ListUserPreferences {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::LIST_USER_PREFERENCES
    }
    fn description(&self) -> &'static str {
        "List this member's active saved preferences."
    }
    async fn run(&self, _args: NoArgs, ctx: &TurnContext) -> ToolResult {
        let Some(member) = ctx.principal.id else {
            return ToolResult::ok(json!({"preferences": [], "count": 0}));
        };
        let rows: Result<Vec<MemberPreference>, _> = ctx
            .services
            .store
            .scan(
                Some(ctx.tenant_id),
                Scan::index(MemberPreference::MEMBER_IDX, key().uuid(member)),
            )
            .await;
        match rows {
            Ok(rows) => {
                let list: Vec<Value> = rows
                    .into_iter()
                    .filter(|p| p.active)
                    .take(LIST_PREFERENCES_LIMIT)
                    .map(|p| {
                        json!({
                            "preference_id": p.id,
                            "instructions": p.instructions,
                            "preference_type": p.preference_type.as_str(),
                            "trigger_phrase": p.trigger_phrase,
                            "canonical_value": p.canonical_value,
                            "channel_scope": p.channel_scope.as_str(),
                        })
                    })
                    .collect();
                let count = list.len();
                ToolResult::ok(json!({"preferences": list, "count": count}))
            }
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

/// `forget_user_preference(preference_id)`.
pub struct ForgetUserPreference;

/// Arguments of `forget_user_preference`.
#[derive(Deserialize, JsonSchema)]
pub struct ForgetArgs {
    /// Id from `list_user_preferences` (never guessed).
    pub preference_id: Uuid,
}

#[async_trait]
impl TypedTool for ForgetUserPreference {
    type Args = ForgetArgs;
    fn name(&self) -> &'static str {
        names::FORGET_USER_PREFERENCE
    }
    fn description(&self) -> &'static str {
        "Stop applying one of this member's saved preferences."
    }
    async fn run(&self, a: ForgetArgs, ctx: &TurnContext) -> ToolResult {
        let store = &ctx.services.store;
        let found: Option<MemberPreference> = match store
            .get(Some(ctx.tenant_id), key().uuid(a.preference_id))
            .await
        {
            Ok(r) => r,
            Err(e) => return storage_failed(self.name(), e),
        };
        let Some(mut row) = found.filter(|p| Some(p.member_id) == ctx.principal.id && p.active)
        else {
            return ToolResult::failed("No such active preference of yours was found.");
        };
        // Deactivated, not deleted (§5.1).
        row.active = false;
        row.updated_at = ctx.services.clock.now();
        match store.update(row).await {
            Ok(row) => ToolResult::ok(json!({"preference_id": row.id, "active": false})),
            Err(e) => storage_failed(self.name(), e),
        }
    }
}

/// Write `field = value` into the caller's `principals.preferences`.
async fn set_principal_preference(
    tool: &str,
    ctx: &TurnContext,
    field: &str,
    value: &str,
) -> ToolResult {
    let Some(id) = ctx.principal.id else {
        return ToolResult::failed(NEEDS_MEMBER);
    };
    let store = &ctx.services.store;
    let found: Option<Principal> = match store.get(Some(ctx.tenant_id), key().uuid(id)).await {
        Ok(p) => p,
        Err(e) => return storage_failed(tool, e),
    };
    let Some(mut p) = found else {
        return ToolResult::failed(NEEDS_MEMBER);
    };
    if !p.preferences.0.is_object() {
        p.preferences.0 = json!({});
    }
    p.preferences.0[field] = json!(value);
    p.updated_at = ctx.services.clock.now();
    match store.update(p).await {
        Ok(_) => ToolResult::ok(json!({field: value})),
        Err(e) => storage_failed(tool, e),
    }
}

/// `set_dm_reply_style(style ∈ direct|thread)`.
pub struct SetDmReplyStyle;

/// DM reply style.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum DmReplyStyle {
    /// Reply in the DM itself.
    Direct,
    /// Reply in a thread under the member's message.
    Thread,
}

/// Arguments of `set_dm_reply_style`.
#[derive(Deserialize, JsonSchema)]
pub struct DmStyleArgs {
    /// direct or thread.
    pub style: DmReplyStyle,
}

#[async_trait]
impl TypedTool for SetDmReplyStyle {
    type Args = DmStyleArgs;
    fn name(&self) -> &'static str {
        names::SET_DM_REPLY_STYLE
    }
    fn description(&self) -> &'static str {
        "Set whether replies in this member's Slack DMs come directly or in a thread."
    }
    async fn run(&self, a: DmStyleArgs, ctx: &TurnContext) -> ToolResult {
        let v = match a.style {
            DmReplyStyle::Direct => "direct",
            DmReplyStyle::Thread => "thread",
        };
        set_principal_preference(self.name(), ctx, "dm_reply_style", v).await
    }
}

/// `set_auto_reply_preference(mode ∈ off|default|high|medium|low)`.
pub struct SetAutoReplyPreference;

/// Auto-reply mode.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AutoReplyMode {
    /// Never auto-reply to this member's channel messages.
    Off,
    /// The community's default.
    Default,
    /// Reply often.
    High,
    /// Reply sometimes.
    Medium,
    /// Reply rarely.
    Low,
}

/// Arguments of `set_auto_reply_preference`.
#[derive(Deserialize, JsonSchema)]
pub struct AutoReplyArgs {
    /// off, default, high, medium or low.
    pub mode: AutoReplyMode,
}

#[async_trait]
impl TypedTool for SetAutoReplyPreference {
    type Args = AutoReplyArgs;
    fn name(&self) -> &'static str {
        names::SET_AUTO_REPLY_PREFERENCE
    }
    fn description(&self) -> &'static str {
        "Set how eagerly the assistant auto-replies to this member's messages in Slack channels."
    }
    async fn run(&self, a: AutoReplyArgs, ctx: &TurnContext) -> ToolResult {
        let v = match a.mode {
            AutoReplyMode::Off => "off",
            AutoReplyMode::Default => "default",
            AutoReplyMode::High => "high",
            AutoReplyMode::Medium => "medium",
            AutoReplyMode::Low => "low",
        };
        set_principal_preference(self.name(), ctx, "auto_reply", v).await
    }
}

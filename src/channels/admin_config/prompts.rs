//! Prompt tools of the dashboard chat (§4.5, §5.1): list the prompt keys,
//! read one (built-in text, the community's addition, saved versions),
//! update the addition and reset it — through [`Prompts`]'s `list`,
//! `versions` and `save`, the service that keeps `root_prompt_versions`.
//!
//! A community never replaces a built-in text: what it writes is an
//! addition appended after it (§4.5). Resetting saves an empty addition —
//! the service's "clear" — so the reset is itself a version in the history.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{AdminConfig, broke, changed, cut};
use crate::agent::ToolResult;
use crate::platform::tool_names as names;
use crate::prompts::{PromptError, Prompts, template};
use crate::tools::{TurnContext, TypedTool};

/// Longest addition, in characters: it is sent with every turn that uses
/// the key, so a runaway paste would cost every member's answer.
pub const MAX_ADDITION_CHARS: usize = 8_000;
/// Saved versions `get_prompt` shows (newest first).
pub const VERSIONS_SHOWN: usize = 5;
/// Characters of each shown version.
const VERSION_PREVIEW_CHARS: usize = 300;

impl AdminConfig {
    fn prompts(&self) -> &Prompts {
        &self.inner.prompts
    }
}

/// A failed result for a refused or failed prompt call.
fn prompt_failed(tool: &str, e: PromptError) -> ToolResult {
    match e {
        PromptError::UnknownKey(k) => ToolResult::failed(format!(
            "There is no prompt with the key {k:?}; list the prompts for the right key."
        )),
        other => broke(tool, other),
    }
}

/// `list_prompts(group?)`.
pub struct ListPrompts(pub AdminConfig);

/// Arguments of `list_prompts`.
#[derive(Deserialize, JsonSchema)]
pub struct ListArgs {
    /// Only this group: `core`, `chat`, `email`, `audience`, `links` or `internal`.
    #[serde(default)]
    pub group: Option<String>,
}

#[async_trait]
impl TypedTool for ListPrompts {
    type Args = ListArgs;
    fn name(&self) -> &'static str {
        names::LIST_PROMPTS
    }
    fn description(&self) -> &'static str {
        "List the agent's prompt keys (group, where each is used, and whether this community \
         has added text to it)."
    }
    async fn run(&self, a: ListArgs, _ctx: &TurnContext) -> ToolResult {
        let views = match self.0.prompts().list().await {
            Ok(v) => v,
            Err(e) => return prompt_failed(self.name(), e),
        };
        let group = a.group.as_deref().map(str::trim).filter(|g| !g.is_empty());
        let list: Vec<Value> = views
            .iter()
            .filter(|v| group.is_none_or(|g| v.template.group.as_str() == g))
            .map(|v| {
                let addition = v.addition.as_ref().filter(|r| !r.content.trim().is_empty());
                json!({
                    "key": v.template.key,
                    "group": v.template.group.as_str(),
                    "used_for": v.template.description,
                    "has_addition": addition.is_some(),
                    "updated_at": addition.map(|r| r.updated_at),
                })
            })
            .collect();
        ToolResult::ok(json!({"prompts": list, "count": list.len()}))
    }
}

/// `get_prompt(key)`.
pub struct GetPrompt(pub AdminConfig);

/// Arguments naming one prompt.
#[derive(Deserialize, JsonSchema)]
pub struct KeyArgs {
    /// The prompt key (from `list_prompts`, e.g. `slack.identity_addendum`).
    pub key: String,
}

#[async_trait]
impl TypedTool for GetPrompt {
    type Args = KeyArgs;
    fn name(&self) -> &'static str {
        names::GET_PROMPT
    }
    fn description(&self) -> &'static str {
        "Read one prompt: its built-in text, this community's addition (appended after the \
         built-in text) and the latest saved versions."
    }
    async fn run(&self, a: KeyArgs, _ctx: &TurnContext) -> ToolResult {
        let key = a.key.trim();
        let t = match template(key) {
            Ok(t) => t,
            Err(e) => return prompt_failed(self.name(), e),
        };
        let prompts = self.0.prompts();
        let (views, versions) = match (prompts.list().await, prompts.versions(t.key).await) {
            (Ok(l), Ok(v)) => (l, v),
            (Err(e), _) | (_, Err(e)) => return prompt_failed(self.name(), e),
        };
        let addition = views
            .into_iter()
            .find(|v| v.template.key == t.key)
            .and_then(|v| v.addition)
            .map(|r| r.content)
            .filter(|c| !c.trim().is_empty());
        let shown: Vec<Value> = versions
            .iter()
            .take(VERSIONS_SHOWN)
            .map(|v| {
                let (content, truncated) = cut(&v.content, VERSION_PREVIEW_CHARS);
                json!({
                    "saved_at": v.saved_at,
                    "saved_by": v.saved_by,
                    "content": content,
                    "content_truncated": truncated,
                    "reset": v.content.trim().is_empty(),
                })
            })
            .collect();
        ToolResult::ok(json!({
            "key": t.key,
            "group": t.group.as_str(),
            "used_for": t.description,
            "built_in_text": t.default_text,
            "addition": addition,
            "versions": shown,
            "version_count": versions.len(),
        }))
    }
}

/// `update_prompt(key, addition)`.
pub struct UpdatePrompt(pub AdminConfig);

/// Arguments of `update_prompt`.
#[derive(Deserialize, JsonSchema)]
pub struct UpdateArgs {
    /// The prompt key (from `list_prompts`).
    pub key: String,
    /// The community's whole addition: it replaces the previous addition
    /// and is appended after the built-in text, which always stays.
    pub addition: String,
}

#[async_trait]
impl TypedTool for UpdatePrompt {
    type Args = UpdateArgs;
    fn name(&self) -> &'static str {
        names::UPDATE_PROMPT
    }
    fn description(&self) -> &'static str {
        "Set this community's addition to a prompt (appended after the built-in text, which \
         cannot be replaced). The previous addition is kept as a version. Takes effect within \
         a minute."
    }
    async fn run(&self, a: UpdateArgs, ctx: &TurnContext) -> ToolResult {
        let addition = a.addition.trim();
        if addition.is_empty() {
            return ToolResult::failed(
                "The addition is empty; to remove the community's addition use reset_prompt.",
            );
        }
        if addition.chars().count() > MAX_ADDITION_CHARS {
            return ToolResult::failed(format!(
                "The addition is too long: at most {MAX_ADDITION_CHARS} characters."
            ));
        }
        let who = super::actor(ctx);
        match self
            .0
            .prompts()
            .save(a.key.trim(), addition, Some(&who))
            .await
        {
            Ok(row) => {
                changed(
                    ctx,
                    self.name(),
                    &format!("prompt {} addition saved", row.key),
                );
                ToolResult::ok(json!({
                    "key": row.key,
                    "addition": row.content,
                    "saved_at": row.updated_at,
                    "note": "Appended after the built-in text; in effect within a minute.",
                }))
            }
            Err(e) => prompt_failed(self.name(), e),
        }
    }
}

/// `reset_prompt(key)`.
pub struct ResetPrompt(pub AdminConfig);

#[async_trait]
impl TypedTool for ResetPrompt {
    type Args = KeyArgs;
    fn name(&self) -> &'static str {
        names::RESET_PROMPT
    }
    fn description(&self) -> &'static str {
        "Remove this community's addition to a prompt, so only the built-in text is used. \
         The removed addition stays in the version history."
    }
    async fn run(&self, a: KeyArgs, ctx: &TurnContext) -> ToolResult {
        let key = a.key.trim();
        let prompts = self.0.prompts();
        let current = match prompts.list().await {
            Ok(views) => views
                .into_iter()
                .find(|v| v.template.key == key)
                .map(|v| v.addition.is_some_and(|r| !r.content.trim().is_empty())),
            Err(e) => return prompt_failed(self.name(), e),
        };
        match current {
            None => prompt_failed(self.name(), PromptError::UnknownKey(key.to_string())),
            // Nothing to clear: no version row for a no-op.
            Some(false) => ToolResult::ok(json!({
                "key": key,
                "reset": false,
                "note": "This prompt had no addition; it already uses only the built-in text.",
            })),
            Some(true) => {
                let who = super::actor(ctx);
                match prompts.save(key, "", Some(&who)).await {
                    Ok(row) => {
                        changed(
                            ctx,
                            self.name(),
                            &format!("prompt {} addition cleared", row.key),
                        );
                        ToolResult::ok(json!({
                            "key": row.key,
                            "reset": true,
                            "note": "Only the built-in text is used now (within a minute).",
                        }))
                    }
                    Err(e) => prompt_failed(self.name(), e),
                }
            }
        }
    }
}

//! The dashboard admin config tools (§5.1): what an owner or admin may
//! change by asking the agent on the dashboard's `/chat` — knowledge pages
//! and sources, prompt additions, the intervention queue — and the
//! integrations they may look at.
//!
//! Why here, in the channel layer, and not in `tools/core/`: the knowledge
//! sources service (`knowledge`) sits beside `tools` in layer 6, so a tool
//! handler there could not call it. The handlers live above both, hold the
//! services they need ([`AdminConfig`], wired once in `AppState::new`),
//! and reach a turn as extra [`CoreTools`] — added by `run_channel_turn`
//! only when the dashboard's `/chat` asked (`TurnRequest::dashboard_chat`),
//! while the gate (`allowed_tools`) admits their names only there. Each
//! handler calls the same service functions as the REST route over the
//! same rows, so a change made in chat is the change the API would make.
//!
//! Every change is logged at info (target `audit`) with the tenant, the
//! tool and who asked; results are short JSON for the model and failures
//! are failed results that say what to do, never a panic.

use std::sync::Arc;

use crate::agent::ToolResult;
use crate::integrations::Integrations;
use crate::knowledge::KnowledgeSync;
use crate::outbound::OutboundPolicy;
use crate::prompts::Prompts;
use crate::tools::spec::internal_failure;
use crate::tools::{CoreTool, CoreTools, TurnContext};

pub mod integrations;
pub mod interventions;
pub mod pages;
pub mod prompts;
pub mod sources;

/// The services the admin config tools call besides the turn's
/// `ToolServices` (store, search, clock). Cheap to clone.
#[derive(Clone)]
pub struct AdminConfig {
    inner: Arc<Inner>,
}

struct Inner {
    knowledge: KnowledgeSync,
    prompts: Prompts,
    integrations: Integrations,
    policy: OutboundPolicy,
}

impl AdminConfig {
    /// Over the app's knowledge sync, prompt and integration services; a
    /// source URL is checked against `policy`, as `POST /kb/sources` does.
    pub fn new(
        knowledge: KnowledgeSync,
        prompts: Prompts,
        integrations: Integrations,
        policy: OutboundPolicy,
    ) -> Self {
        AdminConfig {
            inner: Arc::new(Inner {
                knowledge,
                prompts,
                integrations,
                policy,
            }),
        }
    }

    /// Every admin config handler, in catalog order.
    pub fn handlers(&self) -> Vec<Arc<dyn CoreTool>> {
        vec![
            Arc::new(pages::ListKnowledgePages),
            Arc::new(pages::GetKnowledgePage),
            Arc::new(pages::UpsertKnowledgePage),
            Arc::new(pages::DeleteKnowledgePage),
            Arc::new(sources::ListKnowledgeSources(self.clone())),
            Arc::new(sources::CreateKnowledgeSource(self.clone())),
            Arc::new(sources::UpdateKnowledgeSource(self.clone())),
            Arc::new(sources::DeleteKnowledgeSource(self.clone())),
            Arc::new(sources::SyncKnowledgeSource(self.clone())),
            Arc::new(prompts::ListPrompts(self.clone())),
            Arc::new(prompts::GetPrompt(self.clone())),
            Arc::new(prompts::UpdatePrompt(self.clone())),
            Arc::new(prompts::ResetPrompt(self.clone())),
            Arc::new(interventions::ListInterventions),
            Arc::new(interventions::UpdateInterventionStatus),
            Arc::new(integrations::ListIntegrations(self.clone())),
        ]
    }

    /// `core` plus the admin config handlers (a dashboard chat's turn, and
    /// `GET /api/v1/tools`, which reports them as implemented).
    pub fn add_to(&self, core: CoreTools) -> CoreTools {
        core.with(self.handlers())
    }
}

/// Who asked: the dashboard user the chat runs as (their email identity:
/// the principal's address, else its `email:<addr>` ref).
pub(crate) fn actor(ctx: &TurnContext) -> String {
    ctx.principal
        .email
        .clone()
        .unwrap_or_else(|| ctx.principal.principal_ref.clone())
}

/// Log a change made through the chat (tenant, tool, who, what).
pub(crate) fn changed(ctx: &TurnContext, tool: &str, what: &str) {
    tracing::info!(
        target: "audit",
        event = "admin_config.changed",
        tenant = %ctx.tenant_id,
        tool,
        by = %actor(ctx),
        what,
        "dashboard chat changed the community's configuration"
    );
}

/// A failed result for a storage or service failure (details logged).
pub(crate) fn broke(tool: &str, e: impl std::fmt::Display) -> ToolResult {
    internal_failure(tool, "That could not be done right now; try again.", e)
}

/// The first `max` characters of `text`, and whether it was cut.
pub(crate) fn cut(text: &str, max: usize) -> (String, bool) {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(max).collect();
    (head, chars.next().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_keeps_whole_characters_and_says_when_it_cut() {
        assert_eq!(cut("héllo", 10), ("héllo".to_string(), false));
        assert_eq!(cut("héllo", 5), ("héllo".to_string(), false));
        assert_eq!(cut("héllo", 2), ("hé".to_string(), true));
    }
}

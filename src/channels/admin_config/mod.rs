//! The dashboard admin config tools (§5.1): what an owner or admin may
//! change by asking the agent on the dashboard's `/chat` — knowledge pages
//! and sources, prompt additions, the intervention queue, the dashboard
//! users and the access policy — and the integrations they may look at.
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
//! Who asked is the turn's dashboard user ([`TurnRequest::dashboard_user`]:
//! address, role, platform admin), bound per turn with
//! [`AdminConfig::for_caller`]; the team tools judge changes with that role
//! (`auth::team::may_manage`), the same rule as the `/team` page.
//!
//! Every change is logged at info (target `audit`) with the tenant, the
//! tool and who asked; results are short JSON for the model and failures
//! are failed results that say what to do, never a panic.
//!
//! [`TurnRequest::dashboard_user`]: crate::channels::TurnRequest::dashboard_user

use std::sync::Arc;

use crate::agent::ToolResult;
use crate::auth::DashboardAuth;
use crate::auth::team::TeamActor;
use crate::identity::Identity;
use crate::integrations::Integrations;
use crate::knowledge::KnowledgeSync;
use crate::outbound::OutboundPolicy;
use crate::platform::tenancy::TenantCache;
use crate::prompts::Prompts;
use crate::tools::spec::internal_failure;
use crate::tools::{CoreTool, CoreTools, TurnContext};

pub mod access;
pub mod integrations;
pub mod interventions;
pub mod pages;
pub mod prompts;
pub mod sources;
pub mod team;

/// The services the admin config tools call besides the turn's
/// `ToolServices` (store, search, clock). Cheap to clone.
#[derive(Clone)]
pub struct AdminConfig {
    inner: Arc<Inner>,
    /// The dashboard user the turn runs for (`None`: not known — the team
    /// tools then refuse).
    caller: Option<Arc<TeamActor>>,
}

/// The services besides the turn's.
pub struct AdminServices {
    /// Knowledge sources and sync.
    pub knowledge: KnowledgeSync,
    /// Prompt additions.
    pub prompts: Prompts,
    /// Registered integrations.
    pub integrations: Integrations,
    /// A source URL is checked against it, as `POST /kb/sources` does.
    pub policy: OutboundPolicy,
    /// Sign-in links for invited users.
    pub auth: DashboardAuth,
    /// Forgotten after an access policy change.
    pub tenants: TenantCache,
    /// Its cached channel trust is forgotten after an access policy change.
    pub identity: Identity,
}

struct Inner {
    knowledge: KnowledgeSync,
    prompts: Prompts,
    integrations: Integrations,
    policy: OutboundPolicy,
    auth: DashboardAuth,
    tenants: TenantCache,
    identity: Identity,
}

impl AdminConfig {
    /// Over the app's services (no caller bound yet).
    pub fn new(s: AdminServices) -> Self {
        AdminConfig {
            inner: Arc::new(Inner {
                knowledge: s.knowledge,
                prompts: s.prompts,
                integrations: s.integrations,
                policy: s.policy,
                auth: s.auth,
                tenants: s.tenants,
                identity: s.identity,
            }),
            caller: None,
        }
    }

    /// The same services for one turn asked by `caller`.
    pub fn for_caller(&self, caller: Option<TeamActor>) -> Self {
        AdminConfig {
            inner: self.inner.clone(),
            caller: caller.map(Arc::new),
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
            Arc::new(team::ListDashboardUsers(self.clone())),
            Arc::new(team::InviteDashboardUser(self.clone())),
            Arc::new(team::SetDashboardUserRole(self.clone())),
            Arc::new(team::RemoveDashboardUser(self.clone())),
            Arc::new(access::GetAccessPolicy),
            Arc::new(access::UpdateAccessPolicy(self.clone())),
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

//! Glue between the tool surface and root-int/1 (§7.5): the primed
//! integrations' tier declarations and effective tools feed the gating
//! function, and [`PrimedInvoker`] executes the integration tools a turn
//! was offered through the signed invoke — always on the integration the
//! gate admitted (the tool's source), re-checking that integration's own
//! audience rules before anything is sent.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::gating::{
    IntegrationToolOffer, TierDeclaration, audience, canonical_reserved_tier,
    integration_tool_allowed,
};
use super::spec::TurnContext;
use super::turn::IntegrationInvoker;
use crate::agent::ToolResult;
use crate::ai::chat::ToolDefinition;
use crate::integrations::client::{InvokePrincipal, InvokeRequest};
use crate::integrations::manifest::ManifestTool;
use crate::integrations::registry::{Integrations, PrimedIntegration};

/// Every `access_tiers` entry of the primed manifests (first declaration of
/// a tier name wins; reserved names are read in their canonical spelling).
pub fn tier_declarations(primed: &[PrimedIntegration]) -> Vec<TierDeclaration> {
    let mut out: Vec<TierDeclaration> = Vec::new();
    for p in primed {
        for t in p.manifest.access_tiers.iter() {
            let name =
                canonical_reserved_tier(&t.name).map_or_else(|| t.name.clone(), String::from);
            if out.iter().any(|d| d.name == name) {
                continue;
            }
            out.push(TierDeclaration {
                name,
                core_tools: t.core_tools.clone(),
                knowledge_source_types: t.knowledge_source_types.clone(),
                object_form: t.core_tools.is_some()
                    || t.knowledge_source_types.is_some()
                    || t.member_scoped.is_some(),
            });
        }
    }
    out
}

/// The effective integration tools (overrides applied), ungated.
pub fn integration_offers(primed: &[PrimedIntegration]) -> Vec<IntegrationToolOffer> {
    primed
        .iter()
        .flat_map(|p| p.tools.iter().map(move |t| offer(p, t)))
        .collect()
}

fn offer(p: &PrimedIntegration, t: &ManifestTool) -> IntegrationToolOffer {
    IntegrationToolOffer {
        name: t.name.clone(),
        integration: p.name().to_string(),
        channels: t.channels.clone(),
        tiers: t.tiers.clone(),
        admin_only: t.admin_only,
    }
}

/// Executes integration tools of the primed integrations.
pub struct PrimedInvoker {
    integrations: Integrations,
    primed: Arc<Vec<PrimedIntegration>>,
}

impl PrimedInvoker {
    /// An invoker over this turn's primed integrations.
    pub fn new(integrations: Integrations, primed: Arc<Vec<PrimedIntegration>>) -> Self {
        PrimedInvoker {
            integrations,
            primed,
        }
    }

    /// The primed integration called `integration` and its effective tool
    /// `name` — never another integration's tool of the same name.
    fn tool(&self, integration: &str, name: &str) -> Option<(&PrimedIntegration, &ManifestTool)> {
        let primed = self.primed.iter().find(|p| p.name() == integration)?;
        Some((primed, primed.tool(name)?))
    }
}

#[async_trait]
impl IntegrationInvoker for PrimedInvoker {
    fn definition(&self, integration: &str, name: &str) -> Option<ToolDefinition> {
        let (_, tool) = self.tool(integration, name)?;
        Some(ToolDefinition {
            name: tool.name.clone(),
            description: tool.description.clone(),
            // The manifest's raw JSON Schema wins (§5).
            parameters: tool.parameters.clone(),
        })
    }

    fn read_only(&self, integration: &str, name: &str) -> bool {
        self.tool(integration, name)
            .is_some_and(|(_, t)| t.read_only)
    }

    async fn invoke(
        &self,
        integration: &str,
        name: &str,
        args: Value,
        ctx: &TurnContext,
    ) -> ToolResult {
        let Some((primed, tool)) = self.tool(integration, name) else {
            return ToolResult::failed(format!("The tool {name} is not available here."));
        };
        // Defence in depth: this integration's own declaration must admit
        // the caller here, whatever the surface said.
        let (tier, is_admin) = audience(
            ctx.surface,
            Some(ctx.principal.tier.as_str()),
            ctx.principal.is_admin,
        );
        if integration_tool_allowed(&offer(primed, tool), ctx.surface, &tier, is_admin).is_none() {
            tracing::warn!(
                target: "audit",
                event = "tool.refused",
                tool = name,
                integration,
                tier = %tier,
                surface = ?ctx.surface,
                "integration invoker refused a tool its declaration does not admit for this caller"
            );
            return ToolResult::failed(format!(
                "The tool {name} is not available in this conversation."
            ));
        }
        let request = InvokeRequest {
            principal: InvokePrincipal {
                ref_: ctx.principal.principal_ref.clone(),
                tier: ctx.principal.tier.to_string(),
                is_admin: ctx.principal.is_admin,
                display_name: ctx.principal.display_name.clone(),
                slack_user_id: ctx.principal.slack_user_id.clone(),
                email: ctx.principal.email.clone(),
            },
            channel: ctx.surface.channel().as_str().to_string(),
            slack_channel_id: ctx.channel_id.clone(),
            current_user_message: Some(ctx.user_message.clone()),
            thread_ts: ctx.delivery.thread_ts.clone(),
            email_delegation: ctx.email_delegation.clone(),
            params: args,
            principal_id: ctx.principal.id,
        };
        self.integrations
            .invoke(primed, name, request, ctx.delivery.progress.clone())
            .await
    }
}

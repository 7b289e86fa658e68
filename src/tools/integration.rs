//! Glue between the tool surface and root-int/1 (§7.5): the primed
//! integrations' tier declarations and effective tools feed the gating
//! function, and [`PrimedInvoker`] executes the integration tools a turn
//! was offered through the signed invoke.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::gating::{IntegrationToolOffer, TierDeclaration};
use super::spec::TurnContext;
use super::turn::IntegrationInvoker;
use crate::agent::ToolResult;
use crate::ai::chat::ToolDefinition;
use crate::integrations::client::{InvokePrincipal, InvokeRequest};
use crate::integrations::registry::{Integrations, PrimedIntegration};

/// Every `access_tiers` entry of the primed manifests (first declaration of
/// a tier name wins).
pub fn tier_declarations(primed: &[PrimedIntegration]) -> Vec<TierDeclaration> {
    let mut out: Vec<TierDeclaration> = Vec::new();
    for p in primed {
        for t in p.manifest.access_tiers.iter() {
            if out.iter().any(|d| d.name == t.name) {
                continue;
            }
            out.push(TierDeclaration {
                name: t.name.clone(),
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
        .flat_map(|p| {
            p.tools.iter().map(move |t| IntegrationToolOffer {
                name: t.name.clone(),
                integration: p.name().to_string(),
                channels: t.channels.clone(),
                tiers: t.tiers.clone(),
                admin_only: t.admin_only,
            })
        })
        .collect()
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

    fn owner(&self, name: &str) -> Option<&PrimedIntegration> {
        self.primed.iter().find(|p| p.tool(name).is_some())
    }
}

#[async_trait]
impl IntegrationInvoker for PrimedInvoker {
    fn definition(&self, name: &str) -> Option<ToolDefinition> {
        let tool = self.owner(name)?.tool(name)?;
        Some(ToolDefinition {
            name: tool.name.clone(),
            description: tool.description.clone(),
            // The manifest's raw JSON Schema wins (§5).
            parameters: tool.parameters.clone(),
        })
    }

    async fn invoke(&self, name: &str, args: Value, ctx: &TurnContext) -> ToolResult {
        let Some(primed) = self.owner(name) else {
            return ToolResult::failed(format!("The tool {name} is not available here."));
        };
        let request = InvokeRequest {
            principal: InvokePrincipal {
                ref_: ctx.principal.principal_ref.clone(),
                tier: ctx.principal.tier.clone(),
                is_admin: ctx.principal.is_admin,
                display_name: ctx.principal.display_name.clone(),
                slack_user_id: ctx.principal.slack_user_id.clone(),
                email: ctx.principal.email.clone(),
            },
            channel: ctx.surface.channel().as_str().to_string(),
            slack_channel_id: ctx.channel_id.clone(),
            current_user_message: Some(ctx.user_message.clone()),
            thread_ts: None,
            email_delegation: None,
            params: args,
            principal_id: ctx.principal.id,
        };
        self.integrations.invoke(primed, name, request, None).await
    }
}

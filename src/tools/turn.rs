//! A turn's tools: the computed [`ToolSurface`] plus the handlers that can
//! serve it, as the [`AgentTools`] the kernel runs. Every call passes the
//! dispatch gate first ([`ToolSurface::admit`]); only then does a handler
//! run, and handlers keep only their data-scope checks.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use super::authorize::{GateDecision, ToolGate};
use super::catalog::is_mutation;
use super::community_build::InstalledBuilds;
use super::gating::{AllowedTool, ToolSource, ToolSurface};
use super::spec::{CoreTool, ToolEvent, TurnContext};
use crate::agent::{AgentTools, ToolCaller, ToolResult};
use crate::ai::chat::ToolDefinition;

/// Serves the integration tools of a surface (root-int/1 invocations).
/// Both methods name the integration the gate admitted the tool from (its
/// [`ToolSource`]): two integrations may declare the same tool name.
#[async_trait]
pub trait IntegrationInvoker: Send + Sync {
    /// The definition of `integration`'s tool `name` (raw manifest JSON Schema).
    fn definition(&self, integration: &str, name: &str) -> Option<ToolDefinition>;
    /// Does `integration`'s tool `name` only read (manifest `read_only`)?
    /// Unknown tools are treated as mutations.
    fn read_only(&self, integration: &str, name: &str) -> bool;
    /// Invoke `integration`'s tool `name`.
    async fn invoke(
        &self,
        integration: &str,
        name: &str,
        args: Value,
        ctx: &TurnContext,
    ) -> ToolResult;
}

/// Every implemented core tool, by name.
#[derive(Clone, Default)]
pub struct CoreTools {
    by_name: HashMap<&'static str, Arc<dyn CoreTool>>,
}

impl CoreTools {
    /// The platform's core tools that have a handler.
    pub fn platform() -> Self {
        let mut tools = CoreTools::default();
        for t in super::core::all() {
            tools.by_name.insert(t.name(), t);
        }
        tools
    }

    /// These handlers as well: a channel adds the handlers of a group its
    /// layer owns (the dashboard chat's admin config tools live above the
    /// tool layer, beside the services they call). A name already present
    /// is replaced.
    pub fn with(mut self, tools: impl IntoIterator<Item = Arc<dyn CoreTool>>) -> Self {
        for t in tools {
            self.by_name.insert(t.name(), t);
        }
        self
    }

    /// The handler of `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn CoreTool>> {
        self.by_name.get(name)
    }

    /// Names with a handler.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.by_name.keys().copied()
    }
}

/// The tools of one turn.
pub struct TurnTools {
    surface: ToolSurface,
    defs: Vec<ToolDefinition>,
    core: CoreTools,
    integrations: Option<Arc<dyn IntegrationInvoker>>,
    builds: InstalledBuilds,
    ctx: TurnContext,
    gate: Option<Arc<dyn ToolGate>>,
}

impl TurnTools {
    /// Offer exactly the surface's tools that have an executor, in the
    /// surface's order (community-build tools run through `builds`).
    pub fn new(
        surface: ToolSurface,
        core: CoreTools,
        integrations: Option<Arc<dyn IntegrationInvoker>>,
        builds: InstalledBuilds,
        mut ctx: TurnContext,
    ) -> Self {
        ctx.surface_tools = surface.names().map(str::to_string).collect();
        let defs = surface
            .tools
            .iter()
            .filter_map(|t| match &t.source {
                ToolSource::Core | ToolSource::AdminMessaging | ToolSource::AdminConfig => {
                    core.get(&t.name).map(|h| h.definition())
                }
                ToolSource::Integration { integration } => integrations
                    .as_ref()
                    .and_then(|i| i.definition(integration, &t.name)),
                ToolSource::CommunityBuild { install, .. } => builds.definition(*install, &t.name),
            })
            .collect();
        TurnTools {
            surface,
            defs,
            core,
            integrations,
            builds,
            ctx,
            gate: None,
        }
    }

    /// Ask `gate` before every mutation tool runs (§8.3 email delegation).
    pub fn with_gate(mut self, gate: Arc<dyn ToolGate>) -> Self {
        self.gate = Some(gate);
        self
    }

    /// Does the admitted tool change state?
    fn mutates(&self, tool: &AllowedTool) -> bool {
        match &tool.source {
            ToolSource::Core | ToolSource::AdminMessaging | ToolSource::AdminConfig => {
                is_mutation(&tool.name)
            }
            ToolSource::Integration { integration } => !self
                .integrations
                .as_ref()
                .is_some_and(|i| i.read_only(integration, &tool.name)),
            // Fail safe: a build's tool may change state.
            ToolSource::CommunityBuild { .. } => true,
        }
    }

    /// The surface this turn was computed with.
    pub fn surface(&self) -> &ToolSurface {
        &self.surface
    }

    /// (name, description) of every offered tool, in offer order — the
    /// system prompt's CAPABILITIES come from exactly this list.
    pub fn offered(&self) -> impl Iterator<Item = (&str, &str)> + '_ {
        self.defs
            .iter()
            .map(|d| (d.name.as_str(), d.description.as_str()))
    }
}

#[async_trait]
impl AgentTools for TurnTools {
    fn definitions(&self) -> &[ToolDefinition] {
        &self.defs
    }

    async fn execute(&self, name: &str, args: Value, _caller: &ToolCaller) -> ToolResult {
        let allowed = match self.surface.admit(name) {
            Ok(t) => t,
            Err(refusal) => return ToolResult::failed(refusal.message()),
        };
        let notify = |event: ToolEvent| {
            if let Some(tx) = &self.ctx.delivery.events {
                let _ = tx.try_send(event);
            }
        };
        notify(ToolEvent::Started {
            name: name.to_string(),
        });
        let result = self.run_admitted(allowed, name, args).await;
        notify(ToolEvent::Finished {
            name: name.to_string(),
            success: result.success,
        });
        result
    }
}

impl TurnTools {
    /// Past the dispatch gate: the authorization hook (mutations), then the handler.
    async fn run_admitted(&self, allowed: &AllowedTool, name: &str, args: Value) -> ToolResult {
        if let Some(gate) = &self.gate
            && self.mutates(allowed)
            && let GateDecision::Block(result) = gate.check(name, &args).await
        {
            tracing::info!(
                target: "audit",
                event = "tool.authorization_blocked",
                tool = name,
                "a mutation tool was blocked by the turn's authorization gate"
            );
            return result;
        }
        match &allowed.source {
            ToolSource::Core | ToolSource::AdminMessaging | ToolSource::AdminConfig => {
                match self.core.get(name) {
                    Some(h) => h.execute(args, &self.ctx).await,
                    None => ToolResult::failed(format!("The tool {name} is not available here.")),
                }
            }
            ToolSource::Integration { integration } => match &self.integrations {
                Some(i) => i.invoke(integration, name, args, &self.ctx).await,
                None => ToolResult::failed(format!("The tool {name} is not available here.")),
            },
            ToolSource::CommunityBuild { install, .. } => {
                self.builds.invoke(*install, name, args, &self.ctx).await
            }
        }
    }
}

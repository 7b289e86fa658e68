//! Community-build tools in a turn (§15.1, §5.2): the tenant's enabled
//! installs become [`BuildToolOffer`]s for the one gating function, and
//! [`InstalledBuilds`] runs an admitted call in the sandbox — progress lines
//! live to the turn's progress surface, one `community_build_tool_runs` row
//! per call, and a failed tool result (never a hung turn) for anything the
//! sandbox reports.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use storage::{CommunityBuildToolRun, Json, Redacted, RedbStore, Store};
use uuid::Uuid;

use super::gating::{BuildToolOffer, audience, build_tool_allowed};
use super::spec::TurnContext;
use crate::agent::ToolResult;
use crate::ai::chat::ToolDefinition;
use crate::builds::catalog::{self, CatalogError};
use crate::builds::format::ToolDeclaration;
use crate::builds::sandbox::{DEFAULT_TIMEOUT, SandboxLog, SandboxRunner, ToolCall};

/// Sandbox log bytes a run row keeps (messages are already cut to
/// `LOG_MAX_CHARS`; a chatty build cannot grow the audit table by megabytes).
pub const RUN_LOG_MAX_BYTES: usize = 64 * 1024;

/// Loads installs and runs their tools; one per server.
#[derive(Clone, Debug)]
pub struct CommunityBuilds {
    runner: SandboxRunner,
}

/// One installed tool, ready to offer and run.
#[derive(Clone, Debug)]
struct InstalledTool {
    build: String,
    install: Uuid,
    declaration: ToolDeclaration,
    module_source: Arc<str>,
    /// The install's config (its `writeOnly` secrets): `[redacted]` in `Debug`.
    config: Arc<Redacted<Value>>,
}

/// A tenant's enabled community-build tools for one turn (or one catalog).
#[derive(Clone, Debug, Default)]
pub struct InstalledBuilds {
    runner: Option<SandboxRunner>,
    tools: Vec<InstalledTool>,
}

impl CommunityBuilds {
    /// Tools run through `runner`.
    pub fn new(runner: SandboxRunner) -> Self {
        CommunityBuilds { runner }
    }

    /// `tenant`'s enabled installs whose listing still exists (two reads:
    /// the installs, then their listings in one batch).
    pub async fn load(
        &self,
        store: &RedbStore,
        tenant: Uuid,
    ) -> Result<InstalledBuilds, CatalogError> {
        let rows = catalog::installs(store, tenant).await?;
        let mut tools = Vec::new();
        for (install, listing) in rows {
            let Some(listing) = listing.filter(|_| install.enabled) else {
                continue;
            };
            let module_source: Arc<str> = Arc::from(install.module_source.as_str());
            let config = Arc::new(Redacted::new(install.config.expose().0.clone()));
            tools.extend(catalog::declarations(&install.tools).into_iter().map(|d| {
                InstalledTool {
                    build: listing.slug.clone(),
                    install: install.id,
                    declaration: d,
                    module_source: module_source.clone(),
                    config: config.clone(),
                }
            }));
        }
        // Build (slug) order, each build's tools in declaration order: the
        // order the gate offers them and `GET /tools` lists them.
        tools.sort_by(|a, b| a.build.cmp(&b.build));
        Ok(InstalledBuilds {
            runner: Some(self.runner.clone()),
            tools,
        })
    }
}

impl InstalledTool {
    fn offer(&self) -> BuildToolOffer {
        BuildToolOffer {
            name: self.declaration.name.clone(),
            build: self.build.clone(),
            install: self.install,
            channels: self.declaration.channels.clone(),
            tiers: self.declaration.tiers.clone(),
        }
    }
}

impl InstalledBuilds {
    /// The offers for the gating function.
    pub fn offers(&self) -> Vec<BuildToolOffer> {
        self.tools.iter().map(InstalledTool::offer).collect()
    }

    fn tool(&self, install: Uuid, name: &str) -> Option<&InstalledTool> {
        self.tools
            .iter()
            .find(|t| t.install == install && t.declaration.name == name)
    }

    /// The definition the model sees for `install`'s tool `name`.
    pub fn definition(&self, install: Uuid, name: &str) -> Option<ToolDefinition> {
        self.tool(install, name).map(|t| ToolDefinition {
            name: t.declaration.name.clone(),
            description: t.declaration.description.clone(),
            parameters: t.declaration.parameters.clone(),
        })
    }

    /// Run `install`'s tool `name` in the sandbox for the turn `ctx`.
    pub async fn invoke(
        &self,
        install: Uuid,
        name: &str,
        args: Value,
        ctx: &TurnContext,
    ) -> ToolResult {
        let (Some(tool), Some(runner)) = (self.tool(install, name), self.runner.as_ref()) else {
            return ToolResult::failed(format!("The tool {name} is not available here."));
        };
        // Defence in depth, as for integration tools: the declaration must
        // admit this caller here, whatever the surface said.
        let (tier, is_admin) = audience(
            ctx.surface,
            Some(ctx.principal.tier.as_str()),
            ctx.principal.is_admin,
        );
        if build_tool_allowed(&tool.offer(), ctx.surface, &tier, is_admin).is_none() {
            tracing::warn!(
                target: "audit",
                event = "tool.refused",
                tool = name,
                build = %tool.build,
                tier = %tier,
                "community build tool refused: its declaration does not admit this caller"
            );
            return ToolResult::failed(format!(
                "The tool {name} is not available in this conversation."
            ));
        }
        let call = ToolCall {
            module_source: tool.module_source.to_string(),
            tool: name.to_string(),
            params: args,
            config: tool.config.expose().clone(),
            principal: principal_view(ctx),
            channel: ctx.surface.channel().as_str().to_string(),
            timeout: tool
                .declaration
                .timeout_ms
                .map_or(DEFAULT_TIMEOUT, Duration::from_millis),
            tenant: Some(ctx.tenant_id),
        };
        let progress = ctx.delivery.progress.clone();
        let mut forward = |line: &str| {
            if let Some(tx) = &progress {
                // Best effort: a slow status surface never delays the tool.
                let _ = tx.try_send(line.to_string());
            }
        };
        let outcome = runner.run_tool(&call, &mut forward).await;
        let duration_ms = i64::try_from(outcome.duration.as_millis()).unwrap_or(i64::MAX);
        let row = CommunityBuildToolRun {
            id: Uuid::new_v4(),
            tenant_id: ctx.tenant_id,
            install_id: tool.install,
            tool_name: name.to_string(),
            principal_id: ctx.principal.id,
            duration_ms,
            success: outcome.ok,
            error: outcome.error.clone(),
            logs: Json(kept_logs(&outcome.logs)),
            created_at: ctx.services.clock.now(),
        };
        if let Err(e) = ctx.services.store.insert(row).await {
            // The call happened; losing its audit row is logged loudly but
            // does not turn a good answer into a failure.
            tracing::error!(error = %e, tool = name, build = %tool.build, "community_build_tool_runs row not written");
        }
        match (outcome.ok, outcome.result, outcome.error) {
            (true, result, _) => {
                tracing::info!(tool = name, build = %tool.build, duration_ms, "community build tool ran");
                ToolResult::ok(result.unwrap_or(Value::Null))
            }
            (false, _, error) => {
                let reason = error.unwrap_or_else(|| "no reason given".into());
                tracing::warn!(tool = name, build = %tool.build, duration_ms, "community build tool failed");
                let mut r = ToolResult::failed(format!("The tool {name} failed: {reason}"));
                r.error_detail = Some(format!("sandbox: {reason}"));
                r
            }
        }
    }
}

/// `ctx.principal` as the build documentation promises it:
/// `{id, ref, tier, is_admin, display_name, email}`.
fn principal_view(ctx: &TurnContext) -> Value {
    let p = &ctx.principal;
    json!({
        "id": p.id,
        "ref": p.principal_ref,
        "tier": p.tier.as_str(),
        "is_admin": p.is_admin,
        "display_name": p.display_name,
        "email": p.email,
    })
}

/// The run's log lines up to [`RUN_LOG_MAX_BYTES`], then a marker saying
/// how many were left out.
fn kept_logs(logs: &[SandboxLog]) -> Value {
    let mut kept = Vec::new();
    let mut bytes = 0;
    for l in logs {
        bytes += l.message.len();
        if bytes > RUN_LOG_MAX_BYTES {
            kept.push(json!({
                "type": "log",
                "message": format!("({} more lines not kept)", logs.len() - kept.len()),
            }));
            break;
        }
        kept.push(serde_json::to_value(l).unwrap_or(Value::Null));
    }
    Value::Array(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builds::sandbox::LogKind;

    #[test]
    fn run_rows_keep_at_most_64_kib_of_logs_and_say_how_many_were_dropped() {
        assert_eq!(RUN_LOG_MAX_BYTES, 65_536);
        let logs: Vec<SandboxLog> = (0..100)
            .map(|i| SandboxLog {
                kind: if i % 2 == 0 {
                    LogKind::Log
                } else {
                    LogKind::Progress
                },
                message: "x".repeat(1_000),
            })
            .collect();
        let kept = kept_logs(&logs);
        let kept = kept.as_array().unwrap();
        assert_eq!(kept.len(), 66, "65 lines of 1000 bytes, then the marker");
        assert_eq!(kept[1]["type"], "progress");
        assert_eq!(kept[65]["message"], "(35 more lines not kept)");
        let few = kept_logs(&logs[..3]);
        assert_eq!(few.as_array().unwrap().len(), 3);
    }
}

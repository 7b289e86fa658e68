//! Tier gating (§5.2 + §7.5) as ONE pure function: [`allowed_tools`]
//! computes a turn's tool surface from (surface, access level, admin flags,
//! the manifest's tier declarations, the integration tools) and returns every
//! allowed tool with the reason it is allowed. The model is offered exactly
//! this set, the dispatch gate ([`ToolSurface::admit`]) re-checks every call
//! against it, and `GET /api/v1/tools` reports it — so "what can an
//! unresolved user do?" is a query, not a grep (GUIDE §5, authority model).
//!
//! Every allowed tool carries its *source* (core, admin messaging, or the one
//! integration that serves it): dispatch and the offered definition route by
//! that source, never by a name lookup among all integrations, so a tool
//! name two integrations share can never run the one the gate refused.

use std::collections::HashMap;

use serde::Serialize;

use super::catalog::{
    CATALOG, CatalogTool, ESCALATE_TO_ADMIN, SEARCH_KNOWLEDGE_BASE, ToolChannel, ToolGroup,
    UNRESOLVED_CORE_TOOLS,
};

pub use crate::platform::tiers::{
    ADMIN_TIER, TIER_PUBLIC, TIER_PUBLIC_EMAIL, TIER_UNRESOLVED, Tier,
};

pub use crate::integrations::manifest::{canonical_reserved_tier, is_reserved_tier};

/// `manifestTierFor` (§5.2): channel access levels → manifest tiers. A
/// reserved name in any case or padding maps like its canonical form, and
/// the `__admin__` marker (never a tier anyone holds) fails closed to
/// `unresolved`.
pub fn manifest_tier_for(level: Option<&str>) -> Tier {
    level.map_or(Tier::Unresolved, |l| {
        Tier::parse_or_unresolved(l).manifest_tier()
    })
}

/// The tool-list builder a turn uses (§5.2: getSlackTools, getEmailTools,
/// getApiTools, getPublicEmailTools; the web test chat uses the web channel).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Surface {
    /// Slack DMs and channels.
    Slack,
    /// Email from a trusted or resolved sender.
    Email,
    /// The platform API and MCP (admin flags forced off).
    Api,
    /// Email from everyone else.
    PublicEmail,
    /// The web test chat.
    Web,
}

impl Surface {
    /// The channel its tools must declare.
    pub fn channel(self) -> ToolChannel {
        match self {
            Surface::Slack => ToolChannel::Slack,
            Surface::Email | Surface::PublicEmail => ToolChannel::Email,
            Surface::Api => ToolChannel::Api,
            Surface::Web => ToolChannel::Web,
        }
    }
}

/// One `access_tiers` entry of the manifest (§7.3), string or object form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TierDeclaration {
    /// Tier name.
    pub name: String,
    /// Object form only: the core-tool allowlist.
    pub core_tools: Option<Vec<String>>,
    /// Object form only: knowledge source types this tier may search.
    pub knowledge_source_types: Option<Vec<String>>,
    /// Declared in object form (`{name, …}`) rather than as a bare string.
    pub object_form: bool,
}

/// An integration tool after `tool_overrides` (§7.4), before gating.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IntegrationToolOffer {
    /// Tool name.
    pub name: String,
    /// The integration that serves it.
    pub integration: String,
    /// Channels it declares (`None` = all).
    pub channels: Option<Vec<String>>,
    /// Tiers it declares (`__admin__` for admins; `None` = every
    /// non-reserved tier and admins).
    pub tiers: Option<Vec<String>>,
    /// Admins only.
    pub admin_only: bool,
}

/// An installed, enabled community-build tool (§15.1) before gating: its
/// declaration's `tiers` / `channels` follow the integration-tool rules.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildToolOffer {
    /// Tool name.
    pub name: String,
    /// The build's catalog slug.
    pub build: String,
    /// The install that serves it.
    pub install: uuid::Uuid,
    /// Channels it declares (`None` = all).
    pub channels: Option<Vec<String>>,
    /// Tiers it declares (`None` = every non-reserved tier and admins).
    pub tiers: Option<Vec<String>>,
}

/// Everything gating looks at.
#[derive(Clone, Debug)]
pub struct GateInput<'a> {
    /// The builder.
    pub surface: Surface,
    /// The principal's access level / tier as stored (`None` = unresolved).
    pub access_level: Option<&'a str>,
    /// Admin principal.
    pub is_admin: bool,
    /// A dashboard admin talking on Slack.
    pub dashboard_admin: bool,
    /// The turn comes from the dashboard's `/chat` (a signed-in owner or
    /// admin, role and CSRF checked by that page): only then, and only on
    /// the web surface, are the admin config tools offered.
    pub dashboard_chat: bool,
    /// The manifest's `access_tiers` (all active integrations).
    pub tier_declarations: &'a [TierDeclaration],
    /// Integration tools with overrides applied.
    pub integration_tools: &'a [IntegrationToolOffer],
    /// Installed, enabled community-build tools (offered last).
    pub build_tools: &'a [BuildToolOffer],
}

/// Where an allowed tool comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolSource {
    /// A platform core tool.
    Core,
    /// The admin messaging group.
    AdminMessaging,
    /// The dashboard admin config group (the dashboard `/chat` only).
    AdminConfig,
    /// A manifest tool served by `integration`.
    Integration {
        /// The integration's name.
        integration: String,
    },
    /// A community-build tool served by an install (§15.1).
    CommunityBuild {
        /// The build's catalog slug.
        build: String,
        /// The install.
        install: uuid::Uuid,
    },
}

/// One tool of the surface and why it is there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AllowedTool {
    /// Tool name.
    pub name: String,
    /// Core, admin messaging or integration.
    pub source: ToolSource,
    /// Human-readable reason (shown in `GET /api/v1/tools` and audit logs).
    pub reason: String,
}

/// A tool the audience would get but that another source already offers
/// under the same name (the model sees names, so only one can be offered).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ShadowedTool {
    /// Tool name.
    pub name: String,
    /// The source that was not offered.
    pub source: ToolSource,
    /// `shadowed by core tool <name>` / `shadowed by integration <name>`.
    pub reason: String,
}

/// A turn's computed tool surface.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ToolSurface {
    /// The builder used.
    pub surface: Surface,
    /// The manifest tier the principal was mapped to.
    pub tier: Tier,
    /// Effective admin flag (forced off on the API surface).
    pub is_admin: bool,
    /// Allowed tools in offer order: core, admin messaging, admin config,
    /// integration.
    pub tools: Vec<AllowedTool>,
    /// Integration tools this audience would get but whose name another
    /// source already holds (core first, then integrations in name order).
    pub shadowed: Vec<ShadowedTool>,
    /// Source types `search_knowledge_base` is scoped to, when the tier
    /// declaration sets them.
    pub knowledge_source_types: Option<Vec<String>>,
    /// Why this turn landed on a reserved surface (`identity.degraded`).
    pub degraded: Option<String>,
}

/// The dispatch gate's refusal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GateRefusal {
    /// The tool the model asked for.
    pub tool: String,
}

impl GateRefusal {
    /// The model-facing error.
    pub fn message(&self) -> String {
        format!(
            "The tool {} is not available in this conversation.",
            self.tool
        )
    }
}

impl ToolSurface {
    /// Names in offer order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tools.iter().map(|t| t.name.as_str())
    }

    /// Is `name` on the surface?
    pub fn allows(&self, name: &str) -> bool {
        self.tools.iter().any(|t| t.name == name)
    }

    /// The dispatch gate: the allowed entry, or a refusal (logged as an
    /// audit event) for anything else.
    pub fn admit(&self, name: &str) -> Result<&AllowedTool, GateRefusal> {
        match self.tools.iter().find(|t| t.name == name) {
            Some(t) => Ok(t),
            None => {
                tracing::warn!(
                    target: "audit",
                    event = "tool.refused",
                    tool = name,
                    tier = %self.tier,
                    surface = ?self.surface,
                    "dispatch gate refused a tool outside the turn's surface"
                );
                Err(GateRefusal { tool: name.into() })
            }
        }
    }
}

/// The declaration for `tier`, if the manifest has one.
fn declaration<'a>(decls: &'a [TierDeclaration], tier: &str) -> Option<&'a TierDeclaration> {
    decls.iter().find(|d| d.name == tier)
}

/// §5.2 core-tool filter for `tier` → (names with reasons, knowledge scope).
fn core_tools_for(
    tier: &Tier,
    decls: &[TierDeclaration],
) -> (Vec<(&'static str, String)>, Option<Vec<String>>) {
    let decl = declaration(decls, tier.as_str());
    let scope = decl
        .and_then(|d| d.knowledge_source_types.clone())
        .filter(|t| !t.is_empty());
    if *tier == Tier::Public {
        // Rule 1: escalation only, plus scoped knowledge search when an
        // object-form public declaration opts in with source types.
        let mut tools = vec![(
            ESCALATE_TO_ADMIN,
            "public tier: escalation is always available".to_string(),
        )];
        let opts_in = decl.is_some_and(|d| {
            d.object_form
                && d.core_tools
                    .as_ref()
                    .is_some_and(|c| c.iter().any(|n| n == SEARCH_KNOWLEDGE_BASE))
        });
        return match (opts_in, scope) {
            (true, Some(types)) => {
                tools.insert(
                    0,
                    (
                        SEARCH_KNOWLEDGE_BASE,
                        format!(
                            "public tier: manifest grants knowledge search scoped to {}",
                            types.join(", ")
                        ),
                    ),
                );
                (tools, Some(types))
            }
            // Fail closed: no scoping, no knowledge search.
            _ => (tools, None),
        };
    }
    let core = || CATALOG.iter().filter(|t| t.is_core());
    if let Some(allow) = decl.and_then(|d| d.core_tools.as_ref()) {
        // Rule 2: the manifest's allowlist (escalation stays available).
        let tools = core()
            .filter(|t| t.name == ESCALATE_TO_ADMIN || allow.iter().any(|a| a == t.name))
            .map(|t| {
                let why = if allow.iter().any(|a| a == t.name) {
                    format!("manifest core_tools allowlist for tier {tier}")
                } else {
                    "escalation is always available".to_string()
                };
                (t.name, why)
            })
            .collect();
        return (tools, scope);
    }
    if *tier == Tier::Unresolved {
        // Rule 3: the reserved unresolved set.
        let tools = UNRESOLVED_CORE_TOOLS
            .iter()
            .map(|n| (*n, "reserved tier unresolved".to_string()))
            .collect();
        return (tools, scope);
    }
    // Rule 4: the full core set.
    let tools = core()
        .map(|t| (t.name, format!("full core set for tier {tier}")))
        .collect();
    (tools, scope)
}

/// The audience gating judges: (manifest tier, effective admin flag) for a
/// principal of `access_level` on `surface` — the public email surface is
/// always the `public` tier, and the API surface forces the admin flag off.
pub fn audience(surface: Surface, access_level: Option<&str>, is_admin: bool) -> (Tier, bool) {
    let tier = if surface == Surface::PublicEmail {
        Tier::Public
    } else {
        manifest_tier_for(access_level)
    };
    (tier, is_admin && surface != Surface::Api)
}

/// Does an integration tool pass §7.5 materialization for this turn
/// (channel, then `admin_only` ⇒ admin, then tiers — the manifest's own
/// audience rules)? The public email surface takes only tools that name
/// `public` or `public_email` explicitly. `Some(reason)` when it does; the
/// integration invoker asks the same question again before every call.
pub fn integration_tool_allowed(
    t: &IntegrationToolOffer,
    surface: Surface,
    tier: &Tier,
    is_admin: bool,
) -> Option<String> {
    use crate::integrations::manifest::{channel_allows, tier_allows};
    let channel = surface.channel().as_str();
    if !channel_allows(t.channels.as_deref(), channel) || (t.admin_only && !is_admin) {
        return None;
    }
    if surface == Surface::PublicEmail {
        let named = t.tiers.as_deref().is_some_and(|ts| {
            ts.iter()
                .any(|x| x == TIER_PUBLIC || x == TIER_PUBLIC_EMAIL)
        });
        return named.then(|| {
            format!(
                "integration {}: declared for the public email surface",
                t.integration
            )
        });
    }
    if !tier_allows(t.tiers.as_deref(), tier.as_str(), is_admin) {
        return None;
    }
    Some(match &t.tiers {
        None => format!("integration {}: no tier restriction", t.integration),
        Some(ts) if ts.iter().any(|x| x == tier.as_str()) => {
            format!("integration {}: tiers include {tier}", t.integration)
        }
        Some(_) => format!("integration {}: tiers include __admin__", t.integration),
    })
}

/// Does a community-build tool pass for this turn? Its declaration's
/// `tiers` / `channels` follow the integration-tool rules (§15.1, §7.5);
/// the sandbox runner asks the same question again before every call.
pub fn build_tool_allowed(
    t: &BuildToolOffer,
    surface: Surface,
    tier: &Tier,
    is_admin: bool,
) -> Option<String> {
    let as_offer = IntegrationToolOffer {
        name: t.name.clone(),
        integration: t.build.clone(),
        channels: t.channels.clone(),
        tiers: t.tiers.clone(),
        admin_only: false,
    };
    integration_tool_allowed(&as_offer, surface, tier, is_admin)
        .map(|reason| reason.replacen("integration ", "community build ", 1))
}

/// Why an admin config tool is on a surface (`GET /api/v1/tools`, audit).
pub const ADMIN_CONFIG_REASON: &str = "admin config: dashboard /chat";

/// Offer `name` from `source` unless an earlier source already holds it
/// (§5.2: core, then integrations, then builds — the first holder wins and
/// the later one is listed as shadowed, naming the holder).
fn claim_name(
    seen: &mut HashMap<String, String>,
    tools: &mut Vec<AllowedTool>,
    shadowed: &mut Vec<ShadowedTool>,
    name: &str,
    source: ToolSource,
    reason: String,
    holder: String,
) {
    if let Some(first) = seen.get(name) {
        shadowed.push(ShadowedTool {
            name: name.to_string(),
            source,
            reason: format!("shadowed by {first}"),
        });
        return;
    }
    seen.insert(name.to_string(), holder);
    tools.push(AllowedTool {
        name: name.to_string(),
        source,
        reason,
    });
}

/// Compute the turn's tool surface (§5.2, §7.5). Pure.
pub fn allowed_tools(input: &GateInput<'_>) -> ToolSurface {
    let surface = input.surface;
    // The API surface forces the admin flags off.
    let (tier, is_admin) = audience(surface, input.access_level, input.is_admin);
    let dashboard_admin = input.dashboard_admin && surface != Surface::Api;
    let channel = surface.channel();
    let (core, knowledge_source_types) = core_tools_for(&tier, input.tier_declarations);

    // name → who holds it on this surface (for the shadowed reasons).
    let mut seen: HashMap<String, String> = HashMap::new();
    let mut tools = Vec::new();
    let mut shadowed = Vec::new();
    let catalog =
        |name: &str| -> Option<&'static CatalogTool> { CATALOG.iter().find(|t| t.name == name) };
    for (name, reason) in core {
        if catalog(name).is_some_and(|t| t.on(channel)) && !seen.contains_key(name) {
            seen.insert(name.to_string(), format!("core tool {name}"));
            tools.push(AllowedTool {
                name: name.into(),
                source: ToolSource::Core,
                reason,
            });
        }
    }
    if surface == Surface::Slack && (is_admin || dashboard_admin) {
        for t in CATALOG
            .iter()
            .filter(|t| t.group == ToolGroup::AdminMessaging && t.on(channel))
        {
            if !seen.contains_key(t.name) {
                seen.insert(t.name.to_string(), format!("core tool {}", t.name));
                tools.push(AllowedTool {
                    name: t.name.into(),
                    source: ToolSource::AdminMessaging,
                    reason: if is_admin {
                        "admin messaging: admin principal on Slack".into()
                    } else {
                        "admin messaging: dashboard admin on Slack".into()
                    },
                });
            }
        }
    }
    // The dashboard's /chat: the admin config group, whatever the tier (the
    // dashboard role is the authority there, checked by the page), and on
    // no other surface — not even with the flag set.
    if surface == Surface::Web && input.dashboard_chat {
        for t in CATALOG
            .iter()
            .filter(|t| t.group == ToolGroup::AdminConfig && t.on(channel))
        {
            if !seen.contains_key(t.name) {
                seen.insert(t.name.to_string(), format!("core tool {}", t.name));
                tools.push(AllowedTool {
                    name: t.name.into(),
                    source: ToolSource::AdminConfig,
                    reason: ADMIN_CONFIG_REASON.into(),
                });
            }
        }
    }
    // Integrations in name order (stable: a manifest's own order stays);
    // a name is offered from the first source whose audience rules admit
    // it — core first — and every later admitting source is shadowed.
    let mut offers: Vec<&IntegrationToolOffer> = input.integration_tools.iter().collect();
    offers.sort_by(|a, b| a.integration.cmp(&b.integration));
    for t in offers {
        let Some(reason) = integration_tool_allowed(t, surface, &tier, is_admin) else {
            continue;
        };
        let source = ToolSource::Integration {
            integration: t.integration.clone(),
        };
        let holder = format!("integration {}", t.integration);
        claim_name(
            &mut seen,
            &mut tools,
            &mut shadowed,
            &t.name,
            source,
            reason,
            holder,
        );
    }
    // Community builds last (§5.2: core, then integrations, then builds),
    // in build order; a name already held is shadowed.
    let mut builds: Vec<&BuildToolOffer> = input.build_tools.iter().collect();
    builds.sort_by(|a, b| a.build.cmp(&b.build));
    for t in builds {
        let Some(reason) = build_tool_allowed(t, surface, &tier, is_admin) else {
            continue;
        };
        let source = ToolSource::CommunityBuild {
            build: t.build.clone(),
            install: t.install,
        };
        let holder = format!("community build {}", t.build);
        claim_name(
            &mut seen,
            &mut tools,
            &mut shadowed,
            &t.name,
            source,
            reason,
            holder,
        );
    }
    let degraded = if surface == Surface::PublicEmail {
        Some("public_email surface: the sender is not a trusted or resolved member".to_string())
    } else if tier.is_reserved() {
        Some(match input.access_level {
            None => format!("no resolved identity: reserved tier {tier}"),
            Some(level) => format!("access level {level} maps to reserved tier {tier}"),
        })
    } else {
        None
    };
    ToolSurface {
        surface,
        tier,
        is_admin,
        tools,
        shadowed,
        knowledge_source_types,
        degraded,
    }
}

#[cfg(test)]
#[path = "gating_test.rs"]
mod tests;

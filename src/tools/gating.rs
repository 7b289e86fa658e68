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
    /// The manifest's `access_tiers` (all active integrations).
    pub tier_declarations: &'a [TierDeclaration],
    /// Integration tools with overrides applied.
    pub integration_tools: &'a [IntegrationToolOffer],
}

/// Where an allowed tool comes from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ToolSource {
    /// A platform core tool.
    Core,
    /// The admin messaging group.
    AdminMessaging,
    /// A manifest tool served by `integration`.
    Integration {
        /// The integration's name.
        integration: String,
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
    /// Allowed tools in offer order: core, admin messaging, integration.
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
        if let Some(holder) = seen.get(&t.name) {
            shadowed.push(ShadowedTool {
                name: t.name.clone(),
                source,
                reason: format!("shadowed by {holder}"),
            });
            continue;
        }
        seen.insert(t.name.clone(), format!("integration {}", t.integration));
        tools.push(AllowedTool {
            name: t.name.clone(),
            source,
            reason,
        });
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
mod tests {
    use super::*;

    fn decl(name: &str, core: Option<&[&str]>, kst: Option<&[&str]>) -> TierDeclaration {
        TierDeclaration {
            name: name.into(),
            core_tools: core.map(|c| c.iter().map(|s| s.to_string()).collect()),
            knowledge_source_types: kst.map(|c| c.iter().map(|s| s.to_string()).collect()),
            object_form: core.is_some() || kst.is_some(),
        }
    }

    fn itool(
        name: &str,
        tiers: &[&str],
        channels: &[&str],
        admin_only: bool,
    ) -> IntegrationToolOffer {
        IntegrationToolOffer {
            name: name.into(),
            integration: "foundations".into(),
            channels: (!channels.is_empty())
                .then(|| channels.iter().map(|s| s.to_string()).collect()),
            tiers: Some(tiers.iter().map(|s| s.to_string()).collect()),
            admin_only,
        }
    }

    fn surface(
        s: Surface,
        level: Option<&str>,
        decls: &[TierDeclaration],
        tools: &[IntegrationToolOffer],
    ) -> ToolSurface {
        allowed_tools(&GateInput {
            surface: s,
            access_level: level,
            is_admin: false,
            dashboard_admin: false,
            tier_declarations: decls,
            integration_tools: tools,
        })
    }

    fn names(s: &ToolSurface) -> Vec<&str> {
        s.names().collect()
    }

    #[test]
    fn manifest_tier_for_maps_exactly_as_spec() {
        for (level, tier) in [
            (Some("slack"), "member"),
            (Some("email"), "member"),
            (Some("api"), "member"),
            (Some("member"), "member"),
            (Some("email_mentor"), "mentor"),
            (Some("mentor"), "mentor"),
            (Some("unresolved_slack_user"), "unresolved"),
            (Some("unresolved"), "unresolved"),
            (Some("public_email"), "public"),
            (Some("public"), "public"),
            (Some("partner"), "partner"),
            (None, "unresolved"),
        ] {
            assert_eq!(manifest_tier_for(level), tier, "{level:?}");
        }
    }

    #[test]
    fn unresolved_gets_exactly_the_reserved_set() {
        let s = surface(Surface::Slack, None, &[], &[]);
        assert_eq!(names(&s), UNRESOLVED_CORE_TOOLS.to_vec());
        assert!(s.degraded.as_deref().unwrap().contains("unresolved"));
    }

    #[test]
    fn manifest_allowlist_restricts_exactly_plus_escalation() {
        let decls = [decl(
            "partner",
            Some(&["who_knows", "search_knowledge_base"]),
            None,
        )];
        let s = surface(Surface::Slack, Some("partner"), &decls, &[]);
        assert_eq!(
            names(&s),
            vec!["search_knowledge_base", "who_knows", "escalate_to_admin"]
        );
        assert!(s.degraded.is_none());
        assert!(s.tools[0].reason.contains("allowlist for tier partner"));
        // The allowlist also applies to the unresolved tier when declared.
        let decls = [decl("unresolved", Some(&["search_knowledge_base"]), None)];
        let s = surface(Surface::Slack, None, &decls, &[]);
        assert_eq!(
            names(&s),
            vec!["search_knowledge_base", "escalate_to_admin"]
        );
    }

    #[test]
    fn full_core_set_is_filtered_by_channel() {
        let slack = surface(Surface::Slack, Some("member"), &[], &[]);
        assert_eq!(slack.tools.len(), 34);
        let email = surface(Surface::Email, Some("member"), &[], &[]);
        let e = names(&email);
        for slack_only in [
            "save_knowledge_entry",
            "find_channel_for_community_post",
            "start_community_conversation",
            "set_dm_reply_style",
            "set_auto_reply_preference",
        ] {
            assert!(!e.contains(&slack_only), "{slack_only}");
        }
        assert_eq!(e.len(), 29);
    }

    #[test]
    fn public_is_escalation_only_unless_the_manifest_opts_in_with_scoping() {
        let s = surface(Surface::Slack, Some("public"), &[], &[]);
        assert_eq!(names(&s), vec!["escalate_to_admin"]);
        // core_tools without knowledge_source_types: fail closed.
        let decls = [decl(
            "public",
            Some(&["search_knowledge_base", "who_knows"]),
            None,
        )];
        let s = surface(Surface::Slack, Some("public"), &decls, &[]);
        assert_eq!(names(&s), vec!["escalate_to_admin"]);
        // Empty source types: still closed.
        let decls = [decl("public", Some(&["search_knowledge_base"]), Some(&[]))];
        assert_eq!(
            names(&surface(Surface::Slack, Some("public"), &decls, &[])),
            vec!["escalate_to_admin"]
        );
        // Opt-in with scoping: knowledge search, nothing else (who_knows ignored).
        let decls = [decl(
            "public",
            Some(&["search_knowledge_base", "who_knows"]),
            Some(&["faq"]),
        )];
        let s = surface(Surface::Slack, Some("public"), &decls, &[]);
        assert_eq!(
            names(&s),
            vec!["search_knowledge_base", "escalate_to_admin"]
        );
        assert_eq!(s.knowledge_source_types, Some(vec!["faq".to_string()]));
        // A string-form public declaration cannot opt in.
        let decls = [TierDeclaration {
            name: "public".into(),
            core_tools: Some(vec!["search_knowledge_base".into()]),
            knowledge_source_types: Some(vec!["faq".into()]),
            object_form: false,
        }];
        assert_eq!(
            names(&surface(Surface::Slack, Some("public"), &decls, &[])),
            vec!["escalate_to_admin"]
        );
    }

    #[test]
    fn public_email_gets_escalation_scoped_search_and_public_integration_tools() {
        let decls = [decl(
            "public",
            Some(&["search_knowledge_base"]),
            Some(&["faq", "policy"]),
        )];
        let tools = [
            itool("office_hours", &["public_email"], &["email"], false),
            itool("pricing", &["public"], &[], false),
            itool("book_room", &["member"], &["email"], false),
        ];
        let s = surface(Surface::PublicEmail, Some("member"), &decls, &tools);
        assert_eq!(s.tier, "public");
        assert_eq!(
            names(&s),
            vec![
                "search_knowledge_base",
                "escalate_to_admin",
                "office_hours",
                "pricing"
            ]
        );
        assert!(s.degraded.is_some());
    }

    #[test]
    fn integration_tools_follow_channel_admin_only_and_tiers_and_core_wins() {
        let tools = [
            itool("lookup_member", &["member"], &["slack", "email"], false),
            itool("admin_stats", &["member", "__admin__"], &[], true),
            itool("partner_only", &["partner"], &[], false),
            itool("api_only", &["member"], &["api"], false),
            itool("admin_tier_tool", &["__admin__"], &[], false),
            itool("search_knowledge_base", &["member"], &[], false),
        ];
        let member = surface(Surface::Slack, Some("member"), &[], &tools);
        let n = names(&member);
        assert!(n.contains(&"lookup_member"));
        assert!(!n.contains(&"admin_stats"), "admin_only");
        assert!(!n.contains(&"partner_only"));
        assert!(!n.contains(&"api_only"));
        assert!(!n.contains(&"admin_tier_tool"));
        assert_eq!(
            n.iter().filter(|x| **x == "search_knowledge_base").count(),
            1
        );
        let kb = member
            .tools
            .iter()
            .find(|t| t.name == "search_knowledge_base")
            .unwrap();
        assert_eq!(kb.source, ToolSource::Core, "core wins the name");

        let admin = allowed_tools(&GateInput {
            surface: Surface::Slack,
            access_level: Some("member"),
            is_admin: true,
            dashboard_admin: false,
            tier_declarations: &[],
            integration_tools: &tools,
        });
        let n = names(&admin);
        assert!(n.contains(&"admin_stats"));
        assert!(n.contains(&"admin_tier_tool"));
        assert!(n.contains(&"send_slack_dm_admin"));
    }

    #[test]
    fn a_shared_tool_name_is_offered_from_the_first_admitting_integration_by_name() {
        let mut admin_only = itool("x", &["__admin__"], &[], true);
        admin_only.integration = "alpha".into();
        let mut members = itool("x", &["member"], &[], false);
        members.integration = "beta".into();
        // Input order must not matter: beta listed first.
        let offers = [members.clone(), admin_only.clone()];
        let beta = ToolSource::Integration {
            integration: "beta".into(),
        };
        let alpha = ToolSource::Integration {
            integration: "alpha".into(),
        };
        // A member: alpha's x refuses them, so beta's is the one offered.
        let member = surface(Surface::Slack, Some("member"), &[], &offers);
        let x: Vec<&AllowedTool> = member.tools.iter().filter(|t| t.name == "x").collect();
        assert_eq!(x.len(), 1);
        assert_eq!(x[0].source, beta);
        assert_eq!(member.admit("x").unwrap().source, beta);
        assert!(member.shadowed.is_empty());
        // An admin: both admit; alpha comes first in name order, beta is shadowed.
        let admin = allowed_tools(&GateInput {
            surface: Surface::Slack,
            access_level: Some("member"),
            is_admin: true,
            dashboard_admin: false,
            tier_declarations: &[],
            integration_tools: &offers,
        });
        assert_eq!(admin.admit("x").unwrap().source, alpha);
        assert_eq!(
            admin.shadowed,
            vec![ShadowedTool {
                name: "x".into(),
                source: beta,
                reason: "shadowed by integration alpha".into(),
            }]
        );
        // A core name shadows an integration tool that would be admitted.
        let kb = itool("who_knows", &["member"], &[], false);
        let s = surface(Surface::Slack, Some("member"), &[], &[kb]);
        assert_eq!(s.admit("who_knows").unwrap().source, ToolSource::Core);
        assert_eq!(s.shadowed[0].reason, "shadowed by core tool who_knows");
    }

    #[test]
    fn reserved_names_map_whatever_their_case_and_the_admin_marker_fails_closed() {
        assert_eq!(manifest_tier_for(Some("Unresolved ")), "unresolved");
        assert_eq!(manifest_tier_for(Some(" PUBLIC")), "public");
        assert_eq!(manifest_tier_for(Some("Public_Email")), "public");
        assert_eq!(manifest_tier_for(Some("__admin__")), "unresolved");
        assert_eq!(manifest_tier_for(Some(" __ADMIN__ ")), "unresolved");
        let s = surface(Surface::Slack, Some("Unresolved "), &[], &[]);
        assert_eq!(names(&s), UNRESOLVED_CORE_TOOLS.to_vec());
        assert!(s.degraded.is_some());
        let s = surface(Surface::Slack, Some("__admin__"), &[], &[]);
        assert_eq!(names(&s), UNRESOLVED_CORE_TOOLS.to_vec());
    }

    #[test]
    fn the_api_surface_forces_admin_flags_off() {
        let tools = [itool("admin_stats", &["__admin__"], &["api"], true)];
        let s = allowed_tools(&GateInput {
            surface: Surface::Api,
            access_level: Some("member"),
            is_admin: true,
            dashboard_admin: true,
            tier_declarations: &[],
            integration_tools: &tools,
        });
        assert!(!s.is_admin);
        assert!(!s.allows("admin_stats"));
        assert!(!s.allows("send_slack_dm_admin"));
    }

    #[test]
    fn dispatch_gate_admits_only_the_surface() {
        let s = surface(Surface::Slack, None, &[], &[]);
        assert!(s.admit("who_knows").is_ok());
        let refusal = s.admit("create_follow_up").unwrap_err();
        assert_eq!(
            refusal.message(),
            "The tool create_follow_up is not available in this conversation."
        );
    }
}

//! Community-build tools on the tool surface (§5.2, §15.1): offered after
//! core and integration tools, name-deduped (core wins, then
//! integrations), and gated by their declaration's tiers and channels
//! through the same function as every other tool.

use root::tools::gating::{BuildToolOffer, IntegrationToolOffer, ToolSource};
use root::tools::{GateInput, Surface, ToolSurface, allowed_tools};
use uuid::Uuid;

fn build(
    name: &str,
    build: &str,
    tiers: Option<&[&str]>,
    channels: Option<&[&str]>,
) -> BuildToolOffer {
    BuildToolOffer {
        name: name.into(),
        build: build.into(),
        install: Uuid::nil(),
        tiers: tiers.map(|t| t.iter().map(|s| s.to_string()).collect()),
        channels: channels.map(|c| c.iter().map(|s| s.to_string()).collect()),
    }
}

fn surface(s: Surface, level: &str, builds: &[BuildToolOffer]) -> ToolSurface {
    let integration = [IntegrationToolOffer {
        name: "lookup_member".into(),
        integration: "crm".into(),
        ..Default::default()
    }];
    allowed_tools(&GateInput {
        surface: s,
        access_level: Some(level),
        is_admin: false,
        dashboard_admin: false,
        dashboard_chat: false,
        tier_declarations: &[],
        integration_tools: &integration,
        build_tools: builds,
    })
}

#[test]
fn build_tools_come_last_and_core_then_integrations_win_a_name() {
    let builds = [
        build("who_is_on_duty", "duty-roster", None, None),
        build("search_knowledge_base", "evil-twin", None, None),
        build("lookup_member", "evil-twin", None, None),
        build("city_weather_now", "city-weather", None, None),
    ];
    let s = surface(Surface::Web, "member", &builds);
    let names: Vec<&str> = s.names().collect();
    let at = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n} missing: {names:?}"))
    };
    // Builds after the integration tool, which is after every core tool; builds in slug order.
    assert_eq!(names.last(), Some(&"who_is_on_duty"));
    assert_eq!(at("city_weather_now"), names.len() - 2);
    assert_eq!(at("lookup_member"), names.len() - 3);
    assert!(at("search_knowledge_base") < at("lookup_member"));
    // The clashing names stay with core and the integration.
    let source = |n: &str| &s.tools.iter().find(|t| t.name == n).unwrap().source;
    assert_eq!(source("search_knowledge_base"), &ToolSource::Core);
    assert_eq!(
        source("lookup_member"),
        &ToolSource::Integration {
            integration: "crm".into()
        }
    );
    assert_eq!(
        source("who_is_on_duty"),
        &ToolSource::CommunityBuild {
            build: "duty-roster".into(),
            install: Uuid::nil()
        }
    );
    assert_eq!(names.iter().filter(|n| **n == "lookup_member").count(), 1);
    let shadowed: Vec<(&str, &str)> = s
        .shadowed
        .iter()
        .map(|t| (t.name.as_str(), t.reason.as_str()))
        .collect();
    assert_eq!(
        shadowed,
        [
            (
                "search_knowledge_base",
                "shadowed by core tool search_knowledge_base"
            ),
            ("lookup_member", "shadowed by integration crm"),
        ]
    );
    let reason = &s
        .tools
        .iter()
        .find(|t| t.name == "who_is_on_duty")
        .unwrap()
        .reason;
    assert_eq!(reason, "community build duty-roster: no tier restriction");
}

#[test]
fn build_tools_follow_their_declared_tiers_and_channels() {
    let builds = [
        build("mentor_only", "b", Some(&["mentor"]), None),
        build("slack_only", "b", None, Some(&["slack"])),
        build("public_ok", "b", Some(&["public"]), None),
    ];
    let member_web = surface(Surface::Web, "member", &builds);
    assert!(!member_web.allows("mentor_only"));
    assert!(!member_web.allows("slack_only"));
    let mentor_slack = surface(Surface::Slack, "mentor", &builds);
    assert!(mentor_slack.allows("mentor_only"));
    assert!(mentor_slack.allows("slack_only"));
    // The public email surface takes only tools naming public explicitly.
    let public = surface(Surface::PublicEmail, "member", &builds);
    assert!(public.allows("public_ok"));
    assert!(!public.allows("slack_only"));
    // The unresolved tier gets no undeclared build tool.
    let unresolved = surface(Surface::Web, "unresolved", &builds);
    assert!(!unresolved.allows("slack_only") && !unresolved.allows("mentor_only"));
}

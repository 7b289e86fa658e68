//! Unit tests of `gating.rs`: the §5.2 rules, §7.5 materialization and
//! the audience-added groups (admin messaging, dashboard admin config).

use super::*;

fn decl(name: &str, core: Option<&[&str]>, kst: Option<&[&str]>) -> TierDeclaration {
    TierDeclaration {
        name: name.into(),
        core_tools: core.map(|c| c.iter().map(|s| s.to_string()).collect()),
        knowledge_source_types: kst.map(|c| c.iter().map(|s| s.to_string()).collect()),
        object_form: core.is_some() || kst.is_some(),
    }
}

fn itool(name: &str, tiers: &[&str], channels: &[&str], admin_only: bool) -> IntegrationToolOffer {
    IntegrationToolOffer {
        name: name.into(),
        integration: "foundations".into(),
        channels: (!channels.is_empty()).then(|| channels.iter().map(|s| s.to_string()).collect()),
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
        dashboard_chat: false,
        tier_declarations: decls,
        integration_tools: tools,
        build_tools: &[],
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
        dashboard_chat: false,
        tier_declarations: &[],
        integration_tools: &tools,
        build_tools: &[],
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
        dashboard_chat: false,
        tier_declarations: &[],
        integration_tools: &offers,
        build_tools: &[],
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
        dashboard_chat: true,
        tier_declarations: &[],
        integration_tools: &tools,
        build_tools: &[],
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

fn admin_config_names() -> Vec<&'static str> {
    CATALOG
        .iter()
        .filter(|t| t.group == ToolGroup::AdminConfig)
        .map(|t| t.name)
        .collect()
}

fn gate(surface: Surface, level: Option<&str>, admin: bool, chat: bool) -> ToolSurface {
    allowed_tools(&GateInput {
        surface,
        access_level: level,
        is_admin: admin,
        dashboard_admin: admin,
        dashboard_chat: chat,
        tier_declarations: &[],
        integration_tools: &[],
        build_tools: &[],
    })
}

#[test]
fn the_dashboard_chat_adds_the_admin_config_group_after_the_core_tools() {
    let s = gate(Surface::Web, Some("member"), false, true);
    let offered = names(&s);
    let admin = admin_config_names();
    assert_eq!(admin.len(), 22);
    // Core first (the web member set), then the admin config group in
    // catalog order.
    assert_eq!(offered[offered.len() - admin.len()..], admin[..]);
    let core = gate(Surface::Web, Some("member"), false, false);
    assert_eq!(offered[..offered.len() - admin.len()], names(&core)[..]);
    for n in &admin {
        let t = s.admit(n).unwrap();
        assert_eq!(t.source, ToolSource::AdminConfig);
        assert_eq!(t.reason, "admin config: dashboard /chat");
    }
    // The dashboard role is the authority: a reserved tier gets them too.
    let unresolved = gate(Surface::Web, None, false, true);
    assert!(admin.iter().all(|n| unresolved.allows(n)));
}

#[test]
fn no_other_surface_or_flag_gets_the_admin_config_tools() {
    let surfaces = [
        Surface::Slack,
        Surface::Email,
        Surface::Api,
        Surface::PublicEmail,
        Surface::Web,
    ];
    for surface in surfaces {
        for level in [None, Some("member"), Some("public"), Some("partner")] {
            for admin in [false, true] {
                for chat in [false, true] {
                    if surface == Surface::Web && chat {
                        continue;
                    }
                    let s = gate(surface, level, admin, chat);
                    for n in admin_config_names() {
                        assert!(
                            !s.allows(n),
                            "{n} on {surface:?} ({level:?}, admin {admin}, chat {chat})"
                        );
                        assert!(s.admit(n).is_err());
                    }
                }
            }
        }
    }
    // The API surface with the flag set: nothing (and admin flags stay off).
    let api = gate(Surface::Api, Some("member"), true, true);
    assert!(!api.is_admin);
    assert!(!api.allows("list_prompts"));
    // Web without the flag: the member surface only.
    assert!(!gate(Surface::Web, Some("member"), true, false).allows("update_prompt"));
}

#[test]
fn an_integration_tool_cannot_take_an_admin_config_name_on_the_dashboard_chat() {
    let tools = [itool("list_prompts", &["member"], &[], false)];
    let s = allowed_tools(&GateInput {
        surface: Surface::Web,
        access_level: Some("member"),
        is_admin: false,
        dashboard_admin: false,
        dashboard_chat: true,
        tier_declarations: &[],
        integration_tools: &tools,
        build_tools: &[],
    });
    assert_eq!(
        s.admit("list_prompts").unwrap().source,
        ToolSource::AdminConfig
    );
    assert_eq!(s.shadowed[0].reason, "shadowed by core tool list_prompts");
    // Elsewhere the integration's tool is offered as usual.
    let web = surface(Surface::Web, Some("member"), &[], &tools);
    assert!(matches!(
        web.admit("list_prompts").unwrap().source,
        ToolSource::Integration { .. }
    ));
}

//! Target `manifest`: the body a tenant backend returns from `GET manifest`
//! (root-int/1, §7.3), read the way `IntegrationClient::fetch_manifest`
//! reads it (bytes → JSON → [`Manifest::parse`]), then the §7.4 overrides and
//! the §7.5 materialization for every channel × tier × admin flag.
//!
//! Invariants checked: an accepted manifest satisfies every validation rule
//! and survives a serialize → parse round trip; a refusal names at least one
//! problem; overrides and audience filters only ever narrow, in order.

use root::integrations::endpoints::{EndpointPaths, tool_timeout};
use root::integrations::manifest::{
    ADMIN_TIER, CHANNELS, MAX_STATUS_LABEL_CHARS, MAX_TOOL_NAME_CHARS, MAX_TOOL_TIMEOUT_MS,
    Manifest, ManifestTool, PROTOCOL_PREFIX, RESERVED_TIERS, ToolOverride, ToolOverrides,
    effective_tools, link_destinations_for, materialize_tools, prompt_sections_for, tool_allows,
};
use serde_json::Value;

/// Declared tiers materialized per input at most (the loop is channels ×
/// tiers × admin flag).
const MAX_DECLARED_TIERS: usize = 6;

/// Parse, validate and materialize one manifest body.
pub fn run(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let manifest = match Manifest::parse(&value) {
        Ok(m) => m,
        Err(e) => {
            assert!(!e.0.is_empty(), "a refusal names its problems");
            assert!(e.to_string().starts_with("invalid manifest: "));
            return;
        }
    };
    check_valid(&manifest);
    let round_trip = serde_json::to_value(&manifest).expect("a manifest serializes");
    assert_eq!(
        Manifest::parse(&round_trip).as_ref(),
        Ok(&manifest),
        "an accepted manifest survives a round trip"
    );
    let overrides = overrides_for(&manifest);
    let effective = effective_tools(&manifest, &overrides);
    check_overrides(&manifest, &overrides, &effective);
    let paths = EndpointPaths::default();
    for tool in &effective {
        assert!(tool_timeout(tool.timeout_ms).as_millis() <= u128::from(MAX_TOOL_TIMEOUT_MS));
        assert!(paths.tool_path(&tool.name).starts_with('/'));
    }
    let mut tiers: Vec<&str> = manifest
        .access_tiers
        .iter()
        .take(MAX_DECLARED_TIERS)
        .map(|t| t.name.as_str())
        .collect();
    tiers.extend(RESERVED_TIERS);
    tiers.extend([ADMIN_TIER, "member"]);
    for channel in CHANNELS {
        for &tier in &tiers {
            for is_admin in [false, true] {
                check_audience(&manifest, &effective, channel, tier, is_admin);
            }
        }
    }
}

fn check_valid(m: &Manifest) {
    assert!(m.protocol.starts_with(PROTOCOL_PREFIX));
    let mut names = std::collections::HashSet::new();
    for tool in &m.tools {
        assert!(!tool.name.trim().is_empty());
        assert!(tool.name.chars().count() <= MAX_TOOL_NAME_CHARS);
        assert!(
            tool.name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        );
        assert!(names.insert(tool.name.as_str()), "tool names are unique");
        assert!(!tool.description.trim().is_empty());
        assert!(tool.parameters.is_object());
        assert!(
            tool.timeout_ms
                .is_none_or(|ms| (1..=MAX_TOOL_TIMEOUT_MS).contains(&ms))
        );
        assert!(
            tool.status_label
                .as_ref()
                .is_none_or(|l| l.chars().count() <= MAX_STATUS_LABEL_CHARS)
        );
        assert_known_channels(tool.channels.as_deref());
    }
    for section in &m.prompt_sections {
        assert!(!section.content.trim().is_empty());
        assert_known_channels(section.channels.as_deref());
    }
    for detail in &m.link_destination_details {
        assert!(!detail.destination.trim().is_empty());
        assert_known_channels(detail.channels.as_deref());
    }
    assert!(m.access_tiers.iter().all(|t| !t.name.trim().is_empty()));
    assert!(m.link_destinations.iter().all(|d| !d.trim().is_empty()));
}

fn assert_known_channels(channels: Option<&[String]>) {
    for c in channels.unwrap_or_default() {
        assert!(
            CHANNELS.contains(&c.as_str()),
            "unknown channel {c:?} accepted"
        );
    }
}

/// Overrides of the kinds an admin sets, over the manifest's first tools:
/// remove, re-channel, re-tier, make admin-only with a new description.
fn overrides_for(m: &Manifest) -> ToolOverrides {
    m.tools
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, tool)| {
            let o = match i {
                0 => ToolOverride {
                    removed: true,
                    ..ToolOverride::default()
                },
                1 => ToolOverride {
                    channels: Some(vec!["api".into()]),
                    ..ToolOverride::default()
                },
                2 => ToolOverride {
                    tiers: Some(vec![ADMIN_TIER.into()]),
                    ..ToolOverride::default()
                },
                _ => ToolOverride {
                    admin_only: Some(true),
                    description: Some("Overridden.".into()),
                    ..ToolOverride::default()
                },
            };
            (tool.name.clone(), o)
        })
        .collect()
}

fn check_overrides(m: &Manifest, overrides: &ToolOverrides, effective: &[ManifestTool]) {
    let kept: Vec<&ManifestTool> = m
        .tools
        .iter()
        .filter(|t| !overrides.get(&t.name).is_some_and(|o| o.removed))
        .collect();
    assert_eq!(kept.len(), effective.len(), "only `removed` drops a tool");
    for (original, eff) in kept.into_iter().zip(effective) {
        assert_eq!(original.name, eff.name, "overrides keep manifest order");
        assert_eq!(original.parameters, eff.parameters);
        let Some(o) = overrides.get(&eff.name) else {
            assert_eq!(original, eff);
            continue;
        };
        if let Some(c) = &o.channels {
            assert_eq!(eff.channels.as_ref(), Some(c));
        }
        if let Some(t) = &o.tiers {
            assert_eq!(eff.tiers.as_ref(), Some(t));
        }
        if let Some(a) = o.admin_only {
            assert_eq!(eff.admin_only, a);
        }
        if let Some(d) = &o.description {
            assert_eq!(&eff.description, d);
        }
    }
}

fn check_audience(
    m: &Manifest,
    effective: &[ManifestTool],
    channel: &str,
    tier: &str,
    is_admin: bool,
) {
    let offered = materialize_tools(effective, channel, tier, is_admin);
    let mut rest = effective.iter();
    for tool in &offered {
        assert!(
            rest.any(|t| t == tool),
            "materialized tools are an ordered subset"
        );
        assert!(tool_allows(tool, channel, tier, is_admin));
        assert!(!tool.admin_only || is_admin, "admin-only tool offered");
        if !is_admin && RESERVED_TIERS.contains(&tier) {
            assert!(
                tool.tiers
                    .as_ref()
                    .is_some_and(|ts| ts.iter().any(|t| t == tier)),
                "a reserved tier only sees tools that name it"
            );
        }
    }
    let sections = prompt_sections_for(m, channel, tier, is_admin);
    assert!(sections.len() <= m.prompt_sections.len());
    let links = link_destinations_for(m, channel, tier, is_admin);
    assert!(
        links
            .details
            .iter()
            .all(|d| m.link_destination_details.contains(d))
    );
    assert_eq!(links.public_guide_url, m.public_guide_url);
}

//! The root-int/1 manifest (§7.3), per-integration `tool_overrides` (§7.4),
//! and materialization (§7.5) as pure functions of (manifest, overrides,
//! channel, tier, is_admin).
//!
//! Audience rule shared by tools, prompt sections and link destinations:
//! the channel must be listed (no `channels` = every channel), and the
//! `tiers` must include the principal's tier, or `__admin__` for an admin.
//! No `tiers` means every tenant tier — the reserved tiers `unresolved`,
//! `public` and `public_email` only ever see what names them explicitly.

use std::collections::{BTreeMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Required prefix of `protocol`.
pub const PROTOCOL_PREFIX: &str = "root-int/";
pub use crate::platform::tiers::{
    ADMIN_TIER, RESERVED_TIERS, canonical_reserved_tier, is_reserved_tier,
};
/// The channels a tool or section can name.
pub const CHANNELS: [&str; 4] = ["slack", "email", "api", "web"];
/// Longest `status_label`.
pub const MAX_STATUS_LABEL_CHARS: usize = 120;
/// Longest tool name (the LLM function-name limit).
pub const MAX_TOOL_NAME_CHARS: usize = 64;
/// Largest `timeout_ms` a tool may declare (10 minutes).
pub const MAX_TOOL_TIMEOUT_MS: u64 = 600_000;

/// A validated manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// `root-int/<version>`.
    pub protocol: String,
    /// The backend's own name for itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The tenant's tier vocabulary.
    #[serde(default)]
    pub access_tiers: Vec<AccessTier>,
    /// The tools the backend offers.
    #[serde(default)]
    pub tools: Vec<ManifestTool>,
    /// System-prompt sections, filtered by audience.
    #[serde(default)]
    pub prompt_sections: Vec<PromptSection>,
    /// Destinations `links_issue` can mint URLs for.
    #[serde(default)]
    pub link_destinations: Vec<String>,
    /// Titles and prompt summaries of destinations.
    #[serde(default)]
    pub link_destination_details: Vec<LinkDestinationDetail>,
    /// The public guide (a fallback link for unresolved users).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_guide_url: Option<String>,
}

/// An `access_tiers` entry: a bare name or `{name, core_tools?,
/// knowledge_source_types?, member_scoped?}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "AccessTierWire")]
pub struct AccessTier {
    /// Tier name.
    pub name: String,
    /// Core tools this tier gets (absent = the platform's default set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub core_tools: Option<Vec<String>>,
    /// Knowledge source types this tier may search (absent = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub knowledge_source_types: Option<Vec<String>>,
    /// Member-scoped tier (per-member data only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member_scoped: Option<bool>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum AccessTierWire {
    Name(String),
    Object {
        name: String,
        #[serde(default)]
        core_tools: Option<Vec<String>>,
        #[serde(default)]
        knowledge_source_types: Option<Vec<String>>,
        #[serde(default)]
        member_scoped: Option<bool>,
    },
}

impl From<AccessTierWire> for AccessTier {
    fn from(w: AccessTierWire) -> Self {
        match w {
            AccessTierWire::Name(name) => AccessTier {
                name,
                core_tools: None,
                knowledge_source_types: None,
                member_scoped: None,
            },
            AccessTierWire::Object {
                name,
                core_tools,
                knowledge_source_types,
                member_scoped,
            } => AccessTier {
                name,
                core_tools,
                knowledge_source_types,
                member_scoped,
            },
        }
    }
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

/// A tool the backend offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ManifestTool {
    /// Function name offered to the model.
    pub name: String,
    /// Description offered to the model.
    pub description: String,
    /// Raw JSON Schema of the arguments (default: an empty object schema).
    #[serde(default = "empty_object_schema")]
    pub parameters: Value,
    /// Channels where the tool is offered (absent = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// Tiers that get the tool (absent = every non-reserved tier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// Only admins get it.
    #[serde(default)]
    pub admin_only: bool,
    /// Invocation bound (default 120 s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
    /// Status line shown while it runs (≤ 120 chars).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_label: Option<String>,
    /// The tool only reads (Root's optional extension of root-int/1):
    /// absent = it may change state, so an email delegate's call passes
    /// the authorization gate first (§8.3).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub read_only: bool,
}

/// A system-prompt section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PromptSection {
    /// Channels (absent = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// Tiers (absent = every non-reserved tier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// The text injected into the system prompt.
    pub content: String,
}

/// A link destination's presentation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkDestinationDetail {
    /// The destination key passed to `links_issue`.
    pub destination: String,
    /// Human title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Path on the backend's web app.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// One line for the system prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_summary: Option<String>,
    /// Channels (absent = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// Tiers (absent = every non-reserved tier).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
}

/// Why a manifest was refused; the message lists every problem found.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid manifest: {}", .0.join("; "))]
pub struct ManifestError(pub Vec<String>);

impl Manifest {
    /// Parse and validate a manifest document.
    ///
    /// Rules: `protocol` starts with `root-int/`; every tool has a non-empty
    /// name (≤ 64 chars of `A–Z a–z 0–9 _ -`, unique in the manifest) and a
    /// non-empty description; `parameters` is a JSON object; channels are
    /// among slack/email/api/web; `timeout_ms` is 1–600000; `status_label`
    /// is at most 120 chars; prompt sections have content; access tiers and
    /// link destinations have names.
    pub fn parse(value: &Value) -> Result<Manifest, ManifestError> {
        if !value.is_object() {
            return Err(ManifestError(vec![
                "the manifest must be a JSON object".into(),
            ]));
        }
        let manifest: Manifest = serde_json::from_value(value.clone())
            .map_err(|e| ManifestError(vec![e.to_string()]))?;
        manifest.validate()?;
        Ok(manifest)
    }

    fn validate(&self) -> Result<(), ManifestError> {
        let mut problems = Vec::new();
        if !self.protocol.starts_with(PROTOCOL_PREFIX) {
            problems.push(format!(
                "protocol must start with {PROTOCOL_PREFIX} (got {:?})",
                self.protocol
            ));
        }
        for (i, t) in self.access_tiers.iter().enumerate() {
            if t.name.trim().is_empty() {
                problems.push(format!("access_tiers[{i}]: name must not be empty"));
            } else if canonical_reserved_tier(&t.name) == Some(ADMIN_TIER) {
                problems.push(format!(
                    "access_tiers[{i}]: {ADMIN_TIER} is the admins' marker in tool tiers, not a tier"
                ));
            }
        }
        let mut seen = HashSet::new();
        for (i, tool) in self.tools.iter().enumerate() {
            let at = if tool.name.trim().is_empty() {
                format!("tools[{i}]")
            } else {
                format!("tools[{i}] ({})", tool.name)
            };
            if tool.name.trim().is_empty() {
                problems.push(format!("{at}: name must not be empty"));
            } else if tool.name.chars().count() > MAX_TOOL_NAME_CHARS
                || !tool
                    .name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
            {
                problems.push(format!(
                    "{at}: name must be 1–{MAX_TOOL_NAME_CHARS} characters of A–Z a–z 0–9 _ -"
                ));
            } else if !seen.insert(tool.name.as_str()) {
                problems.push(format!("{at}: duplicate tool name"));
            }
            if tool.description.trim().is_empty() {
                problems.push(format!("{at}: description must not be empty"));
            }
            if !tool.parameters.is_object() {
                problems.push(format!("{at}: parameters must be a JSON Schema object"));
            }
            check_channels(&at, tool.channels.as_deref(), &mut problems);
            if let Some(ms) = tool.timeout_ms
                && !(1..=MAX_TOOL_TIMEOUT_MS).contains(&ms)
            {
                problems.push(format!(
                    "{at}: timeout_ms must be between 1 and {MAX_TOOL_TIMEOUT_MS}"
                ));
            }
            if let Some(label) = &tool.status_label
                && label.chars().count() > MAX_STATUS_LABEL_CHARS
            {
                problems.push(format!(
                    "{at}: status_label must be at most {MAX_STATUS_LABEL_CHARS} characters"
                ));
            }
        }
        for (i, s) in self.prompt_sections.iter().enumerate() {
            let at = format!("prompt_sections[{i}]");
            if s.content.trim().is_empty() {
                problems.push(format!("{at}: content must not be empty"));
            }
            check_channels(&at, s.channels.as_deref(), &mut problems);
        }
        for (i, d) in self.link_destinations.iter().enumerate() {
            if d.trim().is_empty() {
                problems.push(format!("link_destinations[{i}]: must not be empty"));
            }
        }
        for (i, d) in self.link_destination_details.iter().enumerate() {
            let at = format!("link_destination_details[{i}]");
            if d.destination.trim().is_empty() {
                problems.push(format!("{at}: destination must not be empty"));
            }
            check_channels(&at, d.channels.as_deref(), &mut problems);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ManifestError(problems))
        }
    }

    /// The declared tier named `name`, if any.
    pub fn access_tier(&self, name: &str) -> Option<&AccessTier> {
        self.access_tiers.iter().find(|t| t.name == name)
    }
}

fn check_channels(at: &str, channels: Option<&[String]>, problems: &mut Vec<String>) {
    for c in channels.unwrap_or_default() {
        if !CHANNELS.contains(&c.as_str()) {
            problems.push(format!(
                "{at}: unknown channel {c:?} (known: {})",
                CHANNELS.join(", ")
            ));
        }
    }
}

/// One entry of `integrations.tool_overrides` (§7.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// Drop the tool.
    #[serde(default)]
    pub removed: bool,
    /// Replace the description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Replace the channels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// Replace the tiers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// Replace `admin_only`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_only: Option<bool>,
}

/// `tool name → override`.
pub type ToolOverrides = BTreeMap<String, ToolOverride>;

/// Parse `tool_overrides` (`null` or `{}` = none).
pub fn parse_tool_overrides(value: &Value) -> Result<ToolOverrides, String> {
    match value {
        Value::Null => Ok(ToolOverrides::new()),
        Value::Object(_) => {
            serde_json::from_value(value.clone()).map_err(|e| format!("tool_overrides: {e}"))
        }
        _ => Err("tool_overrides must be an object of tool name → override".into()),
    }
}

/// The manifest's tools with the overrides applied (§7.4): `removed`
/// drops a tool; description, channels, tiers and admin_only replace the
/// manifest's values. This is the list every gate starts from.
pub fn effective_tools(manifest: &Manifest, overrides: &ToolOverrides) -> Vec<ManifestTool> {
    manifest
        .tools
        .iter()
        .filter_map(|tool| {
            let Some(o) = overrides.get(&tool.name) else {
                return Some(tool.clone());
            };
            if o.removed {
                return None;
            }
            let mut t = tool.clone();
            if let Some(d) = &o.description {
                t.description = d.clone();
            }
            if let Some(c) = &o.channels {
                t.channels = Some(c.clone());
            }
            if let Some(tiers) = &o.tiers {
                t.tiers = Some(tiers.clone());
            }
            if let Some(a) = o.admin_only {
                t.admin_only = a;
            }
            Some(t)
        })
        .collect()
}

/// The channel half of the audience rule.
pub fn channel_allows(channels: Option<&[String]>, channel: &str) -> bool {
    channels.is_none_or(|cs| cs.iter().any(|c| c == channel))
}

/// The tier half of the audience rule: listed tier, or `__admin__` for an
/// admin; no list = every non-reserved tier (and every admin).
pub fn tier_allows(tiers: Option<&[String]>, tier: &str, is_admin: bool) -> bool {
    match tiers {
        None => is_admin || !is_reserved_tier(tier),
        Some(ts) => ts
            .iter()
            .any(|t| t == tier || (is_admin && t == ADMIN_TIER)),
    }
}

/// Does `tool` reach this principal on this channel? Channel, then
/// `admin_only ⇒ is_admin`, then tiers (§7.5).
pub fn tool_allows(tool: &ManifestTool, channel: &str, tier: &str, is_admin: bool) -> bool {
    channel_allows(tool.channels.as_deref(), channel)
        && (!tool.admin_only || is_admin)
        && tier_allows(tool.tiers.as_deref(), tier, is_admin)
}

/// The tools of `effective` (see [`effective_tools`]) offered to a
/// principal of `tier` on `channel`, in manifest order.
pub fn materialize_tools(
    effective: &[ManifestTool],
    channel: &str,
    tier: &str,
    is_admin: bool,
) -> Vec<ManifestTool> {
    effective
        .iter()
        .filter(|t| tool_allows(t, channel, tier, is_admin))
        .cloned()
        .collect()
}

/// The prompt sections' content for this audience, in manifest order.
pub fn prompt_sections_for(
    manifest: &Manifest,
    channel: &str,
    tier: &str,
    is_admin: bool,
) -> Vec<String> {
    manifest
        .prompt_sections
        .iter()
        .filter(|s| {
            channel_allows(s.channels.as_deref(), channel)
                && tier_allows(s.tiers.as_deref(), tier, is_admin)
        })
        .map(|s| s.content.clone())
        .collect()
}

/// Link destinations for one audience.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LinkDestinations {
    /// Destination keys (`link_destinations` plus allowed detail entries).
    pub destinations: Vec<String>,
    /// Allowed `link_destination_details`.
    pub details: Vec<LinkDestinationDetail>,
    /// `public_guide_url`, for every audience.
    pub public_guide_url: Option<String>,
}

/// The link destinations this audience may be sent to. Plain
/// `link_destinations` entries follow the rule with no channels and no
/// tiers; a destination with a detail entry follows the detail's lists.
pub fn link_destinations_for(
    manifest: &Manifest,
    channel: &str,
    tier: &str,
    is_admin: bool,
) -> LinkDestinations {
    let allowed = |channels: Option<&[String]>, tiers: Option<&[String]>| {
        channel_allows(channels, channel) && tier_allows(tiers, tier, is_admin)
    };
    let details: Vec<LinkDestinationDetail> = manifest
        .link_destination_details
        .iter()
        .filter(|d| allowed(d.channels.as_deref(), d.tiers.as_deref()))
        .cloned()
        .collect();
    let detailed: HashSet<&str> = manifest
        .link_destination_details
        .iter()
        .map(|d| d.destination.as_str())
        .collect();
    let mut destinations: Vec<String> = manifest
        .link_destinations
        .iter()
        .filter(|d| !detailed.contains(d.as_str()) && allowed(None, None))
        .cloned()
        .collect();
    for d in &details {
        if !destinations.contains(&d.destination) {
            destinations.push(d.destination.clone());
        }
    }
    LinkDestinations {
        destinations,
        details,
        public_guide_url: manifest.public_guide_url.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn manifest() -> Manifest {
        Manifest::parse(&json!({
            "protocol": "root-int/1",
            "name": "foundations",
            "access_tiers": [
                {"name": "member", "core_tools": ["search_knowledge_base"]},
                "partner"
            ],
            "tools": [
                {"name": "lookup_member", "description": "Find a member",
                 "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}},
                {"name": "book_room", "description": "Book a room", "tiers": ["member"],
                 "channels": ["slack", "web"]},
                {"name": "admin_stats", "description": "Stats", "admin_only": true,
                 "tiers": ["member", "__admin__"]},
                {"name": "public_faq", "description": "FAQ", "tiers": ["public", "public_email", "member"]},
                {"name": "staff_only", "description": "Staff", "tiers": ["__admin__"]}
            ],
            "prompt_sections": [
                {"content": "Everyone (tenant tiers)"},
                {"channels": ["email"], "tiers": ["partner"], "content": "Partners by email"},
                {"tiers": ["public"], "content": "Public"},
                {"tiers": ["__admin__"], "content": "Admins"}
            ],
            "link_destinations": ["dashboard", "billing"],
            "link_destination_details": [
                {"destination": "billing", "title": "Billing", "path": "/billing",
                 "prompt_summary": "invoices", "tiers": ["member"]},
                {"destination": "events", "title": "Events", "channels": ["slack"]}
            ],
            "public_guide_url": "https://example.org/guide"
        }))
        .unwrap()
    }

    fn names(tools: &[ManifestTool]) -> Vec<&str> {
        tools.iter().map(|t| t.name.as_str()).collect()
    }

    #[test]
    fn access_tiers_accept_strings_and_objects() {
        let m = manifest();
        assert_eq!(
            m.access_tier("member").unwrap().core_tools.as_deref(),
            Some(&["search_knowledge_base".to_string()][..])
        );
        let partner = m.access_tier("partner").unwrap();
        assert_eq!(partner.core_tools, None);
        assert_eq!(partner.member_scoped, None);
        // Parameters default to an empty object schema.
        assert_eq!(
            m.tools[1].parameters,
            json!({"type": "object", "properties": {}})
        );
        // Round trip through the stored form.
        let stored = serde_json::to_value(&m).unwrap();
        assert_eq!(Manifest::parse(&stored).unwrap(), m);
    }

    #[test]
    fn validation_lists_every_problem() {
        let err = Manifest::parse(&json!({
            "protocol": "mcp/1",
            "tools": [
                {"name": "", "description": "x"},
                {"name": "ok", "description": "  "},
                {"name": "ok", "description": "dup"},
                {"name": "has space", "description": "x"},
                {"name": "slow", "description": "x", "timeout_ms": 0},
                {"name": "chatty", "description": "x", "status_label": "x".repeat(121)},
                {"name": "nochan", "description": "x", "channels": ["sms"]},
                {"name": "schema", "description": "x", "parameters": "string"}
            ],
            "prompt_sections": [{"content": ""}]
        }))
        .unwrap_err();
        let text = err.to_string();
        for needle in [
            "protocol must start with root-int/",
            "tools[0]: name must not be empty",
            "tools[1] (ok): description must not be empty",
            "tools[2] (ok): duplicate tool name",
            "tools[3] (has space): name must be",
            "tools[4] (slow): timeout_ms",
            "tools[5] (chatty): status_label",
            "tools[6] (nochan): unknown channel \"sms\"",
            "tools[7] (schema): parameters",
            "prompt_sections[0]: content",
        ] {
            assert!(text.contains(needle), "{needle} not in {text}");
        }
        // Missing description / wrong types are serde errors, still clear.
        let e = Manifest::parse(&json!({"protocol": "root-int/1", "tools": [{"name": "x"}]}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("description"), "{e}");
        assert!(Manifest::parse(&json!([])).is_err());
        assert!(Manifest::parse(&json!({"protocol": "root-int/1"})).is_ok());
        // A label of exactly 120 characters is fine.
        let ok = json!({"protocol": "root-int/2", "tools": [
            {"name": "t", "description": "d", "status_label": "x".repeat(120), "timeout_ms": 600000}]});
        assert!(Manifest::parse(&ok).is_ok());
    }

    #[test]
    fn the_admin_marker_is_not_an_access_tier_and_reserved_names_ignore_case() {
        for name in ["__admin__", " __Admin__ "] {
            let err = Manifest::parse(&json!({"protocol": "root-int/1",
                "access_tiers": ["member", {"name": name, "core_tools": ["who_knows"]}]}))
            .unwrap_err()
            .to_string();
            assert!(
                err.contains("access_tiers[1]: __admin__ is the admins' marker"),
                "{err}"
            );
        }
        for reserved in [
            "unresolved",
            "Unresolved ",
            " PUBLIC",
            "public_email",
            "__admin__",
        ] {
            assert!(is_reserved_tier(reserved), "{reserved:?}");
        }
        assert_eq!(canonical_reserved_tier("Unresolved "), Some("unresolved"));
        assert_eq!(canonical_reserved_tier(" __ADMIN__"), Some(ADMIN_TIER));
        assert_eq!(canonical_reserved_tier("member"), None);
        assert!(!is_reserved_tier("publicity"));
        // No tiers list: a padded reserved tier still gets nothing.
        assert!(!tier_allows(None, "Unresolved ", false));
    }

    #[test]
    fn overrides_remove_and_replace_before_gating() {
        let m = manifest();
        let overrides = parse_tool_overrides(&json!({
            "lookup_member": {"removed": true},
            "book_room": {"description": "Reserve a room", "channels": ["email"], "tiers": ["partner"]},
            "admin_stats": {"admin_only": false},
            "not_in_manifest": {"removed": true}
        }))
        .unwrap();
        let eff = effective_tools(&m, &overrides);
        assert_eq!(
            names(&eff),
            ["book_room", "admin_stats", "public_faq", "staff_only"]
        );
        let book = &eff[0];
        assert_eq!(book.description, "Reserve a room");
        assert_eq!(book.channels.as_deref(), Some(&["email".to_string()][..]));
        // Gating sees the overridden values: partner on email gets book_room,
        // a member on slack no longer does; admin_stats is open to members.
        assert_eq!(
            names(&materialize_tools(&eff, "email", "partner", false)),
            ["book_room"]
        );
        assert_eq!(
            names(&materialize_tools(&eff, "slack", "member", false)),
            ["admin_stats", "public_faq"]
        );
        assert!(parse_tool_overrides(&json!({"x": {"hidden": true}})).is_err());
        assert!(parse_tool_overrides(&json!([])).is_err());
        assert!(parse_tool_overrides(&Value::Null).unwrap().is_empty());
    }

    #[test]
    fn materialization_filters_channel_then_admin_only_then_tiers() {
        let eff = effective_tools(&manifest(), &ToolOverrides::new());
        // Member on slack: no-tiers tool, member tier tools; not admin-only, not staff.
        assert_eq!(
            names(&materialize_tools(&eff, "slack", "member", false)),
            ["lookup_member", "book_room", "public_faq"]
        );
        // Channel filter: book_room is slack/web only.
        assert_eq!(
            names(&materialize_tools(&eff, "email", "member", false)),
            ["lookup_member", "public_faq"]
        );
        // Admin with the member tier: admin_only passes, __admin__ admits staff_only.
        assert_eq!(
            names(&materialize_tools(&eff, "slack", "member", true)),
            [
                "lookup_member",
                "book_room",
                "admin_stats",
                "public_faq",
                "staff_only"
            ]
        );
        // Admin of another tier: book_room (tiers [member]) is not theirs.
        assert_eq!(
            names(&materialize_tools(&eff, "api", "partner", true)),
            ["lookup_member", "admin_stats", "staff_only"]
        );
        // admin_only with a matching tier but no admin flag: refused.
        let t = &eff[2];
        assert!(!tool_allows(t, "slack", "member", false));
        // Reserved tiers only get what names them.
        assert_eq!(
            names(&materialize_tools(&eff, "email", "public_email", false)),
            ["public_faq"]
        );
        assert!(materialize_tools(&eff, "slack", "unresolved", false).is_empty());
        // An undeclared tenant tier still gets the no-tiers tools.
        assert_eq!(
            names(&materialize_tools(&eff, "web", "alumni", false)),
            ["lookup_member"]
        );
    }

    #[test]
    fn prompt_sections_and_links_follow_the_same_audience_rule() {
        let m = manifest();
        assert_eq!(
            prompt_sections_for(&m, "slack", "member", false),
            ["Everyone (tenant tiers)"]
        );
        assert_eq!(
            prompt_sections_for(&m, "email", "partner", false),
            ["Everyone (tenant tiers)", "Partners by email"]
        );
        assert!(prompt_sections_for(&m, "slack", "partner", false).len() == 1);
        assert_eq!(prompt_sections_for(&m, "web", "public", false), ["Public"]);
        assert_eq!(
            prompt_sections_for(&m, "slack", "partner", true),
            ["Everyone (tenant tiers)", "Admins"]
        );

        let member_slack = link_destinations_for(&m, "slack", "member", false);
        assert_eq!(
            member_slack.destinations,
            ["dashboard", "billing", "events"]
        );
        assert_eq!(member_slack.details.len(), 2);
        let partner_email = link_destinations_for(&m, "email", "partner", false);
        assert_eq!(partner_email.destinations, ["dashboard"]);
        assert!(partner_email.details.is_empty());
        let public = link_destinations_for(&m, "slack", "public", false);
        assert!(public.destinations.is_empty());
        assert_eq!(
            public.public_guide_url.as_deref(),
            Some("https://example.org/guide")
        );
    }
}

//! Tenant settings (`tenants.settings`): the access policy (§9) as a typed
//! view with its channel-trust rules, and validated dotted-path edits — the
//! one validator the CLI (`root tenant settings`) and the dashboard's
//! `/access` page use, so a bad value is refused with a clear message instead of silently
//! changing who can use what.

use serde_json::{Map, Value};

use crate::platform::tiers::{Tier, is_reserved_tier};

/// `settings.access.slack`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SlackAccess {
    /// Every workspace user gets `default_tier` (default).
    Open,
    /// Only the integration's identity resolve grants a tier.
    Integration,
}

/// `settings.access.email`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmailAccess {
    /// Trusted addresses/domains get `default_tier` (default).
    Domains,
    /// Only the integration's identity resolve grants a tier.
    Integration,
}

/// The access policy (§9) with the spec's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessPolicy {
    /// Slack mode.
    pub slack: SlackAccess,
    /// Email mode.
    pub email: EmailAccess,
    /// Tier channel trust grants (`member`).
    pub default_tier: String,
    /// Trusted domains (subdomains included), lower-case.
    pub email_domains: Vec<String>,
    /// Trusted addresses, lower-case.
    pub email_addresses: Vec<String>,
    /// Dashboard users are trusted as members (true).
    pub dashboard_users: bool,
}

impl Default for AccessPolicy {
    fn default() -> Self {
        AccessPolicy {
            slack: SlackAccess::Open,
            email: EmailAccess::Domains,
            default_tier: "member".into(),
            email_domains: Vec::new(),
            email_addresses: Vec::new(),
            dashboard_users: true,
        }
    }
}

/// A tier granted by channel trust, with the `traits.tier_source` stamp
/// that lets it be revoked when the policy changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrustGrant {
    /// The granted tier (`default_tier`).
    pub tier: String,
    /// `channel_trust` or `dashboard_user`.
    pub tier_source: &'static str,
}

impl AccessPolicy {
    /// Read `settings.access`; unknown or malformed fields take defaults
    /// (edits are validated on the way in by [`apply_setting`]).
    pub fn from_settings(settings: &Value) -> AccessPolicy {
        let a = &settings["access"];
        let d = AccessPolicy::default();
        let list = |k: &str| -> Vec<String> {
            a[k].as_array()
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .map(|s| s.trim().to_lowercase())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        AccessPolicy {
            slack: match a["slack"].as_str() {
                Some("integration") => SlackAccess::Integration,
                _ => SlackAccess::Open,
            },
            email: match a["email"].as_str() {
                Some("integration") => EmailAccess::Integration,
                _ => EmailAccess::Domains,
            },
            default_tier: a["default_tier"]
                .as_str()
                .map(str::trim)
                .filter(|t| !t.is_empty() && !is_reserved_tier(t))
                .map(str::to_string)
                .unwrap_or(d.default_tier),
            email_domains: list("email_domains"),
            email_addresses: list("email_addresses"),
            dashboard_users: a["dashboard_users"].as_bool().unwrap_or(d.dashboard_users),
        }
    }

    /// Slack channel trust: `open` grants every workspace user `default_tier`.
    pub fn slack_trust(&self) -> Option<TrustGrant> {
        (self.slack == SlackAccess::Open).then(|| TrustGrant {
            tier: self.default_tier.clone(),
            tier_source: "channel_trust",
        })
    }

    /// Email channel trust: in `domains` mode a listed address or a listed
    /// domain (subdomains included) gets `default_tier`; a dashboard user
    /// gets it when `dashboard_users` is on. Everyone else: `None` (the
    /// public email surface).
    pub fn email_trust(&self, address: &str, is_dashboard_user: bool) -> Option<TrustGrant> {
        let addr = address.trim().to_lowercase();
        if self.dashboard_users && is_dashboard_user {
            return Some(TrustGrant {
                tier: self.default_tier.clone(),
                tier_source: "dashboard_user",
            });
        }
        if self.email != EmailAccess::Domains {
            return None;
        }
        let domain = addr.rsplit_once('@').map(|(_, d)| d)?;
        let trusted = self.email_addresses.contains(&addr)
            || self
                .email_domains
                .iter()
                .any(|d| domain == d || domain.ends_with(&format!(".{d}")));
        trusted.then(|| TrustGrant {
            tier: self.default_tier.clone(),
            tier_source: "channel_trust",
        })
    }
}

/// Parse a CLI value: JSON when it parses (`true`, `30`, `["a"]`), else a
/// plain string.
pub fn parse_value(raw: &str) -> Value {
    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_string()))
}

/// A Slack id starting with one of `prefixes` (`C…`, `U…`): upper-case
/// letters and digits, 3 to 24 characters.
fn is_slack_id(s: &str, prefixes: &[char]) -> bool {
    s.len() >= 3
        && s.len() <= 24
        && s.starts_with(prefixes)
        && s.chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

fn is_user_id(s: &str) -> bool {
    is_slack_id(s, &['U', 'W'])
}

fn is_domain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.contains('.')
        && s.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        })
}

fn is_https_url(s: &str) -> bool {
    s.len() <= 2048
        && reqwest::Url::parse(s)
            .is_ok_and(|u| u.scheme() == "https" && u.host_str().is_some_and(|h| !h.is_empty()))
}

fn is_email(s: &str) -> bool {
    s.split_once('@').is_some_and(|(local, domain)| {
        !local.is_empty() && !local.contains(' ') && is_domain(domain)
    })
}

/// Check one setting before it is stored. Known paths get their rules;
/// unknown top-level groups are refused so typos do not pass silently.
pub fn validate_setting(path: &str, value: &Value) -> Result<Value, String> {
    let strings = |v: &Value, check: fn(&str) -> bool, what: &str| -> Result<Value, String> {
        let arr = v
            .as_array()
            .ok_or_else(|| format!("{path} must be a JSON array of {what}s"))?;
        let mut out = Vec::new();
        for item in arr {
            let s = item
                .as_str()
                .map(|s| s.trim().to_lowercase())
                .ok_or_else(|| format!("{path}: every entry must be a string"))?;
            if !check(&s) {
                return Err(format!("{path}: {s:?} is not a valid {what}"));
            }
            out.push(Value::String(s));
        }
        Ok(Value::Array(out))
    };
    match path {
        "access.slack" => match value.as_str() {
            Some("open" | "integration") => Ok(value.clone()),
            _ => Err("access.slack must be \"open\" or \"integration\"".into()),
        },
        "access.email" => match value.as_str() {
            Some("domains" | "integration") => Ok(value.clone()),
            _ => Err("access.email must be \"domains\" or \"integration\"".into()),
        },
        "access.default_tier" => match value.as_str().map(str::trim) {
            Some(t) if is_reserved_tier(t) => Err(format!(
                "access.default_tier cannot be the reserved tier {t:?}"
            )),
            Some(t) if !t.is_empty() => match Tier::parse(t) {
                Ok(_) => Ok(Value::String(t.into())),
                Err(e) => Err(format!("access.default_tier: {e}")),
            },
            _ => Err("access.default_tier must be a non-empty tier name".into()),
        },
        "access.email_domains" => strings(value, is_domain, "domain"),
        "access.email_addresses" => strings(value, is_email, "email address"),
        // §15.2: where the email notification sink sends admin notices.
        "admin_emails" => strings(value, is_email, "email address"),
        "access.dashboard_users" => value
            .as_bool()
            .map(Value::Bool)
            .ok_or_else(|| "access.dashboard_users must be true or false".into()),
        // §2.1: an external logo for the public pages; https only (pages
        // are served over https in production, and no other scheme is an
        // image source a page should load).
        "logo_url" => match value {
            Value::String(u) if is_https_url(u.trim()) => Ok(Value::String(u.trim().into())),
            Value::Null => Ok(Value::Null),
            _ => Err("logo_url must be an https:// URL of an image (or null)".into()),
        },
        "persona" | "agent_character" | "community_context" => match value {
            Value::String(_) | Value::Null => Ok(value.clone()),
            _ => Err(format!("{path} must be a string")),
        },
        "notifications.slack_channel" => match value {
            Value::String(c) if is_slack_id(c.trim(), &['C', 'G']) => {
                Ok(Value::String(c.trim().into()))
            }
            Value::Null => Ok(Value::Null),
            _ => Err("notifications.slack_channel must be a Slack channel id (C… or G…)".into()),
        },
        "notifications.slack_admin_user_ids" => {
            // Slack ids are case-sensitive: checked as written, not lowered.
            let ids = value
                .as_array()
                .ok_or_else(|| format!("{path} must be a JSON array of Slack user ids"))?;
            let mut out = Vec::new();
            for id in ids {
                match id.as_str().map(str::trim) {
                    Some(s) if is_user_id(s) => out.push(Value::String(s.into())),
                    _ => return Err(format!("{path}: {id} is not a Slack user id (U… or W…)")),
                }
            }
            Ok(Value::Array(out))
        }
        "slack.join_excluded_channels" => {
            // Channel ids (C…/G…) or names (lowercase, optional leading #).
            let items = value.as_array().ok_or_else(|| {
                format!("{path} must be a JSON array of Slack channel ids or names")
            })?;
            let mut out = Vec::new();
            for item in items {
                let c = item.as_str().map(str::trim).unwrap_or_default();
                let name = c.trim_start_matches('#');
                let is_name = !name.is_empty()
                    && name.len() <= 80
                    && name.chars().all(|ch| {
                        ch.is_ascii_lowercase() || ch.is_ascii_digit() || "-_".contains(ch)
                    });
                if is_slack_id(c, &['C', 'G']) || is_name {
                    out.push(Value::String(c.into()));
                } else {
                    return Err(format!("{path}: {item} is not a Slack channel id or name"));
                }
            }
            Ok(Value::Array(out))
        }
        p if p.starts_with("limits.") => validate_limit(p, value),
        p if p.starts_with("runtime.") => value
            .as_bool()
            .map(Value::Bool)
            .ok_or_else(|| format!("{p} must be true or false")),
        p if p.starts_with("access.") => Err(format!("unknown access setting {p}")),
        p => Err(format!(
            "unknown setting {p} (known: access.*, persona, agent_character, community_context, logo_url, limits.*, runtime.*, notifications.slack_channel, notifications.slack_admin_user_ids, admin_emails, slack.join_excluded_channels)"
        )),
    }
}

/// A count limit: `settings.limits.<name>` when it is a positive integer,
/// else `default` (edits are validated on the way in; anything else stored
/// is ignored).
pub fn tenant_count_limit(settings: &Value, name: &str, default: u32) -> u32 {
    settings["limits"][name]
        .as_u64()
        .filter(|n| *n > 0)
        .map_or(default, |n| n.min(u32::MAX as u64) as u32)
}

/// The kind of value a `settings.limits.<name>` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LimitValue {
    /// A positive integer.
    Count,
    /// A positive number of US dollars.
    Usd,
}

/// Every `settings.limits.<name>` a tenant may set: the §15.3 limits and
/// the request limits of `crate::limits`. Here, with the other setting
/// names, so validation needs nothing above `platform`. `ROOT_AGENT_TURNS_GLOBAL_CONCURRENT` is
/// process-wide and has no tenant setting.
pub const TENANT_LIMIT_SETTINGS: &[(&str, LimitValue)] = &[
    ("max_knowledge_sources_per_tenant", LimitValue::Count),
    ("min_knowledge_sync_interval_minutes", LimitValue::Count),
    ("knowledge_sync_per_tenant_cap", LimitValue::Count),
    ("slack_ingest_per_tenant_per_minute", LimitValue::Count),
    ("agent_turns_per_tenant_per_minute", LimitValue::Count),
    ("agent_turns_per_key_per_minute", LimitValue::Count),
    ("agent_turns_burst", LimitValue::Count),
    ("agent_turns_per_tenant_concurrent", LimitValue::Count),
    ("tool_execute_per_tenant_per_minute", LimitValue::Count),
    ("tool_execute_per_key_per_minute", LimitValue::Count),
    ("kb_search_per_tenant_per_minute", LimitValue::Count),
    ("kb_search_per_key_per_minute", LimitValue::Count),
    ("kb_writes_per_tenant_per_minute", LimitValue::Count),
    ("kb_writes_per_key_per_minute", LimitValue::Count),
    ("api_requests_per_tenant_per_minute", LimitValue::Count),
    ("api_requests_per_key_per_minute", LimitValue::Count),
    ("daily_llm_budget_usd", LimitValue::Usd),
    ("daily_llm_token_budget", LimitValue::Count),
    ("interventions_per_principal_per_hour", LimitValue::Count),
    ("intervention_sinks_per_tenant", LimitValue::Count),
    ("email_replies_per_sender_per_hour", LimitValue::Count),
    ("email_replies_per_thread_per_day", LimitValue::Count),
];

/// `limits.<name>`: a known limit ([`TENANT_LIMIT_SETTINGS`])
/// with a positive integer, or a positive number of dollars for the budget.
fn validate_limit(path: &str, value: &Value) -> Result<Value, String> {
    let name = &path["limits.".len()..];
    let Some((_, kind)) = TENANT_LIMIT_SETTINGS.iter().find(|(n, _)| *n == name) else {
        let known: Vec<&str> = TENANT_LIMIT_SETTINGS.iter().map(|(n, _)| *n).collect();
        let hint = if name == "agent_turns_global_concurrent" {
            " (process-wide: set ROOT_AGENT_TURNS_GLOBAL_CONCURRENT)".to_string()
        } else {
            String::new()
        };
        return Err(format!(
            "unknown limit {path}{hint}; known: {}",
            known.join(", ")
        ));
    };
    match kind {
        LimitValue::Count => value
            .as_u64()
            .filter(|n| *n > 0)
            .map(Value::from)
            .ok_or_else(|| format!("{path} must be a positive integer")),
        LimitValue::Usd => value
            .as_f64()
            .filter(|n| n.is_finite() && *n > 0.0)
            .map(Value::from)
            .ok_or_else(|| format!("{path} must be a positive number of US dollars")),
    }
}

/// Validate `path = value` and write it into `settings` (creating the
/// intermediate objects).
pub fn apply_setting(settings: &mut Value, path: &str, value: &Value) -> Result<(), String> {
    let value = validate_setting(path, value)?;
    if !settings.is_object() {
        *settings = Value::Object(Map::new());
    }
    let mut node = settings;
    let parts: Vec<&str> = path.split('.').collect();
    for part in &parts[..parts.len() - 1] {
        let obj = node.as_object_mut().expect("objects all the way down");
        let entry = obj
            .entry(part.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        node = entry;
    }
    node.as_object_mut()
        .expect("object")
        .insert(parts[parts.len() - 1].to_string(), value);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn defaults_follow_section_9() {
        let p = AccessPolicy::from_settings(&json!({}));
        assert_eq!(p, AccessPolicy::default());
        assert_eq!(p.slack, SlackAccess::Open);
        assert_eq!(p.email, EmailAccess::Domains);
        assert_eq!(p.default_tier, "member");
        assert!(p.dashboard_users);
        assert_eq!(
            p.slack_trust(),
            Some(TrustGrant {
                tier: "member".into(),
                tier_source: "channel_trust"
            })
        );
    }

    #[test]
    fn a_reserved_or_admin_marker_default_tier_reads_as_the_default() {
        for stored in ["__admin__", " __ADMIN__", "Unresolved ", "Public_Email"] {
            let p = AccessPolicy::from_settings(&json!({"access": {"default_tier": stored}}));
            assert_eq!(p.default_tier, "member", "{stored:?}");
        }
    }

    #[test]
    fn slack_integration_mode_grants_nothing_by_trust() {
        let p = AccessPolicy::from_settings(&json!({"access": {"slack": "integration"}}));
        assert_eq!(p.slack_trust(), None);
    }

    #[test]
    fn email_domains_include_subdomains_and_listed_addresses() {
        let p = AccessPolicy::from_settings(&json!({"access": {
            "email_domains": ["acme.org"], "email_addresses": ["Friend@Gmail.com"],
            "default_tier": "partner"
        }}));
        let tier = |a: &str| p.email_trust(a, false).map(|g| g.tier);
        assert_eq!(tier("ann@acme.org").as_deref(), Some("partner"));
        assert_eq!(tier("ann@mail.acme.org").as_deref(), Some("partner"));
        assert_eq!(tier("ann@notacme.org"), None, "suffix is not a subdomain");
        assert_eq!(tier("friend@gmail.com").as_deref(), Some("partner"));
        assert_eq!(tier("stranger@gmail.com"), None);
        assert_eq!(
            p.email_trust("stranger@gmail.com", true)
                .map(|g| g.tier_source),
            Some("dashboard_user")
        );
        let off = AccessPolicy::from_settings(&json!({"access": {"dashboard_users": false}}));
        assert_eq!(off.email_trust("x@y.org", true), None);
        let integ = AccessPolicy::from_settings(
            &json!({"access": {"email": "integration", "email_domains": ["acme.org"]}}),
        );
        assert_eq!(integ.email_trust("ann@acme.org", false), None);
    }

    #[test]
    fn edits_are_validated_and_written_at_their_path() {
        let mut s = json!({"persona": "Hi"});
        apply_setting(&mut s, "access.slack", &parse_value("integration")).unwrap();
        apply_setting(
            &mut s,
            "access.email_domains",
            &parse_value(r#"["Acme.org"]"#),
        )
        .unwrap();
        apply_setting(
            &mut s,
            "limits.slack_ingest_per_tenant_per_minute",
            &parse_value("10"),
        )
        .unwrap();
        apply_setting(&mut s, "runtime.follow_ups_enabled", &parse_value("false")).unwrap();
        apply_setting(
            &mut s,
            "logo_url",
            &parse_value(" https://acme.org/logo.png "),
        )
        .unwrap();
        apply_setting(
            &mut s,
            "slack.join_excluded_channels",
            &parse_value(r##"["C0123ABC", "#random", "off-topic"]"##),
        )
        .unwrap();
        assert_eq!(
            s,
            json!({"persona": "Hi", "access": {"slack": "integration", "email_domains": ["acme.org"]},
                   "limits": {"slack_ingest_per_tenant_per_minute": 10},
                   "runtime": {"follow_ups_enabled": false},
                   "logo_url": "https://acme.org/logo.png",
                   "slack": {"join_excluded_channels": ["C0123ABC", "#random", "off-topic"]}})
        );
        for (path, raw) in [
            ("access.slack", "closed"),
            ("access.default_tier", "unresolved"),
            ("access.default_tier", "Unresolved "),
            ("access.default_tier", " PUBLIC"),
            ("access.default_tier", "__admin__"),
            ("access.default_tier", "__Admin__"),
            ("access.default_tier", "x".repeat(129).as_str()),
            ("access.default_tier", "two\nlines"),
            ("access.email_domains", "acme"),
            ("access.email_domains", r#"["not a domain"]"#),
            ("access.email_addresses", r#"["nobody"]"#),
            ("admin_emails", r#"["not-an-address"]"#),
            ("logo_url", "http://acme.org/logo.png"),
            ("logo_url", "javascript:alert(1)"),
            ("logo_url", "https://"),
            ("access.dashboard_users", "yes"),
            ("limits.slack_ingest_per_tenant_per_minute", "0"),
            ("runtime.follow_ups_enabled", "maybe"),
            ("slack.join_excluded_channels", r#""general""#),
            ("slack.join_excluded_channels", r#"["Has Spaces"]"#),
            ("acess.slack", "open"),
        ] {
            let before = s.clone();
            assert!(
                apply_setting(&mut s, path, &parse_value(raw)).is_err(),
                "{path}={raw}"
            );
            assert_eq!(s, before, "a refused edit changes nothing");
        }
    }

    #[test]
    fn limits_are_known_names_with_positive_values() {
        let mut s = json!({});
        for (path, raw) in [
            ("limits.agent_turns_per_tenant_per_minute", "5"),
            ("limits.kb_search_per_key_per_minute", "7"),
            ("limits.daily_llm_budget_usd", "2.5"),
            ("limits.daily_llm_token_budget", "100000"),
            ("limits.intervention_sinks_per_tenant", "1"),
        ] {
            apply_setting(&mut s, path, &parse_value(raw)).unwrap();
        }
        assert_eq!(s["limits"]["daily_llm_budget_usd"], json!(2.5));
        assert_eq!(s["limits"]["agent_turns_per_tenant_per_minute"], json!(5));
        for (path, raw, says) in [
            (
                "limits.agent_turns_per_tenant_per_minte",
                "5",
                "unknown limit",
            ),
            (
                "limits.agent_turns_global_concurrent",
                "5",
                "ROOT_AGENT_TURNS_GLOBAL_CONCURRENT",
            ),
            ("limits.daily_llm_budget_usd", "0", "positive number"),
            ("limits.daily_llm_budget_usd", "\"lots\"", "positive number"),
            (
                "limits.kb_writes_per_key_per_minute",
                "1.5",
                "positive integer",
            ),
        ] {
            let e = apply_setting(&mut s, path, &parse_value(raw)).unwrap_err();
            assert!(e.contains(says), "{path}={raw}: {e}");
        }
    }
}

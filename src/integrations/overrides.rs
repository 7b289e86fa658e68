//! Per-tool overrides (§7.4): validating one and storing it on the
//! integration row — what the dashboard's `/integrations/{name}` calls.

use std::collections::BTreeMap;

use storage::{Integration, Json, Store};

use super::manifest::{CHANNELS, MAX_TOOL_NAME_CHARS, ToolOverride, parse_tool_overrides};
use super::registry::{IntegrationError, Integrations};
use crate::platform::tiers::MAX_TIER_NAME_CHARS;

impl Integrations {
    /// Set (`Some`) or clear (`None`) the §7.4 override of the tool `tool`
    /// of the integration `name`, after [`validate_tool_override`]; the
    /// other tools' overrides stay. `prime` reads the row at every turn
    /// start, so the next turn applies it. A tool the manifest no longer
    /// declares may keep an override (it applies if the tool comes back).
    pub async fn set_tool_override(
        &self,
        name: &str,
        tool: &str,
        over: Option<ToolOverride>,
    ) -> Result<Integration, IntegrationError> {
        self.set_tool_overrides(name, BTreeMap::from([(tool.to_string(), over)]))
            .await
    }

    /// [`set_tool_override`](Self::set_tool_override) for several tools at
    /// once: every entry is checked first and the row is written once, so
    /// one invalid entry changes nothing.
    pub async fn set_tool_overrides(
        &self,
        name: &str,
        changes: BTreeMap<String, Option<ToolOverride>>,
    ) -> Result<Integration, IntegrationError> {
        let mut row = self.get(name).await?;
        let mut all = parse_tool_overrides(&row.tool_overrides.0)
            .map_err(|e| IntegrationError::Invalid(format!("stored {e}")))?;
        let mut tools = Vec::new();
        // Several tools at once: a refusal names the tool it is about.
        let named = changes.len() > 1;
        for (tool, over) in changes {
            let tool = tool.trim().to_string();
            if tool.is_empty() || tool.chars().count() > MAX_TOOL_NAME_CHARS {
                return Err(IntegrationError::Invalid(format!(
                    "tool must be a tool name of 1–{MAX_TOOL_NAME_CHARS} characters"
                )));
            }
            match over {
                Some(o) => {
                    let o = validate_tool_override(o).map_err(|e| match e {
                        IntegrationError::Invalid(m) if named => {
                            IntegrationError::Invalid(format!("{tool}: {m}"))
                        }
                        other => other,
                    })?;
                    all.insert(tool.clone(), o);
                }
                None => {
                    all.remove(&tool);
                }
            }
            tools.push(tool);
        }
        row.tool_overrides =
            Json(serde_json::to_value(&all).map_err(|e| IntegrationError::Invalid(e.to_string()))?);
        let row = self.store().update(row).await?;
        tracing::info!(integration = %row.name, tools = %tools.join(","), "integration tool overrides changed");
        Ok(row)
    }
}

/// Longest description override accepted.
pub const MAX_OVERRIDE_DESCRIPTION_CHARS: usize = 4000;

/// A §7.4 override as stored: the description trimmed and non-empty when
/// given (at most [`MAX_OVERRIDE_DESCRIPTION_CHARS`]); channels among the
/// manifest's channels (`slack`, `email`, `api`, `web`); tiers each a
/// tier name (`__admin__` included) of at most `MAX_TIER_NAME_CHARS`
/// without control characters; lists deduplicated in their order.
pub fn validate_tool_override(mut o: ToolOverride) -> Result<ToolOverride, IntegrationError> {
    let bad = |m: String| IntegrationError::Invalid(m);
    if let Some(d) = o.description.take() {
        let d = d.trim().to_string();
        if d.is_empty() {
            return Err(bad("description must not be empty when overridden".into()));
        }
        if d.chars().count() > MAX_OVERRIDE_DESCRIPTION_CHARS {
            return Err(bad(format!(
                "description must be at most {MAX_OVERRIDE_DESCRIPTION_CHARS} characters"
            )));
        }
        o.description = Some(d);
    }
    let dedup = |v: Vec<String>| {
        let mut out: Vec<String> = Vec::new();
        for x in v.into_iter().map(|x| x.trim().to_string()) {
            if !out.contains(&x) {
                out.push(x);
            }
        }
        out
    };
    if let Some(cs) = o.channels.take() {
        let cs = dedup(cs);
        if let Some(c) = cs.iter().find(|c| !CHANNELS.contains(&c.as_str())) {
            return Err(bad(format!(
                "channels: unknown channel {c:?} (known: {})",
                CHANNELS.join(", ")
            )));
        }
        o.channels = Some(cs);
    }
    if let Some(ts) = o.tiers.take() {
        let ts = dedup(ts);
        if let Some(t) = ts.iter().find(|t| {
            t.is_empty()
                || t.chars().count() > MAX_TIER_NAME_CHARS
                || t.chars().any(char::is_control)
        }) {
            return Err(bad(format!(
                "tiers: {t:?} is not a tier name (1–{MAX_TIER_NAME_CHARS} characters, no control characters)"
            )));
        }
        o.tiers = Some(ts);
    }
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_are_checked_and_tidied() {
        let ok = validate_tool_override(ToolOverride {
            description: Some("  Look up  ".into()),
            channels: Some(vec!["slack".into(), " web".into(), "slack".into()]),
            tiers: Some(vec!["member".into(), "__admin__".into()]),
            ..ToolOverride::default()
        })
        .unwrap();
        assert_eq!(ok.description.as_deref(), Some("Look up"));
        assert_eq!(
            ok.channels,
            Some(vec!["slack".to_string(), "web".to_string()])
        );
        for bad in [
            ToolOverride {
                description: Some(" ".into()),
                ..ToolOverride::default()
            },
            ToolOverride {
                channels: Some(vec!["pigeon".into()]),
                ..ToolOverride::default()
            },
            ToolOverride {
                tiers: Some(vec!["a\u{7}b".into()]),
                ..ToolOverride::default()
            },
        ] {
            assert!(validate_tool_override(bad).is_err());
        }
    }
}

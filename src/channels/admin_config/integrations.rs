//! `list_integrations` (§5.1): the community's registered backends as the
//! dashboard chat may show them — `Integrations::list`, the call behind
//! `GET /api/v1/integrations`, reduced to what answers "what is connected
//! and what can it do". Never the signing secret or the callback token,
//! and the base URL without any user, password or query it may carry.

use async_trait::async_trait;
use serde_json::{Value, json};
use storage::Integration;

use super::AdminConfig;
use super::sources::NoArgs;
use crate::agent::ToolResult;
use crate::platform::tool_names as names;
use crate::tools::{TurnContext, TypedTool};

/// `list_integrations()`.
pub struct ListIntegrations(pub AdminConfig);

/// `base_url` without userinfo, query or fragment (they can hold
/// credentials); a URL that does not parse cannot be cleaned, so it is
/// withheld (`None`).
fn shown_url(raw: &str) -> Option<String> {
    let mut url = reqwest::Url::parse(raw).ok()?;
    url.set_username("").ok()?;
    url.set_password(None).ok()?;
    url.set_query(None);
    url.set_fragment(None);
    Some(url.to_string())
}

/// One integration for the model.
fn summary(row: &Integration) -> Value {
    let manifest = row.manifest.as_ref().map(|m| &m.0);
    let tools: Vec<&str> = manifest
        .and_then(|m| m["tools"].as_array())
        .map(|ts| ts.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    let overridden: Vec<&String> = row
        .tool_overrides
        .0
        .as_object()
        .map(|o| o.keys().collect())
        .unwrap_or_default();
    json!({
        "name": row.name,
        "status": row.status.as_str(),
        "environment": row.environment.as_str(),
        "base_url": shown_url(&row.base_url),
        "protocol": manifest.map(|m| m["protocol"].clone()),
        "tools": tools,
        "tools_with_overrides": overridden,
        "manifest_fetched_at": row.manifest_fetched_at,
        "created_at": row.created_at,
    })
}

#[async_trait]
impl TypedTool for ListIntegrations {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::LIST_INTEGRATIONS
    }
    fn description(&self) -> &'static str {
        "List the community's integrations (its connected backends): status, environment, \
         and the tools each manifest declares."
    }
    async fn run(&self, _: NoArgs, _ctx: &TurnContext) -> ToolResult {
        match self.0.inner.integrations.list().await {
            Ok(rows) => {
                let list: Vec<Value> = rows.iter().map(summary).collect();
                ToolResult::ok(json!({"integrations": list, "count": list.len()}))
            }
            Err(e) => super::broke(self.name(), e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shown_url_drops_credentials_and_queries() {
        assert_eq!(
            shown_url("https://bot:pw@backend.example.org/root?token=abc#x").as_deref(),
            Some("https://backend.example.org/root")
        );
        assert_eq!(
            shown_url("https://backend.example.org").as_deref(),
            Some("https://backend.example.org/")
        );
        assert_eq!(shown_url("not a url"), None);
    }

    #[test]
    fn a_summary_never_carries_the_secret_or_the_callback_token() {
        let mut row = Integration::new(
            uuid::Uuid::new_v4(),
            "portal",
            "https://backend.example.org",
            "whsec-very-secret",
        );
        row.callback_token = Some(storage::Redacted::new("cb-token-123".to_string()));
        let text = summary(&row).to_string();
        assert!(!text.contains("whsec-very-secret"));
        assert!(!text.contains("cb-token-123"));
        assert!(text.contains("\"name\":\"portal\""));
    }
}

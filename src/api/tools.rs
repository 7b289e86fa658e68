//! `GET /api/v1/tools` (§12.2): the full tool catalog with gating metadata
//! and input schemas — the "who can call what" answer. Every row says, per
//! tier (the reserved tiers, `member`, the tenant's default tier and every
//! manifest tier) and for admins, on which surfaces the tool is offered,
//! computed by the same `allowed_tools` function the turns use and, like a
//! turn, only for tools that have an executor (catalogued tools without one
//! are listed with `implemented: false` and offered to nobody).

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use serde_json::{Map, Value, json};

use crate::app::AppState;
use crate::error::ApiError;
use crate::platform::settings::AccessPolicy;
use crate::platform::tenancy;
use crate::tools::catalog::{CATALOG, ToolGroup};
use crate::tools::gating::{
    GateInput, Surface, TIER_PUBLIC, TIER_PUBLIC_EMAIL, TIER_UNRESOLVED, ToolSource, allowed_tools,
};
use crate::tools::integration::{PrimedInvoker, integration_offers, tier_declarations};
use crate::tools::{CoreTools, IntegrationInvoker};

const SURFACES: [(Surface, &str); 5] = [
    (Surface::Slack, "slack"),
    (Surface::Email, "email"),
    (Surface::Api, "api"),
    (Surface::Web, "web"),
    (Surface::PublicEmail, "public_email"),
];

/// `GET /api/v1/tools`
pub async fn list(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    let primed = state.integrations.prime().await?;
    let decls = tier_declarations(&primed);
    let offers = integration_offers(&primed);
    let tenant =
        tenancy::current().ok_or_else(|| ApiError::Internal(anyhow::anyhow!("no tenant")))?;
    let policy = AccessPolicy::from_settings(&tenant.tenant.settings.0);

    // Tiers worth answering for, in a stable order.
    let mut tiers: Vec<String> = vec![TIER_UNRESOLVED.into(), TIER_PUBLIC.into(), "member".into()];
    for t in
        std::iter::once(policy.default_tier.clone()).chain(decls.iter().map(|d| d.name.clone()))
    {
        if !tiers.contains(&t) && t != TIER_PUBLIC_EMAIL {
            tiers.push(t);
        }
    }
    // (label, tier, is_admin)
    let mut audiences: Vec<(String, String, bool)> = tiers
        .iter()
        .map(|t| (t.clone(), t.clone(), false))
        .collect();
    audiences.push(("admin".into(), policy.default_tier.clone(), true));

    let core = CoreTools::platform();
    let invoker = PrimedInvoker::new(state.integrations.clone(), Arc::new(primed));
    let mut rows: Vec<(String, Value)> = Vec::new();
    let row_for = |name: &str, rows: &mut Vec<(String, Value)>| -> usize {
        if let Some(i) = rows.iter().position(|(n, _)| n == name) {
            return i;
        }
        rows.push((name.to_string(), json!({"name": name, "allowed": {}})));
        rows.len() - 1
    };
    // Catalog first, so every core tool appears even when nobody gets it.
    for t in CATALOG {
        let i = row_for(t.name, &mut rows);
        let handler = core.get(t.name);
        rows[i].1 = json!({
            "name": t.name,
            "source": if t.group == ToolGroup::AdminMessaging { "admin_messaging" } else { "core" },
            "channels": t.channels.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
            "implemented": handler.is_some(),
            "description": handler.map(|h| h.description()),
            "input_schema": handler.map(|h| h.parameters()),
            "allowed": {},
        });
    }
    for (label, tier, is_admin) in &audiences {
        for (surface, surface_name) in SURFACES {
            let s = allowed_tools(&GateInput {
                surface,
                access_level: Some(tier),
                is_admin: *is_admin,
                dashboard_admin: false,
                tier_declarations: &decls,
                integration_tools: &offers,
            });
            for t in &s.tools {
                // Offered means allowed AND executable, as in `TurnTools`.
                let core_tool = matches!(t.source, ToolSource::Core | ToolSource::AdminMessaging);
                if core_tool && core.get(&t.name).is_none() {
                    continue;
                }
                let i = row_for(&t.name, &mut rows);
                let row = &mut rows[i].1;
                if let ToolSource::Integration { integration } = &t.source
                    && row.get("source").is_none()
                {
                    let def = invoker.definition(&t.name);
                    row["source"] = json!({"integration": integration});
                    row["implemented"] = json!(true);
                    row["description"] = json!(def.as_ref().map(|d| &d.description));
                    row["input_schema"] = json!(def.as_ref().map(|d| &d.parameters));
                }
                let allowed = row["allowed"].as_object_mut().expect("object");
                let entry = allowed
                    .entry(label.clone())
                    .or_insert_with(|| Value::Object(Map::new()));
                entry[surface_name] = json!(t.reason);
            }
        }
    }
    Ok(Json(json!({
        "audiences": audiences.iter().map(|(l, _, _)| l.as_str()).collect::<Vec<_>>(),
        "surfaces": SURFACES.iter().map(|(_, n)| *n).collect::<Vec<_>>(),
        "tools": rows.into_iter().map(|(_, v)| v).collect::<Vec<_>>(),
    })))
}

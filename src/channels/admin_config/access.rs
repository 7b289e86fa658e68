//! Access policy tools of the dashboard chat (§5.1, §9): read the policy
//! and change it through `platform::access_policy::update_access_policy`,
//! the function behind the dashboard's `/access` form — the same settings
//! validator, one transaction that re-reads the tenant row, all refusals
//! reported and nothing changed on one. After a save the tenant and
//! identity caches forget what they held, as the page does, so channel
//! trust follows the new policy from the next message.

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use storage::{Store, Tenant, key};

use super::sources::NoArgs;
use super::{AdminConfig, broke, changed};
use crate::agent::ToolResult;
use crate::platform::access_policy::{
    AccessChange, AccessUpdate, mode_names, update_access_policy,
};
use crate::platform::settings::AccessPolicy;
use crate::platform::tool_names as names;
use crate::tools::{TurnContext, TypedTool};

/// The policy for the model.
fn shown(p: &AccessPolicy) -> Value {
    let (slack, email) = mode_names(p);
    json!({
        "slack": slack,
        "email": email,
        "default_tier": p.default_tier,
        "email_domains": p.email_domains,
        "email_addresses": p.email_addresses,
        "dashboard_users": p.dashboard_users,
    })
}

/// `get_access_policy()`.
pub struct GetAccessPolicy;

#[async_trait]
impl TypedTool for GetAccessPolicy {
    type Args = NoArgs;
    fn name(&self) -> &'static str {
        names::GET_ACCESS_POLICY
    }
    fn description(&self) -> &'static str {
        "Show the community's access policy: who Slack and email trust (open / integration, \
         domains / integration), the tier that trust grants, the trusted email domains and \
         addresses, and whether dashboard users are trusted."
    }
    async fn run(&self, _: NoArgs, ctx: &TurnContext) -> ToolResult {
        match ctx
            .services
            .store
            .get::<Tenant>(None, key().uuid(ctx.tenant_id))
            .await
        {
            Ok(Some(t)) => ToolResult::ok(shown(&AccessPolicy::from_settings(&t.settings.0))),
            Ok(None) => broke(self.name(), "the turn's tenant row is missing"),
            Err(e) => broke(self.name(), e),
        }
    }
}

/// The fields to change; the ones left out keep their value.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateAccessArgs {
    /// `open` (every Slack workspace user gets the default tier) or
    /// `integration` (only the integration's identity lookup grants one).
    #[serde(default)]
    pub slack: Option<String>,
    /// `domains` (the trusted addresses and domains get the default tier)
    /// or `integration`.
    #[serde(default)]
    pub email: Option<String>,
    /// The tier channel trust grants (not a reserved tier like `public`).
    #[serde(default)]
    pub default_tier: Option<String>,
    /// The trusted email domains (subdomains included); replaces the list.
    #[serde(default)]
    pub email_domains: Option<Vec<String>>,
    /// The trusted email addresses; replaces the list.
    #[serde(default)]
    pub email_addresses: Option<Vec<String>>,
    /// Whether dashboard users are trusted by email.
    #[serde(default)]
    pub dashboard_users: Option<bool>,
}

/// `update_access_policy(...)`.
pub struct UpdateAccessPolicy(pub AdminConfig);

#[async_trait]
impl TypedTool for UpdateAccessPolicy {
    type Args = UpdateAccessArgs;
    fn name(&self) -> &'static str {
        names::UPDATE_ACCESS_POLICY
    }
    fn description(&self) -> &'static str {
        "Change the community's access policy (the fields given; the others stay). Lists \
         replace the old list: read the policy first to add to one. Checked like the dashboard's \
         access form: nothing changes when a field is invalid."
    }
    async fn run(&self, a: UpdateAccessArgs, ctx: &TurnContext) -> ToolResult {
        let change = AccessChange {
            slack: a.slack,
            email: a.email,
            default_tier: a.default_tier,
            email_domains: a.email_domains,
            email_addresses: a.email_addresses,
            dashboard_users: a.dashboard_users,
        };
        if change == AccessChange::default() {
            return ToolResult::failed(
                "Give at least one field to change: slack, email, default_tier, email_domains, \
                 email_addresses or dashboard_users.",
            );
        }
        let now = ctx.services.clock.now();
        match update_access_policy(&ctx.services.store, ctx.tenant_id, change, now).await {
            Ok(AccessUpdate::Saved(tenant)) => {
                self.0.inner.tenants.invalidate(&tenant);
                self.0.inner.identity.invalidate_all();
                changed(ctx, self.name(), "access policy saved");
                let policy = AccessPolicy::from_settings(&tenant.settings.0);
                ToolResult::ok(json!({"saved": true, "policy": shown(&policy)}))
            }
            Ok(AccessUpdate::Invalid(errors)) => {
                ToolResult::failed(format!("Nothing was changed: {}.", errors.summary()))
            }
            Ok(AccessUpdate::NoTenant) => broke(self.name(), "the turn's tenant row is missing"),
            Err(e) => broke(self.name(), e),
        }
    }
}

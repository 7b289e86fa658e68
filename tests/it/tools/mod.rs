//! The tool surface (§5): what a turn is offered (acceptance 10), the
//! dispatch gate, and the first core handlers against the real server state.

use std::sync::Arc;

use serde_json::{Value, json};
use storage::{HumanIntervention, Principal, Scan, Store, TenantStore};
use uuid::Uuid;

use root::agent::{AgentTools, ToolCaller};
use root::platform::tenancy::{self, TenantContext};
use root::tools::catalog::UNRESOLVED_CORE_TOOLS;
use root::tools::{
    CoreTools, GateInput, Surface, TierDeclaration, TurnContext, TurnPrincipal, TurnTools,
    allowed_tools,
};

use crate::kb::{key_for, put_page};
use crate::support::TestApp;

mod api;
mod integration_tools;
mod knowledge;
mod members;
mod surface;

pub(crate) fn surface(level: Option<&str>, decls: &[TierDeclaration]) -> root::tools::ToolSurface {
    allowed_tools(&GateInput {
        surface: Surface::Slack,
        access_level: level,
        is_admin: false,
        dashboard_admin: false,
        dashboard_chat: false,
        tier_declarations: decls,
        integration_tools: &[],
        build_tools: &[],
    })
}

pub(crate) fn turn_tools(
    app: &TestApp,
    tenant: Uuid,
    principal: TurnPrincipal,
    level: Option<&str>,
) -> TurnTools {
    turn_tools_on(
        app,
        tenant,
        principal,
        surface(level, &[]),
        Some("D0123"),
        None,
    )
}

/// A turn's tools over `s`, in conversation `channel_id`.
pub(crate) fn turn_tools_on(
    app: &TestApp,
    tenant: Uuid,
    principal: TurnPrincipal,
    s: root::tools::ToolSurface,
    channel_id: Option<&str>,
    invoker: Option<Arc<dyn root::tools::IntegrationInvoker>>,
) -> TurnTools {
    let knowledge_source_types = s.knowledge_source_types.clone();
    TurnTools::new(
        s,
        CoreTools::platform(),
        invoker,
        Default::default(),
        TurnContext {
            tenant_id: tenant,
            principal,
            surface: Surface::Slack,
            channel_id: channel_id.map(str::to_string),
            user_message: "hello".into(),
            knowledge_source_types,
            surface_tools: Vec::new(),
            services: app.state.tools.clone(),
            delivery: Default::default(),
            email_delegation: None,
        },
    )
}

fn offered(tools: &TurnTools) -> Vec<String> {
    tools.definitions().iter().map(|d| d.name.clone()).collect()
}

pub(crate) async fn tenant_ctx(app: &TestApp, slug: &str) -> TenantContext {
    key_for(app, slug).await;
    let t = app.state.store.tenant_by_slug(slug).await.unwrap().unwrap();
    TenantContext {
        tenant: Arc::new(t),
    }
}

pub(crate) async fn exec(
    ctx: &TenantContext,
    tools: &TurnTools,
    name: &str,
    args: Value,
) -> root::agent::ToolResult {
    tenancy::scope(
        ctx.clone(),
        tools.execute(name, args, &ToolCaller::default()),
    )
    .await
}

pub(crate) async fn principal(app: &TestApp, tenant: Uuid, slack: &str) -> TurnPrincipal {
    let now = storage::Ts::now();
    let p = app
        .state
        .store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: tenant,
            ref_: slack.into(),
            display_name: Some(format!("Member {slack}")),
            tier: "member".into(),
            slack_user_id: Some(slack.into()),
            created_at: now,
            updated_at: now,
            ..Principal::default()
        })
        .await
        .unwrap();
    TurnPrincipal {
        id: Some(p.id),
        principal_ref: p.ref_.clone(),
        display_name: p.display_name.clone(),
        tier: root::platform::tiers::Tier::member(),
        slack_user_id: p.slack_user_id.clone(),
        ..TurnPrincipal::default()
    }
}

//! `GET /api/v1/tools` (§12.2): the full tool catalog with gating metadata
//! and input schemas — the "who can call what" answer. Every row says, per
//! tier (the reserved tiers, `member`, the tenant's default tier and every
//! manifest tier) and for admins, on which surfaces the tool is offered,
//! computed by the same `allowed_tools` function the turns use and, like a
//! turn, only for tools that have an executor (catalogued tools without one
//! are listed with `implemented: false` and offered to nobody). Each
//! integration's tool is its own row (`source: {integration}`); where two
//! sources share a name, the one not offered says why under `shadowed`.
//! Besides the five gating surfaces, the `dashboard_chat` column is the web
//! surface as the dashboard's `/chat` computes it — the only place the
//! admin config tools (`source: admin_config`) are offered.

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::agent::ToolImage;
use crate::ai::usage::UsageTotals;

use crate::platform::settings::AccessPolicy;
use crate::platform::tenancy;
use crate::platform::tiers::Tier;
use crate::state::AppState;
use crate::tools::catalog::{CATALOG, ToolGroup};
use crate::tools::gating::{
    GateInput, Surface, TIER_PUBLIC, TIER_PUBLIC_EMAIL, TIER_UNRESOLVED, ToolSource, allowed_tools,
};
use crate::tools::integration::{PrimedInvoker, integration_offers, tier_declarations};
use crate::tools::{CoreTools, IntegrationInvoker};
use crate::web::error::ApiError;

/// (gating surface, the dashboard chat's flag, column name).
const SURFACES: [(Surface, bool, &str); 6] = [
    (Surface::Slack, false, "slack"),
    (Surface::Email, false, "email"),
    (Surface::Api, false, "api"),
    (Surface::Web, false, "web"),
    (Surface::PublicEmail, false, "public_email"),
    (Surface::Web, true, "dashboard_chat"),
];

/// Audience label → surface name → reason.
pub type ReasonMatrix = BTreeMap<String, BTreeMap<&'static str, String>>;

/// Where a catalog row's tool comes from.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum RowSource {
    /// `core`, `admin_messaging` or `admin_config`.
    Platform(&'static str),
    /// `{integration: <name>}`.
    Integration {
        /// The integration's name.
        integration: String,
    },
    /// `{community_build: <slug>}` (§15.1).
    CommunityBuild {
        /// The build's catalog slug.
        community_build: String,
    },
}

/// One tool of `GET /tools`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ToolRow {
    pub(crate) name: String,
    pub(crate) source: RowSource,
    pub(crate) channels: Option<Vec<String>>,
    pub(crate) implemented: bool,
    pub(crate) description: Option<String>,
    input_schema: Option<Value>,
    pub(crate) allowed: ReasonMatrix,
    /// Integration rows only: where another source holds the name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) shadowed: Option<ReasonMatrix>,
}

/// `GET /tools`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ToolCatalogResponse {
    /// Tier labels, then `admin` (the default tier as an admin) last.
    pub(crate) audiences: Vec<String>,
    pub(crate) surfaces: Vec<&'static str>,
    pub(crate) tools: Vec<ToolRow>,
}

/// `POST /tools/:name/execute`: what the model would see, the images, and
/// the call's LLM usage.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ExecuteResponse {
    tool: String,
    result: Value,
    images: Vec<ToolImage>,
    usage: UsageTotals,
}

/// `GET /api/v1/tools`
pub async fn list(State(state): State<AppState>) -> Result<Json<ToolCatalogResponse>, ApiError> {
    catalog(&state).await.map(Json)
}

/// The current tenant's tool catalog (`GET /tools`, MCP `list_tools`).
pub(crate) async fn catalog(state: &AppState) -> Result<ToolCatalogResponse, ApiError> {
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

    // Every handler a turn can have, the dashboard chat's included.
    let core = state.turns.admin_config.add_to(CoreTools::platform());
    let invoker = PrimedInvoker::new(state.integrations.clone(), Arc::new(primed));
    let builds = state
        .turns
        .builds
        .load(&state.store, tenant.tenant.id)
        .await?;
    let build_offers = builds.offers();
    // One row per (tool name, source): core rows have no source, and every
    // integration's and install's tool is its own row even when two share
    // a name.
    let mut rows: Vec<((String, Option<ToolSource>), ToolRow)> = Vec::new();
    // Catalog first, so every core tool appears even when nobody gets it.
    for t in CATALOG {
        let handler = core.get(t.name);
        rows.push((
            (t.name.to_string(), None),
            ToolRow {
                name: t.name.to_string(),
                source: RowSource::Platform(match t.group {
                    ToolGroup::AdminMessaging => "admin_messaging",
                    ToolGroup::AdminConfig => "admin_config",
                    _ => "core",
                }),
                channels: Some(t.channels.iter().map(|c| c.as_str().to_string()).collect()),
                implemented: handler.is_some(),
                description: handler.map(|h| h.description().to_string()),
                input_schema: handler.map(|h| h.parameters()),
                allowed: ReasonMatrix::new(),
                shadowed: None,
            },
        ));
    }
    for o in &offers {
        let source = ToolSource::Integration {
            integration: o.integration.clone(),
        };
        let row_source = RowSource::Integration {
            integration: o.integration.clone(),
        };
        let def = invoker.definition(&o.integration, &o.name);
        rows.push(served_row(&o.name, source, row_source, &o.channels, def));
    }
    for o in &build_offers {
        let source = ToolSource::CommunityBuild {
            build: o.build.clone(),
            install: o.install,
        };
        let row_source = RowSource::CommunityBuild {
            community_build: o.build.clone(),
        };
        let def = builds.definition(o.install, &o.name);
        rows.push(served_row(&o.name, source, row_source, &o.channels, def));
    }
    let mark = |rows: &mut Vec<((String, Option<ToolSource>), ToolRow)>,
                name: &str,
                source: &ToolSource,
                shadowed: bool,
                label: &str,
                surface: &'static str,
                reason: &str| {
        let source = match source {
            ToolSource::Integration { .. } | ToolSource::CommunityBuild { .. } => Some(source),
            ToolSource::Core | ToolSource::AdminMessaging | ToolSource::AdminConfig => None,
        };
        let Some((_, row)) = rows
            .iter_mut()
            .find(|((n, s), _)| n == name && s.as_ref() == source)
        else {
            return;
        };
        let matrix = if shadowed {
            row.shadowed.as_mut()
        } else {
            Some(&mut row.allowed)
        };
        if let Some(matrix) = matrix {
            matrix
                .entry(label.to_string())
                .or_default()
                .insert(surface, reason.to_string());
        }
    };
    for (label, tier, is_admin) in &audiences {
        for (surface, dashboard_chat, surface_name) in SURFACES {
            let s = allowed_tools(&GateInput {
                surface,
                access_level: Some(tier),
                is_admin: *is_admin,
                dashboard_admin: false,
                dashboard_chat,
                tier_declarations: &decls,
                integration_tools: &offers,
                build_tools: &build_offers,
            });
            for t in &s.tools {
                // Offered means allowed AND executable, as in `TurnTools`.
                let core_tool = !matches!(
                    t.source,
                    ToolSource::Integration { .. } | ToolSource::CommunityBuild { .. }
                );
                if core_tool && core.get(&t.name).is_none() {
                    continue;
                }
                mark(
                    &mut rows,
                    &t.name,
                    &t.source,
                    false,
                    label,
                    surface_name,
                    &t.reason,
                );
            }
            for t in &s.shadowed {
                mark(
                    &mut rows,
                    &t.name,
                    &t.source,
                    true,
                    label,
                    surface_name,
                    &t.reason,
                );
            }
        }
    }
    Ok(ToolCatalogResponse {
        audiences: audiences.into_iter().map(|(l, _, _)| l).collect(),
        surfaces: SURFACES.iter().map(|(_, _, n)| *n).collect(),
        tools: rows.into_iter().map(|(_, v)| v).collect(),
    })
}

/// The row of a tool an integration or an install serves (keyed by its
/// source, so two sources of one name stay two rows).
fn served_row(
    name: &str,
    source: ToolSource,
    row_source: RowSource,
    channels: &Option<Vec<String>>,
    def: Option<crate::ai::chat::ToolDefinition>,
) -> ((String, Option<ToolSource>), ToolRow) {
    let row = ToolRow {
        name: name.to_string(),
        source: row_source,
        channels: channels.clone(),
        implemented: true,
        description: def.as_ref().map(|d| d.description.clone()),
        input_schema: def.map(|d| d.parameters),
        allowed: ReasonMatrix::new(),
        shadowed: Some(ReasonMatrix::new()),
    };
    ((name.to_string(), Some(source)), row)
}

/// `principal` of an execute body: a ref, or `{ref?, slack_user_id?}`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum PrincipalArg {
    /// A principal ref (`stableUserId`).
    Ref(String),
    /// An object form.
    Object {
        /// Principal ref.
        #[serde(default, rename = "ref")]
        ref_: Option<String>,
        /// A Slack user id (resolved like a Slack message would be).
        #[serde(default)]
        slack_user_id: Option<String>,
        /// An email address (resolved like an email sender would be).
        #[serde(default)]
        email: Option<String>,
    },
}

impl PrincipalArg {
    /// (ref, email, slack_user_id), trimmed, empty ⇒ `None`.
    pub fn parts(&self) -> (Option<String>, Option<String>, Option<String>) {
        let clean = |v: Option<&String>| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        match self {
            PrincipalArg::Ref(r) => (clean(Some(r)), None, None),
            PrincipalArg::Object {
                ref_,
                slack_user_id,
                email,
            } => (
                clean(ref_.as_ref()),
                clean(email.as_ref()),
                clean(slack_user_id.as_ref()),
            ),
        }
    }
}

/// Body of `POST /tools/:name/execute`.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExecuteBody {
    principal: PrincipalArg,
    #[serde(default)]
    args: Option<Value>,
}

/// The API caller's principal: by ref (a known row), or through Slack
/// identity; anything else is the reserved `unresolved` tier.
async fn api_principal(
    state: &AppState,
    p: &PrincipalArg,
) -> Result<crate::tools::TurnPrincipal, ApiError> {
    use storage::{Principal, Store, key};
    let (ref_, email, slack) = p.parts();
    let tenant = tenancy::current_tenant_id().map_err(|e| ApiError::Internal(e.into()))?;
    let row: Option<Principal> = match (&ref_, &email, &slack) {
        (Some(r), _, _) => {
            state
                .store
                .find_unique(Some(tenant), Principal::REF_KEY, key().str(r))
                .await?
        }
        (_, Some(e), _) => {
            if !e.contains('@') {
                return Err(ApiError::BadRequest(format!(
                    "{e:?} is not an email address"
                )));
            }
            let m = state
                .identity
                .resolve_email_sender(e)
                .await
                .map_err(ApiError::Internal)?;
            if m.principal.is_none() {
                return Ok(crate::tools::TurnPrincipal {
                    principal_ref: m.principal_ref,
                    tier: m.tier,
                    email: Some(crate::identity::normalize_email(e)),
                    ..Default::default()
                });
            }
            m.principal
        }
        (_, _, Some(s)) => {
            state
                .identity
                .resolve_slack_member(s)
                .await
                .map_err(ApiError::Internal)?
                .principal
        }
        _ => {
            return Err(ApiError::BadRequest(
                "principal must be a ref or {ref | email | slack_user_id}".into(),
            ));
        }
    };
    Ok(match row {
        Some(p) => crate::tools::TurnPrincipal {
            id: Some(p.id),
            principal_ref: p.ref_,
            display_name: p.display_name,
            tier: Tier::parse_or_unresolved(&p.tier),
            // The API surface forces admin off (§5.2).
            is_admin: false,
            slack_user_id: p.slack_user_id,
            email: p.email,
        },
        None => crate::tools::TurnPrincipal {
            principal_ref: ref_.or(slack).unwrap_or_default(),
            tier: Tier::Unresolved,
            ..Default::default()
        },
    })
}

/// `POST /api/v1/tools/:name/execute` → `{result, images, usage}` through
/// the dispatch gate, metered into `api_request_usage`.
pub async fn execute(
    State(state): State<AppState>,
    caller: super::Caller,
    _rate: super::limited::Admitted<super::limited::ToolExecute>,
    axum::extract::Path(name): axum::extract::Path<String>,
    super::json::ApiJson(body): super::json::ApiJson<ExecuteBody>,
) -> Result<Json<ExecuteResponse>, ApiError> {
    let args = body
        .args
        .unwrap_or_else(|| Value::Object(serde_json::Map::new()));
    execute_as(
        &state,
        &caller,
        name,
        &body.principal,
        args,
        storage::ApiSurface::RestToolExecute,
    )
    .await
    .map(Json)
}

/// Execute tool `name` with `args` as `principal` on the API surface
/// (admin off) through the dispatch gate, metered under `surface`
/// (`POST /tools/:name/execute`, MCP `call_tool`).
pub(crate) async fn execute_as(
    state: &AppState,
    caller: &super::Caller,
    name: String,
    principal: &PrincipalArg,
    args: Value,
    metered_as: storage::ApiSurface,
) -> Result<ExecuteResponse, ApiError> {
    use crate::agent::AgentTools;
    // Prime first: a pending integration becomes active before identity asks it.
    let primed = state.integrations.prime().await?;
    let principal = api_principal(state, principal).await?;
    let builds = state
        .turns
        .builds
        .load(&state.store, caller.tenant.id)
        .await?;
    let surface = crate::channels::turn::compute_surface(
        &primed,
        &builds.offers(),
        Surface::Api,
        &principal,
        false,
        false,
    );
    if let Some(reason) = &surface.degraded {
        tracing::info!(event = "identity.degraded", reason = %reason, tier = %surface.tier, "API tool call on a reserved tier");
    }
    let tools = crate::tools::TurnTools::new(
        surface.clone(),
        CoreTools::platform(),
        Some(Arc::new(PrimedInvoker::new(
            state.integrations.clone(),
            Arc::new(primed),
        ))),
        builds,
        crate::tools::TurnContext {
            tenant_id: caller.tenant.id,
            principal,
            surface: Surface::Api,
            channel_id: None,
            user_message: String::new(),
            knowledge_source_types: surface.knowledge_source_types.clone(),
            surface_tools: Vec::new(),
            services: state.tools.clone(),
            delivery: Default::default(),
            email_delegation: None,
        },
    );
    let (result, usage) = crate::ai::usage::collect_usage(tools.execute(
        &name,
        args,
        &crate::agent::ToolCaller::default(),
    ))
    .await;
    let row = storage::ApiRequestUsage {
        id: uuid::Uuid::new_v4(),
        tenant_id: caller.tenant.id,
        surface: metered_as,
        api_key_id: Some(caller.key.id),
        llm_calls: usage.llm_calls as i64,
        total_tokens: usage.tokens as i64,
        cost_usd: usage.cost_usd,
        created_at: state.clock.now(),
        ..Default::default()
    };
    if let Err(e) = state.store.insert_relaxed(row).await {
        tracing::warn!(error = %e, "api_request_usage row not written");
    }
    let images = result.images.clone();
    Ok(ExecuteResponse {
        tool: name,
        result: result.model_view(),
        images,
        usage,
    })
}

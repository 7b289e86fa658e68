//! The MCP server at `POST /api/mcp` (§12.3): the platform API for MCP
//! clients, over stateless Streamable HTTP (one JSON answer per POST, no
//! sessions) with rmcp doing the protocol. Same bearer keys as `/api/v1`:
//! the auth layer runs first (401 / 403 never reach MCP), and every tool
//! call re-enters the key's tenant scope itself, because rmcp runs handlers
//! on tasks of its own where the request's task-local is gone.
//!
//! Six tools: `ask_agent` (a full API-channel turn, metered
//! `mcp_ask_agent`), `list_tools` / `call_tool` (the `/tools` catalog and
//! gated, non-admin execution, metered `mcp_call_tool`), and the LLM-free
//! `search_knowledge`, `search_slack`, `who_knows` (fused hybrid retrieval,
//! rerank off) for clients that reason on their own. Every failure is a
//! tool result with `isError: true` and a message, never a protocol error.

use std::sync::Arc;

use axum::Router;
use axum::http::request::Parts;
use rmcp::handler::server::common::schema_for_type;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use storage::{ApiSurface, Channel};
use tokio_util::task::AbortOnDropHandle;

use crate::channels::TurnRequest;
use crate::limits::Action;
use crate::platform::tenancy::{self, TenantContext};
use crate::platform::tool_names;
use crate::retrieval::slack::{Expert, SlackQuery, StoredPermalinks};
use crate::state::AppState;
use crate::tools::permalinks::LivePermalinks;
use crate::web::api::{Caller, PrincipalArg, SearchBody, require_api_key};
use crate::web::error::ApiError;
use crate::web::host_check::AllowedHosts;
use crate::web::turn_response::TurnResponse;

/// The mount path.
pub const MCP_PATH: &str = "/api/mcp";

/// The tool names, in `tools/list` order.
pub const MCP_TOOLS: [&str; 6] = [
    "ask_agent",
    "list_tools",
    "call_tool",
    "search_knowledge",
    "search_slack",
    // The same name as the agent's core tool, which it mirrors.
    tool_names::WHO_KNOWS,
];

/// `POST /api/mcp` behind the API-key layer. rmcp's own DNS-rebinding
/// check allows `PLATFORM_BASE_URL`'s host and the loopback names, so the
/// endpoint works behind a proxy that keeps the public `Host`.
pub fn router(state: AppState) -> Router<AppState> {
    let hosts = AllowedHosts::from_base_url(&state.config.platform_base_url);
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_sse_retry(None)
        .with_allowed_hosts(hosts.names().iter().cloned())
        .with_max_request_body_bytes(state.config.max_body_bytes);
    let handler_state = state.clone();
    let service = StreamableHttpService::new(
        move || Ok(RootMcp::new(handler_state.clone())),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    Router::new()
        .route_service(MCP_PATH, service)
        .route_layer(axum::middleware::from_fn_with_state(state, require_api_key))
}

/// Arguments of `ask_agent`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskAgentArgs {
    /// The member's message.
    pub message: String,
    /// Ask as the member with this email (resolved like an email sender).
    #[serde(default)]
    pub principal_email: Option<String>,
    /// Ask as the member with this Slack user id.
    #[serde(default)]
    pub principal_slack_user_id: Option<String>,
    /// Continue an earlier conversation: the `thread_key` a previous answer returned.
    #[serde(default)]
    pub thread_key: Option<String>,
}

/// Arguments of `list_tools` (none).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListToolsArgs {}

/// Arguments of `call_tool`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CallToolArgs {
    /// The tool's name, as `list_tools` lists it.
    pub name: String,
    /// The tool's arguments (its input schema in `list_tools`).
    #[serde(default)]
    pub args: Option<JsonObject>,
    /// Run as the principal with this ref.
    #[serde(default)]
    pub principal_ref: Option<String>,
    /// Run as the member with this email.
    #[serde(default)]
    pub principal_email: Option<String>,
    /// Run as the member with this Slack user id.
    #[serde(default)]
    pub principal_slack_user_id: Option<String>,
}

/// Arguments of `search_knowledge`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchKnowledgeArgs {
    /// What to look for.
    pub query: String,
    /// Results wanted (default 25).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only pages of these source types.
    #[serde(default)]
    pub source_types: Option<Vec<String>>,
    /// Search as this principal: their tier's knowledge scope applies.
    #[serde(default)]
    pub principal_ref: Option<String>,
}

/// Arguments of `search_slack`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchSlackArgs {
    /// What to look for; may contain a Slack message permalink.
    pub query: String,
    /// Matches wanted (default and maximum 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

/// Arguments of `who_knows`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WhoKnowsArgs {
    /// The topic.
    pub topic: String,
    /// People wanted (default 5, at most 50).
    #[serde(default)]
    pub limit: Option<usize>,
}

fn tool<T: JsonSchema + 'static>(name: &'static str, description: &'static str) -> Tool {
    Tool::new(name, description, schema_for_type::<T>())
}

/// The tool definitions of `tools/list`, in [`MCP_TOOLS`] order.
pub fn definitions() -> Vec<Tool> {
    vec![
        tool::<AskAgentArgs>(
            "ask_agent",
            "Ask the community assistant as a member (by principal_email or \
             principal_slack_user_id): a full agent turn with the member's tools and memory. \
             Returns the answer and a thread_key to continue the conversation.",
        ),
        tool::<ListToolsArgs>(
            "list_tools",
            "The full tool catalog (core and integration tools) with, per tier and surface, \
             who may call each tool, and each tool's input schema.",
        ),
        tool::<CallToolArgs>(
            "call_tool",
            "Execute one tool directly as a principal (never as an admin), through the same \
             gate as the agent: a tool outside the principal's surface is refused.",
        ),
        tool::<SearchKnowledgeArgs>(
            "search_knowledge",
            "Search the knowledge base: fused keyword + vector retrieval, no LLM involved. \
             Returns ranked chunks with their pages.",
        ),
        tool::<SearchSlackArgs>(
            "search_slack",
            "Search the community's public Slack history (messages and thread summaries), \
             no LLM involved.",
        ),
        tool::<WhoKnowsArgs>(
            tool_names::WHO_KNOWS,
            "Find members who discussed a topic in public Slack, ranked by how much and how \
             relevantly, with evidence links; no LLM involved.",
        ),
    ]
}

/// `who_knows`' answer (the agent tool's shape).
#[derive(Debug, Serialize)]
pub struct WhoKnowsAnswer {
    /// Best first.
    experts: Vec<Expert>,
    /// How many.
    count: usize,
}

/// The MCP handler: one per request (stateless), holding the app state.
#[derive(Clone)]
pub struct RootMcp {
    state: AppState,
}

impl RootMcp {
    /// A handler over `state`.
    pub fn new(state: AppState) -> RootMcp {
        RootMcp { state }
    }

    /// Run tool `name` for `caller` (inside its tenant scope).
    async fn dispatch(&self, caller: &Caller, name: &str, args: JsonObject) -> CallToolResult {
        self.run(caller, name, args)
            .await
            .unwrap_or_else(|e| api_error_result(name, e))
    }

    async fn run(
        &self,
        caller: &Caller,
        name: &str,
        args: JsonObject,
    ) -> Result<CallToolResult, ApiError> {
        match name {
            "ask_agent" => self.ask_agent(caller, parse(name, args)?).await,
            "list_tools" => {
                let _: ListToolsArgs = parse(name, args)?;
                crate::web::api::catalog(&self.state).await.map(json_text)
            }
            "call_tool" => self.call_tool(caller, parse(name, args)?).await,
            "search_knowledge" => self.search_knowledge(caller, parse(name, args)?).await,
            "search_slack" => self.search_slack(caller, parse(name, args)?).await,
            tool_names::WHO_KNOWS => self.who_knows(caller, parse(name, args)?).await,
            other => Err(ApiError::NotFound(format!(
                "unknown tool {other:?}; this server has {}",
                MCP_TOOLS.join(", ")
            ))),
        }
    }

    async fn ask_agent(
        &self,
        caller: &Caller,
        a: AskAgentArgs,
    ) -> Result<CallToolResult, ApiError> {
        let clean = |v: Option<String>| v.map(|s| s.trim().to_string()).filter(|s| !s.is_empty());
        let email = clean(a.principal_email);
        let slack = clean(a.principal_slack_user_id);
        if email.is_none() && slack.is_none() {
            return Err(ApiError::BadRequest(
                "ask_agent needs principal_email or principal_slack_user_id".into(),
            ));
        }
        let req = TurnRequest {
            channel: Some(Channel::Api),
            message: a.message,
            email,
            slack_user_id: slack,
            thread_key: clean(a.thread_key),
            api_key_id: Some(caller.key.id),
            ..TurnRequest::default()
        };
        let outcome =
            crate::web::api::run_metered_turn(&self.state, caller, req, ApiSurface::McpAskAgent)
                .await?;
        let answer = TurnResponse::from_outcome(&outcome);
        let body = serde_json::to_value(&answer).map_err(|e| ApiError::Internal(e.into()))?;
        let mut result = CallToolResult::success(vec![ContentBlock::text(body.to_string())]);
        if !outcome.success {
            result.is_error = Some(true);
        }
        Ok(result)
    }

    async fn call_tool(
        &self,
        caller: &Caller,
        a: CallToolArgs,
    ) -> Result<CallToolResult, ApiError> {
        self.admit(caller, Action::ToolExecute)?;
        let principal = PrincipalArg::Object {
            ref_: a.principal_ref,
            slack_user_id: a.principal_slack_user_id,
            email: a.principal_email,
        };
        let out = crate::web::api::execute_as(
            &self.state,
            caller,
            a.name,
            &principal,
            Value::Object(a.args.unwrap_or_default()),
            ApiSurface::McpCallTool,
        )
        .await?;
        let body = serde_json::to_value(&out).map_err(|e| ApiError::Internal(e.into()))?;
        let succeeded = body["result"]["success"] == Value::Bool(true);
        let mut result = CallToolResult::success(vec![ContentBlock::text(body.to_string())]);
        if !succeeded {
            result.is_error = Some(true);
        }
        Ok(result)
    }

    async fn search_knowledge(
        &self,
        caller: &Caller,
        a: SearchKnowledgeArgs,
    ) -> Result<CallToolResult, ApiError> {
        self.admit(caller, Action::KbSearch)?;
        let body = SearchBody::new(a.query, a.limit, a.source_types, a.principal_ref);
        let out = crate::web::api::knowledge_search(&self.state, body, false).await?;
        Ok(json_text(out))
    }

    async fn search_slack(
        &self,
        caller: &Caller,
        a: SearchSlackArgs,
    ) -> Result<CallToolResult, ApiError> {
        self.admit(caller, Action::KbSearch)?;
        let permalinks = LivePermalinks {
            stored: StoredPermalinks(self.state.store.clone()),
            slack: self.state.tools.slack.clone(),
        };
        let out = self
            .state
            .retrieval
            .search_slack(
                SlackQuery {
                    query: a.query,
                    limit: a.limit,
                    rerank: false,
                },
                &permalinks,
            )
            .await?;
        Ok(json_text(out))
    }

    async fn who_knows(
        &self,
        caller: &Caller,
        a: WhoKnowsArgs,
    ) -> Result<CallToolResult, ApiError> {
        self.admit(caller, Action::KbSearch)?;
        let experts = self.state.retrieval.who_knows(&a.topic, a.limit).await?;
        Ok(json_text(WhoKnowsAnswer {
            count: experts.len(),
            experts,
        }))
    }

    /// The REST routes' rate gate for `action` (tenant and key rates).
    fn admit(&self, caller: &Caller, action: Action) -> Result<(), ApiError> {
        self.state
            .limits
            .check(action, &caller.tenant, Some(caller.key.id))
            .map_err(ApiError::from)
    }
}

impl ServerHandler for RootMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("root", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Root, the community assistant. ask_agent runs a full turn as a member; \
                 search_knowledge, search_slack and who_knows return LLM-free retrieval \
                 results for you to reason over; list_tools and call_tool reach the tool \
                 catalog directly.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(definitions()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caller = context
            .extensions
            .get::<Parts>()
            .and_then(|p| p.extensions.get::<Caller>())
            .cloned();
        let Some(caller) = caller else {
            // The auth layer always runs first; without it there is no tenant.
            tracing::error!("mcp tool call without an authenticated caller");
            return Ok(error_result("not authenticated".into()).into());
        };
        let scope = TenantContext {
            tenant: caller.tenant.clone(),
        };
        let name = request.name.to_string();
        let args = request.arguments.unwrap_or_default();
        // A task of its own: an agent turn's future is deep, and under
        // rmcp's own layers it would overflow the worker's stack. Aborted if
        // the request goes away.
        let this = self.clone();
        let task = AbortOnDropHandle::new(tokio::spawn(async move {
            tenancy::scope(scope, this.dispatch(&caller, &name, args)).await
        }));
        let result = task.await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "mcp tool task failed");
            error_result("internal error".into())
        });
        Ok(result.into())
    }
}

/// `args` as `T`, or a 400-kind error saying what is wrong.
fn parse<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, ApiError> {
    serde_json::from_value(Value::Object(args))
        .map_err(|e| ApiError::BadRequest(format!("invalid arguments for {tool}: {e}")))
}

/// A successful result: `value` as JSON text.
fn json_text(value: impl serde::Serialize) -> CallToolResult {
    match serde_json::to_string(&value) {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(e) => {
            tracing::error!(error = %e, "mcp result not serializable");
            error_result("internal error".into())
        }
    }
}

/// A tool error (`isError: true`) carrying `message`.
fn error_result(message: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message)])
}

/// `e` as a tool error: the message the REST route would answer, with the
/// wait for a 429; internals are logged, not returned.
fn api_error_result(tool: &str, e: ApiError) -> CallToolResult {
    let message = match &e {
        ApiError::TooManyRequests {
            code,
            message,
            retry_after_secs,
        } => {
            tracing::info!(
                tool,
                code,
                retry_after_secs,
                "mcp tool call refused by a limit"
            );
            format!("{code}: {message} (retry after {retry_after_secs} s)")
        }
        ApiError::Internal(inner) => {
            tracing::error!(tool, error = %inner, "mcp tool call failed");
            "internal error".to_string()
        }
        other => {
            tracing::info!(tool, error = %other, "mcp tool call refused");
            other.to_string()
        }
    };
    error_result(message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn definitions_follow_the_tool_list_with_object_schemas() {
        let defs = definitions();
        let names: Vec<&str> = defs.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, MCP_TOOLS);
        for t in &defs {
            assert_eq!(
                t.input_schema.get("type"),
                Some(&json!("object")),
                "{}",
                t.name
            );
        }
        let ask = &defs[0].input_schema;
        assert_eq!(ask["required"], json!(["message"]));
    }

    #[test]
    fn a_limit_refusal_names_the_wait() {
        let r = api_error_result(
            "search_knowledge",
            ApiError::TooManyRequests {
                code: "rate_limited",
                message: "too many knowledge searches".into(),
                retry_after_secs: 7,
            },
        );
        assert_eq!(r.is_error, Some(true));
        let text = serde_json::to_value(&r.content).unwrap().to_string();
        assert!(text.contains("retry after 7 s"), "{text}");
    }
}

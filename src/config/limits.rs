//! The request-path limits' process defaults (`ROOT_…` variables).

/// Cost and size limits of the request paths (security finding M1): env
/// defaults, each overridable per tenant under `settings.limits.<name>`
/// (the variable lower-cased without `ROOT_`) except the process-wide cap.
/// See `crate::limits`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RequestLimits {
    /// `ROOT_AGENT_TURNS_PER_TENANT_PER_MINUTE` (30)
    pub agent_turns_per_tenant_per_minute: u32,
    /// `ROOT_AGENT_TURNS_PER_KEY_PER_MINUTE` (20, per API key)
    pub agent_turns_per_key_per_minute: u32,
    /// `ROOT_AGENT_TURNS_BURST` (10 turns back to back, per tenant and per key)
    pub agent_turns_burst: u32,
    /// `ROOT_AGENT_TURNS_PER_TENANT_CONCURRENT` (8 turns in flight per tenant)
    pub agent_turns_per_tenant_concurrent: u32,
    /// `ROOT_AGENT_TURNS_GLOBAL_CONCURRENT` (32 turns in flight in the process; no tenant override)
    pub agent_turns_global_concurrent: u32,
    /// `ROOT_TOOL_EXECUTE_PER_TENANT_PER_MINUTE` (120)
    pub tool_execute_per_tenant_per_minute: u32,
    /// `ROOT_TOOL_EXECUTE_PER_KEY_PER_MINUTE` (60)
    pub tool_execute_per_key_per_minute: u32,
    /// `ROOT_KB_SEARCH_PER_TENANT_PER_MINUTE` (300)
    pub kb_search_per_tenant_per_minute: u32,
    /// `ROOT_KB_SEARCH_PER_KEY_PER_MINUTE` (150)
    pub kb_search_per_key_per_minute: u32,
    /// `ROOT_KB_WRITES_PER_TENANT_PER_MINUTE` (120 page upserts + deletes)
    pub kb_writes_per_tenant_per_minute: u32,
    /// `ROOT_KB_WRITES_PER_KEY_PER_MINUTE` (60)
    pub kb_writes_per_key_per_minute: u32,
    /// `ROOT_API_REQUESTS_PER_TENANT_PER_MINUTE` (1200 `/api/v1` and MCP requests of any kind)
    pub api_requests_per_tenant_per_minute: u32,
    /// `ROOT_API_REQUESTS_PER_KEY_PER_MINUTE` (600, per API key)
    pub api_requests_per_key_per_minute: u32,
    /// `ROOT_DAILY_LLM_BUDGET_USD` (25.0): provider-reported cost per tenant per UTC day.
    pub daily_llm_budget_usd: f64,
    /// `ROOT_DAILY_LLM_TOKEN_BUDGET` (50 000 000): tokens per tenant per UTC
    /// day, which also bounds calls whose provider reports no cost.
    pub daily_llm_token_budget: u64,
    /// `ROOT_INTERVENTIONS_PER_PRINCIPAL_PER_HOUR` (10 escalations, requests and mistake reports)
    pub interventions_per_principal_per_hour: u32,
    /// `ROOT_INTERVENTION_SINKS_PER_TENANT` (4 sink deliveries running at once per tenant)
    pub intervention_sinks_per_tenant: u32,
    /// `ROOT_EMAIL_REPLIES_PER_SENDER_PER_HOUR` (10 replies, refusals included, to one sender
    /// address per tenant in any hour: a mail loop's backstop)
    pub email_replies_per_sender_per_hour: u32,
    /// `ROOT_EMAIL_REPLIES_PER_THREAD_PER_DAY` (20 replies in one email thread per tenant in any 24 h)
    pub email_replies_per_thread_per_day: u32,
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            agent_turns_per_tenant_per_minute: 30,
            agent_turns_per_key_per_minute: 20,
            agent_turns_burst: 10,
            agent_turns_per_tenant_concurrent: 8,
            agent_turns_global_concurrent: 32,
            tool_execute_per_tenant_per_minute: 120,
            tool_execute_per_key_per_minute: 60,
            kb_search_per_tenant_per_minute: 300,
            kb_search_per_key_per_minute: 150,
            kb_writes_per_tenant_per_minute: 120,
            kb_writes_per_key_per_minute: 60,
            api_requests_per_tenant_per_minute: 1200,
            api_requests_per_key_per_minute: 600,
            daily_llm_budget_usd: 25.0,
            daily_llm_token_budget: 50_000_000,
            interventions_per_principal_per_hour: 10,
            intervention_sinks_per_tenant: 4,
            email_replies_per_sender_per_hour: 10,
            email_replies_per_thread_per_day: 20,
        }
    }
}

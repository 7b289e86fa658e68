//! Typed configuration: every variable of spec §16 parsed once at start-up,
//! with the spec's defaults, plus `ROOT_DATA_DIR`. An invalid value stops
//! start-up with a message naming the variable and what it expected.
//!
//! `DATABASE_URL` and `REDIS_URL` of the reference stack have no meaning in
//! the embedded design (redb replaces both) and are ignored with a warning.
//! Secrets are [`Secret`]s: their `Debug`/`Display` never show the value.

use std::collections::HashMap;
use std::path::PathBuf;

use thiserror::Error;

pub mod client_ip;
mod limits;

use client_ip::TrustedProxies;
pub use limits::RequestLimits;

/// A secret value (API key, signing secret…). Prints as `[redacted]`.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wrap a secret.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }
    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

/// A configuration value that could not be used.
#[derive(Debug, Error, PartialEq)]
#[error("invalid {var}={value:?}: expected {expected}")]
pub struct ConfigError {
    /// The environment variable.
    pub var: &'static str,
    /// What it contained (never a secret: secrets are not validated by shape).
    pub value: String,
    /// What would have been accepted.
    pub expected: &'static str,
}

/// `NODE_ENV` of the spec: production disables dev-only conveniences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunMode {
    /// `production`
    Production,
    /// `development` (default)
    Development,
    /// `test`
    Test,
}

/// LLM model roles (§3.1) with their env overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelRoles {
    /// `LLM_MODEL_DEFAULT`
    pub default: String,
    /// `LLM_MODEL_PLANNER`
    pub planner: String,
    /// `LLM_MODEL_SEARCH`
    pub search: String,
    /// `LLM_MODEL_WRITING`
    pub writing: String,
    /// `LLM_MODEL_REASONING`
    pub reasoning: String,
    /// `LLM_MODEL_VISION`
    pub vision: String,
    /// `LLM_MODEL_IMAGE_GENERATION` (no default: image generation is off until set)
    pub image_generation: Option<String>,
    /// `LLM_MODEL_WEB_RESEARCH`
    pub web_research: String,
    /// `LLM_MODEL_WORK_SAVED` (defaults to the default model)
    pub work_saved: String,
}

/// The LLM / embeddings provider (OpenRouter or any OpenAI-compatible API).
#[derive(Clone, Debug, PartialEq)]
pub struct LlmConfig {
    /// `OPENROUTER_API_KEY`; `None` ⇒ "LLM not configured" (offline embedder).
    pub api_key: Option<Secret>,
    /// `OPENROUTER_BASE_URL`
    pub base_url: String,
    /// `OPENROUTER_PROVIDER_PREFERENCES` (a JSON object, sent as `provider`).
    pub provider_preferences: Option<serde_json::Value>,
    /// `OPENROUTER_TITLE` → `X-Title`
    pub title: Option<String>,
    /// `OPENROUTER_REFERER` → `HTTP-Referer` (defaults to `PLATFORM_BASE_URL`)
    pub referer: Option<String>,
    /// Model roles.
    pub models: ModelRoles,
    /// `LLM_TEMPERATURE` (agent loop uses `?? 0`)
    pub temperature: Option<f64>,
    /// `LLM_MAX_TOKENS` (agent loop uses `|| 16000`)
    pub max_tokens: Option<u32>,
    /// `LLM_AGENT_REASONING_EFFORT` (default `medium`; `none`/empty disables)
    pub agent_reasoning_effort: Option<String>,
    /// `PERPLEXITY_API_KEY`
    pub perplexity_api_key: Option<Secret>,
}

/// Where embeddings go (§3.2). Each field falls back to the LLM provider, so
/// an admin or a benchmark can point embeddings at a local OpenAI-compatible
/// server while chat stays on OpenRouter.
#[derive(Clone, Debug, PartialEq)]
pub struct EmbeddingConfig {
    /// `EMBEDDING_MODEL` (`openai/text-embedding-3-large`)
    pub model: String,
    /// `EMBEDDING_BASE_URL`; `None` ⇒ `OPENROUTER_BASE_URL`.
    pub base_url: Option<String>,
    /// `EMBEDDING_API_KEY`; `None` ⇒ `OPENROUTER_API_KEY`.
    pub api_key: Option<Secret>,
}

/// Limits of spec §15.3 (env defaults; tenants override via `settings.limits`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// `ROOT_MAX_KNOWLEDGE_SOURCES_PER_TENANT` (100)
    pub max_knowledge_sources_per_tenant: u32,
    /// `ROOT_MIN_KNOWLEDGE_SYNC_INTERVAL_MINUTES` (5)
    pub min_knowledge_sync_interval_minutes: u32,
    /// `ROOT_KNOWLEDGE_SYNC_PER_TENANT_CAP` (2 concurrent syncs)
    pub knowledge_sync_per_tenant_cap: u32,
    /// `ROOT_SLACK_INGEST_PER_TENANT_PER_MINUTE` (30)
    pub slack_ingest_per_tenant_per_minute: u32,
    /// `ROOT_SLACK_INGEST_GLOBAL_PER_MINUTE` (60, the spec's global limiter)
    pub slack_ingest_global_per_minute: u32,
}

/// Queue alert thresholds (`ROOT_QUEUE_ALERT_*`, §13).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueAlerts {
    /// `ROOT_QUEUE_ALERT_DEPTH` — waiting jobs in one queue (default 500).
    pub depth: u64,
    /// `ROOT_QUEUE_ALERT_LAG_SECONDS` — age of the oldest due job (default 300).
    pub lag_seconds: u64,
}

/// Everything Root reads from its environment.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `PORT` (4000)
    pub port: u16,
    /// `ROOT_BIND` (127.0.0.1): loopback by default, so a fresh server is
    /// not reachable from the network until the operator says so
    /// (`ROOT_BIND=0.0.0.0` behind a reverse proxy).
    pub bind: String,
    /// `ROOT_DEV_HARNESS` (false): mount `/dev/simulate-message` (§8.5). Only
    /// accepted outside production and on a loopback bind.
    pub dev_harness: bool,
    /// `ROOT_DATA_DIR` (`./data`): the redb file and derived index files.
    pub data_dir: PathBuf,
    /// `ROOT_SANDBOX_BINARY` (this executable): the `root` binary a
    /// community-build tool call re-executes as `root sandbox-run` (§15.1).
    pub sandbox_binary: Option<PathBuf>,
    /// `ROOT_BACKUP_DIR` (unset): where the daily backup is written (§15.4).
    pub backup_dir: Option<PathBuf>,
    /// `ROOT_BACKUP_KEEP` (7): how many daily backups are kept.
    pub backup_keep: usize,
    /// `ROOT_REDB_CACHE_MB` (128): redb's page cache (read cache and write
    /// buffer) in MiB; the kernel caches the file besides.
    pub redb_cache_mb: usize,
    /// `NODE_ENV`
    pub mode: RunMode,
    /// `ROOT_RUN_WORKERS` (true): run queue workers inside `root serve`.
    pub run_workers: bool,
    /// `ROOT_MAX_BODY_BYTES` (10 MiB): request body limit.
    pub max_body_bytes: usize,
    /// `ROOT_ALLOW_PRIVATE_FETCH` (false): let platform requests to
    /// tenant-controlled URLs reach loopback/private addresses and use
    /// plain http in production (LAN self-hosting, tests).
    pub allow_private_fetch: bool,
    /// LLM provider.
    pub llm: LlmConfig,
    /// Embeddings provider (defaults to the LLM provider).
    pub embedding: EmbeddingConfig,
    /// `OPIK_API_KEY`
    pub opik_api_key: Option<Secret>,
    /// `OPIK_PROJECT_NAME`
    pub opik_project_name: Option<String>,
    /// `OPIK_BASE_URL` (`https://www.comet.com/opik/api`)
    pub opik_base_url: String,
    /// `OPIK_WORKSPACE`: sent as `Comet-Workspace` (Opik Cloud needs it;
    /// a self-hosted Opik does not).
    pub opik_workspace: Option<String>,
    /// `ROOT_TRACING` (`on`): local trace recording in redb (§3.3); `off`
    /// makes every tracing call a no-op.
    pub tracing_enabled: bool,
    /// `TRACE_RETENTION_DAYS` (14): local traces older than this are pruned.
    pub trace_retention_days: u32,
    /// `SLACK_BOT_TOKEN` (root-tenant fallback)
    pub slack_bot_token: Option<Secret>,
    /// `SLACK_SIGNING_SECRET` (root-tenant fallback)
    pub slack_signing_secret: Option<Secret>,
    /// `SLACK_API_BASE_URL` (`https://slack.com/api`)
    pub slack_api_base_url: String,
    /// `PLATFORM_BASE_URL` (http://localhost:PORT)
    pub platform_base_url: String,
    /// `PLATFORM_EMAIL_DOMAIN`
    pub platform_email_domain: Option<String>,
    /// `PRIMITIVE_API_KEY`
    pub primitive_api_key: Option<Secret>,
    /// `PRIMITIVE_WEBHOOK_SECRET`
    pub primitive_webhook_secret: Option<Secret>,
    /// `PRIMITIVE_API_URL`
    pub primitive_api_url: Option<String>,
    /// `POSTMARK_SERVER_TOKEN`
    pub postmark_server_token: Option<Secret>,
    /// `POSTMARK_API_URL` (`https://api.postmarkapp.com`)
    pub postmark_api_url: String,
    /// `STYTCH_PROJECT_ID`
    pub stytch_project_id: Option<String>,
    /// `STYTCH_SECRET`
    pub stytch_secret: Option<Secret>,
    /// `SESSION_COOKIE_SECRET`: the HMAC key of the signup gate's
    /// `root_invite` cookie and of its forms' CSRF tokens (sessions are
    /// server-side rows and their CSRF tokens derive from the session
    /// cookie, so sign-in itself needs no secret). Unset: the gate is closed.
    pub session_cookie_secret: Option<Secret>,
    /// `PLATFORM_SIGNUP_CODE`: the invite code `/get-started` asks for.
    /// Unset: the gate is closed.
    pub platform_signup_code: Option<Secret>,
    /// `AUTH_DEV_BYPASS` (false): `GET /auth/dev-login`. Like the dev
    /// harness, refused in production and unless `ROOT_BIND` is loopback.
    pub auth_dev_bypass: bool,
    /// `ROOT_TRUSTED_PROXIES` (none): reverse proxies whose
    /// `X-Forwarded-For` names the client for the sign-in limits.
    pub trusted_proxies: TrustedProxies,
    /// `ROOT_ALLOW_INSECURE_BASE_URL` (false): accept an `http://`
    /// `PLATFORM_BASE_URL` in production (then cookies are not `Secure`).
    pub allow_insecure_base_url: bool,
    /// `SEARCH_LLM_RERANK` kill switch (true)
    pub search_llm_rerank: bool,
    /// `SEARCH_VECTOR_FLOORS`: `model=floor,…` overrides of the knowledge
    /// vector floor per embedding model (the spec's 0.32 is for
    /// `text-embedding-3-large`; other models have other cosine scales).
    pub search_vector_floors: Vec<(String, f32)>,
    /// `SLACK_THREAD_ARTIFACTS` kill switch (true)
    pub slack_thread_artifacts: bool,
    /// §15.3 limits.
    pub limits: Limits,
    /// §13 queue alert thresholds.
    pub queue_alerts: QueueAlerts,
    /// Request rate, concurrency, budget and fan-out limits (security finding M1).
    pub request_limits: RequestLimits,
}

/// Source of raw variables (the process env, or a map in tests).
struct Vars(HashMap<String, String>);

impl Vars {
    /// A set, non-blank value (blank counts as unset, like most dotenv tooling).
    fn get(&self, var: &str) -> Option<String> {
        self.0
            .get(var)
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    }
    fn string(&self, var: &str, default: &str) -> String {
        self.get(var).unwrap_or_else(|| default.to_string())
    }
    fn secret(&self, var: &str) -> Option<Secret> {
        self.get(var).map(Secret)
    }
    fn bool(&self, var: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.get(var) {
            None => Ok(default),
            Some(v) => match v.to_ascii_lowercase().as_str() {
                "true" | "1" | "yes" | "on" => Ok(true),
                "false" | "0" | "no" | "off" => Ok(false),
                _ => Err(ConfigError {
                    var,
                    value: v,
                    expected: "true or false",
                }),
            },
        }
    }
    fn on_off(&self, var: &'static str, default: bool) -> Result<bool, ConfigError> {
        self.bool(var, default).map_err(|e| ConfigError {
            expected: "on or off",
            ..e
        })
    }
    fn num<T: std::str::FromStr>(
        &self,
        var: &'static str,
        default: T,
        expected: &'static str,
        valid: impl Fn(&T) -> bool,
    ) -> Result<T, ConfigError> {
        match self.get(var) {
            None => Ok(default),
            Some(v) => match v.parse::<T>() {
                Ok(n) if valid(&n) => Ok(n),
                _ => Err(ConfigError {
                    var,
                    value: v,
                    expected,
                }),
            },
        }
    }
    fn opt_num<T: std::str::FromStr>(
        &self,
        var: &'static str,
        expected: &'static str,
        valid: impl Fn(&T) -> bool,
    ) -> Result<Option<T>, ConfigError> {
        match self.get(var) {
            None => Ok(None),
            Some(v) => match v.parse::<T>() {
                Ok(n) if valid(&n) => Ok(Some(n)),
                _ => Err(ConfigError {
                    var,
                    value: v,
                    expected,
                }),
            },
        }
    }
    fn url(&self, var: &'static str, default: &str) -> Result<String, ConfigError> {
        let v = self.string(var, default);
        if v.starts_with("http://") || v.starts_with("https://") {
            Ok(v.trim_end_matches('/').to_string())
        } else {
            Err(ConfigError {
                var,
                value: v,
                expected: "an http:// or https:// URL",
            })
        }
    }
    fn floors(&self, var: &'static str) -> Result<Vec<(String, f32)>, ConfigError> {
        let Some(v) = self.get(var) else {
            return Ok(Vec::new());
        };
        v.split(',')
            .filter(|p| !p.trim().is_empty())
            .map(|pair| {
                let (model, floor) = pair.rsplit_once('=').unwrap_or(("", ""));
                match floor.trim().parse::<f32>() {
                    Ok(f) if !model.trim().is_empty() && (-1.0..=1.0).contains(&f) => {
                        Ok((model.trim().to_string(), f))
                    }
                    _ => Err(ConfigError {
                        var,
                        value: v.clone(),
                        expected: "model=floor pairs separated by commas, floors in [-1, 1]",
                    }),
                }
            })
            .collect()
    }
    fn trusted_proxies(&self, var: &'static str) -> Result<TrustedProxies, ConfigError> {
        let raw = self.get(var).unwrap_or_default();
        TrustedProxies::parse(&raw).map_err(|_| ConfigError {
            var,
            value: raw,
            expected: "IP addresses or CIDR blocks separated by commas, e.g. 127.0.0.1,10.0.0.0/8",
        })
    }
    fn opt_url(&self, var: &'static str) -> Result<Option<String>, ConfigError> {
        match self.get(var) {
            None => Ok(None),
            Some(_) => self.url(var, "").map(Some),
        }
    }
}

/// `ROOT_BIND` default: loopback only.
pub const DEFAULT_BIND: &str = "127.0.0.1";

/// Whether `bind` (a `ROOT_BIND` value) only accepts connections from this
/// machine: `localhost`, or an IP literal in 127.0.0.0/8 or `::1`.
pub fn is_loopback_bind(bind: &str) -> bool {
    let host = bind.trim().trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Default model names of spec §3.1.
pub const DEFAULT_MODEL: &str = "google/gemini-3.5-flash";
/// §3.1 writing role default.
pub const DEFAULT_WRITING_MODEL: &str = "anthropic/claude-sonnet-5";
/// §3.1 reasoning role default.
pub const DEFAULT_REASONING_MODEL: &str = "anthropic/claude-opus-4.8";
/// §3.1 web research role default.
pub const DEFAULT_WEB_RESEARCH_MODEL: &str = "perplexity/sonar-pro-search";
/// Spec §3.2 embedding model (override: `EMBEDDING_MODEL`).
pub const DEFAULT_EMBEDDING_MODEL: &str = "openai/text-embedding-3-large";
/// §3.1 default base URL.
pub const DEFAULT_OPENROUTER_BASE_URL: &str = "https://openrouter.ai/api/v1";

impl Config {
    /// Read the process environment.
    pub fn from_env() -> Result<Config, ConfigError> {
        Config::from_vars(std::env::vars())
    }

    /// Parse from explicit variables (tests, `.env` loaders).
    pub fn from_vars(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Config, ConfigError> {
        let v = Vars(vars.into_iter().collect());
        let port: u16 = v.num("PORT", 4000, "a TCP port 0-65535", |_| true)?;
        let mode = match v.get("NODE_ENV").as_deref() {
            None | Some("development") => RunMode::Development,
            Some("production") => RunMode::Production,
            Some("test") => RunMode::Test,
            Some(other) => {
                return Err(ConfigError {
                    var: "NODE_ENV",
                    value: other.into(),
                    expected: "production, development or test",
                });
            }
        };
        let model = |var: &str, default: &str| v.string(var, default);
        let default_model = model("LLM_MODEL_DEFAULT", DEFAULT_MODEL);
        let provider_preferences = match v.get("OPENROUTER_PROVIDER_PREFERENCES") {
            None => None,
            Some(raw) => match serde_json::from_str::<serde_json::Value>(&raw) {
                Ok(val) if val.is_object() => Some(val),
                _ => {
                    return Err(ConfigError {
                        var: "OPENROUTER_PROVIDER_PREFERENCES",
                        value: raw,
                        expected: "a JSON object",
                    });
                }
            },
        };
        let effort = match v.get("LLM_AGENT_REASONING_EFFORT") {
            None => Some("medium".to_string()),
            Some(e) if e.eq_ignore_ascii_case("none") => None,
            Some(e) => match e.to_ascii_lowercase().as_str() {
                "minimal" | "low" | "medium" | "high" => Some(e.to_ascii_lowercase()),
                _ => {
                    return Err(ConfigError {
                        var: "LLM_AGENT_REASONING_EFFORT",
                        value: e,
                        expected: "none, minimal, low, medium or high",
                    });
                }
            },
        };
        // Blank LLM_AGENT_REASONING_EFFORT also disables (spec: "none/empty disables").
        let effort = if v
            .0
            .get("LLM_AGENT_REASONING_EFFORT")
            .is_some_and(|s| s.trim().is_empty())
        {
            None
        } else {
            effort
        };
        let platform_base_url = v.url("PLATFORM_BASE_URL", &format!("http://localhost:{port}"))?;
        let llm = LlmConfig {
            api_key: v.secret("OPENROUTER_API_KEY"),
            base_url: v.url("OPENROUTER_BASE_URL", DEFAULT_OPENROUTER_BASE_URL)?,
            provider_preferences,
            title: v.get("OPENROUTER_TITLE"),
            referer: Some(v.string("OPENROUTER_REFERER", &platform_base_url)),
            models: ModelRoles {
                planner: model("LLM_MODEL_PLANNER", DEFAULT_MODEL),
                search: model("LLM_MODEL_SEARCH", DEFAULT_MODEL),
                writing: model("LLM_MODEL_WRITING", DEFAULT_WRITING_MODEL),
                reasoning: model("LLM_MODEL_REASONING", DEFAULT_REASONING_MODEL),
                vision: model("LLM_MODEL_VISION", DEFAULT_MODEL),
                image_generation: v.get("LLM_MODEL_IMAGE_GENERATION"),
                web_research: model("LLM_MODEL_WEB_RESEARCH", DEFAULT_WEB_RESEARCH_MODEL),
                work_saved: model("LLM_MODEL_WORK_SAVED", &default_model),
                default: default_model,
            },
            temperature: v.opt_num("LLM_TEMPERATURE", "a number between 0 and 2", |t: &f64| {
                (0.0..=2.0).contains(t)
            })?,
            max_tokens: v.opt_num("LLM_MAX_TOKENS", "a positive integer", |n: &u32| *n > 0)?,
            agent_reasoning_effort: effort,
            perplexity_api_key: v.secret("PERPLEXITY_API_KEY"),
        };
        let positive = |n: &u32| *n > 0;
        let d = RequestLimits::default();
        let count =
            |var: &'static str, default: u32| v.num(var, default, "a positive integer", positive);
        let request_limits = RequestLimits {
            agent_turns_per_tenant_per_minute: count(
                "ROOT_AGENT_TURNS_PER_TENANT_PER_MINUTE",
                d.agent_turns_per_tenant_per_minute,
            )?,
            agent_turns_per_key_per_minute: count(
                "ROOT_AGENT_TURNS_PER_KEY_PER_MINUTE",
                d.agent_turns_per_key_per_minute,
            )?,
            agent_turns_burst: count("ROOT_AGENT_TURNS_BURST", d.agent_turns_burst)?,
            agent_turns_per_tenant_concurrent: count(
                "ROOT_AGENT_TURNS_PER_TENANT_CONCURRENT",
                d.agent_turns_per_tenant_concurrent,
            )?,
            agent_turns_global_concurrent: count(
                "ROOT_AGENT_TURNS_GLOBAL_CONCURRENT",
                d.agent_turns_global_concurrent,
            )?,
            tool_execute_per_tenant_per_minute: count(
                "ROOT_TOOL_EXECUTE_PER_TENANT_PER_MINUTE",
                d.tool_execute_per_tenant_per_minute,
            )?,
            tool_execute_per_key_per_minute: count(
                "ROOT_TOOL_EXECUTE_PER_KEY_PER_MINUTE",
                d.tool_execute_per_key_per_minute,
            )?,
            kb_search_per_tenant_per_minute: count(
                "ROOT_KB_SEARCH_PER_TENANT_PER_MINUTE",
                d.kb_search_per_tenant_per_minute,
            )?,
            kb_search_per_key_per_minute: count(
                "ROOT_KB_SEARCH_PER_KEY_PER_MINUTE",
                d.kb_search_per_key_per_minute,
            )?,
            kb_writes_per_tenant_per_minute: count(
                "ROOT_KB_WRITES_PER_TENANT_PER_MINUTE",
                d.kb_writes_per_tenant_per_minute,
            )?,
            kb_writes_per_key_per_minute: count(
                "ROOT_KB_WRITES_PER_KEY_PER_MINUTE",
                d.kb_writes_per_key_per_minute,
            )?,
            api_requests_per_tenant_per_minute: count(
                "ROOT_API_REQUESTS_PER_TENANT_PER_MINUTE",
                d.api_requests_per_tenant_per_minute,
            )?,
            api_requests_per_key_per_minute: count(
                "ROOT_API_REQUESTS_PER_KEY_PER_MINUTE",
                d.api_requests_per_key_per_minute,
            )?,
            daily_llm_budget_usd: v.num(
                "ROOT_DAILY_LLM_BUDGET_USD",
                d.daily_llm_budget_usd,
                "a positive number of US dollars",
                |n: &f64| n.is_finite() && *n > 0.0,
            )?,
            daily_llm_token_budget: v.num(
                "ROOT_DAILY_LLM_TOKEN_BUDGET",
                d.daily_llm_token_budget,
                "a positive number of tokens",
                |n: &u64| *n > 0,
            )?,
            interventions_per_principal_per_hour: count(
                "ROOT_INTERVENTIONS_PER_PRINCIPAL_PER_HOUR",
                d.interventions_per_principal_per_hour,
            )?,
            intervention_sinks_per_tenant: count(
                "ROOT_INTERVENTION_SINKS_PER_TENANT",
                d.intervention_sinks_per_tenant,
            )?,
            email_replies_per_sender_per_hour: count(
                "ROOT_EMAIL_REPLIES_PER_SENDER_PER_HOUR",
                d.email_replies_per_sender_per_hour,
            )?,
            email_replies_per_thread_per_day: count(
                "ROOT_EMAIL_REPLIES_PER_THREAD_PER_DAY",
                d.email_replies_per_thread_per_day,
            )?,
        };
        let cfg = Config {
            port,
            bind: v.string("ROOT_BIND", DEFAULT_BIND),
            dev_harness: v.bool("ROOT_DEV_HARNESS", false)?,
            data_dir: PathBuf::from(v.string("ROOT_DATA_DIR", "./data")),
            sandbox_binary: v.get("ROOT_SANDBOX_BINARY").map(PathBuf::from),
            backup_dir: v.get("ROOT_BACKUP_DIR").map(PathBuf::from),
            backup_keep: v.num("ROOT_BACKUP_KEEP", 7, "a positive count", |n: &usize| {
                *n > 0
            })?,
            redb_cache_mb: v.num(
                "ROOT_REDB_CACHE_MB",
                storage::DEFAULT_CACHE_BYTES >> 20,
                "a size in MiB between 8 and 65536",
                |n: &usize| (8..=65_536).contains(n),
            )?,
            mode,
            run_workers: v.bool("ROOT_RUN_WORKERS", true)?,
            max_body_bytes: v.num(
                "ROOT_MAX_BODY_BYTES",
                10 * 1024 * 1024,
                "a positive byte count",
                |n: &usize| *n > 0,
            )?,
            allow_private_fetch: v.bool("ROOT_ALLOW_PRIVATE_FETCH", false)?,
            llm,
            embedding: EmbeddingConfig {
                model: v.string("EMBEDDING_MODEL", DEFAULT_EMBEDDING_MODEL),
                base_url: v.opt_url("EMBEDDING_BASE_URL")?,
                api_key: v.secret("EMBEDDING_API_KEY"),
            },
            opik_api_key: v.secret("OPIK_API_KEY"),
            opik_project_name: v.get("OPIK_PROJECT_NAME"),
            opik_base_url: v.url("OPIK_BASE_URL", "https://www.comet.com/opik/api")?,
            opik_workspace: v.get("OPIK_WORKSPACE"),
            tracing_enabled: v.on_off("ROOT_TRACING", true)?,
            trace_retention_days: v.num(
                "TRACE_RETENTION_DAYS",
                14,
                "a positive number of days",
                |n: &u32| *n > 0,
            )?,
            slack_bot_token: v.secret("SLACK_BOT_TOKEN"),
            slack_signing_secret: v.secret("SLACK_SIGNING_SECRET"),
            slack_api_base_url: v.url("SLACK_API_BASE_URL", "https://slack.com/api")?,
            platform_base_url,
            platform_email_domain: v.get("PLATFORM_EMAIL_DOMAIN"),
            primitive_api_key: v.secret("PRIMITIVE_API_KEY"),
            primitive_webhook_secret: v.secret("PRIMITIVE_WEBHOOK_SECRET"),
            primitive_api_url: v.opt_url("PRIMITIVE_API_URL")?,
            postmark_server_token: v.secret("POSTMARK_SERVER_TOKEN"),
            postmark_api_url: v.url("POSTMARK_API_URL", "https://api.postmarkapp.com")?,
            stytch_project_id: v.get("STYTCH_PROJECT_ID"),
            stytch_secret: v.secret("STYTCH_SECRET"),
            session_cookie_secret: v.secret("SESSION_COOKIE_SECRET"),
            platform_signup_code: v.secret("PLATFORM_SIGNUP_CODE"),
            auth_dev_bypass: v.bool("AUTH_DEV_BYPASS", false)?,
            trusted_proxies: v.trusted_proxies("ROOT_TRUSTED_PROXIES")?,
            allow_insecure_base_url: v.bool("ROOT_ALLOW_INSECURE_BASE_URL", false)?,
            search_llm_rerank: v.bool("SEARCH_LLM_RERANK", true)?,
            search_vector_floors: v.floors("SEARCH_VECTOR_FLOORS")?,
            slack_thread_artifacts: v.bool("SLACK_THREAD_ARTIFACTS", true)?,
            limits: Limits {
                max_knowledge_sources_per_tenant: v.num(
                    "ROOT_MAX_KNOWLEDGE_SOURCES_PER_TENANT",
                    100,
                    "a positive integer",
                    positive,
                )?,
                min_knowledge_sync_interval_minutes: v.num(
                    "ROOT_MIN_KNOWLEDGE_SYNC_INTERVAL_MINUTES",
                    5,
                    "an integer between 5 and 43200",
                    |n: &u32| (5..=43200).contains(n),
                )?,
                knowledge_sync_per_tenant_cap: v.num(
                    "ROOT_KNOWLEDGE_SYNC_PER_TENANT_CAP",
                    2,
                    "a positive integer",
                    positive,
                )?,
                slack_ingest_per_tenant_per_minute: v.num(
                    "ROOT_SLACK_INGEST_PER_TENANT_PER_MINUTE",
                    30,
                    "a positive integer",
                    positive,
                )?,
                slack_ingest_global_per_minute: v.num(
                    "ROOT_SLACK_INGEST_GLOBAL_PER_MINUTE",
                    60,
                    "a positive integer",
                    positive,
                )?,
            },
            queue_alerts: QueueAlerts {
                depth: v.num(
                    "ROOT_QUEUE_ALERT_DEPTH",
                    500,
                    "a positive integer",
                    |n: &u64| *n > 0,
                )?,
                lag_seconds: v.num(
                    "ROOT_QUEUE_ALERT_LAG_SECONDS",
                    300,
                    "a positive number of seconds",
                    |n: &u64| *n > 0,
                )?,
            },
            request_limits,
        };
        if cfg.dev_harness && cfg.mode == RunMode::Production {
            return Err(ConfigError {
                var: "ROOT_DEV_HARNESS",
                value: "true".into(),
                expected: "false when NODE_ENV=production (the dev harness runs turns as any member)",
            });
        }
        if cfg.dev_harness && !is_loopback_bind(&cfg.bind) {
            return Err(ConfigError {
                var: "ROOT_BIND",
                value: cfg.bind.clone(),
                expected: "a loopback address (127.0.0.1, ::1 or localhost) while ROOT_DEV_HARNESS=true",
            });
        }
        // AUTH_DEV_BYPASS signs anyone in as any allowlisted address, platform
        // admins included: the harness's guard rails (security finding M-3).
        if cfg.auth_dev_bypass && cfg.mode == RunMode::Production {
            return Err(ConfigError {
                var: "AUTH_DEV_BYPASS",
                value: "true".into(),
                expected: "false when NODE_ENV=production (/auth/dev-login signs in as any allowlisted address)",
            });
        }
        if cfg.auth_dev_bypass && !is_loopback_bind(&cfg.bind) {
            return Err(ConfigError {
                var: "ROOT_BIND",
                value: cfg.bind.clone(),
                expected: "a loopback address (127.0.0.1, ::1 or localhost) while AUTH_DEV_BYPASS=true",
            });
        }
        // Cookies are `Secure` only under an https base URL (security finding L-11).
        if cfg.mode == RunMode::Production
            && !cfg.platform_base_url.starts_with("https://")
            && !cfg.allow_insecure_base_url
            && !cfg.allow_private_fetch
        {
            return Err(ConfigError {
                var: "PLATFORM_BASE_URL",
                value: cfg.platform_base_url.clone(),
                expected: "an https:// URL when NODE_ENV=production (set ROOT_ALLOW_INSECURE_BASE_URL=true to serve plain http)",
            });
        }
        Ok(cfg)
    }

    /// Variables of the reference stack that the embedded design ignores.
    pub fn ignored_vars() -> &'static [&'static str] {
        &["DATABASE_URL", "REDIS_URL"]
    }

    /// `AUTH_DEV_BYPASS` as effectively honoured (never in production;
    /// start-up refuses that combination anyway).
    pub fn dev_bypass_enabled(&self) -> bool {
        self.auth_dev_bypass && self.mode != RunMode::Production
    }

    /// Path of the redb database file.
    pub fn database_path(&self) -> PathBuf {
        self.data_dir.join("root.redb")
    }
}

#[cfg(test)]
mod tests;

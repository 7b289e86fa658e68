//! Limits on cost and size (security finding M1). Every expensive entry
//! point passes here first: GCRA rates per tenant and per API key (agent
//! turns, tool executes, KB searches, KB writes), a per-tenant and a
//! process-wide cap on turns in flight, and each tenant's daily LLM budget.
//! Defaults come from `ROOT_…` variables ([`RequestLimits`]); a tenant
//! overrides any of them under `settings.limits.<name>` (the variable
//! lower-cased without `ROOT_`), except the process-wide cap.
//!
//! The turn-level gate ([`RequestLimiter::admit_turn`]) is called by
//! `run_channel_turn`, so every channel (REST, dev harness, Slack, email,
//! web) shares it; the channel decides how to show a [`TurnRefusal`]
//! (HTTP status, or [`TurnRefusal::member_text`] as the reply).

pub mod budget;
pub mod caps;
pub mod in_flight;

use std::sync::Arc;

use serde_json::Value;
use storage::{RedbStore, Tenant};
use uuid::Uuid;

pub use budget::{BudgetCheck, DaySpend, LlmBudget};
pub use in_flight::{CapScope, TurnPermit, TurnSlots};

use crate::config::RequestLimits;
use crate::platform::clock::Clock;
use crate::platform::notify::{AdminNotice, NotificationSink};
use crate::platform::rate::{KeyedRateLimiter, Rate};

/// How long a caller refused by a concurrency cap is told to wait: a turn
/// takes seconds, so a place is likely free by then.
pub const BUSY_RETRY_AFTER_SECS: u64 = 5;

pub use crate::platform::settings::{LimitValue, TENANT_LIMIT_SETTINGS};

impl RequestLimits {
    /// These defaults with the tenant's `settings.limits` overrides applied.
    /// Malformed or non-positive overrides are ignored (edits are validated
    /// on the way in by `platform::settings`).
    pub fn for_tenant(&self, settings: &Value) -> RequestLimits {
        let lim = &settings["limits"];
        let count = |name: &str, default: u32| {
            crate::platform::settings::tenant_count_limit(settings, name, default)
        };
        RequestLimits {
            agent_turns_per_tenant_per_minute: count(
                "agent_turns_per_tenant_per_minute",
                self.agent_turns_per_tenant_per_minute,
            ),
            agent_turns_per_key_per_minute: count(
                "agent_turns_per_key_per_minute",
                self.agent_turns_per_key_per_minute,
            ),
            agent_turns_burst: count("agent_turns_burst", self.agent_turns_burst),
            agent_turns_per_tenant_concurrent: count(
                "agent_turns_per_tenant_concurrent",
                self.agent_turns_per_tenant_concurrent,
            ),
            agent_turns_global_concurrent: self.agent_turns_global_concurrent,
            tool_execute_per_tenant_per_minute: count(
                "tool_execute_per_tenant_per_minute",
                self.tool_execute_per_tenant_per_minute,
            ),
            tool_execute_per_key_per_minute: count(
                "tool_execute_per_key_per_minute",
                self.tool_execute_per_key_per_minute,
            ),
            kb_search_per_tenant_per_minute: count(
                "kb_search_per_tenant_per_minute",
                self.kb_search_per_tenant_per_minute,
            ),
            kb_search_per_key_per_minute: count(
                "kb_search_per_key_per_minute",
                self.kb_search_per_key_per_minute,
            ),
            kb_writes_per_tenant_per_minute: count(
                "kb_writes_per_tenant_per_minute",
                self.kb_writes_per_tenant_per_minute,
            ),
            kb_writes_per_key_per_minute: count(
                "kb_writes_per_key_per_minute",
                self.kb_writes_per_key_per_minute,
            ),
            api_requests_per_tenant_per_minute: count(
                "api_requests_per_tenant_per_minute",
                self.api_requests_per_tenant_per_minute,
            ),
            api_requests_per_key_per_minute: count(
                "api_requests_per_key_per_minute",
                self.api_requests_per_key_per_minute,
            ),
            daily_llm_budget_usd: lim["daily_llm_budget_usd"]
                .as_f64()
                .filter(|n| n.is_finite() && *n > 0.0)
                .unwrap_or(self.daily_llm_budget_usd),
            daily_llm_token_budget: lim["daily_llm_token_budget"]
                .as_u64()
                .filter(|n| *n > 0)
                .unwrap_or(self.daily_llm_token_budget),
            interventions_per_principal_per_hour: count(
                "interventions_per_principal_per_hour",
                self.interventions_per_principal_per_hour,
            ),
            intervention_sinks_per_tenant: count(
                "intervention_sinks_per_tenant",
                self.intervention_sinks_per_tenant,
            ),
            email_replies_per_sender_per_hour: count(
                "email_replies_per_sender_per_hour",
                self.email_replies_per_sender_per_hour,
            ),
            email_replies_per_thread_per_day: count(
                "email_replies_per_thread_per_day",
                self.email_replies_per_thread_per_day,
            ),
        }
    }
}

/// A rate-limited entry point.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    /// An agent turn (REST, dev harness, every channel).
    AgentTurn,
    /// `POST /tools/:name/execute`.
    ToolExecute,
    /// `POST /kb/search`.
    KbSearch,
    /// KB page upserts and deletes.
    KbWrite,
    /// Any `/api/v1` or MCP request (the floor under the specific rates:
    /// one key cannot flood the server with cheap reads either).
    ApiRequest,
}

impl Action {
    /// For logs and messages.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::AgentTurn => "agent turns",
            Action::ToolExecute => "tool executions",
            Action::KbSearch => "knowledge searches",
            Action::KbWrite => "knowledge writes",
            Action::ApiRequest => "API requests",
        }
    }

    /// (per-tenant rate, per-key rate) under `l`.
    fn rates(self, l: &RequestLimits) -> (Rate, Rate) {
        match self {
            Action::AgentTurn => (
                Rate::per_minute(l.agent_turns_per_tenant_per_minute)
                    .with_burst(l.agent_turns_burst),
                Rate::per_minute(l.agent_turns_per_key_per_minute).with_burst(l.agent_turns_burst),
            ),
            Action::ToolExecute => (
                Rate::per_minute(l.tool_execute_per_tenant_per_minute),
                Rate::per_minute(l.tool_execute_per_key_per_minute),
            ),
            Action::KbSearch => (
                Rate::per_minute(l.kb_search_per_tenant_per_minute),
                Rate::per_minute(l.kb_search_per_key_per_minute),
            ),
            Action::KbWrite => (
                Rate::per_minute(l.kb_writes_per_tenant_per_minute),
                Rate::per_minute(l.kb_writes_per_key_per_minute),
            ),
            Action::ApiRequest => (
                Rate::per_minute(l.api_requests_per_tenant_per_minute),
                Rate::per_minute(l.api_requests_per_key_per_minute),
            ),
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum RateKey {
    Tenant(Action, Uuid),
    ApiKey(Action, Uuid),
    /// A platform-admin key (`/api/v1/platform/*`): no tenant to count against.
    PlatformKey(Uuid),
}

/// A request refused by a rate or concurrency limit.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct LimitExceeded {
    /// What was limited.
    pub action: Action,
    /// `true` for a concurrency cap, `false` for a rate.
    pub concurrency: bool,
    /// Whole seconds to wait (≥ 1).
    pub retry_after_secs: u64,
    /// Client-facing explanation.
    pub message: String,
}

/// Why a turn was refused before the model ran.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TurnRefusal {
    /// The member's message is over [`caps::MAX_MESSAGE_CHARS`].
    #[error("message is {chars} characters long; at most {max} are accepted")]
    MessageTooLong {
        /// Its length.
        chars: usize,
        /// The cap.
        max: usize,
    },
    /// A rate or concurrency limit.
    #[error(transparent)]
    Limited(LimitExceeded),
    /// The tenant (or, for a dev shadow, its live tenant) is suspended or
    /// not provisioned yet: no turn runs (security review L-2).
    #[error("this community's assistant is not available")]
    TenantInactive,
    /// The tenant's daily LLM budget is used up.
    #[error(
        "this community's daily AI usage budget is used up; the assistant is paused until 00:00 UTC"
    )]
    BudgetExhausted {
        /// Seconds until the next UTC day.
        retry_after_secs: u64,
    },
}

impl TurnRefusal {
    /// What a channel tells the member instead of an answer.
    pub fn member_text(&self) -> String {
        match self {
            TurnRefusal::MessageTooLong { chars, max } => format!(
                "Your message is {chars} characters long, and I can only read messages of up to \
                 {max} characters. Please shorten it or send it in smaller parts."
            ),
            TurnRefusal::Limited(e) if e.concurrency => {
                "I'm answering too many messages at once right now. Please try again in a moment."
                    .into()
            }
            TurnRefusal::Limited(e) => format!(
                "I'm receiving more messages than I can answer right now. Please try again in \
                 about {} seconds.",
                e.retry_after_secs
            ),
            TurnRefusal::TenantInactive => {
                "This community's assistant is not available right now.".into()
            }
            TurnRefusal::BudgetExhausted { .. } => {
                "This community's assistant has used up its AI usage budget for today, so it is \
                 paused until midnight UTC. The community's admins can raise the limit."
                    .into()
            }
        }
    }
}

/// The limits every entry point shares (`AppState::limits`). Cheap to clone.
#[derive(Clone)]
pub struct RequestLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    defaults: RequestLimits,
    clock: Arc<dyn Clock>,
    rates: KeyedRateLimiter<RateKey>,
    turns: TurnSlots,
    budget: LlmBudget,
}

impl RequestLimiter {
    /// Limits with env `defaults`, time from `clock`, spend tracked by `budget`.
    pub fn new(defaults: RequestLimits, clock: Arc<dyn Clock>, budget: LlmBudget) -> Self {
        RequestLimiter {
            inner: Arc::new(Inner {
                defaults,
                clock,
                rates: KeyedRateLimiter::default(),
                turns: TurnSlots::default(),
                budget,
            }),
        }
    }

    /// A limiter with its own budget tracker over `store` (tools, tests).
    pub fn with_store(defaults: RequestLimits, clock: Arc<dyn Clock>, store: RedbStore) -> Self {
        let budget = LlmBudget::new(store, clock.clone());
        RequestLimiter::new(defaults, clock, budget)
    }

    /// The tenant's effective limits.
    pub fn limits_for(&self, tenant: &Tenant) -> RequestLimits {
        self.inner.defaults.for_tenant(&tenant.settings.0)
    }

    /// The daily budget tracker.
    pub fn budget(&self) -> &LlmBudget {
        &self.inner.budget
    }

    /// Turns in flight.
    pub fn turns(&self) -> &TurnSlots {
        &self.inner.turns
    }

    /// Take one platform-admin API request for the platform key `key`: the
    /// per-key rate of [`Action::ApiRequest`] under the env defaults.
    pub fn check_platform(&self, key: Uuid) -> Result<(), LimitExceeded> {
        let rate = Rate::per_minute(self.inner.defaults.api_requests_per_key_per_minute);
        let now = self.inner.clock.now();
        self.inner
            .rates
            .try_acquire_all(&[(RateKey::PlatformKey(key), rate)], now)
            .map_err(|ms| {
                let retry_after_secs = ms.div_ceil(1000).max(1);
                tracing::info!(platform_key_id = %key, retry_after_secs, "rate limit exceeded");
                LimitExceeded {
                    action: Action::ApiRequest,
                    concurrency: false,
                    retry_after_secs,
                    message: format!(
                        "too many platform API requests; retry in {retry_after_secs} s"
                    ),
                }
            })
    }

    /// Take one `action` for `tenant` (and `api_key`, when the caller used
    /// one) or refuse with the wait. Logs one line per refusal (ids only).
    pub fn check(
        &self,
        action: Action,
        tenant: &Tenant,
        api_key: Option<Uuid>,
    ) -> Result<(), LimitExceeded> {
        let limits = self.limits_for(tenant);
        let (per_tenant, per_key) = action.rates(&limits);
        let mut keys = vec![(RateKey::Tenant(action, tenant.id), per_tenant)];
        if let Some(k) = api_key {
            keys.push((RateKey::ApiKey(action, k), per_key));
        }
        let now = self.inner.clock.now();
        self.inner.rates.try_acquire_all(&keys, now).map_err(|ms| {
            let retry_after_secs = ms.div_ceil(1000).max(1);
            tracing::info!(
                tenant = %tenant.id,
                api_key_id = ?api_key,
                action = action.as_str(),
                retry_after_secs,
                "rate limit exceeded"
            );
            LimitExceeded {
                action,
                concurrency: false,
                retry_after_secs,
                message: format!(
                    "too many {} for this tenant or API key; retry after {retry_after_secs} s",
                    action.as_str()
                ),
            }
        })
    }

    /// The gate of one agent turn, before any model call: the tenant is
    /// active (fresh row, the live one's too for a shadow), message size,
    /// turn rate (tenant and API key), turns in flight (tenant and process),
    /// then the daily LLM budget. On the first budget refusal of a UTC day
    /// the tenant's admins get one notice through `sink`. The permit holds
    /// the turn's in-flight place until dropped.
    pub async fn admit_turn(
        &self,
        tenant: &Tenant,
        api_key: Option<Uuid>,
        message: &str,
        sink: &dyn NotificationSink,
    ) -> Result<TurnPermit, TurnRefusal> {
        match crate::platform::tenancy::is_serving(self.inner.budget.store(), tenant).await {
            Ok(true) => {}
            Ok(false) => {
                tracing::info!(tenant = %tenant.id, "turn refused: community not active");
                return Err(TurnRefusal::TenantInactive);
            }
            Err(e) => {
                // Failing closed: the status is what this check is for.
                tracing::warn!(tenant = %tenant.id, error = %e, "tenant status unreadable; turn refused");
                return Err(TurnRefusal::TenantInactive);
            }
        }
        let chars = message.chars().count();
        if chars > caps::MAX_MESSAGE_CHARS {
            tracing::info!(tenant = %tenant.id, chars, "turn refused: message too long");
            return Err(TurnRefusal::MessageTooLong {
                chars,
                max: caps::MAX_MESSAGE_CHARS,
            });
        }
        self.check(Action::AgentTurn, tenant, api_key)
            .map_err(TurnRefusal::Limited)?;
        let limits = self.limits_for(tenant);
        let permit = self
            .inner
            .turns
            .try_enter(
                tenant.id,
                limits.agent_turns_per_tenant_concurrent,
                limits.agent_turns_global_concurrent,
            )
            .map_err(|scope| {
                tracing::info!(
                    tenant = %tenant.id,
                    api_key_id = ?api_key,
                    cap = ?scope,
                    "turn refused: too many turns in flight"
                );
                TurnRefusal::Limited(LimitExceeded {
                    action: Action::AgentTurn,
                    concurrency: true,
                    retry_after_secs: BUSY_RETRY_AFTER_SECS,
                    message: match scope {
                        CapScope::Tenant => "too many agent turns in flight for this tenant",
                        CapScope::Global => "too many agent turns in flight on this server",
                    }
                    .to_string(),
                })
            })?;
        let verdict = match self.inner.budget.check(tenant.id, &limits).await {
            Ok(v) => v,
            Err(e) => {
                // Failing open: a storage hiccup must not silence every
                // community; the next turn seeds again.
                tracing::warn!(tenant = %tenant.id, error = %e, "LLM budget unreadable; turn allowed");
                BudgetCheck::Within
            }
        };
        if let BudgetCheck::Exhausted {
            spent,
            retry_after_secs,
            first_today,
        } = verdict
        {
            tracing::info!(
                tenant = %tenant.id,
                cost_usd = spent.cost_usd,
                tokens = spent.tokens,
                "turn refused: daily LLM budget used up"
            );
            if first_today {
                sink.notify(AdminNotice {
                    kind: "llm.daily_budget_exhausted".into(),
                    title: format!(
                        "{}: the assistant is paused until 00:00 UTC (daily AI budget used up)",
                        tenant.display_name
                    ),
                    body: format!(
                        "Tenant {} ({}) used ${:.4} and {} tokens today (UTC); its daily budget \
                         is ${:.2} / {} tokens. Members get a refusal until 00:00 UTC. Raise \
                         settings.limits.daily_llm_budget_usd or \
                         settings.limits.daily_llm_token_budget to resume sooner.",
                        tenant.slug,
                        tenant.id,
                        spent.cost_usd,
                        spent.tokens,
                        limits.daily_llm_budget_usd,
                        limits.daily_llm_token_budget,
                    ),
                })
                .await;
            }
            return Err(TurnRefusal::BudgetExhausted { retry_after_secs });
        }
        Ok(permit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tenant_settings_override_every_limit_but_the_process_cap() {
        let d = RequestLimits::default();
        let t = d.for_tenant(&json!({"limits": {
            "agent_turns_per_tenant_per_minute": 3,
            "agent_turns_global_concurrent": 1,
            "daily_llm_budget_usd": 0.5,
            "kb_search_per_key_per_minute": 0,
            "tool_execute_per_tenant_per_minute": "lots"
        }}));
        assert_eq!(t.agent_turns_per_tenant_per_minute, 3);
        assert_eq!(t.agent_turns_global_concurrent, 32, "process-wide only");
        assert_eq!(t.daily_llm_budget_usd, 0.5);
        assert_eq!(t.kb_search_per_key_per_minute, 150, "0 is ignored");
        assert_eq!(t.tool_execute_per_tenant_per_minute, 120, "malformed");
        assert_eq!(d.for_tenant(&json!({})), d);
    }

    #[test]
    fn refusal_texts_say_what_happens() {
        let t = TurnRefusal::BudgetExhausted {
            retry_after_secs: 10,
        }
        .member_text();
        assert!(
            t.contains("paused until midnight UTC") && t.contains("admins can raise the limit")
        );
        let t = TurnRefusal::MessageTooLong {
            chars: 16_001,
            max: 16_000,
        }
        .member_text();
        assert!(t.contains("16001") && t.contains("16000"), "{t}");
    }
}

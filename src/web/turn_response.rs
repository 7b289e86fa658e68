//! The answer of a full agent turn over HTTP — shared by `POST
//! /api/v1/agent/turns` (§12.2) and the dev harness `POST
//! /dev/simulate-message` (§8.5) — and the mapping of a failed or refused
//! turn to an HTTP error. Typed (serde) so the shape is written once and an
//! OpenAPI document can be generated from it.

use serde::Serialize;
use serde_json::Value;
use uuid::Uuid;

use crate::agent::tool::ToolImage;
use crate::channels::{TurnError, TurnOutcome};
use crate::limits::TurnRefusal;
use crate::web::error::ApiError;

/// A completed turn.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct TurnResponse<'a> {
    /// The reply as delivered.
    pub response: &'a str,
    /// `false` when the agent could not complete the request (§4.4).
    pub success: bool,
    /// Every executed tool call, model view (no `error_detail`, no images).
    pub tool_calls: Vec<ToolCallView<'a>>,
    /// The run's trace.
    pub trace_id: Option<Uuid>,
    /// Send it back to continue the conversation.
    pub thread_key: &'a str,
    /// The exchange's UUID key.
    pub exchange_key: &'a str,
    /// Who the turn ran as.
    pub principal: PrincipalView<'a>,
    /// Why the turn ran on a reserved tier, if it did.
    pub degraded: Option<&'a str>,
    /// Tools offered to the model.
    pub offered_tools: &'a [String],
    /// Tool images for the client.
    pub images: &'a [ToolImage],
    /// LLM usage of the whole turn.
    pub usage: UsageView,
}

/// One executed tool call.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct ToolCallView<'a> {
    /// The model's call id.
    pub id: &'a str,
    /// Tool name.
    pub name: &'a str,
    /// Parsed arguments.
    pub args: &'a Value,
    /// Planning round (1-based).
    pub round: u32,
    /// Whether the tool succeeded.
    pub success: bool,
    /// The result as the model saw it.
    pub result: Value,
    /// Handler wall time.
    pub duration_ms: u64,
}

/// The principal of a turn.
#[derive(Debug, Serialize, schemars::JsonSchema)]
#[schemars(rename = "TurnPrincipal")]
pub struct PrincipalView<'a> {
    /// Principal ref.
    #[serde(rename = "ref")]
    pub ref_: &'a str,
    /// Tier.
    pub tier: &'a str,
    /// Where the tier came from.
    pub tier_source: &'a str,
}

/// LLM usage totals.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct UsageView {
    /// Provider calls.
    pub llm_calls: u64,
    /// Tokens.
    pub tokens: u64,
    /// Reported cost.
    pub cost_usd: f64,
}

impl<'a> TurnResponse<'a> {
    /// The answer for `o`.
    pub fn from_outcome(o: &'a TurnOutcome) -> Self {
        TurnResponse {
            response: &o.reply,
            success: o.success,
            tool_calls: o
                .tool_calls
                .iter()
                .map(|c| ToolCallView {
                    id: &c.id,
                    name: &c.name,
                    args: &c.args,
                    round: c.round,
                    success: c.result.success,
                    result: c.result.model_view(),
                    duration_ms: c.duration_ms,
                })
                .collect(),
            trace_id: o.trace_id,
            thread_key: &o.thread_key,
            exchange_key: &o.exchange_key,
            principal: PrincipalView {
                ref_: &o.principal_ref,
                tier: o.tier.as_str(),
                tier_source: o.tier_source,
            },
            degraded: o.degraded.as_deref(),
            offered_tools: &o.offered_tools,
            images: &o.images,
            usage: UsageView {
                llm_calls: o.usage.llm_calls,
                tokens: o.usage.tokens,
                cost_usd: o.usage.cost_usd,
            },
        }
    }
}

/// What a channel member sees for a refused turn (the dev harness answers
/// size and budget refusals this way, as a channel would).
#[derive(Debug, Serialize)]
pub struct RefusalResponse {
    /// The member-facing refusal text.
    pub response: String,
    /// Always `false`.
    pub success: bool,
    /// `message_too_long`, `rate_limited`, `concurrency_limited`,
    /// `llm_budget_exhausted` or `tenant_inactive`.
    pub refused: &'static str,
    /// Always empty.
    pub tool_calls: [(); 0],
    /// Always empty.
    pub images: [(); 0],
}

impl RefusalResponse {
    /// The answer for `r`.
    pub fn new(r: &TurnRefusal) -> Self {
        RefusalResponse {
            response: r.member_text(),
            success: false,
            refused: refusal_code(r),
            tool_calls: [],
            images: [],
        }
    }
}

/// The machine-readable code of a refusal.
pub fn refusal_code(r: &TurnRefusal) -> &'static str {
    match r {
        TurnRefusal::MessageTooLong { .. } => "message_too_long",
        TurnRefusal::Limited(e) if e.concurrency => "concurrency_limited",
        TurnRefusal::Limited(_) => "rate_limited",
        TurnRefusal::BudgetExhausted { .. } => "llm_budget_exhausted",
        TurnRefusal::TenantInactive => "tenant_inactive",
    }
}

/// A turn failure as an HTTP error: a message over the size cap is a 400;
/// rate, concurrency and budget refusals are 429 with `Retry-After` (the
/// budget's is the time until 00:00 UTC); a suspended community is a 403.
pub fn turn_error(e: TurnError) -> ApiError {
    match e {
        TurnError::Invalid(m) => ApiError::BadRequest(m),
        TurnError::Internal(e) => ApiError::Internal(e),
        TurnError::Refused(r) => match r {
            TurnRefusal::MessageTooLong { .. } => ApiError::BadRequest(r.to_string()),
            TurnRefusal::Limited(e) => e.into(),
            TurnRefusal::TenantInactive => ApiError::Forbidden(r.to_string()),
            TurnRefusal::BudgetExhausted { retry_after_secs } => ApiError::TooManyRequests {
                code: refusal_code(&r),
                message: r.to_string(),
                retry_after_secs,
            },
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_has_the_harness_shape() {
        let v = serde_json::to_value(RefusalResponse::new(&TurnRefusal::MessageTooLong {
            chars: 16_001,
            max: 16_000,
        }))
        .unwrap();
        assert_eq!(v["success"], false);
        assert_eq!(v["refused"], "message_too_long");
        assert_eq!(v["tool_calls"], serde_json::json!([]));
        assert_eq!(v["images"], serde_json::json!([]));
        assert!(v["response"].as_str().is_some_and(|t| !t.is_empty()));
    }
}

//! The normative constants of §4.2, one `const` each, named as the spec
//! names them so the two can be checked side by side.

/// `MAX_PLANNING_ROUNDS`: planning rounds when the caller sets no
/// `max_iterations` (the follow-up executor passes 6).
pub const MAX_PLANNING_ROUNDS: u32 = 2;

/// `LLM_CALL_RETRY_DELAYS_MS`: the wait before the 2nd and the 3rd attempt
/// of one LLM round (3 attempts in total).
pub const LLM_CALL_RETRY_DELAYS_MS: [u64; 2] = [0, 5000];

/// `MIN_RESPONSE_LENGTH_AFTER_TOOLS`: a reply shorter than this (in
/// characters, trimmed) after tools ran is `trivially_short_after_tools`.
pub const MIN_RESPONSE_LENGTH_AFTER_TOOLS: usize = 20;

/// `TOOL_RESULT_SERIALIZED_CAP`: a serialized tool result longer than this
/// (characters) is deep-truncated …
pub const TOOL_RESULT_SERIALIZED_CAP: usize = 60_000;

/// `TOOL_RESULT_TRUNCATE_BUDGET`: … down to at most this many characters.
pub const TOOL_RESULT_TRUNCATE_BUDGET: usize = 55_000;

/// The marker appended to every string cut by the deep truncation.
pub const STRING_TRUNCATION_MARKER: &str =
    "…[TRUNCATED for size — the full text is not available; do not guess at what was cut]";

/// Plan-shape detector: at least this many bullets …
pub const PLAN_MIN_BULLETS: usize = 3;
/// … each at most this many characters …
pub const PLAN_MAX_BULLET_CHARS: usize = 60;
/// … the whole text at most this many characters …
pub const PLAN_MAX_TOTAL_CHARS: usize = 700;
/// … and at most this much prose after the last bullet.
pub const PLAN_MAX_TRAILING_PROSE_CHARS: usize = 80;

/// Repeated no-result burst threshold: this many consecutive empty
/// successes of the same tool trigger exhausted-tools composition (path B).
pub const REPEATED_EMPTY_BURST_THRESHOLD: usize = 3;

/// Budget of each retry counter (`emptyResponseRetries`,
/// `unexecutedPlanRetries`, `exhaustedToolRecoveryAttempts`).
pub const MAX_EMPTY_RESPONSE_RETRIES: u32 = 1;
/// See [`MAX_EMPTY_RESPONSE_RETRIES`].
pub const MAX_UNEXECUTED_PLAN_RETRIES: u32 = 1;
/// See [`MAX_EMPTY_RESPONSE_RETRIES`].
pub const MAX_EXHAUSTED_TOOL_RECOVERY_ATTEMPTS: u32 = 1;

/// Path B composer: temperature and metering purpose.
pub const TOOL_EXHAUSTION_TEMPERATURE: f64 = 0.7;
/// See [`TOOL_EXHAUSTION_TEMPERATURE`].
pub const TOOL_EXHAUSTION_PURPOSE: &str = "agent.tool-exhaustion-recovery";

/// Path C composer: temperature, metering purpose, and how many of the
/// latest transcript messages it sees.
pub const BEST_EFFORT_TEMPERATURE: f64 = 0.3;
/// See [`BEST_EFFORT_TEMPERATURE`].
pub const BEST_EFFORT_PURPOSE: &str = "agent.best-effort-response-recovery";
/// See [`BEST_EFFORT_TEMPERATURE`].
pub const BEST_EFFORT_HISTORY_MESSAGES: usize = 6;

/// Most tool calls of one batch that run (security finding M1): calls past
/// it get a failed tool result saying so, so every call id still gets its
/// `tool` message and the model can ask again next round.
pub const MAX_TOOL_CALLS_PER_BATCH: usize = 16;

/// Cap of source refs the reply-source-usage hook stores per run (§4.6).
pub const REPLY_SOURCE_USAGE_CAP: usize = 200;

/// Keys whose arrays signal an empty result when every present one is empty
/// (`toolCallSignalsEmpty`, §4.3).
pub const EMPTY_SIGNAL_ARRAY_KEYS: [&str; 12] = [
    "members",
    "companies",
    "providers",
    "funds",
    "connections",
    "officeHours",
    "bookings",
    "events",
    "results",
    "items",
    "matches",
    "entries",
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The spec's §4.2 table, value by value.
    #[test]
    fn constants_match_spec_4_2() {
        assert_eq!(MAX_PLANNING_ROUNDS, 2);
        assert_eq!(LLM_CALL_RETRY_DELAYS_MS, [0, 5000]);
        assert_eq!(MIN_RESPONSE_LENGTH_AFTER_TOOLS, 20);
        assert_eq!(TOOL_RESULT_SERIALIZED_CAP, 60_000);
        assert_eq!(TOOL_RESULT_TRUNCATE_BUDGET, 55_000);
        assert_eq!(
            STRING_TRUNCATION_MARKER,
            "…[TRUNCATED for size — the full text is not available; do not guess at what was cut]"
        );
        assert_eq!(
            (
                PLAN_MIN_BULLETS,
                PLAN_MAX_BULLET_CHARS,
                PLAN_MAX_TOTAL_CHARS,
                PLAN_MAX_TRAILING_PROSE_CHARS
            ),
            (3, 60, 700, 80)
        );
        assert_eq!(REPEATED_EMPTY_BURST_THRESHOLD, 3);
        assert_eq!(MAX_EMPTY_RESPONSE_RETRIES, 1);
        assert_eq!(MAX_UNEXECUTED_PLAN_RETRIES, 1);
        assert_eq!(MAX_EXHAUSTED_TOOL_RECOVERY_ATTEMPTS, 1);
        assert_eq!(TOOL_EXHAUSTION_TEMPERATURE, 0.7);
        assert_eq!(TOOL_EXHAUSTION_PURPOSE, "agent.tool-exhaustion-recovery");
        assert_eq!(BEST_EFFORT_TEMPERATURE, 0.3);
        assert_eq!(BEST_EFFORT_PURPOSE, "agent.best-effort-response-recovery");
        assert_eq!(BEST_EFFORT_HISTORY_MESSAGES, 6);
        assert_eq!(REPLY_SOURCE_USAGE_CAP, 200);
    }
}

//! The community-build sandbox (§15.1). A tool call runs in a fresh child
//! process — the `root` binary re-executed as the hidden `root sandbox-run`
//! with an empty environment and an empty temporary working directory —
//! that evaluates the build's ES module in QuickJS (`rquickjs`, without
//! quickjs-libc: no `std`, `os`, `process`, `require`, file or environment
//! APIs exist). The parent ([`SandboxRunner`]) writes one JSON line
//! ([`SandboxRequest`]) on the child's stdin and reads NDJSON
//! ([`ChildLine`]) from its stdout.
//!
//! Limits: 256 MB of JavaScript heap ([`MEMORY_LIMIT_BYTES`]), a wall clock
//! (default 120 s, per-tool `timeout_ms`) enforced twice — the child's
//! QuickJS interrupt handler, and the parent killing the child shortly
//! after — a cap on everything the child prints ([`MAX_OUTPUT_BYTES`]),
//! and `fetch` limited in count and response size ([`MAX_FETCHES`],
//! [`MAX_FETCH_BODY_BYTES`]). Whatever the child does — crash, exhaust
//! memory or time, print garbage or nothing — the caller gets a failed
//! [`SandboxOutcome`] with the reason, never a hung turn.
//!
//! Beneath QuickJS the child confines itself before it reads its request
//! ([`confine`]: rlimits, no new privileges, no root, Landlock, seccomp)
//! and reports what the kernel applied as its first line; the parent caps
//! live children per process and per community ([`slots`]).

pub mod child;
pub mod confine;
mod fetch;
mod runner;
pub mod slots;

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use confine::{Confinement, LandlockLevel};
pub use runner::{LogKind, SandboxLog, SandboxOutcome, SandboxRunner, ToolCall};

/// The JavaScript heap limit of one run.
pub const MEMORY_LIMIT_BYTES: usize = 256 * 1024 * 1024;
/// The wall clock of one run when the tool declares no `timeout_ms`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);
/// The longest `timeout_ms` a tool may declare (10 minutes).
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// How long after its own deadline the parent waits before killing the
/// child (the child's interrupt handler normally answers first).
pub const KILL_GRACE: Duration = Duration::from_millis(500);
/// A progress message is cut to this many characters.
pub const PROGRESS_MAX_CHARS: usize = 500;
/// A log message is cut to this many characters.
pub const LOG_MAX_CHARS: usize = 4_000;
/// Everything a child may print (the result line included); past it the
/// child is killed.
pub const MAX_OUTPUT_BYTES: u64 = 4 * 1024 * 1024;
/// The largest request the child reads from stdin.
pub const MAX_REQUEST_BYTES: u64 = 16 * 1024 * 1024;
/// `fetch` calls allowed per run.
pub const MAX_FETCHES: u32 = 50;
/// The largest response body `fetch` reads.
pub const MAX_FETCH_BODY_BYTES: usize = 5 * 1024 * 1024;
/// The largest request body `fetch` sends.
pub const MAX_FETCH_REQUEST_BYTES: usize = 1024 * 1024;
/// One `fetch` never waits longer than this (nor past the run's deadline).
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(30);

/// The one line the parent writes on the child's stdin. `Debug` is written
/// by hand: `config` holds the install's secrets and prints `[redacted]`.
#[derive(Clone, Serialize, Deserialize)]
pub struct SandboxRequest {
    /// The build's ES module (`index.js`).
    pub module_source: String,
    /// The tool to invoke.
    pub tool: String,
    /// The model's arguments.
    pub params: Value,
    /// The install's config.
    pub config: Value,
    /// Who the turn is for (`ctx.principal`).
    pub principal: Value,
    /// The turn's channel (`ctx.channel`).
    pub channel: String,
    /// `fetch` may reach private addresses (`ROOT_ALLOW_PRIVATE_FETCH`).
    pub allow_private_fetch: bool,
    /// `fetch` must use https (production without private fetches).
    #[serde(default)]
    pub require_https: bool,
    /// The run's wall clock in milliseconds.
    pub timeout_ms: u64,
}

impl std::fmt::Debug for SandboxRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxRequest")
            .field("tool", &self.tool)
            .field("params", &self.params)
            .field("config", &storage::Redacted::new(()))
            .field("channel", &self.channel)
            .field("timeout_ms", &self.timeout_ms)
            .finish_non_exhaustive()
    }
}

/// One NDJSON line of the child's stdout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ChildLine {
    /// The first line: what confinement the kernel applied to the child.
    Confinement(Confinement),
    /// A debug line (`ctx.log`, `console.*`).
    Log {
        /// The text (≤ [`LOG_MAX_CHARS`]).
        message: String,
    },
    /// A user-facing status line (`ctx.progress`).
    Progress {
        /// The text (≤ [`PROGRESS_MAX_CHARS`]).
        message: String,
    },
    /// The final line.
    Result {
        /// The tool succeeded.
        ok: bool,
        /// What `invoke` returned (when `ok`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<Value>,
        /// Why it failed (when not `ok`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
}

/// `s` cut to at most `max` characters (an ellipsis marks a cut).
pub fn truncate_chars(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some(_) => {
            let keep: String = s.chars().take(max.saturating_sub(1)).collect();
            format!("{keep}…")
        }
    }
}

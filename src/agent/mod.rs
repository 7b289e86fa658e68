//! The agent kernel (§4): `runAgent` over an [`crate::ai::chat::LlmClient`],
//! the turn's [`AgentTools`] and a trace sink, with the §4.2 constants,
//! the §4.3 batch rules, every §4.4 recovery path and the §4.6 post-batch
//! hooks.
//!
//! - [`constants`] — every §4.2 constant as a named `const`.
//! - [`kernel`] — the loop ([`AgentKernel::run`]).
//! - [`signals`] — non-answer classifier, plan-shape detector,
//!   `toolCallSignalsEmpty`, the empty-burst tracker.
//! - [`truncate`] — deep truncation of oversized tool results.
//! - [`tool`] — the tool interface the loop needs ([`AgentTools`],
//!   [`ToolResult`]).
//! - [`hooks`] — [`PostBatchHook`] and the reply-source-usage hook.
//! - [`phrases`] — the kernel's instructions, nudges and canned replies.

mod compose;
pub mod constants;
pub mod hooks;
pub mod kernel;
pub mod phrases;
pub mod run;
pub mod signals;
pub mod tool;
pub mod truncate;

pub use hooks::{BatchReport, PostBatchHook, ReplySourceUsageHook};
pub use kernel::{
    AgentInput, AgentKernel, AgentOptions, AgentOutcome, AgentRun, AgentSettings, Recovery,
};
pub use tool::{AgentTools, ExecutedToolCall, NoTools, ToolCaller, ToolImage, ToolResult};

//! A turn's pre-dispatch authorization hook: a channel that knows more about
//! *who may act for whom* than tier gating does (email delegation, §8.3)
//! installs a [`ToolGate`] on the turn's [`TurnTools`](super::TurnTools).
//! Every mutation tool — a catalog tool marked `mutates`, or an integration
//! tool whose manifest does not say `read_only` — asks it before its
//! handler runs; a blocked call never reaches the handler or the backend,
//! and the model gets the gate's failed result instead.

use async_trait::async_trait;
use serde_json::Value;

use crate::agent::ToolResult;

/// What the gate decided for one call.
#[derive(Clone, Debug, PartialEq)]
pub enum GateDecision {
    /// Run the tool.
    Proceed,
    /// Do not run it; this failed result goes to the model.
    Block(ToolResult),
}

/// Decides, per call, whether a mutation tool may run.
#[async_trait]
pub trait ToolGate: Send + Sync {
    /// Called once per mutation call, after the tier gate admitted it.
    async fn check(&self, tool: &str, args: &Value) -> GateDecision;
}

//! Target `tool_args`: a tool call's raw `arguments` string as a model sends
//! it, through the kernel's [`parse_args`] (§4.3: anything but a JSON object
//! becomes `{}`) and then every core tool's argument type via
//! [`CoreTool::validate_args`] — what `execute` does before a handler runs.
//! The same bytes, when they are JSON of any shape, are also checked as the
//! `args` value `POST /api/v1/tools/{name}/execute` hands over unchanged.
//! Handlers never run: they need storage, and only validation is inbound.

use std::sync::{Arc, OnceLock};

use root::agent::kernel::parse_args;
use root::tools::CoreTool;
use serde_json::Value;

fn tools() -> &'static [Arc<dyn CoreTool>] {
    static TOOLS: OnceLock<Vec<Arc<dyn CoreTool>>> = OnceLock::new();
    TOOLS.get_or_init(root::tools::core::all)
}

/// Validate one raw argument string against every core tool.
pub fn run(data: &[u8]) {
    let raw = String::from_utf8_lossy(data);
    let args = parse_args(&raw);
    assert!(args.is_object(), "the kernel hands tools an object");
    validate_everywhere(&args);
    if let Ok(value) = serde_json::from_slice::<Value>(data)
        && !value.is_object()
    {
        validate_everywhere(&value);
    }
}

fn validate_everywhere(args: &Value) {
    for tool in tools() {
        if let Err(refusal) = tool.validate_args(args.clone()) {
            assert!(!refusal.success);
            let message = refusal.error.as_deref().unwrap_or_default();
            assert!(
                message.starts_with(&format!("Invalid arguments for {}: ", tool.name())),
                "refusal of {} says what was wrong: {message}",
                tool.name()
            );
            assert!(refusal.data.is_none() && refusal.images.is_empty());
        }
    }
}

//! The build format (§15.1, `docs/community-builds.md`): a folder with
//! `build.json` — `{name, version, description, author?, config_schema,
//! tools: [{name, description, parameters, tiers?, channels?,
//! timeout_ms?}]}` — and `index.js`, an ES module exporting
//! `invoke(toolName, params, ctx)`. Everything here is pure validation:
//! a declaration that passes is safe to store and to offer to a model.

use std::collections::BTreeSet;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::sandbox::MAX_TIMEOUT_MS;

/// The largest `index.js` accepted.
pub const MAX_MODULE_BYTES: usize = 1024 * 1024;
/// The most tools one build may declare.
pub const MAX_TOOLS: usize = 32;
/// Channels a tool may name.
pub const CHANNELS: [&str; 4] = ["slack", "email", "api", "web"];

/// One tool declaration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolDeclaration {
    /// The name the model calls (`[A-Za-z0-9_-]`, ≤ 64).
    pub name: String,
    /// What it does (shown to the model).
    pub description: String,
    /// JSON Schema of the arguments (an object schema).
    pub parameters: Value,
    /// Tiers that get it (`__admin__` for admins; absent = every
    /// non-reserved tier and admins) — the integration-tool rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// Channels that get it (absent = all).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// The run's wall clock (default 120 000, at most 600 000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u64>,
}

/// `build.json`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildManifest {
    /// The catalog slug (`a-z0-9-`, 1–64).
    pub name: String,
    /// The version (free text, e.g. `1.2.0`).
    pub version: String,
    /// One paragraph for the catalog.
    #[serde(default)]
    pub description: Option<String>,
    /// Who made it.
    #[serde(default)]
    pub author: Option<String>,
    /// JSON Schema of the install's config (`writeOnly: true` properties
    /// are secrets: accepted, never shown again).
    #[serde(default = "empty_object_schema")]
    pub config_schema: Value,
    /// The tools.
    pub tools: Vec<ToolDeclaration>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

/// A build that is not valid, with the field at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct FormatError {
    /// Where (`tools[1].name`, `config_schema`…).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

fn bad(field: impl Into<String>, message: impl Into<String>) -> FormatError {
    FormatError {
        field: field.into(),
        message: message.into(),
    }
}

/// A checked build: manifest plus module source.
#[derive(Clone, Debug, PartialEq)]
pub struct Build {
    /// `build.json`.
    pub manifest: BuildManifest,
    /// `index.js`.
    pub module_source: String,
}

impl Build {
    /// Read and check `dir/build.json` and `dir/index.js`.
    pub fn read_dir(dir: &Path) -> Result<Build, FormatError> {
        let manifest = std::fs::read_to_string(dir.join("build.json"))
            .map_err(|e| bad("build.json", format!("cannot be read: {e}")))?;
        let module_source = std::fs::read_to_string(dir.join("index.js"))
            .map_err(|e| bad("index.js", format!("cannot be read: {e}")))?;
        Build::parse(&manifest, module_source)
    }

    /// Check a `build.json` text and its module.
    pub fn parse(manifest: &str, module_source: String) -> Result<Build, FormatError> {
        let manifest: BuildManifest = serde_json::from_str(manifest)
            .map_err(|e| bad("build.json", format!("not a valid build manifest: {e}")))?;
        Build::checked(manifest, module_source)
    }

    /// Check a `build.json` already parsed as JSON (the platform API's
    /// body) and its module — the same rules as [`Build::parse`].
    pub fn from_value(manifest: Value, module_source: String) -> Result<Build, FormatError> {
        let manifest: BuildManifest = serde_json::from_value(manifest)
            .map_err(|e| bad("build.json", format!("not a valid build manifest: {e}")))?;
        Build::checked(manifest, module_source)
    }

    fn checked(manifest: BuildManifest, module_source: String) -> Result<Build, FormatError> {
        check(&manifest, &module_source)?;
        Ok(Build {
            manifest,
            module_source,
        })
    }
}

/// Is `s` a valid slug (`a-z0-9-`, 1–64)?
pub fn valid_slug(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn valid_tool_name(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Compile `schema` as a JSON Schema (no remote references).
pub fn compile_schema(field: &str, schema: &Value) -> Result<jsonschema::Validator, FormatError> {
    if !schema.is_object() {
        return Err(bad(field, "must be a JSON Schema object"));
    }
    jsonschema::validator_for(schema)
        .map_err(|e| bad(field, format!("not a valid JSON Schema: {e}")))
}

fn check(m: &BuildManifest, module_source: &str) -> Result<(), FormatError> {
    if !valid_slug(&m.name) {
        return Err(bad("name", "must be 1–64 characters of a-z, 0-9 and '-'"));
    }
    if m.version.trim().is_empty() || m.version.len() > 64 {
        return Err(bad("version", "must be 1–64 characters"));
    }
    if module_source.trim().is_empty() {
        return Err(bad("index.js", "is empty"));
    }
    if module_source.len() > MAX_MODULE_BYTES {
        return Err(bad("index.js", format!("is over {MAX_MODULE_BYTES} bytes")));
    }
    compile_schema("config_schema", &m.config_schema)?;
    if m.tools.is_empty() || m.tools.len() > MAX_TOOLS {
        return Err(bad("tools", format!("must declare 1–{MAX_TOOLS} tools")));
    }
    let mut names = BTreeSet::new();
    for (i, t) in m.tools.iter().enumerate() {
        let at = |f: &str| format!("tools[{i}].{f}");
        if !valid_tool_name(&t.name) {
            return Err(bad(
                at("name"),
                "must be 1–64 characters of A-Z, a-z, 0-9, '_' and '-'",
            ));
        }
        if !names.insert(t.name.as_str()) {
            return Err(bad(at("name"), format!("{} is declared twice", t.name)));
        }
        if t.description.trim().is_empty() {
            return Err(bad(at("description"), "must not be blank"));
        }
        compile_schema(&at("parameters"), &t.parameters)?;
        if t.parameters.get("type").and_then(Value::as_str) != Some("object") {
            return Err(bad(
                at("parameters"),
                "must be an object schema (\"type\": \"object\")",
            ));
        }
        if let Some(channels) = &t.channels
            && let Some(c) = channels.iter().find(|c| !CHANNELS.contains(&c.as_str()))
        {
            return Err(bad(
                at("channels"),
                format!("unknown channel {c:?} (slack, email, api or web)"),
            ));
        }
        if let Some(tiers) = &t.tiers
            && tiers.iter().any(|x| x.trim().is_empty())
        {
            return Err(bad(at("tiers"), "tier names must not be blank"));
        }
        if let Some(ms) = t.timeout_ms
            && !(1..=MAX_TIMEOUT_MS).contains(&ms)
        {
            return Err(bad(
                at("timeout_ms"),
                format!("must be between 1 and {MAX_TIMEOUT_MS}"),
            ));
        }
    }
    Ok(())
}

/// The top-level config properties the schema marks `writeOnly: true`.
pub fn secret_properties(config_schema: &Value) -> Vec<String> {
    config_schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter(|(_, p)| p.get("writeOnly").and_then(Value::as_bool) == Some(true))
                .map(|(k, _)| k.clone())
                .collect()
        })
        .unwrap_or_default()
}

/// Validate `config` against `schema`; the errors name where, never the
/// value (it may be a secret).
pub fn validate_config(schema: &Value, config: &Value) -> Result<(), FormatError> {
    let validator = compile_schema("config_schema", schema)?;
    let problems: Vec<String> = validator
        .iter_errors(config)
        .take(5)
        .map(|e| {
            let path = e.instance_path().to_string();
            let path = if path.is_empty() {
                "/".to_string()
            } else {
                path
            };
            format!("{path}: {}", e.masked())
        })
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(bad("config", problems.join("; ")))
    }
}

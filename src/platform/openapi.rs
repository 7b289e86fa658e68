//! Assembling an OpenAPI 3.1 document from operations whose schemas the
//! caller already generated (`web::api::openapi` owns the route table and
//! the schemars types; this is only the document's shape): path and query
//! parameters, request bodies, the success answer, the shared error answer
//! and the bearer scheme.

use serde_json::{Map, Value, json};

/// One operation, its schemas already generated.
pub struct DocOperation {
    /// `get`, `post`, …
    pub method: &'static str,
    /// Path in axum syntax (`/kb/pages/{slug}`).
    pub path: &'static str,
    /// One line for humans.
    pub summary: &'static str,
    /// The query string's root schema (its `properties` become parameters).
    pub query: Option<Value>,
    /// The JSON body's schema.
    pub body: Option<Value>,
    /// The success status.
    pub status: u16,
    /// The success body's schema (`None`: a JSON object, or no body for 204).
    pub response: Option<Value>,
    /// The media type of a success body that is not JSON (an archive).
    pub media: Option<&'static str>,
}

fn path_parameters(path: &str) -> Vec<Value> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
        .collect()
}

fn query_parameters(schema: &Value) -> Vec<Value> {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, s)| {
                    let mut p = json!({"name": name, "in": "query",
                        "required": required.contains(&name.as_str()), "schema": s});
                    if let Some(d) = s.get("description") {
                        p["description"] = d.clone();
                    }
                    p
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The document: `ops` under `{base_url}/api/v1`, every operation also
/// answering `error` for 400/401/403/404/429, `schemas` as its components.
pub fn openapi_document(
    base_url: &str,
    title: &str,
    version: &str,
    ops: &[DocOperation],
    error: Value,
    schemas: Map<String, Value>,
) -> Value {
    let mut paths = Map::new();
    for op in ops {
        let mut parameters = path_parameters(op.path);
        if let Some(q) = &op.query {
            parameters.extend(query_parameters(q));
        }
        let ok = match (&op.response, op.media) {
            (Some(r), _) => {
                json!({"description": "Success", "content": {"application/json": {"schema": r}}})
            }
            (None, Some(media)) => {
                json!({"description": "Success", "content": {media: {"schema": {"type": "string", "contentMediaType": media}}}})
            }
            (None, None) if op.status == 204 => json!({"description": "Done (no body)"}),
            (None, None) => {
                json!({"description": "Success (JSON object)", "content": {"application/json": {"schema": {"type": "object"}}}})
            }
        };
        let err =
            json!({"description": "Error", "content": {"application/json": {"schema": error}}});
        let mut operation = json!({
            "summary": op.summary,
            "operationId": format!("{}{}", op.method, op.path.replace(['/', '{', '}', '-', '.'], "_")),
            "responses": {
                op.status.to_string(): ok,
                "400": err, "401": err, "403": err, "404": err, "429": err,
            },
        });
        if !parameters.is_empty() {
            operation["parameters"] = Value::Array(parameters);
        }
        if let Some(b) = &op.body {
            operation["requestBody"] = json!({"required": true,
                "content": {"application/json": {"schema": b}}});
        }
        let entry = paths
            .entry(op.path.to_string())
            .or_insert_with(|| json!({}));
        entry[op.method] = operation;
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": title,
            "version": version,
            "description": "Bearer `rpk_live_…` / `rpk_dev_…` keys (§12.1); `/platform/*` takes platform-admin `rpa_…` keys instead. Errors are `{error: {code, message, field?}}`.",
        },
        "servers": [{"url": format!("{}/api/v1", base_url.trim_end_matches('/'))}],
        "security": [{"bearer": []}],
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    })
}

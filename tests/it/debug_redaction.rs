//! Old L4 remainder: rows and requests that carry secrets print
//! `[redacted]` in `Debug`, so a log line or a panic message that formats
//! one never carries the secret. The stored encoding is unchanged.

use std::time::Duration;

use root::builds::sandbox::{SandboxRequest, ToolCall};
use serde_json::json;
use storage::{
    CommunityBuildInstall, Json, KnowledgeSource, Redacted, TenantCredential, decode_row,
    encode_row,
};

const SECRET: &str = "s3cret-value-0123456789";

fn assert_hidden(what: &str, debug: String) {
    assert!(!debug.contains(SECRET), "{what} leaks: {debug}");
    assert!(debug.contains("[redacted]"), "{what}: {debug}");
}

#[test]
fn security_old_l4_secret_columns_and_sandbox_requests_are_redacted_in_debug() {
    let credential = TenantCredential {
        kind: "slack_bot_token".into(),
        value: Redacted::new(SECRET.into()),
        ..Default::default()
    };
    assert_hidden("TenantCredential", format!("{credential:?}"));
    assert_hidden("TenantCredential (pretty)", format!("{credential:#?}"));

    let source = KnowledgeSource {
        name: "docs".into(),
        request_headers: Json(json!({"Authorization": format!("Bearer {SECRET}")})).into(),
        ..Default::default()
    };
    assert_hidden("KnowledgeSource", format!("{source:?}"));

    let install = CommunityBuildInstall {
        config: Json(json!({"api_key": SECRET, "city": "Oslo"})).into(),
        ..Default::default()
    };
    assert_hidden("CommunityBuildInstall", format!("{install:?}"));

    let call = ToolCall {
        module_source: "export default {}".into(),
        tool: "weather".into(),
        params: json!({"city": "Oslo"}),
        config: json!({"api_key": SECRET}),
        principal: json!({"ref": "member-1"}),
        channel: "slack".into(),
        timeout: Duration::from_secs(5),
        tenant: None,
    };
    let debug = format!("{call:?}");
    assert_hidden("ToolCall", debug.clone());
    assert!(
        debug.contains("weather"),
        "the rest stays readable: {debug}"
    );

    let request: SandboxRequest = serde_json::from_value(json!({
        "module_source": "export default {}",
        "tool": "weather",
        "params": {},
        "config": {"api_key": SECRET},
        "principal": {},
        "channel": "slack",
        "allow_private_fetch": false,
        "timeout_ms": 5000
    }))
    .unwrap();
    assert_hidden("SandboxRequest", format!("{request:?}"));
    // The child still receives the config.
    assert!(serde_json::to_string(&request).unwrap().contains(SECRET));
}

/// `Redacted` is `serde(transparent)`: the stored rows decode exactly as
/// before the fields were wrapped (bincode of the plain value).
#[test]
fn security_old_l4_redacted_columns_keep_their_stored_encoding() {
    #[derive(serde::Serialize)]
    struct PlainCredential {
        id: uuid::Uuid,
        tenant_id: uuid::Uuid,
        kind: String,
        value: String,
        metadata: Json,
        updated_at: storage::Ts,
    }
    let plain = PlainCredential {
        id: uuid::Uuid::new_v4(),
        tenant_id: uuid::Uuid::new_v4(),
        kind: "slack_bot_token".into(),
        value: SECRET.into(),
        metadata: Json::empty_object(),
        updated_at: storage::Ts::now(),
    };
    let bytes = encode_row(1, &plain).unwrap();
    let row: TenantCredential = decode_row("tenant_credentials", 1, &bytes).unwrap();
    assert_eq!(row.value.expose(), SECRET);
    assert_eq!(encode_row(1, &row).unwrap(), bytes);
}

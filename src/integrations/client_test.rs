//! Unit tests of `client.rs` (and the tool-answer parsing it uses).

use super::*;
use serde_json::json;

#[test]
fn only_network_errors_and_gateway_statuses_are_retryable() {
    assert!(InvokeFailure::Network("reset".into()).is_retryable());
    for s in [502, 503, 504] {
        assert!(
            InvokeFailure::Status {
                status: s,
                body: String::new()
            }
            .is_retryable()
        );
    }
    for s in [400, 401, 404, 409, 429, 500, 501, 505] {
        assert!(
            !InvokeFailure::Status {
                status: s,
                body: String::new()
            }
            .is_retryable(),
            "{s}"
        );
    }
    assert!(!InvokeFailure::Timeout(Duration::from_secs(1)).is_retryable());
    assert!(!InvokeFailure::Refused("127.0.0.1 is not a public address".into()).is_retryable());
    assert!(!InvokeFailure::BadResponse("x".into()).is_retryable());
}

#[test]
fn results_map_success_failure_and_images() {
    let r = parse_tool_result(json!({"success": true, "data": {"n": 1},
            "images": [{"base64": "AAAA", "contentType": "image/png", "name": "a.png"},
                       {"base64": "no content type"}]}))
    .unwrap();
    assert!(r.success);
    assert_eq!(r.data, Some(json!({"n": 1})));
    assert_eq!(r.images.len(), 1);
    assert_eq!(r.model_view(), json!({"success": true, "data": {"n": 1}}));
    let r = parse_tool_result(json!({"success": false, "error": "No such room"})).unwrap();
    assert_eq!(r.error.as_deref(), Some("No such room"));
    let r = parse_tool_result(json!({"success": false})).unwrap();
    assert!(r.error.is_some());
    assert!(parse_tool_result(json!({"data": 1})).is_err());
    assert!(parse_tool_result(json!([1])).is_err());
}

#[test]
fn a_failure_with_a_blank_error_gets_the_fallback_text() {
    // Found by the `ndjson` fuzz target: `"error": ""` reached the model
    // as an empty error.
    for blank in ["", "  \n"] {
        let r = parse_tool_result(json!({"success": false, "error": blank})).unwrap();
        assert_eq!(
            r.error.as_deref(),
            Some("The tool reported a failure without details.")
        );
        let r = parse_tool_result(json!({"success": true, "error": blank})).unwrap();
        assert_eq!(r.error, None);
    }
}

#[test]
fn ndjson_lines_forward_trimmed_capped_progress_and_ignore_strays() {
    let (tx, mut rx) = mpsc::channel(8);
    let long = format!("  {}  ", "x".repeat(600));
    let line = json!({"type": "progress", "message": long}).to_string();
    assert!(ndjson_line(line.as_bytes(), Some(&tx)).unwrap().is_none());
    assert_eq!(rx.try_recv().unwrap(), "x".repeat(MAX_PROGRESS_CHARS));
    assert!(
        ndjson_line(b"not json at all\n", Some(&tx))
            .unwrap()
            .is_none()
    );
    assert!(
        ndjson_line(b"{\"type\":\"log\"}", Some(&tx))
            .unwrap()
            .is_none()
    );
    assert!(ndjson_line(b"   \n", Some(&tx)).unwrap().is_none());
    let r = ndjson_line(br#"{"type":"result","success":true,"data":3}"#, Some(&tx))
        .unwrap()
        .unwrap();
    assert_eq!(r.data, Some(json!(3)));
    assert!(rx.try_recv().is_err());
}

#[test]
fn invoke_bodies_have_the_spec_shape() {
    let req = InvokeRequest {
        principal: InvokePrincipal {
            ref_: "m-1".into(),
            tier: "member".into(),
            ..Default::default()
        },
        channel: "slack".into(),
        params: json!({"q": 1}),
        principal_id: Some(Uuid::nil()),
        ..Default::default()
    };
    let body = serde_json::to_value(InvokeBody {
        invocation_id: Uuid::nil(),
        tenant_id: Uuid::nil(),
        request: &req,
    })
    .unwrap();
    let mut keys: Vec<&str> = body
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "channel",
            "current_user_message",
            "email_delegation",
            "invocation_id",
            "params",
            "principal",
            "slack_channel_id",
            "tenant_id",
            "thread_ts"
        ]
    );
    assert_eq!(
        body["principal"],
        json!({"ref": "m-1", "tier": "member", "is_admin": false,
                   "display_name": null, "slack_user_id": null, "email": null})
    );
}

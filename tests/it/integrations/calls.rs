//! Invoking an integration: signing, retry classification, timeouts,
//! network failures, NDJSON progress, images and audit rows, tenant
//! isolation of calls.

use super::*;

#[tokio::test]
async fn requests_are_signed_and_the_stub_rejects_tampering_wrong_secrets_and_skew() {
    let f = fixture().await;
    let primed = f.primed().await;
    let manifest_req = &f.stub.requests_to("/integration/manifest")[0];
    assert!(manifest_req.signature_valid);
    assert_eq!(manifest_req.method, "GET");
    assert!(manifest_req.body.is_empty());
    assert_eq!(
        manifest_req.header("content-type"),
        Some("application/json")
    );
    let ts = manifest_req.header(TIMESTAMP_HEADER).unwrap();
    assert_eq!(
        manifest_req.header(SIGNATURE_HEADER).unwrap(),
        signing::sign(SECRET, ts.parse().unwrap(), b"")
    );

    let result = f
        .in_acme(f.integrations.invoke(
            &primed,
            "book_room",
            request(json!({"room": "Garden"})),
            None,
        ))
        .await;
    assert!(result.success, "{result:?}");
    assert_eq!(result.data.as_ref().unwrap()["booked"], "Garden");
    let invoke = &f.stub.requests_to("/integration/tools/book_room")[0];
    assert!(invoke.signature_valid);
    let ts: i64 = invoke.header(TIMESTAMP_HEADER).unwrap().parse().unwrap();
    assert_eq!(
        invoke.header(SIGNATURE_HEADER).unwrap(),
        signing::sign(SECRET, ts, &invoke.body),
        "signed over the exact bytes sent"
    );
    let body = invoke.json();
    assert_eq!(body["tenant_id"], json!(f.acme.id()));
    assert!(uuid::Uuid::parse_str(body["invocation_id"].as_str().unwrap()).is_ok());
    assert_eq!(
        body["principal"],
        json!({"ref": "member-1", "tier": "member", "is_admin": false,
               "display_name": "Ada Lovelace", "slack_user_id": "U_MEMBER",
               "email": "ada@example.org"})
    );
    assert_eq!(body["channel"], "slack");
    assert_eq!(body["slack_channel_id"], "D123");
    assert_eq!(body["current_user_message"], "book the garden room");
    assert_eq!(body["thread_ts"], "1700000000.000100");
    assert_eq!(body["email_delegation"], Value::Null);
    assert_eq!(body["params"], json!({"room": "Garden"}));

    // A body changed after signing, a stale timestamp, a missing header.
    let http = reqwest::Client::new();
    let url = format!("{}/integration/tools/book_room", f.stub.base_url());
    let now = signing::unix_secs(storage::Ts::now());
    let sig = signing::sign(SECRET, now, br#"{"params":{"room":"Garden"}}"#);
    let tampered = http
        .post(&url)
        .header(TIMESTAMP_HEADER, now.to_string())
        .header(SIGNATURE_HEADER, &sig)
        .body(r#"{"params":{"room":"Vault"}}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(tampered.status(), 401);
    let old = now - 301;
    let skewed = http
        .post(&url)
        .header(TIMESTAMP_HEADER, old.to_string())
        .header(SIGNATURE_HEADER, signing::sign(SECRET, old, b"{}"))
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(skewed.status(), 401);
    let unsigned = http.post(&url).body("{}").send().await.unwrap();
    assert_eq!(unsigned.status(), 401);
    assert_eq!(
        f.stub
            .requests()
            .iter()
            .filter(|r| !r.signature_valid)
            .count(),
        3
    );

    // The wrong secret: the stub refuses, the client reports a 401.
    f.stub.set_secret("another-secret-0123456789");
    let err = f
        .client
        .fetch_manifest(&primed.integration)
        .await
        .unwrap_err();
    assert!(
        matches!(err, CallError::Status { status: 401, .. }),
        "{err}"
    );
    assert!(!err.to_string().contains(SECRET));
}

#[tokio::test]
async fn gateway_errors_are_retried_three_times_300_and_600_ms_apart() {
    let f = fixture().await;
    let primed = f.primed().await;
    let path = format!("{TOOL_PATH}lookup_member");
    f.stub.fail_next(&path, 2, StubFailure::Status(502));
    let r = f
        .in_acme(f.integrations.invoke(
            &primed,
            "lookup_member",
            request(json!({"query": "ada"})),
            None,
        ))
        .await;
    assert!(r.success, "{r:?}");
    let seen = f.stub.requests_to(&path);
    assert_eq!(seen.len(), 3);
    let gap1 = seen[1].at - seen[0].at;
    let gap2 = seen[2].at - seen[1].at;
    assert!(
        gap1 >= Duration::from_millis(290) && gap1 < Duration::from_millis(550),
        "{gap1:?}"
    );
    assert!(
        gap2 >= Duration::from_millis(590) && gap2 < Duration::from_millis(900),
        "{gap2:?}"
    );
    // Same invocation id on every attempt.
    let ids: Vec<Value> = seen
        .iter()
        .map(|s| s.json()["invocation_id"].clone())
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]));

    // Three 503s: the failure after the third attempt.
    f.stub.clear_requests();
    f.stub.fail_next(&path, 3, StubFailure::Status(503));
    let r = f
        .in_acme(
            f.integrations
                .invoke(&primed, "lookup_member", request(json!({})), None),
        )
        .await;
    assert!(!r.success);
    assert_eq!(f.stub.requests_to(&path).len(), 3);
    assert!(
        r.error_detail.as_deref().unwrap().starts_with("http 503"),
        "{r:?}"
    );
    assert_eq!(
        r.error.as_deref(),
        Some("The lookup_member tool failed (HTTP 503).")
    );
}

#[tokio::test]
async fn timeouts_and_client_errors_are_not_retried() {
    let f = fixture().await;
    let primed = f.primed().await;
    let path = format!("{TOOL_PATH}lookup_member");

    f.stub.fail_next(&path, 1, StubFailure::Status(400));
    let r = f
        .client
        .invoke_tool(
            &primed.integration,
            "lookup_member",
            None,
            request(json!({})),
            None,
        )
        .await;
    assert!(!r.success);
    assert!(
        r.error_detail.as_deref().unwrap().starts_with("http 400"),
        "{r:?}"
    );
    assert_eq!(f.stub.requests_to(&path).len(), 1);

    f.stub.clear_requests();
    f.stub.fail_next(&path, 1, StubFailure::Status(500));
    let r = f
        .client
        .invoke_tool(
            &primed.integration,
            "lookup_member",
            None,
            request(json!({})),
            None,
        )
        .await;
    assert!(!r.success);
    assert_eq!(
        f.stub.requests_to(&path).len(),
        1,
        "500 is not a gateway error"
    );

    f.stub.clear_requests();
    f.stub
        .fail_next(&path, 1, StubFailure::Delay(Duration::from_millis(1500)));
    let started = std::time::Instant::now();
    let r = f
        .client
        .invoke_tool(
            &primed.integration,
            "lookup_member",
            Some(200),
            request(json!({})),
            None,
        )
        .await;
    assert!(started.elapsed() < Duration::from_millis(1200));
    assert!(!r.success);
    assert!(
        r.error_detail.as_deref().unwrap().starts_with("timeout"),
        "{r:?}"
    );
    assert!(r.error.as_deref().unwrap().contains("may still have run"));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        f.stub.requests_to(&path).len(),
        1,
        "a timeout is never retried"
    );
}

#[tokio::test]
async fn network_failures_are_retried() {
    let f = fixture().await;
    let mut row = Integration::new(f.acme.id(), "down", closed_port_url().await, SECRET);
    row.status = IntegrationStatus::Active;
    let started = std::time::Instant::now();
    let r = f
        .client
        .invoke_tool(&row, "lookup_member", None, request(json!({})), None)
        .await;
    assert!(!r.success);
    assert!(
        r.error_detail.as_deref().unwrap().starts_with("network"),
        "{r:?}"
    );
    // Two retry delays: 300 ms + 600 ms.
    assert!(
        started.elapsed() >= Duration::from_millis(880),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn ndjson_progress_is_forwarded_in_order_and_broken_streams_are_bad_responses() {
    let f = fixture().await;
    let primed = f.primed().await;
    let (tx, mut rx) = mpsc::channel(16);
    let r = f
        .in_acme(
            f.integrations
                .invoke(&primed, "generate_report", request(json!({})), Some(tx)),
        )
        .await;
    assert!(r.success, "{r:?}");
    assert_eq!(
        r.data.as_ref().unwrap()["report"],
        "3 new members this week"
    );
    let mut progress = Vec::new();
    while let Ok(m) = rx.try_recv() {
        progress.push(m);
    }
    assert_eq!(progress, ["Collecting member data", "Rendering the report"]);

    let path = format!("{TOOL_PATH}generate_report");
    for failure in [StubFailure::BrokenStream, StubFailure::StreamWithoutResult] {
        f.stub.clear_requests();
        f.stub.fail_next(&path, 1, failure.clone());
        let (tx, mut rx) = mpsc::channel(16);
        let r = f
            .in_acme(f.integrations.invoke(
                &primed,
                "generate_report",
                request(json!({})),
                Some(tx),
            ))
            .await;
        assert!(!r.success, "{failure:?}");
        assert!(
            r.error_detail
                .as_deref()
                .unwrap()
                .starts_with("bad_response"),
            "{r:?}"
        );
        assert_eq!(
            f.stub.requests_to(&path).len(),
            1,
            "{failure:?} is never retried"
        );
        assert_eq!(rx.try_recv().unwrap(), "Starting");
    }
}

#[tokio::test]
async fn images_ride_along_outside_the_model_view_and_every_call_is_audited() {
    let f = fixture().await;
    let primed = f.primed().await;
    let r = f
        .in_acme(f.integrations.invoke(
            &primed,
            "lookup_member",
            request(json!({"query": "ada", "with_image": true})),
            None,
        ))
        .await;
    assert!(r.success);
    assert_eq!(r.images.len(), 1);
    assert_eq!(r.images[0].content_type, "image/png");
    let view = r.model_view();
    assert!(view.get("images").is_none());
    assert_eq!(view["data"]["members"][0]["ref"], "member-1");

    // A tool-level failure: success false with the backend's message.
    let r = f
        .in_acme(
            f.integrations
                .invoke(&primed, "book_room", request(json!({})), None),
        )
        .await;
    assert_eq!(r.error.as_deref(), Some("Which room? Pass a room name."));

    let rows = f.audit_rows().await;
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r.integration_id == Some(primed.integration.id)
                && r.integration_name == "stub"
                && r.tenant_id == f.acme.id())
    );
    let lookup = rows
        .iter()
        .find(|r| r.tool_name == "lookup_member")
        .unwrap();
    assert!(lookup.success && lookup.error.is_none());
    let book = rows.iter().find(|r| r.tool_name == "book_room").unwrap();
    assert!(!book.success);
    assert_eq!(book.error.as_deref(), Some("Which room? Pass a room name."));
    assert!(rows.iter().all(|r| r.duration_ms >= 0));
}

#[tokio::test]
async fn a_tenant_cannot_call_another_tenants_integration_or_an_unknown_tool() {
    let f = fixture().await;
    let primed = f.primed().await;
    f.stub.clear_requests();
    let r = tenancy::scope(
        f.other.clone(),
        f.integrations
            .invoke(&primed, "lookup_member", request(json!({})), None),
    )
    .await;
    assert!(!r.success);
    let r = f
        .in_acme(
            f.integrations
                .invoke(&primed, "drop_tables", request(json!({})), None),
        )
        .await;
    assert!(!r.success);
    assert!(f.stub.requests().is_empty());
    // Other tenant sees nothing.
    let theirs = tenancy::scope(f.other.clone(), f.integrations.prime())
        .await
        .unwrap();
    assert!(theirs.is_empty());
    let err = tenancy::scope(f.other.clone(), f.integrations.refresh("stub"))
        .await
        .unwrap_err();
    assert!(matches!(err, IntegrationError::NotFound(_)), "{err}");
}

/// Old L6: the audit row is durable before the request leaves. A call cut
/// while the backend has it (the turn dropped, as a crash would) still
/// leaves its row, marked interrupted; a backend that never answers in
/// time leaves a completed timeout row.
#[tokio::test]
async fn security_old_l6_a_call_cut_while_the_request_is_out_still_leaves_its_audit_row() {
    let f = fixture().await;
    let primed = f.primed().await;
    let path = format!("{TOOL_PATH}book_room");
    f.stub.clear_requests();
    f.stub
        .fail_next(&path, 1, StubFailure::Delay(Duration::from_secs(30)));
    let client = f.client.clone();
    let integration = primed.integration.clone();
    let call = tokio::spawn(async move {
        client
            .invoke_tool(
                &integration,
                "book_room",
                None,
                request(json!({"room": "Garden"})),
                None,
            )
            .await
    });
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while f.stub.requests_to(&path).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the request never arrived"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The backend has the request (and may act on it); the call is cut.
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    let rows = f.audit_rows().await;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!(row.tool_name, "book_room");
    assert_eq!(row.integration_id, Some(primed.integration.id));
    assert!(!row.success);
    assert_eq!(
        row.error.as_deref(),
        Some(root::integrations::client::AUDIT_INTERRUPTED)
    );

    // Never answering within the tool's bound: the same row completed.
    f.stub
        .fail_next(&path, 1, StubFailure::Delay(Duration::from_secs(30)));
    let r = f
        .client
        .invoke_tool(
            &primed.integration,
            "book_room",
            Some(200),
            request(json!({"room": "Garden"})),
            None,
        )
        .await;
    assert!(!r.success);
    let rows = f.audit_rows().await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    let timed_out = rows.iter().find(|r| r.id != row.id).unwrap();
    assert!(!timed_out.success);
    assert!(
        timed_out.error.as_deref().unwrap().starts_with("timeout"),
        "{timed_out:?}"
    );
    assert!(timed_out.duration_ms >= 200, "{timed_out:?}");
}

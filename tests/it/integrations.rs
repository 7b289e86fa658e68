//! root-int/1 (§7) against the stub tenant backend on real sockets:
//! signing, retry classification, NDJSON streams, audit rows, the manifest
//! cache on a manual clock, overrides, materialization, endpoint overrides,
//! identity/roster/links/escalations, and the `/api/v1/integrations` routes
//! with tenant isolation.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use storage::{
    Integration, IntegrationStatus, IntegrationToolCall, Json, RedbStore, Scan, Store, Tenant,
    TenantStore, Ts, key,
};
use tokio::sync::mpsc;

use root::app::open_store;
use root::integrations::signing::{self, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use root::integrations::{
    CallError, Escalation, IdentityQuery, IntegrationClient, IntegrationError, Integrations,
    InvokePrincipal, InvokeRequest, NewIntegration, PrimedIntegration,
};
use root::outbound::OutboundPolicy;
use root::platform::clock::ManualClock;
use root::platform::tenancy::{self, TenantContext};
use testkit::stub::{StubBackend, StubFailure};

use crate::kb::key_for;
use crate::support::{TestApp, closed_port_url, test_config};

const SECRET: &str = "stub-secret-0123456789abcdef";
const TOOL_PATH: &str = "/integration/tools/";

struct Fixture {
    store: RedbStore,
    clock: ManualClock,
    integrations: Integrations,
    client: IntegrationClient,
    stub: StubBackend,
    acme: TenantContext,
    other: TenantContext,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(&dir.path().join("data"), &[]);
    let store = open_store(&config).await.unwrap();
    let clock = ManualClock::new(Ts::from_secs(1_773_781_500));
    let client =
        IntegrationClient::new(store.clone(), OutboundPolicy::from_config(&config)).unwrap();
    let integrations = Integrations::new(store.clone(), client.clone(), Arc::new(clock.clone()));
    let ctx = |t: Tenant| TenantContext {
        tenant: Arc::new(t),
    };
    let acme = ctx(store
        .create_tenant(Tenant::new("acme", "Acme"))
        .await
        .unwrap());
    let other = ctx(store
        .create_tenant(Tenant::new("other", "Other"))
        .await
        .unwrap());
    Fixture {
        store,
        clock,
        integrations,
        client,
        stub: StubBackend::start(SECRET).await.unwrap(),
        acme,
        other,
        _dir: dir,
    }
}

impl Fixture {
    async fn in_acme<F: std::future::Future>(&self, fut: F) -> F::Output {
        tenancy::scope(self.acme.clone(), fut).await
    }

    /// Register the stub for acme (pending) and return the row.
    async fn register(&self, name: &str, paths: Option<Value>) -> Integration {
        self.in_acme(self.integrations.register(NewIntegration {
            name: name.into(),
            base_url: self.stub.base_url().into(),
            signing_secret: Some(SECRET.into()),
            endpoint_paths: paths,
        }))
        .await
        .unwrap()
        .integration
    }

    /// Register and prime: the stub's integration, active.
    async fn primed(&self) -> PrimedIntegration {
        self.register("stub", None).await;
        let primed = self.in_acme(self.integrations.prime()).await.unwrap();
        assert_eq!(primed.len(), 1, "{primed:?}");
        primed.into_iter().next().unwrap()
    }

    async fn audit_rows(&self) -> Vec<IntegrationToolCall> {
        self.store
            .scan(
                Some(self.acme.id()),
                Scan::index(IntegrationToolCall::CREATED_AT_IDX, key()),
            )
            .await
            .unwrap()
    }
}

fn request(params: Value) -> InvokeRequest {
    InvokeRequest {
        principal: InvokePrincipal {
            ref_: "member-1".into(),
            tier: "member".into(),
            is_admin: false,
            display_name: Some("Ada Lovelace".into()),
            slack_user_id: Some("U_MEMBER".into()),
            email: Some("ada@example.org".into()),
        },
        channel: "slack".into(),
        slack_channel_id: Some("D123".into()),
        current_user_message: Some("book the garden room".into()),
        thread_ts: Some("1700000000.000100".into()),
        params,
        ..Default::default()
    }
}

fn names(tools: &[root::integrations::ManifestTool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

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

#[tokio::test]
async fn a_valid_manifest_promotes_pending_to_active_and_an_invalid_one_does_not() {
    let f = fixture().await;
    f.stub
        .set_manifest(json!({"protocol": "mcp/1", "tools": [{"name": "x", "description": ""}]}));
    let row = f.register("stub", None).await;
    assert_eq!(row.status, IntegrationStatus::Pending);
    let err = f.in_acme(f.integrations.refresh("stub")).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("protocol must start with root-int/"),
        "{text}"
    );
    assert!(text.contains("description must not be empty"), "{text}");
    assert!(f.in_acme(f.integrations.prime()).await.unwrap().is_empty());
    let row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    assert_eq!(row.status, IntegrationStatus::Pending);
    assert!(row.manifest.is_none());

    f.stub.set_manifest(StubBackend::default_manifest());
    let (row, manifest) = f.in_acme(f.integrations.refresh("stub")).await.unwrap();
    assert_eq!(row.status, IntegrationStatus::Active);
    assert_eq!(row.manifest_fetched_at, Some(Ts::from_secs(1_773_781_500)));
    assert_eq!(manifest.tools.len(), 4);
    let stored: Integration = f
        .store
        .get(Some(f.acme.id()), key().uuid(row.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, IntegrationStatus::Active);
    assert_eq!(
        stored.manifest.unwrap().0["tools"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[tokio::test]
async fn the_manifest_cache_serves_60_s_and_a_failed_refresh_keeps_the_stale_manifest() {
    let f = fixture().await;
    f.primed().await;
    let fetches = || f.stub.requests_to("/integration/manifest").len();
    assert_eq!(fetches(), 1);
    f.clock.advance_ms(59_999);
    f.in_acme(f.integrations.prime()).await.unwrap();
    assert_eq!(fetches(), 1, "fresh within 60 s");

    f.clock.advance_ms(1);
    f.stub
        .fail_next("/integration/manifest", 1, StubFailure::Status(500));
    let primed = f.in_acme(f.integrations.prime()).await.unwrap();
    assert_eq!(fetches(), 2);
    assert_eq!(primed.len(), 1, "stale manifest still served");
    assert_eq!(primed[0].tools.len(), 4);
    let row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    assert_eq!(row.manifest_fetched_at, Some(Ts::from_secs(1_773_781_500)));

    // The failure stamped the cache: no new fetch for another 60 s.
    f.clock.advance_ms(30_000);
    f.in_acme(f.integrations.prime()).await.unwrap();
    assert_eq!(fetches(), 2);
    f.clock.advance_ms(30_000);
    f.in_acme(f.integrations.prime()).await.unwrap();
    assert_eq!(fetches(), 3);
    let row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    assert_eq!(
        row.manifest_fetched_at,
        Some(Ts::from_secs(1_773_781_500 + 120))
    );

    // A new service (a restart) seeds its cache from the row: still fresh.
    let again = Integrations::new(f.store.clone(), f.client.clone(), Arc::new(f.clock.clone()));
    f.in_acme(again.prime()).await.unwrap();
    assert_eq!(fetches(), 3);
}

#[tokio::test]
async fn tool_overrides_apply_before_materialization() {
    let f = fixture().await;
    f.primed().await;
    let mut row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    row.tool_overrides = Json(json!({
        "book_room": {"removed": true},
        "lookup_member": {"description": "Find a member (override)", "tiers": ["partner"]},
        "admin_stats": {"admin_only": false, "tiers": ["member"]}
    }));
    f.store.update(row).await.unwrap();
    let primed = f.in_acme(f.integrations.prime()).await.unwrap().remove(0);
    assert_eq!(
        names(&primed.tools),
        ["lookup_member", "generate_report", "admin_stats"]
    );
    assert_eq!(
        primed.tool("lookup_member").unwrap().description,
        "Find a member (override)"
    );
    assert_eq!(
        names(&primed.tools_for("slack", "member", false)),
        ["generate_report", "admin_stats"]
    );
    assert_eq!(
        names(&primed.tools_for("slack", "partner", false)),
        ["lookup_member"]
    );
    // A removed tool cannot be invoked either.
    let r = f
        .in_acme(
            f.integrations
                .invoke(&primed, "book_room", request(json!({"room": "x"})), None),
        )
        .await;
    assert!(!r.success);

    // Unreadable overrides: the integration offers nothing (fail closed).
    let mut row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    row.tool_overrides = Json(json!({"book_room": {"removed": "yes"}}));
    f.store.update(row).await.unwrap();
    assert!(f.in_acme(f.integrations.prime()).await.unwrap().is_empty());
}

#[tokio::test]
async fn materialization_of_the_stub_manifest_follows_channel_admin_and_tier_rules() {
    let f = fixture().await;
    let primed = f.primed().await;
    assert_eq!(
        names(&primed.tools_for("slack", "member", false)),
        ["lookup_member", "book_room", "generate_report"]
    );
    assert_eq!(
        names(&primed.tools_for("email", "partner", false)),
        ["lookup_member"]
    );
    assert_eq!(
        names(&primed.tools_for("web", "member", true)),
        [
            "lookup_member",
            "book_room",
            "generate_report",
            "admin_stats"
        ]
    );
    assert_eq!(
        names(&primed.tools_for("api", "partner", true)),
        ["lookup_member", "generate_report", "admin_stats"]
    );
    assert!(primed.tools_for("slack", "unresolved", false).is_empty());
    assert!(primed.tools_for("email", "public_email", false).is_empty());
    assert_eq!(
        primed.prompt_sections_for("slack", "member", false),
        ["Members can book the Garden and Library rooms with book_room."]
    );
    assert!(
        primed
            .prompt_sections_for("email", "member", false)
            .is_empty()
    );
    assert!(
        primed
            .prompt_sections_for("slack", "public", false)
            .is_empty()
    );
    let links = primed.link_destinations_for("slack", "member", false);
    assert_eq!(links.destinations, ["dashboard"]);
    assert!(
        primed
            .link_destinations_for("slack", "unresolved", false)
            .destinations
            .is_empty()
    );
    let tier = primed.manifest.access_tier("member").unwrap();
    assert_eq!(
        tier.core_tools.clone().unwrap(),
        ["search_knowledge_base", "escalate_to_admin"]
    );
    assert!(
        primed
            .manifest
            .access_tier("partner")
            .unwrap()
            .core_tools
            .is_none()
    );
}

#[tokio::test]
async fn endpoint_path_overrides_are_used_for_every_call() {
    let f = fixture().await;
    let paths = json!({"manifest": "/v2/manifest", "tool_invoke": "/v2/tools/:name",
                       "identity_resolve": "/v2/identity/resolve"});
    f.register("custom", Some(paths)).await;
    let primed = f.in_acme(f.integrations.prime()).await.unwrap().remove(0);
    assert_eq!(f.stub.requests_to("/v2/manifest").len(), 1);
    assert!(f.stub.requests_to("/integration/manifest").is_empty());
    let r = f
        .in_acme(f.integrations.invoke(
            &primed,
            "book_room",
            request(json!({"room": "Library"})),
            None,
        ))
        .await;
    assert!(r.success, "{r:?}");
    assert_eq!(f.stub.requests_to("/v2/tools/book_room").len(), 1);
    let who = f
        .in_acme(
            f.integrations
                .resolve_identity_via_integrations(&IdentityQuery {
                    channel: "slack".into(),
                    slack_user_id: Some("U_MEMBER".into()),
                    email: None,
                }),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(who.principal.unwrap().principal_ref, "member-1");
    assert_eq!(f.stub.requests_to("/v2/identity/resolve").len(), 1);

    let err = f
        .in_acme(f.integrations.register(NewIntegration {
            name: "bad".into(),
            base_url: f.stub.base_url().into(),
            signing_secret: None,
            endpoint_paths: Some(json!({"tool_invoke": "/v2/tools"})),
        }))
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains(":name"), "{err}");
}

#[tokio::test]
async fn identity_roster_links_and_escalations() {
    let f = fixture().await;
    let primed = f.primed().await;
    let resolve = |slack: Option<&str>, email: Option<&str>| {
        let q = IdentityQuery {
            channel: if slack.is_some() { "slack" } else { "email" }.into(),
            slack_user_id: slack.map(String::from),
            email: email.map(String::from),
        };
        let integrations = f.integrations.clone();
        f.in_acme(async move {
            integrations
                .resolve_identity_via_integrations(&q)
                .await
                .unwrap()
        })
    };
    let member = resolve(Some("U_MEMBER"), None).await.unwrap();
    let p = member.principal.unwrap();
    assert_eq!(
        (p.principal_ref.as_str(), p.tier.as_str()),
        ("member-1", "member")
    );
    assert_eq!(p.traits.unwrap()["cohort"], "2024");
    assert!(resolve(Some("U_NOBODY"), None).await.is_none());
    assert!(
        resolve(Some("U_PUBLIC"), None).await.is_none(),
        "a reserved tier does not resolve"
    );
    let delegate = resolve(None, Some("assistant@example.org")).await.unwrap();
    let acts_for = delegate.acts_for.unwrap();
    assert_eq!(acts_for.reason, "historical_cc");
    assert_eq!(acts_for.principal.principal_ref, "member-1");
    let sent = f.stub.requests_to("/integration/identity/resolve");
    assert_eq!(
        sent[0].json(),
        json!({"channel": "slack", "slack_user_id": "U_MEMBER"})
    );

    let roster = f.in_acme(f.integrations.roster("stub")).await.unwrap();
    let refs: Vec<&str> = roster.iter().map(|p| p.principal_ref.as_str()).collect();
    assert_eq!(refs, ["member-1", "admin-1", "partner-1"]);
    assert_eq!(roster[0].slack_user_id.as_deref(), Some("U_MEMBER"));
    f.stub
        .fail_next("/integration/identity/roster", 1, StubFailure::Status(404));
    let err = f.client.roster(&primed.integration).await.unwrap_err();
    assert!(matches!(err, CallError::Unsupported { .. }), "{err}");

    let url = f
        .in_acme(f.integrations.issue_link("stub", "dashboard", "member-1"))
        .await
        .unwrap();
    assert_eq!(
        url,
        "https://members.example.org/go/dashboard?principal=member-1"
    );

    let outcomes = f
        .in_acme(f.integrations.post_escalation(&Escalation {
            kind: "escalation".into(),
            principal_ref: Some("member-1".into()),
            user_name: Some("Ada Lovelace".into()),
            channel: "slack".into(),
            tier: Some("member".into()),
            escalation_reason: Some("Billing dispute".into()),
            user_request_summary: Some("Refund for March".into()),
            what_was_checked: Some("KB billing pages".into()),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 1);
    assert!(outcomes[0].1.is_ok());
    let got = f.stub.escalations();
    assert_eq!(got[0]["type"], "escalation");
    assert_eq!(got[0]["tenant_id"], json!(f.acme.id()));
    assert_eq!(got[0]["escalation_reason"], "Billing dispute");
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn routes_register_list_refresh_rotate_disable_with_tenant_isolation() {
    let app = TestApp::spawn().await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    let acme = key_for(&app, "acme").await;
    let other = key_for(&app, "other").await;

    // Generated secret, shown once.
    let (status, created) = json_of(
        app.post_json(
            "/api/v1/integrations",
            Some(&acme),
            &json!({"name": "stub", "base_url": format!("{}/", stub.base_url())}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let secret = created["signing_secret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 64);
    assert_eq!(created["status"], "pending");
    assert_eq!(created["base_url"], stub.base_url());

    let (status, listed) = json_of(app.get("/api/v1/integrations", Some(&acme)).await).await;
    assert_eq!(status, 200);
    assert_eq!(listed["integrations"].as_array().unwrap().len(), 1);
    assert!(
        !listed.to_string().contains(&secret),
        "the secret is never listed"
    );

    // Bad input.
    for (body, needle) in [
        (
            json!({"name": "S", "base_url": stub.base_url()}),
            "name must match",
        ),
        (
            json!({"name": "ok-name", "base_url": "ftp://x"}),
            "base_url",
        ),
        (
            json!({"name": "ok-name", "base_url": stub.base_url(), "endpoint_paths": {"manifest": "nope"}}),
            "start with /",
        ),
        (
            json!({"name": "ok-name", "base_url": stub.base_url(), "endpoint_paths": {"nope": "/x"}}),
            "unknown key",
        ),
        (
            json!({"name": "ok-name", "base_url": stub.base_url(), "signing_secret": "short"}),
            "signing_secret",
        ),
    ] {
        let (status, v) = json_of(
            app.post_json("/api/v1/integrations", Some(&acme), &body)
                .await,
        )
        .await;
        assert_eq!(status, 400, "{body} → {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{v}"
        );
    }
    let (status, _) = json_of(
        app.post_json(
            "/api/v1/integrations",
            Some(&acme),
            &json!({"name": "stub", "base_url": stub.base_url()}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 409);

    // The backend does not know the generated secret yet: refresh is a 502.
    let (status, v) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 502, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    // Exactly the generic text around the request id: no status, no body.
    let request_id = message
        .strip_prefix(
            "the integration backend could not be reached or gave an invalid answer; see the server log (request id ",
        )
        .and_then(|rest| rest.strip_suffix(")"))
        .unwrap_or_else(|| panic!("not the generic 502 text: {v}"));
    assert!(
        uuid::Uuid::parse_str(request_id).is_ok(),
        "only a request id is added: {v}"
    );
    stub.set_secret(secret.clone());
    let (status, v) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "active");
    assert_eq!(v["manifest"]["tools"].as_array().unwrap().len(), 4);

    // Rotation: a new secret, shown once; the backend must learn it.
    let (status, rotated) = json_of(
        app.post_json(
            "/api/v1/integrations/stub/rotate-secret",
            Some(&acme),
            &json!({}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    let new_secret = rotated["signing_secret"].as_str().unwrap().to_string();
    assert_ne!(new_secret, secret);
    let (status, _) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 502);
    stub.set_secret(new_secret);
    let (status, _) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 200);

    // Identity through the route.
    let (status, who) = json_of(
        app.post_json(
            "/api/v1/identity/resolve",
            Some(&acme),
            &json!({"slack_user_id": "U_MEMBER"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{who}");
    assert_eq!(who["principal"]["principal_ref"], "member-1");
    let (_, nobody) = json_of(
        app.post_json(
            "/api/v1/identity/resolve",
            Some(&acme),
            &json!({"email": "nobody@example.org"}),
        )
        .await,
    )
    .await;
    assert_eq!(nobody["principal"], Value::Null);
    let (status, _) = json_of(
        app.post_json("/api/v1/identity/resolve", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 400);

    // Tenant B sees and touches nothing of A's.
    let (_, theirs) = json_of(app.get("/api/v1/integrations", Some(&other)).await).await;
    assert_eq!(theirs["integrations"], json!([]));
    for path in [
        "/api/v1/integrations/stub/refresh",
        "/api/v1/integrations/stub/rotate-secret",
    ] {
        let (status, _) = json_of(app.post_json(path, Some(&other), &json!({})).await).await;
        assert_eq!(status, 404, "{path}");
    }
    let (status, _) = json_of(app.delete("/api/v1/integrations/stub", Some(&other)).await).await;
    assert_eq!(status, 404);
    let (_, who) = json_of(
        app.post_json(
            "/api/v1/identity/resolve",
            Some(&other),
            &json!({"slack_user_id": "U_MEMBER"}),
        )
        .await,
    )
    .await;
    assert_eq!(who["principal"], Value::Null, "B has no integration to ask");

    // Disable; a disabled integration refreshes no more and resolves no one.
    let (status, v) = json_of(app.delete("/api/v1/integrations/stub", Some(&acme)).await).await;
    assert_eq!(status, 200);
    assert_eq!(v["status"], "disabled");
    let (status, _) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 422);
    let (_, who) = json_of(
        app.post_json(
            "/api/v1/identity/resolve",
            Some(&acme),
            &json!({"slack_user_id": "U_MEMBER"}),
        )
        .await,
    )
    .await;
    assert_eq!(who["principal"], Value::Null);
    // Re-registering a disabled name starts it over as pending.
    let (status, v) = json_of(
        app.post_json(
            "/api/v1/integrations",
            Some(&acme),
            &json!({"name": "stub", "base_url": stub.base_url(), "signing_secret": SECRET}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["status"], "pending");
    assert_eq!(v["signing_secret"], SECRET);
    // Without a key: 401.
    let (status, _) = json_of(app.get("/api/v1/integrations", None).await).await;
    assert_eq!(status, 401);
}

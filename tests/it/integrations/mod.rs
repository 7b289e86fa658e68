//! root-int/1 (§7) against the stub tenant backend on real sockets:
//! signing, retry classification, NDJSON streams, audit rows, the manifest
//! cache on a manual clock, overrides, materialization, endpoint overrides,
//! identity/roster/links/escalations, and the `/api/v1/integrations` routes
//! with tenant isolation.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use storage::{Integration, IntegrationStatus, IntegrationToolCall, Json, Scan, Store, Ts, key};
use tokio::sync::mpsc;

use root::integrations::signing::{self, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use root::integrations::{
    CallError, Escalation, IdentityQuery, IntegrationClient, IntegrationError, Integrations,
    InvokePrincipal, InvokeRequest, NewIntegration, PrimedIntegration,
};
use root::outbound::OutboundPolicy;
use root::platform::tenancy::{self};
use testkit::stub::{StubBackend, StubFailure};

use crate::kb::key_for;
use crate::support::{TestApp, TwoTenants, closed_port_url};

mod calls;
mod manifest;
mod routes;

const SECRET: &str = "stub-secret-0123456789abcdef";

const TOOL_PATH: &str = "/integration/tools/";

/// The shared two-tenant fixture plus the integration services over it
/// (on its manual clock) and a stub backend.
struct Fixture {
    base: TwoTenants,
    integrations: Integrations,
    client: IntegrationClient,
    stub: StubBackend,
}

impl std::ops::Deref for Fixture {
    type Target = TwoTenants;
    fn deref(&self) -> &TwoTenants {
        &self.base
    }
}

async fn fixture() -> Fixture {
    let base = TwoTenants::new().await;
    let client = IntegrationClient::new(
        base.store.clone(),
        OutboundPolicy::from_config(&base.config),
    )
    .unwrap();
    let integrations = Integrations::new(
        base.store.clone(),
        client.clone(),
        Arc::new(base.clock.clone()),
    );
    Fixture {
        base,
        integrations,
        client,
        stub: StubBackend::start(SECRET).await.unwrap(),
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

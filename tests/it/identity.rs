//! `resolve_slack_member` (§6, §9) against the stub backend: integration
//! first (a non-reserved tier wins), then channel trust with its stamp, else
//! the reserved unresolved tier.

use std::sync::Arc;

use serde_json::json;
use storage::{Tenant, TenantStore};

use root::identity::{TIER_CACHE_TTL, TierSource, UNRESOLVED_CACHE_TTL};
use root::integrations::registry::NewIntegration;
use root::integrations::stub::StubBackend;
use root::platform::tenancy::{self, TenantContext};

use crate::support::TestApp;

const SECRET: &str = "stub-secret-0123456789";

async fn tenant(app: &TestApp, slug: &str, settings: serde_json::Value) -> TenantContext {
    let mut t = Tenant::new(slug, slug);
    t.settings = storage::Json(settings);
    let t = app.state.store.create_tenant(t).await.unwrap();
    TenantContext {
        tenant: Arc::new(t),
    }
}

async fn with_stub(app: &TestApp, ctx: &TenantContext, stub: &StubBackend) {
    let integrations = app.state.integrations.clone();
    tenancy::scope(ctx.clone(), async {
        integrations
            .register(NewIntegration {
                name: "stub".into(),
                base_url: stub.base_url().into(),
                signing_secret: Some(SECRET.into()),
                endpoint_paths: None,
            })
            .await
            .unwrap();
        integrations.prime().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn identity_cache_ttls_are_the_spec_values() {
    assert_eq!(TIER_CACHE_TTL.as_secs(), 300);
    assert_eq!(UNRESOLVED_CACHE_TTL.as_secs(), 30);
}

#[tokio::test]
async fn identity_integration_tier_wins_and_is_upserted() {
    let app = TestApp::spawn().await;
    let ctx = tenant(&app, "acme", json!({})).await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    with_stub(&app, &ctx, &stub).await;
    let m = tenancy::scope(
        ctx.clone(),
        app.state.identity.resolve_slack_member("u_member"),
    )
    .await
    .unwrap();
    assert_eq!(m.source, TierSource::Integration);
    assert_eq!(m.tier, "member");
    let p = m.principal.unwrap();
    assert_eq!(p.ref_, "member-1");
    assert_eq!(p.slack_user_id.as_deref(), Some("u_member"));
    assert_eq!(p.display_name.as_deref(), Some("Ada Lovelace"));
    assert_eq!(p.traits.0["tier_source"], "integration");
    assert_eq!(p.traits.0["cohort"], "2024");
    // Cached: a second resolve does not ask the backend again.
    let asked = stub.requests_to("/integration/identity/resolve").len();
    tenancy::scope(
        ctx.clone(),
        app.state.identity.resolve_slack_member("u_member"),
    )
    .await
    .unwrap();
    assert_eq!(
        stub.requests_to("/integration/identity/resolve").len(),
        asked
    );
}

#[tokio::test]
async fn identity_open_slack_falls_back_to_channel_trust_with_a_stamp() {
    let app = TestApp::spawn().await;
    let ctx = tenant(&app, "acme", json!({"access": {"default_tier": "guest"}})).await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    with_stub(&app, &ctx, &stub).await;
    // Unknown to the integration; and a reserved tier from it does not win.
    for user in ["u_nobody", "u_public"] {
        let m = tenancy::scope(ctx.clone(), app.state.identity.resolve_slack_member(user))
            .await
            .unwrap();
        assert_eq!(m.source, TierSource::ChannelTrust, "{user}");
        assert_eq!(m.tier, "guest");
        let p = m.principal.unwrap();
        assert_eq!(p.ref_, user);
        assert_eq!(p.traits.0["tier_source"], "channel_trust");
    }
}

#[tokio::test]
async fn identity_integration_mode_leaves_strangers_unresolved() {
    let app = TestApp::spawn().await;
    let ctx = tenant(&app, "acme", json!({"access": {"slack": "integration"}})).await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    with_stub(&app, &ctx, &stub).await;
    let m = tenancy::scope(
        ctx.clone(),
        app.state.identity.resolve_slack_member("u_nobody"),
    )
    .await
    .unwrap();
    assert_eq!(m.source, TierSource::Unresolved);
    assert_eq!(m.tier, "unresolved");
    assert!(m.principal.is_none());
    // The member the integration knows still resolves.
    let m = tenancy::scope(ctx, app.state.identity.resolve_slack_member("u_member"))
        .await
        .unwrap();
    assert_eq!(m.tier, "member");
}

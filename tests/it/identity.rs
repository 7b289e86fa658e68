//! `resolve_slack_member` (§6, §9) against the stub backend: integration
//! first (a non-reserved tier wins), then channel trust with its stamp, else
//! the reserved unresolved tier.

use std::sync::Arc;

use serde_json::json;
use storage::{Store, Tenant, TenantStore};

use root::identity::{TIER_CACHE_TTL, TierSource, UNRESOLVED_CACHE_TTL};
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
    crate::support::register_stub(app, ctx, stub, SECRET).await;
    let integrations = app.state.integrations.clone();
    tenancy::scope(ctx.clone(), async move {
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

#[tokio::test]
async fn identity_email_integration_first_links_the_slack_principal() {
    let app = TestApp::spawn().await;
    let ctx = tenant(&app, "acme", json!({})).await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    with_stub(&app, &ctx, &stub).await;
    let id = app.state.identity.clone();
    // The member is first seen on Slack, then writes an email.
    let slack = tenancy::scope(ctx.clone(), id.resolve_slack_member("u_member"))
        .await
        .unwrap();
    let m = tenancy::scope(ctx.clone(), id.resolve_email_sender(" Ada@Example.org "))
        .await
        .unwrap();
    assert_eq!(m.source, TierSource::Integration);
    assert_eq!(m.tier, "member");
    assert_eq!(m.principal_ref, "member-1");
    let p = m.principal.unwrap();
    assert_eq!(
        p.id,
        slack.principal.unwrap().id,
        "one person, one principal"
    );
    assert_eq!(p.email.as_deref(), Some("ada@example.org"));
    assert_eq!(p.slack_user_id.as_deref(), Some("u_member"));
    assert_eq!(p.traits.0["tier_source"], "integration");
    // The integration was asked on the email channel with the normalized address.
    let asked = stub.requests_to("/integration/identity/resolve");
    let last = asked.last().unwrap();
    assert_eq!(last.json()["channel"], "email");
    assert_eq!(last.json()["email"], "ada@example.org");

    // acts_for comes back for the delegation gate of the email handler.
    let d = tenancy::scope(ctx, id.resolve_email_sender("assistant@example.org"))
        .await
        .unwrap();
    assert_eq!(d.tier, "partner");
    let acts_for = d.acts_for.unwrap();
    assert_eq!(acts_for.reason, "historical_cc");
    assert_eq!(acts_for.principal.principal_ref, "member-1");
}

#[tokio::test]
async fn identity_email_trust_grants_listed_domains_and_dashboard_users() {
    let app = TestApp::spawn().await;
    let ctx = tenant(
        &app,
        "acme",
        json!({"access": {"email": "domains", "default_tier": "guest",
                          "email_domains": ["acme.org"], "email_addresses": ["vip@gmail.com"]}}),
    )
    .await;
    app.state
        .store
        .insert(storage::TenantUser {
            id: uuid::Uuid::new_v4(),
            tenant_id: ctx.id(),
            email: "Owner@Outside.net".into(),
            role: storage::TenantRole::Owner,
            created_at: storage::Ts(0),
        })
        .await
        .unwrap();
    let id = app.state.identity.clone();
    for (addr, source) in [
        ("bob@acme.org", "channel_trust"),
        ("carol@eu.acme.org", "channel_trust"),
        ("VIP@gmail.com", "channel_trust"),
        ("owner@outside.net", "dashboard_user"),
    ] {
        let m = tenancy::scope(ctx.clone(), id.resolve_email_sender(addr))
            .await
            .unwrap();
        let want_ref = format!("email:{}", addr.to_lowercase());
        assert_eq!(m.source, TierSource::ChannelTrust, "{addr}");
        assert_eq!(m.tier, "guest", "{addr}");
        assert_eq!(m.principal_ref, want_ref, "{addr}");
        let p = m.principal.unwrap();
        assert_eq!(p.ref_, want_ref);
        assert_eq!(p.email.as_deref(), Some(addr.to_lowercase().as_str()));
        assert_eq!(p.traits.0["tier_source"], source, "{addr}");
    }
    // Everyone else: the public email surface, no principal row.
    for addr in ["eve@acme.org.evil.com", "someone@gmail.com"] {
        let m = tenancy::scope(ctx.clone(), id.resolve_email_sender(addr))
            .await
            .unwrap();
        assert_eq!(m.source, TierSource::Unresolved, "{addr}");
        assert_eq!(m.tier, "public_email", "{addr}");
        assert_eq!(m.principal_ref, format!("email:{addr}"));
        assert!(m.principal.is_none());
    }
    // Not an address at all: a clear error, nothing written.
    assert!(
        tenancy::scope(ctx, id.resolve_email_sender("not-an-address"))
            .await
            .is_err()
    );
}

#[tokio::test]
async fn identity_email_integration_mode_ignores_domain_lists() {
    let app = TestApp::spawn().await;
    let ctx = tenant(
        &app,
        "acme",
        json!({"access": {"email": "integration", "email_domains": ["acme.org"],
                          "dashboard_users": false}}),
    )
    .await;
    let m = tenancy::scope(ctx, app.state.identity.resolve_email_sender("bob@acme.org"))
        .await
        .unwrap();
    assert_eq!(m.tier, "public_email");
    assert!(m.principal.is_none());
}

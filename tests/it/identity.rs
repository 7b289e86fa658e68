//! `resolve_slack_member` (§6, §9) against the stub backend: integration
//! first (a non-reserved tier wins), then channel trust with its stamp, else
//! the reserved unresolved tier.

use serde_json::json;
use storage::{Store, Tenant, TenantStore};

use root::identity::{TIER_CACHE_TTL, TierSource, UNRESOLVED_CACHE_TTL};
use root::platform::tenancy::{self, TenantContext};
use testkit::stub::StubBackend;

use crate::support::{TestApp, ctx};

const SECRET: &str = "stub-secret-0123456789";

async fn tenant(app: &TestApp, slug: &str, settings: serde_json::Value) -> TenantContext {
    let mut t = Tenant::new(slug, slug);
    t.settings = storage::Json(settings);
    ctx(app.state.store.create_tenant(t).await.unwrap())
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

async fn principal_by_slack(app: &TestApp, ctx: &TenantContext, slack: &str) -> storage::Principal {
    app.state
        .store
        .find_unique(
            Some(ctx.id()),
            storage::Principal::SLACK_USER_KEY,
            storage::key().str(slack),
        )
        .await
        .unwrap()
        .unwrap()
}

/// L1: the integration is down (then answers garbage) while Slack is open
/// with a `guest` default tier: the member it vouched for keeps their tier
/// for the turn, and the stored row is not rewritten to channel trust.
#[tokio::test]
async fn identity_integration_errors_never_overwrite_an_integration_principal() {
    use testkit::stub::StubFailure;
    let app = TestApp::spawn().await;
    let ctx = tenant(&app, "acme", json!({"access": {"default_tier": "guest"}})).await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    with_stub(&app, &ctx, &stub).await;
    let id = app.state.identity.clone();
    let first = tenancy::scope(ctx.clone(), id.resolve_slack_member("u_member"))
        .await
        .unwrap();
    assert_eq!(first.tier, "member");
    let stored = principal_by_slack(&app, &ctx, "u_member").await;

    // Backend down (HTTP 503).
    id.invalidate_all();
    stub.fail_next("/integration/identity/resolve", 1, StubFailure::Status(503));
    let m = tenancy::scope(ctx.clone(), id.resolve_slack_member("u_member"))
        .await
        .unwrap();
    assert_eq!(m.tier, "member");
    assert_eq!(m.source, TierSource::Integration);
    assert_eq!(m.principal_ref, "member-1");
    assert_eq!(principal_by_slack(&app, &ctx, "u_member").await, stored);

    // A bad answer (a principal without ref or tier).
    id.invalidate_all();
    stub.set_identity(
        "slack:u_member",
        json!({"principal": {"principal_ref": "", "tier": ""}}),
    );
    let m = tenancy::scope(ctx.clone(), id.resolve_slack_member("u_member"))
        .await
        .unwrap();
    assert_eq!(m.tier, "member");
    let row = principal_by_slack(&app, &ctx, "u_member").await;
    assert_eq!(row, stored, "row untouched");
    assert_eq!(row.traits.0["tier_source"], "integration");

    // The backend answers again: it does not know them any more, so
    // channel trust applies (that is an answer, not an error).
    id.invalidate_all();
    stub.set_identity("slack:u_member", json!({"principal": null}));
    let m = tenancy::scope(ctx.clone(), id.resolve_slack_member("u_member"))
        .await
        .unwrap();
    assert_eq!(m.tier, "guest");
    assert_eq!(m.source, TierSource::ChannelTrust);
}

/// L1: an email resolve never rewrites a Slack principal — not its ref,
/// tier, admin flag or traits — whether the integration or email trust
/// vouches for the address; the turn runs as that row with the email
/// resolution's own tier.
#[tokio::test]
async fn identity_email_resolve_never_overwrites_a_slack_principal() {
    let app = TestApp::spawn().await;
    let ctx = tenant(
        &app,
        "acme",
        json!({"access": {"email": "domains", "default_tier": "guest",
                          "email_domains": ["acme.org"]}}),
    )
    .await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    with_stub(&app, &ctx, &stub).await;
    let id = app.state.identity.clone();
    tenancy::scope(ctx.clone(), id.resolve_slack_member("u_member"))
        .await
        .unwrap();
    let slack_row = principal_by_slack(&app, &ctx, "u_member").await;
    // The integration answers the same address with another ref, tier and traits.
    stub.set_identity(
        "email:ada@example.org",
        json!({"principal": {"principal_ref": "ada-mail", "tier": "partner",
                             "traits": {"mailbox": true}, "email": "ada@example.org"}}),
    );
    let m = tenancy::scope(ctx.clone(), id.resolve_email_sender("ada@example.org"))
        .await
        .unwrap();
    assert_eq!(m.tier, "partner");
    assert_eq!(m.principal_ref, "member-1");
    assert_eq!(m.principal.as_ref().unwrap().id, slack_row.id);
    assert_eq!(principal_by_slack(&app, &ctx, "u_member").await, slack_row);

    // Email trust for a Slack admin's address: the row keeps its tier and
    // admin flag; the email sender gets the trust grant, not admin.
    let now = storage::Ts::now();
    let admin = app
        .state
        .store
        .insert(storage::Principal {
            id: uuid::Uuid::new_v4(),
            tenant_id: ctx.id(),
            ref_: "U_BOB".into(),
            tier: "member".into(),
            is_admin: true,
            slack_user_id: Some("U_BOB".into()),
            email: Some("bob@acme.org".into()),
            traits: storage::Json(json!({"tier_source": "channel_trust"})),
            created_at: now,
            updated_at: now,
            ..storage::Principal::default()
        })
        .await
        .unwrap();
    let m = tenancy::scope(ctx.clone(), id.resolve_email_sender("bob@acme.org"))
        .await
        .unwrap();
    assert_eq!(m.source, TierSource::ChannelTrust);
    assert_eq!(m.tier, "guest");
    assert!(!m.is_admin);
    assert_eq!(principal_by_slack(&app, &ctx, "U_BOB").await, admin);
}

/// L2: `__admin__` (any case) from an identity answer is not a tier anyone
/// holds: it does not resolve, so channel trust applies.
#[tokio::test]
async fn identity_the_admin_marker_is_never_a_principal_tier() {
    let app = TestApp::spawn().await;
    let ctx = tenant(&app, "acme", json!({"access": {"default_tier": "guest"}})).await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    with_stub(&app, &ctx, &stub).await;
    for (user, tier) in [
        ("u_x1", "__admin__"),
        ("u_x2", " __ADMIN__ "),
        ("u_x3", "Unresolved "),
    ] {
        stub.set_identity(
            &format!("slack:{user}"),
            json!({"principal": {"principal_ref": format!("ref-{user}"), "tier": tier, "is_admin": true}}),
        );
        let m = tenancy::scope(ctx.clone(), app.state.identity.resolve_slack_member(user))
            .await
            .unwrap();
        assert_eq!(m.source, TierSource::ChannelTrust, "{tier:?}");
        assert_eq!(m.tier, "guest");
        assert!(!m.is_admin);
        let p = m.principal.unwrap();
        assert_eq!(p.tier, "guest");
        assert_eq!(p.ref_, user);
    }
}

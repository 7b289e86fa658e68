//! `principal-roster-sweep` (§7.3, §13): the tick fans out per tenant; a
//! tenant's job upserts every active integration's roster like identity
//! resolve, skipping reserved tiers and rows a fresher resolve wrote; a 404
//! roster is unsupported, one failing integration does not stop the others,
//! and a second sweep writes nothing.

use std::sync::Arc;

use serde_json::json;
use storage::{Principal, Scan, Store, TenantStore, Ts};

use root::integrations::registry::NewIntegration;
use root::platform::clock::{Clock, ManualClock};
use root::platform::tenancy::{self, TenantContext};
use root::queue::Outcome;
use root::queue::registry::{self, PRINCIPAL_ROSTER_SWEEP};
use testkit::stub::{StubBackend, StubFailure};

use crate::support::{TestApp, create_tenant, drain_jobs, register_stub};

const SECRET: &str = "stub-secret-0123456789";
const ROSTER_PATH: &str = "/integration/identity/roster";

struct World {
    app: TestApp,
    /// When the first sweep runs.
    t0: Ts,
    clock: ManualClock,
    acme: TenantContext,
    other: TenantContext,
    stub: StubBackend,
}

async fn world() -> World {
    // Now (whole seconds): the stub refuses signatures more than 5 minutes off.
    let t0 = Ts::from_secs(Ts::now().micros() / 1_000_000);
    let clock = ManualClock::new(t0);
    let app =
        TestApp::spawn_with_clock(&[("ROOT_RUN_WORKERS", "false")], Arc::new(clock.clone())).await;
    let acme = create_tenant(&app.state.store, "acme", "Acme").await;
    let other = create_tenant(&app.state.store, "other", "Other").await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    register_stub(&app, &acme, &stub, SECRET).await;
    let w = World {
        app,
        t0,
        clock,
        acme,
        other,
        stub,
    };
    w.prime().await;
    w
}

impl World {
    /// Refresh manifests: registered integrations become active.
    async fn prime(&self) {
        let integrations = self.app.state.integrations.clone();
        tenancy::scope(self.acme.clone(), async move {
            integrations.prime().await.unwrap();
        })
        .await;
    }

    /// Fire the scheduler's tick for now and run every job it fans out.
    async fn sweep(&self) -> Vec<Outcome> {
        self.sweep_slot(0).await
    }

    /// The tick of the `n`-th 6-hour slot after now. The clock stays put:
    /// the stub refuses signatures more than 5 minutes off its own time.
    async fn sweep_slot(&self, n: i64) -> Vec<Outcome> {
        let spec = registry::spec(PRINCIPAL_ROSTER_SWEEP).unwrap();
        let slot = at(self.clock.now(), n * 6 * 3_600);
        root::queue::scheduler::enqueue_tick(&self.app.state.queues, spec, slot)
            .await
            .unwrap();
        drain_jobs(&self.app.state, PRINCIPAL_ROSTER_SWEEP).await
    }

    async fn principals(&self, ctx: &TenantContext) -> Vec<Principal> {
        let mut rows: Vec<Principal> = self
            .app
            .state
            .store
            .scan(Some(ctx.id()), Scan::all())
            .await
            .unwrap();
        rows.sort_by(|a, b| a.ref_.cmp(&b.ref_));
        rows
    }

    async fn insert(&self, ctx: &TenantContext, p: Principal) -> Principal {
        let mut p = p;
        p.tenant_id = ctx.id();
        self.app.state.store.insert(p).await.unwrap()
    }
}

/// The tick plus one job per tenant (the platform's root tenant included).
async fn fanned_out(w: &World) -> usize {
    1 + w.app.state.store.list_tenants().await.unwrap().len()
}

fn completed(outcomes: &[Outcome]) -> usize {
    outcomes
        .iter()
        .filter(|o| matches!(o, Outcome::Completed { .. }))
        .count()
}

/// `t` moved by `secs` seconds.
fn at(t: Ts, secs: i64) -> Ts {
    t.plus_micros(secs * 1_000_000)
}

fn principal(w: &World, r: &str, tier: &str, resolved: Option<Ts>) -> Principal {
    let mut p = Principal::new(uuid::Uuid::nil(), r);
    p.tier = tier.into();
    p.tier_resolved_at = resolved;
    p.created_at = at(w.t0, -86_400);
    p.updated_at = at(w.t0, -86_400);
    p
}

#[tokio::test]
async fn roster_sweep_upserts_the_roster_skips_reserved_tiers_and_only_its_tenant() {
    let w = world().await;
    // A Slack member channel trust let in earlier: the roster names them.
    let mut trusted = principal(&w, "U_ADMIN", "guest", Some(at(w.t0, -3_600)));
    trusted.slack_user_id = Some("U_ADMIN".into());
    trusted.traits = storage::Json(json!({"tier_source": "slack_trust"}));
    trusted.conversation_memory = Some("prefers mornings".into());
    let trusted = w.insert(&w.acme, trusted).await;
    // Another tenant's member with the same ref.
    let theirs = w
        .insert(&w.other, principal(&w, "member-1", "mentor", None))
        .await;

    let outcomes = w.sweep().await;
    assert_eq!(
        completed(&outcomes),
        fanned_out(&w).await,
        "the tick and one job per tenant: {outcomes:?}"
    );
    assert_eq!(w.stub.requests_to(ROSTER_PATH).len(), 1);

    let rows = w.principals(&w.acme).await;
    let refs: Vec<&str> = rows.iter().map(|p| p.ref_.as_str()).collect();
    assert_eq!(
        refs,
        ["admin-1", "member-1", "partner-1"],
        "reserved-tier and __admin__ entries are skipped"
    );
    let t0 = Some(w.t0);
    let admin = &rows[0];
    assert_eq!(
        admin.id, trusted.id,
        "the Slack id's row is updated in place"
    );
    assert_eq!(admin.tier, "member");
    assert!(admin.is_admin);
    assert_eq!(admin.display_name.as_deref(), Some("Grace Hopper"));
    assert_eq!(admin.traits.0, json!({"tier_source": "integration"}));
    assert_eq!(admin.tier_resolved_at, t0);
    assert_eq!(
        admin.conversation_memory.as_deref(),
        Some("prefers mornings"),
        "columns the roster does not speak for are kept"
    );
    let ada = &rows[1];
    assert_eq!(ada.slack_user_id.as_deref(), Some("U_MEMBER"));
    assert_eq!(ada.display_name.as_deref(), Some("Ada Lovelace"));
    assert_eq!(ada.tier, "member");
    assert!(!ada.is_admin);
    assert_eq!(ada.email.as_deref(), Some("ada@example.org"));
    assert_eq!(
        ada.profile_context.as_deref(),
        Some("Runs the Thursday workshop.")
    );
    assert_eq!(
        ada.traits.0,
        json!({"cohort": "2024", "tier_source": "integration"})
    );
    assert_eq!(ada.tier_resolved_at, t0);
    let pat = &rows[2];
    assert_eq!(pat.tier, "partner");
    assert_eq!(pat.slack_user_id, None);

    assert_eq!(
        w.principals(&w.other).await,
        vec![theirs],
        "another tenant's rows are untouched"
    );
}

#[tokio::test]
async fn roster_sweep_twice_writes_nothing_new() {
    let w = world().await;
    assert_eq!(completed(&w.sweep().await), fanned_out(&w).await);
    let first = w.principals(&w.acme).await;
    assert_eq!(first.len(), 3);
    // A minute on (inside the stub's signature window), the next slot:
    // same roster, so no write — not even new stamps.
    w.clock.advance_ms(60_000);
    assert_eq!(completed(&w.sweep_slot(1).await), fanned_out(&w).await);
    assert_eq!(w.stub.requests_to(ROSTER_PATH).len(), 2);
    assert_eq!(w.principals(&w.acme).await, first, "same rows, same stamps");
}

#[tokio::test]
async fn roster_sweep_leaves_a_principal_a_fresher_resolve_wrote() {
    let w = world().await;
    // Resolved (as mentor) after the sweep started: the roster is older.
    let mut fresh = principal(&w, "member-1", "mentor", Some(at(w.t0, 30)));
    fresh.slack_user_id = Some("U_MEMBER".into());
    fresh.display_name = Some("Ada L.".into());
    let fresh = w.insert(&w.acme, fresh).await;
    // Resolved an hour before: the roster wins.
    let stale = w
        .insert(
            &w.acme,
            principal(&w, "partner-1", "guest", Some(at(w.t0, -3_600))),
        )
        .await;

    assert_eq!(completed(&w.sweep().await), fanned_out(&w).await);
    let rows = w.principals(&w.acme).await;
    let by_ref = |r: &str| rows.iter().find(|p| p.ref_ == r).unwrap().clone();
    assert_eq!(
        by_ref("member-1"),
        fresh,
        "not downgraded to the roster's tier"
    );
    let pat = by_ref("partner-1");
    assert_eq!(pat.id, stale.id);
    assert_eq!(pat.tier, "partner");
    assert_eq!(pat.tier_resolved_at, Some(w.t0));
}

#[tokio::test]
async fn roster_404_is_unsupported_and_one_failing_integration_does_not_stop_the_others() {
    let w = world().await;
    // The only integration has no roster: nothing to do, not a failure.
    w.stub.fail_next(ROSTER_PATH, 1, StubFailure::Status(404));
    let outcomes = w.sweep().await;
    assert_eq!(completed(&outcomes), fanned_out(&w).await, "{outcomes:?}");
    assert!(w.principals(&w.acme).await.is_empty());

    // A second backend: when the first fails, the second's roster lands.
    let zeta = StubBackend::start(SECRET).await.unwrap();
    zeta.set_roster(json!({"principals": [
        {"principal_ref": "zeta-1", "display_name": "Zed Shaw", "tier": "member"}
    ]}));
    let integrations = w.app.state.integrations.clone();
    let base_url = zeta.base_url().to_string();
    tenancy::scope(w.acme.clone(), async move {
        integrations
            .register(NewIntegration {
                name: "zeta".into(),
                base_url,
                signing_secret: Some(SECRET.into()),
                endpoint_paths: None,
            })
            .await
            .unwrap();
    })
    .await;
    w.prime().await;
    w.stub.fail_next(ROSTER_PATH, 1, StubFailure::Status(500));
    let outcomes = w.sweep_slot(1).await;
    assert_eq!(completed(&outcomes), fanned_out(&w).await, "{outcomes:?}");
    let refs: Vec<String> = w
        .principals(&w.acme)
        .await
        .into_iter()
        .map(|p| p.ref_)
        .collect();
    assert_eq!(refs, ["zeta-1"]);

    // Every roster failing: the tenant's job goes back for a retry.
    w.stub.fail_next(ROSTER_PATH, 1, StubFailure::Status(500));
    zeta.fail_next(ROSTER_PATH, 1, StubFailure::Status(503));
    let outcomes = w.sweep_slot(2).await;
    let acme_job = outcomes.iter().find(
        |o| matches!(o, Outcome::Retrying { id, .. } if id.contains(&w.acme.id().to_string())),
    );
    assert!(acme_job.is_some(), "{outcomes:?}");
    assert_eq!(
        completed(&outcomes),
        fanned_out(&w).await - 1,
        "all but acme's job"
    );
}

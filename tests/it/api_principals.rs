//! `/api/v1/principals/*` (§12.2, §6): the portal's bulk sync (all or
//! nothing, then roster upsert rules, the synced tier winning over channel
//! trust), memory reset (with and without preferences), deactivating a
//! preference and the state snapshot — each with its errors, and a live
//! key never reaching the dev shadow's rows (§17 #8).

use serde_json::{Value, json};
use storage::{MemberPreference, PreferenceType, Principal, Scan, Store, TenantStore, Ts, key};
use uuid::Uuid;

use root::identity::TierSource;
use root::platform::api_keys::KeyKind;
use root::platform::tenancy;

use crate::support::tenants::ctx;
use crate::support::{TestApp, mint_key};

struct World {
    app: TestApp,
    live: String,
    dev: String,
    root: Uuid,
    shadow: Uuid,
}

async fn world() -> World {
    let app = TestApp::spawn().await;
    let live = mint_key(&app.state.store, "root", KeyKind::Live).await;
    let dev = mint_key(&app.state.store, "root", KeyKind::Dev).await;
    let root = app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap()
        .id;
    let shadow = app
        .state
        .store
        .tenant_by_slug("root--dev")
        .await
        .unwrap()
        .unwrap()
        .id;
    World {
        app,
        live,
        dev,
        root,
        shadow,
    }
}

impl World {
    async fn post(&self, path: &str, key: &str, body: Value) -> (u16, Value) {
        let resp = self.app.post_json(path, Some(key), &body).await;
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn get(&self, path: &str, key: &str) -> (u16, Value) {
        let resp = self.app.get(path, Some(key)).await;
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn principals(&self, tenant: Uuid) -> Vec<Principal> {
        let mut rows: Vec<Principal> = self
            .app
            .state
            .store
            .scan(Some(tenant), Scan::all())
            .await
            .unwrap();
        rows.sort_by(|a, b| a.ref_.cmp(&b.ref_));
        rows
    }

    async fn member(&self, tenant: Uuid, r: &str, email: &str) -> Principal {
        let mut p = Principal::new(tenant, r);
        p.tier = "member".into();
        p.email = Some(email.into());
        p.conversation_memory = Some("- likes tea".into());
        p.conversation_memory_version = 3;
        p.conversation_memory_source_count = 12;
        self.app.state.store.insert(p).await.unwrap()
    }

    async fn preference(&self, p: &Principal, text: &str) -> MemberPreference {
        let now = self.app.state.clock.now();
        self.app
            .state
            .store
            .insert(MemberPreference {
                id: Uuid::new_v4(),
                tenant_id: p.tenant_id,
                member_id: p.id,
                instructions: text.into(),
                preference_type: PreferenceType::Tone,
                active: true,
                created_at: now,
                updated_at: now,
                ..MemberPreference::default()
            })
            .await
            .unwrap()
    }
}

fn entry(r: &str, tier: &str) -> Value {
    json!({"ref": r, "tier": tier})
}

#[tokio::test]
async fn a_sync_upserts_by_the_roster_rules_and_its_tier_beats_channel_trust() {
    let w = world().await;
    let batch = json!({"principals": [
        {"ref": "m-ada", "tier": "mentor", "display_name": "Ada", "email": "Ada@Example.org",
         "slack_user_id": "U0ADA01", "traits": {"plan": "pro"}},
        entry("m-bob", "member"),
    ]});
    let (status, report) = w
        .post("/api/v1/principals/sync", &w.live, batch.clone())
        .await;
    assert_eq!(status, 200, "{report}");
    assert_eq!(
        report,
        json!({"created": 2, "updated": 0, "unchanged": 0, "read_only": 0, "conflicts": 0})
    );
    let rows = w.principals(w.root).await;
    let ada = rows.iter().find(|p| p.ref_ == "m-ada").unwrap();
    assert_eq!(ada.tier, "mentor");
    assert_eq!(ada.email.as_deref(), Some("ada@example.org"));
    assert_eq!(ada.slack_user_id.as_deref(), Some("U0ADA01"));
    assert_eq!(ada.traits.0["tier_source"], "api_sync");
    assert_eq!(ada.traits.0["plan"], "pro");

    // The same batch again writes nothing; a changed tier rewrites one row.
    let (_, report) = w.post("/api/v1/principals/sync", &w.live, batch).await;
    assert_eq!(report["unchanged"], 2);
    let (_, report) = w
        .post(
            "/api/v1/principals/sync",
            &w.live,
            json!({"principals": [entry("m-bob", "mentor")]}),
        )
        .await;
    assert_eq!(report["updated"], 1);

    // With no integration, Ada's Slack DM gets the synced tier, not the
    // channel's trust default.
    let identity = w.app.state.identity.clone();
    let tenant = w
        .app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    let member = tenancy::scope(ctx(tenant), async move {
        identity.resolve_slack_member("U0ADA01").await.unwrap()
    })
    .await;
    assert_eq!(member.tier.as_str(), "mentor");
    assert_eq!(member.source, TierSource::Synced);

    // The dev shadow saw none of it.
    assert!(w.principals(w.shadow).await.is_empty());
}

#[tokio::test]
async fn a_batch_with_bad_entries_is_refused_whole_listing_each() {
    let w = world().await;
    let before = w.principals(w.root).await.len();
    let (status, body) = w
        .post(
            "/api/v1/principals/sync",
            &w.live,
            json!({"principals": [
                entry("m-1", "member"),
                {"ref": "m-2", "tier": "unresolved"},
                {"ref": "m-3", "tier": "member", "email": "not-an-address"},
                entry("m-1", "member"),
            ]}),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_fields");
    assert_eq!(
        body["error"]["message"],
        "3 of 4 principals are invalid; nothing was written"
    );
    let fields: Vec<&str> = body["error"]["fields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "principals[1].tier",
            "principals[2].email",
            "principals[3].ref"
        ]
    );
    assert_eq!(body["error"]["field"], "principals[1].tier");
    assert_eq!(w.principals(w.root).await.len(), before, "nothing written");

    for (n, label) in [(0usize, "0"), (501, "501")] {
        let many: Vec<Value> = (0..n).map(|i| entry(&format!("m-{i}"), "member")).collect();
        let (status, body) = w
            .post(
                "/api/v1/principals/sync",
                &w.live,
                json!({"principals": many}),
            )
            .await;
        assert_eq!(status, 400);
        assert_eq!(body["error"]["field"], "principals");
        assert!(
            body["error"]["message"].as_str().unwrap().contains(label),
            "{body}"
        );
    }
    let (status, body) = w
        .post(
            "/api/v1/principals/sync",
            &w.live,
            json!({"principals": [{"ref": "m-1", "tier": "member", "nickname": "x"}]}),
        )
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nickname")
    );
    let resp = w
        .app
        .post_json("/api/v1/principals/sync", None, &json!({"principals": []}))
        .await;
    assert_eq!(resp.status(), 401);
}

#[tokio::test]
async fn a_memory_reset_drops_the_summary_and_optionally_the_preferences() {
    let w = world().await;
    let ada = w.member(w.root, "m-ada", "ada@example.org").await;
    let pref = w.preference(&ada, "Answer briefly").await;
    let bob = w.member(w.root, "m-bob", "bob@example.org").await;
    let bob_pref = w.preference(&bob, "Use bullet points").await;

    let (status, body) = w
        .post(
            "/api/v1/principals/memory/reset",
            &w.live,
            json!({"email": "ADA@example.org", "clear_preferences": true}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["principal_id"], ada.id.to_string());
    assert_eq!(body["had_memory"], true);
    assert_eq!(body["preferences_deactivated"], 1);
    let row: Principal = w
        .app
        .state
        .store
        .get(Some(w.root), key().uuid(ada.id))
        .await
        .unwrap()
        .unwrap();
    let now: Ts = w.app.state.clock.now();
    assert_eq!(row.conversation_memory, None);
    assert!(row.conversation_memory_reset_at.is_some_and(|t| t <= now));
    assert_eq!(row.conversation_memory_version, 4, "a reset is a rewrite");
    assert_eq!(row.conversation_memory_source_count, 0);
    let p: MemberPreference = w
        .app
        .state
        .store
        .get(Some(w.root), key().uuid(pref.id))
        .await
        .unwrap()
        .unwrap();
    assert!(!p.active);

    // Without clear_preferences the preferences stay.
    let (status, body) = w
        .post(
            "/api/v1/principals/memory/reset",
            &w.live,
            json!({"ref": "m-bob"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["preferences_deactivated"], 0);
    let p: MemberPreference = w
        .app
        .state
        .store
        .get(Some(w.root), key().uuid(bob_pref.id))
        .await
        .unwrap()
        .unwrap();
    assert!(p.active);

    let (status, body) = w
        .post(
            "/api/v1/principals/memory/reset",
            &w.live,
            json!({"slack_user_id": "U0NOBODY"}),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        body["error"]["message"],
        "no principal with slack_user_id \"U0NOBODY\""
    );
    let (status, _) = w
        .post(
            "/api/v1/principals/memory/reset",
            &w.live,
            json!({"ref": "m-bob", "email": "bob@example.org"}),
        )
        .await;
    assert_eq!(status, 400);
    // The dev key cannot reach the live member.
    let (status, _) = w
        .post(
            "/api/v1/principals/memory/reset",
            &w.dev,
            json!({"ref": "m-bob"}),
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_preference_is_deactivated_once_and_only_in_its_tenant() {
    let w = world().await;
    let ada = w.member(w.root, "m-ada", "ada@example.org").await;
    let pref = w.preference(&ada, "Answer briefly").await;
    let path = format!("/api/v1/principals/preferences/{}/deactivate", pref.id);

    let (status, body) = w.post(&path, &w.dev, json!({})).await;
    assert_eq!(status, 404, "the dev shadow has no such preference: {body}");
    let (status, body) = w.post(&path, &w.live, json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["was_active"], true);
    assert_eq!(body["preference"]["active"], false);
    assert_eq!(body["preference"]["preference_type"], "tone");
    let (_, body) = w.post(&path, &w.live, json!({})).await;
    assert_eq!(body["was_active"], false);

    let (status, body) = w
        .post(
            "/api/v1/principals/preferences/not-a-uuid/deactivate",
            &w.live,
            json!({}),
        )
        .await;
    assert_eq!(status, 400);
    assert_eq!(body["error"]["field"], "id");
    let (status, _) = w
        .post(
            &format!(
                "/api/v1/principals/preferences/{}/deactivate",
                Uuid::new_v4()
            ),
            &w.live,
            json!({}),
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn the_state_snapshot_shows_identity_memory_and_preferences() {
    let w = world().await;
    let mut ada = w.member(w.root, "m-ada", "ada@example.org").await;
    ada.slack_user_id = Some("U0ADA01".into());
    let ada = w.app.state.store.update(ada).await.unwrap();
    let old = w.preference(&ada, "Old habit").await;
    w.post(
        &format!("/api/v1/principals/preferences/{}/deactivate", old.id),
        &w.live,
        json!({}),
    )
    .await;
    w.preference(&ada, "Answer briefly").await;

    let (status, body) = w
        .get("/api/v1/principals/state?slack_user_id=U0ADA01", &w.live)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["principal"]["ref"], "m-ada");
    assert_eq!(body["principal"]["id"], ada.id.to_string());
    assert_eq!(body["memory"]["text"], "- likes tea");
    assert_eq!(body["memory"]["version"], 3);
    assert_eq!(body["memory"]["source_count"], 12);
    let prefs: Vec<(&str, bool)> = body["preferences"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["instructions"].as_str().unwrap(),
                p["active"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(prefs, [("Answer briefly", true), ("Old habit", false)]);

    let (status, _) = w.get("/api/v1/principals/state?ref=m-ada", &w.dev).await;
    assert_eq!(status, 404, "a dev key never sees live rows");
    w.member(w.shadow, "m-dev", "dev@example.org").await;
    let (status, _) = w.get("/api/v1/principals/state?ref=m-dev", &w.dev).await;
    assert_eq!(status, 200);
    let (status, _) = w.get("/api/v1/principals/state?ref=m-dev", &w.live).await;
    assert_eq!(status, 404, "and a live key never sees the shadow's");

    let (status, body) = w
        .get("/api/v1/principals/state?nickname=ada", &w.live)
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nickname")
    );
    let (status, _) = w.get("/api/v1/principals/state", &w.live).await;
    assert_eq!(status, 400);
    let resp = w.app.get("/api/v1/principals/state?ref=m-ada", None).await;
    assert_eq!(resp.status(), 401);
}

//! The REST read routes (§12.2): `/conversations`, `/conversations/analytics`,
//! `/interventions`, `/mentions/*` — answers, auth, field validation, live /
//! dev isolation (§17 #8) and keyset pagination under concurrent inserts.
//! Rows are seeded straight into the store.

mod analytics;
mod conversations;
mod interventions;
mod mentions;

use root::platform::api_keys::KeyKind;
use serde_json::Value;
use storage::{
    Channel, ConversationLog, Direction, MatchedVia, Principal, ReplyMention, Store, TenantStore,
    Ts,
};
use uuid::Uuid;

use crate::support::{TestApp, mint_key};

/// Every read route, for the auth and isolation sweeps.
pub const READ_ROUTES: &[&str] = &[
    "/api/v1/conversations",
    "/api/v1/conversations/analytics?from=2026-03-01&to=2026-03-02",
    "/api/v1/interventions",
    "/api/v1/mentions/leaderboard",
    "/api/v1/mentions/counts?principal_ref=alice",
    "/api/v1/mentions/details?principal_ref=alice",
];

/// The app with a live and a dev key on the root tenant pair.
pub struct Fixture {
    pub app: TestApp,
    pub live: String,
    pub dev: String,
    pub live_id: Uuid,
    pub dev_id: Uuid,
}

pub async fn fixture() -> Fixture {
    let app = TestApp::spawn().await;
    let live = mint_key(&app.state.store, "root", KeyKind::Live).await;
    let dev = mint_key(&app.state.store, "root", KeyKind::Dev).await;
    let id = |slug: &'static str| {
        let store = app.state.store.clone();
        async move { store.tenant_by_slug(slug).await.unwrap().unwrap().id }
    };
    let live_id = id("root").await;
    let dev_id = id("root--dev").await;
    Fixture {
        app,
        live,
        dev,
        live_id,
        dev_id,
    }
}

impl Fixture {
    /// GET with `key`, asserting `status`; the JSON body.
    pub async fn get(&self, path: &str, key: &str, status: u16) -> Value {
        let resp = self.app.get(path, Some(key)).await;
        let got = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap();
        assert_eq!(got, status, "GET {path}: {body}");
        body
    }

    /// POST JSON with `key`, asserting `status`; the JSON body.
    pub async fn post(&self, path: &str, key: &str, body: Value, status: u16) -> Value {
        let resp = self.app.post_json(path, Some(key), &body).await;
        let got = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap();
        assert_eq!(got, status, "POST {path}: {body}");
        body
    }

    pub async fn principal(&self, tenant: Uuid, r: &str, name: &str, tier: &str) -> Principal {
        let mut p = Principal::new(tenant, r);
        p.display_name = Some(name.into());
        p.tier = tier.into();
        self.app.state.store.insert(p).await.unwrap()
    }

    /// A log row at `when` in `tenant`.
    #[allow(clippy::too_many_arguments)]
    pub async fn log(
        &self,
        tenant: Uuid,
        principal: Option<&Principal>,
        channel: Channel,
        direction: Direction,
        text: &str,
        when: Ts,
        exchange: &str,
    ) -> ConversationLog {
        let mut row = ConversationLog::new(tenant, channel, direction);
        row.principal_id = principal.map(|p| p.id);
        row.message_text = Some(text.into());
        row.message_at = when;
        row.exchange_key = Some(exchange.into());
        self.app.state.store.insert(row).await.unwrap()
    }

    /// A `reply_mentions` row: `reply` named `who`.
    pub async fn mention(
        &self,
        reply: &ConversationLog,
        who: &Principal,
        via: MatchedVia,
        content_sourced: bool,
    ) -> ReplyMention {
        let row = ReplyMention {
            id: Uuid::new_v4(),
            tenant_id: reply.tenant_id,
            conversation_log_id: Some(reply.id),
            exchange_key: reply.exchange_key.clone(),
            mentioned_principal_id: Some(who.id),
            mentioned_slack_user_id: match via {
                MatchedVia::SlackId => Some(format!("U{}", who.ref_.to_uppercase())),
                MatchedVia::Name => None,
            },
            mentioned_name: who.display_name.clone(),
            matched_via: via,
            content_sourced,
            message_at: reply.message_at,
            created_at: reply.message_at,
        };
        self.app.state.store.insert(row).await.unwrap()
    }
}

/// An RFC 3339 instant.
pub fn at(s: &str) -> Ts {
    Ts(s.parse::<jiff::Timestamp>().unwrap().as_microsecond())
}

/// The `field` of a 400 `invalid_field` body.
pub fn bad_field(body: &Value) -> &str {
    assert_eq!(body["error"]["code"], "invalid_field", "{body}");
    body["error"]["field"].as_str().unwrap()
}

#[tokio::test]
async fn every_read_route_wants_a_key() {
    let f = fixture().await;
    for path in READ_ROUTES {
        let resp = f.app.get(path, None).await;
        assert_eq!(resp.status(), 401, "{path}");
    }
    for path in [
        "/api/v1/interventions",
        &format!("/api/v1/interventions/{}/status", Uuid::new_v4()),
    ] {
        let resp = f.app.post_json(path, None, &serde_json::json!({})).await;
        assert_eq!(resp.status(), 401, "{path}");
    }
}

#[tokio::test]
async fn unknown_parameters_are_400s_naming_them() {
    let f = fixture().await;
    for path in READ_ROUTES {
        let sep = if path.contains('?') { '&' } else { '?' };
        let body = f.get(&format!("{path}{sep}colour=red"), &f.live, 400).await;
        assert_eq!(bad_field(&body), "colour", "{path}");
    }
}

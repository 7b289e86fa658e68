//! `/api/v1/slack/contributions[/:id]` (§12.2, §5.1): a portal lists, adds,
//! refreshes and removes one member's indexed public Slack messages — each
//! change visible in search at once, scoped to the member's own messages,
//! and a live key never reaching the dev shadow's rows (§17 #8).

use serde_json::{Value, json};
use storage::{Principal, ProcessedSlackMessage, Store, TenantStore, Ts};
use uuid::Uuid;

use root::platform::api_keys::KeyKind;
use root::platform::tenancy::TenantContext;
use root::retrieval::slack::{SlackMatchKind, SlackQuery, StoredPermalinks};

use crate::support::tenants::ctx;
use crate::support::{TestApp, index_slack_messages, mint_key};

const KILN_TS: &str = "1750000000.000100";
const BREAD_TS: &str = "1750000000.000200";
const GLAZE_TS: &str = "1750000000.000300";

fn link(ts: &str) -> String {
    format!(
        "https://acme.slack.com/archives/C0GENERAL/p{}",
        ts.replace('.', "")
    )
}

fn message(tenant: Uuid, user: &str, ts: &str, text: &str, age_secs: i64) -> ProcessedSlackMessage {
    ProcessedSlackMessage {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        channel_id: "C0GENERAL".into(),
        channel_name: Some("general".into()),
        user_id: Some(user.into()),
        message_ts: ts.into(),
        message_text: text.into(),
        message_date: Ts::from_secs(1_750_000_000 - age_secs),
        permalink: Some(link(ts)),
        created_at: Ts::now(),
        ..Default::default()
    }
}

struct World {
    app: TestApp,
    live: String,
    dev: String,
    tenant: TenantContext,
    kiln: Uuid,
    glaze: Uuid,
    bread: Uuid,
}

/// The root tenant with Ann (two messages) and Bob (one), both principals,
/// and Cy, a principal without a Slack account.
async fn world() -> World {
    let app = TestApp::spawn().await;
    let live = mint_key(&app.state.store, "root", KeyKind::Live).await;
    let dev = mint_key(&app.state.store, "root", KeyKind::Dev).await;
    let tenant = ctx(app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap());
    let id = tenant.id();
    let kiln = message(
        id,
        "U0ANN",
        KILN_TS,
        "The kiln in studio B fires every Thursday night",
        300,
    );
    let glaze = message(
        id,
        "U0ANN",
        GLAZE_TS,
        "Clear glaze buckets live on the bottom shelf",
        100,
    );
    let bread = message(
        id,
        "U0BOB",
        BREAD_TS,
        "My sourdough starter recipe uses rye flour",
        200,
    );
    let (k, g, b) = (kiln.id, glaze.id, bread.id);
    index_slack_messages(&app.state.retrieval, &tenant, vec![kiln, glaze, bread]).await;
    for (r, email, slack) in [
        ("m-ann", "ann@example.org", Some("U0ANN")),
        ("m-bob", "bob@example.org", Some("U0BOB")),
        ("m-cy", "cy@example.org", None),
    ] {
        let mut p = Principal::new(id, r);
        p.tier = "member".into();
        p.email = Some(email.into());
        p.slack_user_id = slack.map(str::to_string);
        app.state.store.insert(p).await.unwrap();
    }
    World {
        app,
        live,
        dev,
        tenant,
        kiln: k,
        glaze: g,
        bread: b,
    }
}

impl World {
    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        key: Option<&str>,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .app
            .client
            .request(method, format!("{}{path}", self.app.base));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }

    async fn list(&self, who: &str) -> (u16, Value) {
        self.list_as(&self.live, who).await
    }

    async fn list_as(&self, key: &str, who: &str) -> (u16, Value) {
        let path = format!("/api/v1/slack/contributions?{who}");
        self.send(reqwest::Method::GET, &path, Some(key), None)
            .await
    }

    async fn remove(&self, id: Uuid, who: &str) -> (u16, Value) {
        self.remove_as(&self.live, id, who).await
    }

    async fn remove_as(&self, key: &str, id: Uuid, who: &str) -> (u16, Value) {
        let path = format!("/api/v1/slack/contributions/{id}?{who}");
        self.send(reqwest::Method::DELETE, &path, Some(key), None)
            .await
    }

    async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        self.send(reqwest::Method::POST, path, Some(&self.live), Some(body))
            .await
    }

    /// The `message_ts` of every Slack message hit for `query` (LLM-free search).
    async fn slack_hits(&self, query: &str) -> Vec<String> {
        let retrieval = self.app.state.retrieval.clone();
        let store = self.app.state.store.clone();
        let q = SlackQuery {
            query: query.into(),
            limit: None,
            rerank: false,
        };
        root::platform::tenancy::scope(self.tenant.clone(), async move {
            retrieval
                .search_slack(q, &StoredPermalinks(store))
                .await
                .unwrap()
                .matches
                .into_iter()
                .filter(|m| m.kind == SlackMatchKind::Message)
                .map(|m| m.message_ts)
                .collect()
        })
        .await
    }
}

fn ids(v: &Value) -> Vec<String> {
    v["contributions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["contribution_id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn api_contributions_list_remove_add_refresh_follow_search() {
    let w = world().await;
    let (status, listed) = w.list("email=ann@example.org").await;
    assert_eq!(status, 200, "{listed}");
    assert_eq!(
        ids(&listed),
        vec![w.glaze.to_string(), w.kiln.to_string()],
        "Ann's own messages, newest first"
    );
    assert_eq!(listed["count"], 2);
    assert_eq!(
        listed["contributions"][1]["permalink"],
        json!(link(KILN_TS))
    );
    assert_eq!(listed["contributions"][1]["in_search"], true);
    let (_, bob) = w.list("slack_user_id=U0BOB").await;
    assert_eq!(ids(&bob), vec![w.bread.to_string()]);
    assert!(
        w.slack_hits("kiln studio thursday")
            .await
            .contains(&KILN_TS.to_string())
    );

    // DELETE takes it out of search at once, and repeating it changes nothing.
    let (status, removed) = w.remove(w.kiln, "ref=m-ann").await;
    assert_eq!(status, 200, "{removed}");
    assert_eq!(removed["was_in_search"], true);
    assert_eq!(removed["removed_from_search"], true);
    assert_eq!(removed["contribution"]["in_search"], false);
    assert!(
        !w.slack_hits("kiln studio thursday")
            .await
            .contains(&KILN_TS.to_string())
    );
    let (_, listed) = w.list("ref=m-ann").await;
    assert_eq!(ids(&listed), vec![w.glaze.to_string()]);
    let (status, again) = w.remove(w.kiln, "ref=m-ann").await;
    assert_eq!((status, &again["was_in_search"]), (200, &json!(false)));

    // A removed contribution is not refreshed; it comes back by its link.
    let path = format!("/api/v1/slack/contributions/{}/refresh", w.kiln);
    let (status, err) = w.post(&path, json!({"ref": "m-ann"})).await;
    assert_eq!(status, 409, "{err}");
    let (status, added) = w
        .post(
            "/api/v1/slack/contributions",
            json!({"email": "ann@example.org", "permalink": link(KILN_TS)}),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    assert_eq!(
        added["contribution_id"],
        json!(w.kiln),
        "the same row comes back"
    );
    assert_eq!(added["restored"], true);
    assert_eq!(added["searchable"], true);
    assert!(
        w.slack_hits("kiln studio thursday")
            .await
            .contains(&KILN_TS.to_string())
    );

    let path = format!("/api/v1/slack/contributions/{}/refresh", w.glaze);
    let (status, refreshed) = w.post(&path, json!({"slack_user_id": "U0ANN"})).await;
    assert_eq!(status, 200, "{refreshed}");
    assert_eq!(refreshed["restored"], false);
    assert_eq!(refreshed["in_search"], true);
}

#[tokio::test]
async fn api_contributions_are_the_authors_own() {
    let w = world().await;
    // Bob cannot remove or refresh Ann's message: it answers like a missing one.
    let (status, err) = w.remove(w.kiln, "ref=m-bob").await;
    assert_eq!(status, 404, "{err}");
    assert_eq!(err["error"]["code"], "not_found");
    let path = format!("/api/v1/slack/contributions/{}/refresh", w.kiln);
    let (status, _) = w.post(&path, json!({"ref": "m-bob"})).await;
    assert_eq!(status, 404);
    // ...nor put it into search as his.
    let (status, err) = w
        .post(
            "/api/v1/slack/contributions",
            json!({"ref": "m-bob", "permalink": link(KILN_TS)}),
        )
        .await;
    assert_eq!(status, 403, "{err}");
    assert!(
        w.slack_hits("kiln studio thursday")
            .await
            .contains(&KILN_TS.to_string())
    );
    let (_, listed) = w.list("ref=m-ann").await;
    assert_eq!(listed["count"], 2, "Ann's messages are untouched");
}

#[tokio::test]
async fn api_contributions_bad_input_gets_clear_errors() {
    let w = world().await;
    let (status, err) = w.list("").await;
    assert_eq!(status, 400, "no member named: {err}");
    let (status, _) = w.list("ref=m-ann&email=ann@example.org").await;
    assert_eq!(status, 400, "two names for the member");
    let (status, err) = w.list("email=nobody@example.org").await;
    assert_eq!(status, 404);
    assert!(
        err["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nobody@example.org"),
        "the 404 names the principal: {err}"
    );
    let (status, err) = w.list("ref=m-cy").await;
    assert_eq!(status, 422, "a member without Slack: {err}");
    let (status, err) = w.list("ref=m-ann&colour=blue").await;
    assert_eq!(status, 400, "unknown parameter: {err}");

    let (status, err) = w.remove(Uuid::nil(), "ref=m-ann").await;
    assert_eq!(status, 404, "{err}");
    let (status, err) = w
        .send(
            reqwest::Method::DELETE,
            "/api/v1/slack/contributions/not-a-uuid?ref=m-ann",
            Some(&w.live),
            None,
        )
        .await;
    assert_eq!(
        (status, &err["error"]["field"]),
        (400, &json!("id")),
        "{err}"
    );

    let (status, err) = w
        .post(
            "/api/v1/slack/contributions",
            json!({"ref": "m-ann", "permalink": "https://example.org/not-slack"}),
        )
        .await;
    assert_eq!(
        (status, &err["error"]["field"]),
        (400, &json!("permalink")),
        "{err}"
    );
    let (status, err) = w
        .post("/api/v1/slack/contributions", json!({"ref": "m-ann"}))
        .await;
    assert_eq!(status, 400, "permalink is required: {err}");
    // Not indexed and no Slack workspace to look it up in.
    let unknown = "https://acme.slack.com/archives/C0GENERAL/p1750000000000900";
    let (status, err) = w
        .post(
            "/api/v1/slack/contributions",
            json!({"ref": "m-ann", "permalink": unknown}),
        )
        .await;
    assert_eq!(status, 404, "{err}");

    let (status, _) = w
        .send(
            reqwest::Method::GET,
            "/api/v1/slack/contributions?ref=m-ann",
            None,
            None,
        )
        .await;
    assert_eq!(status, 401);
}

#[tokio::test]
async fn api_contributions_a_dev_key_never_reaches_the_live_rows() {
    let w = world().await;
    let (status, _) = w.list_as(&w.dev, "ref=m-ann").await;
    assert_eq!(status, 404, "Ann is a live principal only");
    // Even with the same member in the shadow, the live rows stay out of reach.
    let shadow = w
        .app
        .state
        .store
        .tenant_by_slug("root--dev")
        .await
        .unwrap()
        .unwrap();
    let mut p = Principal::new(shadow.id, "m-ann");
    p.slack_user_id = Some("U0ANN".into());
    w.app.state.store.insert(p).await.unwrap();
    let (status, listed) = w.list_as(&w.dev, "ref=m-ann").await;
    assert_eq!((status, &listed["count"]), (200, &json!(0)), "{listed}");
    let (status, _) = w.remove_as(&w.dev, w.kiln, "ref=m-ann").await;
    assert_eq!(status, 404);
    assert!(
        w.slack_hits("kiln studio thursday")
            .await
            .contains(&KILN_TS.to_string())
    );
}

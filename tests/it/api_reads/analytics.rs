//! `GET /api/v1/conversations/analytics`: buckets in the tenant's zone.

use serde_json::{Value, json};
use storage::{Channel, ConversationWorkSaved, Direction, LlmTokenUsage, Store, TenantStore};
use uuid::Uuid;

use super::{Fixture, at, bad_field, fixture};

async fn berlin(f: &Fixture) {
    let mut t = f
        .app
        .state
        .store
        .tenant_by_slug("root")
        .await
        .unwrap()
        .unwrap();
    t.timezone = "Europe/Berlin".into();
    f.app.state.store.update(t.clone()).await.unwrap();
    f.app.state.tenants.invalidate(&t);
}

async fn work_saved(f: &Fixture, tenant: Uuid, principal: Option<Uuid>, minutes: i32, when: &str) {
    let row = ConversationWorkSaved {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        exchange_key: Uuid::new_v4().to_string(),
        principal_id: principal,
        estimated_minutes: minutes,
        confidence: 0.5,
        created_at: at(when),
        ..Default::default()
    };
    f.app.state.store.insert(row).await.unwrap();
}

async fn usage(f: &Fixture, tenant: Uuid, tokens: i64, cost: f64, when: &str) {
    let row = LlmTokenUsage {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        purpose: "agent".into(),
        model: "m".into(),
        total_tokens: tokens,
        cost_usd: Some(cost),
        created_at: at(when),
        ..Default::default()
    };
    f.app.state.store.insert(row).await.unwrap();
}

fn figures(b: &Value) -> Value {
    json!([
        b["messages"],
        b["inbound"],
        b["outbound"],
        b["exchanges"],
        b["work_saved_minutes"],
        b["total_tokens"],
        b["cost_usd"]
    ])
}

const RANGE: &str = "from=2026-03-28T00:00:00%2B01:00&to=2026-03-31T00:00:00%2B02:00";

#[tokio::test]
async fn day_buckets_follow_berlin_midnights_across_the_spring_dst_change() {
    let f = fixture().await;
    berlin(&f).await;
    let t = f.live_id;
    let alice = f.principal(t, "alice", "Alice", "member").await;
    let bob = f.principal(t, "bob", "Bob", "member").await;
    use Direction::*;
    // 23:30 on the 28th in Berlin (CET, +01:00).
    f.log(
        t,
        Some(&alice),
        Channel::Slack,
        Inbound,
        "a",
        at("2026-03-28T22:30:00Z"),
        "x0",
    )
    .await;
    // 00:30 / 00:31 on the 29th (still CET).
    f.log(
        t,
        Some(&alice),
        Channel::Slack,
        Inbound,
        "b",
        at("2026-03-28T23:30:00Z"),
        "x1",
    )
    .await;
    f.log(
        t,
        Some(&alice),
        Channel::Slack,
        Outbound,
        "c",
        at("2026-03-28T23:31:00Z"),
        "x1",
    )
    .await;
    // 23:30 on the 29th (CEST, +02:00 since 02:00 that night) …
    f.log(
        t,
        Some(&bob),
        Channel::Email,
        Inbound,
        "d",
        at("2026-03-29T21:30:00Z"),
        "x2",
    )
    .await;
    // … and its reply at 00:30 on the 30th: an exchange counts once, where it began.
    f.log(
        t,
        Some(&bob),
        Channel::Email,
        Outbound,
        "e",
        at("2026-03-29T22:30:00Z"),
        "x2",
    )
    .await;
    work_saved(&f, t, Some(alice.id), 15, "2026-03-29T12:00:00Z").await;
    work_saved(&f, t, Some(bob.id), 30, "2026-03-30T10:00:00Z").await;
    usage(&f, t, 100, 0.25, "2026-03-29T21:59:59Z").await;
    usage(&f, t, 50, 0.5, "2026-03-29T22:00:00Z").await;
    // The dev shadow's rows never count for the live key.
    f.log(
        f.dev_id,
        None,
        Channel::Slack,
        Inbound,
        "dev",
        at("2026-03-29T12:00:00Z"),
        "dx",
    )
    .await;
    usage(&f, f.dev_id, 999, 9.0, "2026-03-29T12:00:00Z").await;

    let r = f
        .get(
            &format!("/api/v1/conversations/analytics?{RANGE}&group_by=day"),
            &f.live,
            200,
        )
        .await;
    assert_eq!(r["timezone"], "Europe/Berlin");
    assert_eq!(r["group_by"], "day");
    let b = r["buckets"].as_array().unwrap();
    let spans: Vec<(String, String, String)> = b
        .iter()
        .map(|b| {
            (
                b["label"].as_str().unwrap().into(),
                b["start"].as_str().unwrap().into(),
                b["end"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        spans,
        [
            (
                "2026-03-28",
                "2026-03-28T00:00:00+01:00",
                "2026-03-29T00:00:00+01:00"
            ),
            (
                "2026-03-29",
                "2026-03-29T00:00:00+01:00",
                "2026-03-30T00:00:00+02:00"
            ),
            (
                "2026-03-30",
                "2026-03-30T00:00:00+02:00",
                "2026-03-31T00:00:00+02:00"
            ),
        ]
        .map(|(l, s, e)| (l.to_string(), s.to_string(), e.to_string()))
    );
    assert_eq!(figures(&b[0]), json!([1, 1, 0, 1, 0, 0, 0.0]));
    assert_eq!(figures(&b[1]), json!([3, 2, 1, 2, 15, 100, 0.25]));
    assert_eq!(figures(&b[2]), json!([1, 0, 1, 0, 30, 50, 0.5]));
    assert_eq!(figures(&r["totals"]), json!([5, 3, 2, 3, 45, 150, 0.75]));

    // Weeks start on Monday (the 28th is in ISO week 13), clipped to `from`.
    let w = f
        .get(
            &format!("/api/v1/conversations/analytics?{RANGE}&group_by=week"),
            &f.live,
            200,
        )
        .await;
    let labels: Vec<&str> = w["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["2026-W13", "2026-W14"]);
    assert_eq!(w["buckets"][0]["start"], "2026-03-28T00:00:00+01:00");
    assert_eq!(w["buckets"][1]["start"], "2026-03-30T00:00:00+02:00");
    assert_eq!(
        figures(&w["buckets"][0]),
        json!([4, 3, 1, 3, 15, 100, 0.25])
    );
    let m = f
        .get(
            &format!("/api/v1/conversations/analytics?{RANGE}&group_by=month"),
            &f.live,
            200,
        )
        .await;
    assert_eq!(m["buckets"].as_array().unwrap().len(), 1);
    assert_eq!(m["buckets"][0]["label"], "2026-03");

    // One member: their messages and estimates; spend has no member column.
    let a = f
        .get(
            &format!("/api/v1/conversations/analytics?{RANGE}&principal_ref=alice"),
            &f.live,
            200,
        )
        .await;
    assert_eq!(a["principal_ref"], "alice");
    assert_eq!(figures(&a["totals"]), json!([3, 2, 1, 2, 15, null, null]));

    // The dev key sees only the shadow's rows (in the shadow's own zone).
    let d = f
        .get(
            &format!("/api/v1/conversations/analytics?{RANGE}"),
            &f.dev,
            200,
        )
        .await;
    assert_eq!(d["totals"]["messages"], 1);
    assert_eq!(d["totals"]["total_tokens"], 999);
}

#[tokio::test]
async fn bad_analytics_parameters_name_their_field() {
    let f = fixture().await;
    for (query, field) in [
        ("to=2026-03-02", "from"),
        ("from=2026-03-01", "to"),
        ("from=2026-03-02&to=2026-03-01", "to"),
        ("from=2026-03-01&to=2026-03-01", "to"),
        ("from=soon&to=2026-03-01", "from"),
        ("from=2026-03-01&to=2026-03-02&group_by=year", "group_by"),
        ("from=2020-01-01&to=2026-01-01&group_by=day", "to"),
    ] {
        let body = f
            .get(
                &format!("/api/v1/conversations/analytics?{query}"),
                &f.live,
                400,
            )
            .await;
        assert_eq!(bad_field(&body), field, "{query}");
    }
    f.get(
        "/api/v1/conversations/analytics?from=2026-03-01&to=2026-03-02&principal_ref=ghost",
        &f.live,
        404,
    )
    .await;
}

//! `GET /api/v1/conversations`.

use std::collections::HashSet;

use serde_json::{Value, json};
use storage::{Channel, Direction, MatchedVia};

use super::{at, bad_field, fixture};

fn ids(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn lists_newest_first_with_filters_channel_counts_and_mention_labels() {
    let f = fixture().await;
    let t = f.live_id;
    let alice = f.principal(t, "alice", "Alice Adams", "member").await;
    let bob = f.principal(t, "bob", "Bob Brown", "mentor").await;
    let a1 = f
        .log(
            t,
            Some(&alice),
            Channel::Slack,
            Direction::Inbound,
            "Where is the Venue?",
            at("2026-03-10T10:00:00Z"),
            "x1",
        )
        .await;
    let r1 = f
        .log(
            t,
            Some(&alice),
            Channel::Slack,
            Direction::Outbound,
            "Ask Bob Brown about the venue",
            at("2026-03-10T10:00:05Z"),
            "x1",
        )
        .await;
    f.mention(&r1, &bob, MatchedVia::Name, true).await;
    let a2 = f
        .log(
            t,
            Some(&alice),
            Channel::Email,
            Direction::Inbound,
            "Invoice question",
            at("2026-03-11T09:00:00Z"),
            "x2",
        )
        .await;
    let b1 = f
        .log(
            t,
            Some(&bob),
            Channel::Api,
            Direction::Inbound,
            "venue capacity?",
            at("2026-03-12T09:00:00Z"),
            "x3",
        )
        .await;

    // Tenant-wide, newest first; counts per channel; labels on the reply.
    let all = f.get("/api/v1/conversations", &f.live, 200).await;
    assert_eq!(
        ids(&all),
        [b1.id, a2.id, r1.id, a1.id].map(|i| i.to_string())
    );
    assert_eq!(
        all["counts"],
        json!({"slack": 2, "email": 1, "api": 1, "web": 0})
    );
    assert_eq!(all["next_cursor"], Value::Null);
    let reply = &all["items"][2];
    assert_eq!(reply["direction"], "outbound");
    assert_eq!(reply["principal_ref"], "alice");
    assert_eq!(
        reply["mentions"],
        json!([{
            "principal_ref": "bob",
            "name": "Bob Brown",
            "slack_user_id": null,
            "matched_via": "name",
            "content_sourced": true
        }])
    );
    assert_eq!(all["items"][0]["mentions"], json!([]));

    // One person; a channel (the counts keep every other filter).
    let mine = f
        .get("/api/v1/conversations?principal_ref=alice", &f.live, 200)
        .await;
    assert_eq!(ids(&mine), [a2.id, r1.id, a1.id].map(|i| i.to_string()));
    assert_eq!(
        mine["counts"],
        json!({"slack": 2, "email": 1, "api": 0, "web": 0})
    );
    let slack = f
        .get(
            "/api/v1/conversations?principal_ref=alice&channel=slack",
            &f.live,
            200,
        )
        .await;
    assert_eq!(ids(&slack), [r1.id, a1.id].map(|i| i.to_string()));
    assert_eq!(slack["counts"], mine["counts"]);

    // Text query: case-insensitive substring; time range [from, to).
    let venue = f.get("/api/v1/conversations?q=VENUE", &f.live, 200).await;
    assert_eq!(ids(&venue), [b1.id, r1.id, a1.id].map(|i| i.to_string()));
    assert_eq!(
        venue["counts"],
        json!({"slack": 2, "email": 0, "api": 1, "web": 0})
    );
    let ranged = f
        .get(
            "/api/v1/conversations?from=2026-03-10T10:00:05Z&to=2026-03-12T09:00:00Z",
            &f.live,
            200,
        )
        .await;
    assert_eq!(ids(&ranged), [a2.id, r1.id].map(|i| i.to_string()));
}

#[tokio::test]
async fn bad_parameters_are_400s_naming_the_field_and_unknown_people_404() {
    let f = fixture().await;
    for (query, field) in [
        ("channel=fax", "channel"),
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=ten", "limit"),
        ("limit=1&limit=2", "limit"),
        ("from=yesterday", "from"),
        ("from=2026-03-02&to=2026-03-01", "from"),
        ("cursor=bm90IGpzb24", "cursor"),
        ("principal_ref=", "principal_ref"),
        (&format!("q={}", "x".repeat(201)), "q"),
    ] {
        let body = f
            .get(&format!("/api/v1/conversations?{query}"), &f.live, 400)
            .await;
        assert_eq!(bad_field(&body), field, "{query}");
    }
    let body = f
        .get("/api/v1/conversations?principal_ref=nobody", &f.live, 404)
        .await;
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("nobody"),
        "{body}"
    );
}

#[tokio::test]
async fn live_and_dev_keys_see_only_their_own_tenant_rows() {
    let f = fixture().await;
    let live_alice = f.principal(f.live_id, "alice", "Alice", "member").await;
    let dev_alice = f
        .principal(f.dev_id, "alice", "Alice (dev)", "member")
        .await;
    let l = f
        .log(
            f.live_id,
            Some(&live_alice),
            Channel::Slack,
            Direction::Inbound,
            "live",
            at("2026-03-10T10:00:00Z"),
            "l",
        )
        .await;
    let d = f
        .log(
            f.dev_id,
            Some(&dev_alice),
            Channel::Web,
            Direction::Inbound,
            "dev",
            at("2026-03-10T11:00:00Z"),
            "d",
        )
        .await;
    for (key, own) in [(&f.live, &l), (&f.dev, &d)] {
        for path in [
            "/api/v1/conversations",
            "/api/v1/conversations?principal_ref=alice&q=e",
        ] {
            let page = f.get(path, key, 200).await;
            assert_eq!(ids(&page), [own.id.to_string()], "{path}");
            let total: u64 = page["counts"]
                .as_object()
                .unwrap()
                .values()
                .map(|v| v.as_u64().unwrap())
                .sum();
            assert_eq!(total, 1);
        }
    }
}

#[tokio::test]
async fn pages_never_repeat_or_skip_rows_when_newer_rows_arrive_between_requests() {
    let f = fixture().await;
    let t = f.live_id;
    let mut seeded = HashSet::new();
    for i in 0..5 {
        // Two rows share each instant: the id breaks the tie.
        for ch in [Channel::Slack, Channel::Email] {
            let r = f
                .log(
                    t,
                    None,
                    ch,
                    Direction::Inbound,
                    "m",
                    at(&format!("2026-03-10T10:00:0{i}Z")),
                    &format!("e{i}"),
                )
                .await;
            seeded.insert(r.id.to_string());
        }
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    let mut newer = 0;
    loop {
        let path = match &cursor {
            None => "/api/v1/conversations?limit=3".to_string(),
            Some(c) => format!("/api/v1/conversations?limit=3&cursor={c}"),
        };
        let page = f.get(&path, &f.live, 200).await;
        seen.extend(ids(&page));
        // A newer message lands between the requests.
        newer += 1;
        f.log(
            t,
            None,
            Channel::Api,
            Direction::Inbound,
            "late",
            at(&format!("2026-03-11T00:00:0{newer}Z")),
            "late",
        )
        .await;
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 10, "{seen:?}");
    assert_eq!(seen.iter().cloned().collect::<HashSet<_>>(), seeded);
}

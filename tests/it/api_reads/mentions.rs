//! `GET /api/v1/mentions/leaderboard`, `/mentions/counts`, `/mentions/details`.

use std::collections::HashSet;

use serde_json::{Value, json};
use storage::{Channel, Direction, MatchedVia};

use super::{Fixture, at, bad_field, fixture};

/// Replies at 10:00:0i on March 10 naming the given people.
async fn replies(
    f: &Fixture,
    tenant: uuid::Uuid,
    named: &[(&storage::Principal, MatchedVia, bool)],
) {
    for (i, (who, via, sourced)) in named.iter().enumerate() {
        let reply = f
            .log(
                tenant,
                None,
                Channel::Slack,
                Direction::Outbound,
                "reply",
                at(&format!("2026-03-10T10:00:{i:02}Z")),
                &format!("x{i}"),
            )
            .await;
        f.mention(&reply, who, *via, *sourced).await;
    }
}

fn board(b: &Value) -> Vec<(String, u64, u64, u64)> {
    b["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["principal_ref"].as_str().unwrap().to_string(),
                e["rank"].as_u64().unwrap(),
                e["mentions"].as_u64().unwrap(),
                e["content_sourced"].as_u64().unwrap(),
            )
        })
        .collect()
}

fn owned(rows: &[(&str, u64, u64, u64)]) -> Vec<(String, u64, u64, u64)> {
    rows.iter()
        .map(|(r, a, b, c)| (r.to_string(), *a, *b, *c))
        .collect()
}

#[tokio::test]
async fn leaderboard_ranks_by_mentions_per_tier_and_counts_and_details_per_person() {
    let f = fixture().await;
    let t = f.live_id;
    let ann = f.principal(t, "ann", "Ann", "mentor").await;
    let ben = f.principal(t, "ben", "Ben", "member").await;
    let cat = f.principal(t, "cat", "Cat", "member").await;
    use MatchedVia::*;
    replies(
        &f,
        t,
        &[
            (&ann, SlackId, true),
            (&ben, Name, false),
            (&ann, Name, false),
            (&cat, Name, true),
            (&ben, SlackId, false),
            (&ann, SlackId, false),
        ],
    )
    .await;

    let all = f.get("/api/v1/mentions/leaderboard", &f.live, 200).await;
    assert_eq!(all["tier"], "all");
    assert_eq!(
        board(&all),
        owned(&[("ann", 1, 3, 1), ("ben", 2, 2, 0), ("cat", 3, 1, 1)])
    );
    assert_eq!(all["items"][0]["display_name"], "Ann");
    assert_eq!(all["items"][0]["tier"], "mentor");
    assert_eq!(all["items"][0]["last_mentioned_at"], "2026-03-10T10:00:05Z");
    let members = f
        .get("/api/v1/mentions/leaderboard?tier=member", &f.live, 200)
        .await;
    assert_eq!(
        board(&members),
        owned(&[("ben", 1, 2, 0), ("cat", 2, 1, 1)])
    );
    let mentors = f
        .get(
            "/api/v1/mentions/leaderboard?tier=mentor&limit=1",
            &f.live,
            200,
        )
        .await;
    assert_eq!(board(&mentors), owned(&[("ann", 1, 3, 1)]));
    let early = f
        .get(
            "/api/v1/mentions/leaderboard?to=2026-03-10T10:00:02Z",
            &f.live,
            200,
        )
        .await;
    assert_eq!(board(&early), owned(&[("ann", 1, 1, 1), ("ben", 2, 1, 0)]));

    let counts = f
        .get("/api/v1/mentions/counts?principal_ref=ann", &f.live, 200)
        .await;
    assert_eq!(
        counts,
        json!({"principal_ref": "ann", "mentions": 3, "content_sourced": 1, "by_slack_id": 2,
               "by_name": 1, "last_mentioned_at": "2026-03-10T10:00:05Z"})
    );

    let first = f
        .get(
            "/api/v1/mentions/details?principal_ref=ann&limit=2",
            &f.live,
            200,
        )
        .await;
    assert_eq!(first["principal_ref"], "ann");
    let at_of = |p: &Value| -> Vec<String> {
        p["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["message_at"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        at_of(&first),
        ["2026-03-10T10:00:05Z", "2026-03-10T10:00:02Z"]
    );
    assert_eq!(first["items"][0]["channel"], "slack");
    assert_eq!(first["items"][0]["matched_via"], "slack_id");
    assert_eq!(first["items"][1]["matched_via"], "name");
    assert_eq!(first["items"][1]["exchange_key"], "x2");
    // A newer mention lands before the next page: it does not shift it.
    let newer = f
        .log(
            t,
            None,
            Channel::Email,
            Direction::Outbound,
            "later",
            at("2026-03-11T00:00:00Z"),
            "late",
        )
        .await;
    f.mention(&newer, &ann, MatchedVia::Name, false).await;
    let cursor = first["next_cursor"].as_str().unwrap();
    let second = f
        .get(
            &format!("/api/v1/mentions/details?principal_ref=ann&limit=2&cursor={cursor}"),
            &f.live,
            200,
        )
        .await;
    assert_eq!(at_of(&second), ["2026-03-10T10:00:00Z"]);
    assert_eq!(second["next_cursor"], Value::Null);
    let seen: HashSet<String> = at_of(&first).into_iter().chain(at_of(&second)).collect();
    assert_eq!(seen.len(), 3);
}

#[tokio::test]
async fn bad_mention_parameters_name_the_field() {
    let f = fixture().await;
    f.principal(f.live_id, "alice", "Alice", "member").await;
    for (path, field) in [
        ("/api/v1/mentions/leaderboard?tier=admin", "tier"),
        ("/api/v1/mentions/leaderboard?limit=101", "limit"),
        ("/api/v1/mentions/leaderboard?from=later", "from"),
        ("/api/v1/mentions/counts", "principal_ref"),
        (
            "/api/v1/mentions/counts?principal_ref=alice&limit=5",
            "limit",
        ),
        ("/api/v1/mentions/details", "principal_ref"),
        (
            "/api/v1/mentions/details?principal_ref=alice&limit=0",
            "limit",
        ),
        (
            "/api/v1/mentions/details?principal_ref=alice&cursor=abc",
            "cursor",
        ),
    ] {
        let body = f.get(path, &f.live, 400).await;
        assert_eq!(bad_field(&body), field, "{path}");
    }
    for path in [
        "/api/v1/mentions/counts?principal_ref=ghost",
        "/api/v1/mentions/details?principal_ref=ghost",
    ] {
        let body = f.get(path, &f.live, 404).await;
        assert!(body["error"]["message"].as_str().unwrap().contains("ghost"));
    }
}

#[tokio::test]
async fn live_and_dev_keys_rank_only_their_own_mentions() {
    let f = fixture().await;
    let live_ann = f.principal(f.live_id, "ann", "Ann", "member").await;
    let dev_ann = f.principal(f.dev_id, "ann", "Ann", "member").await;
    replies(&f, f.live_id, &[(&live_ann, MatchedVia::Name, false)]).await;
    replies(
        &f,
        f.dev_id,
        &[
            (&dev_ann, MatchedVia::Name, true),
            (&dev_ann, MatchedVia::Name, true),
        ],
    )
    .await;
    let live = f.get("/api/v1/mentions/leaderboard", &f.live, 200).await;
    assert_eq!(board(&live), owned(&[("ann", 1, 1, 0)]));
    let dev = f.get("/api/v1/mentions/leaderboard", &f.dev, 200).await;
    assert_eq!(board(&dev), owned(&[("ann", 1, 2, 2)]));
    let c = f
        .get("/api/v1/mentions/counts?principal_ref=ann", &f.live, 200)
        .await;
    assert_eq!(c["mentions"], 1);
    let d = f
        .get("/api/v1/mentions/details?principal_ref=ann", &f.dev, 200)
        .await;
    assert_eq!(d["items"].as_array().unwrap().len(), 2);
}

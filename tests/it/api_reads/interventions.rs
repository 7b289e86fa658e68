//! `POST/GET /api/v1/interventions`, `POST /api/v1/interventions/{id}/status`.

use std::collections::HashSet;

use serde_json::{Value, json};
use storage::{Channel, HumanIntervention, InterventionCategory, InterventionStatus, Json, Store};
use uuid::Uuid;

use super::{Fixture, at, bad_field, fixture};

async fn seed(
    f: &Fixture,
    tenant: Uuid,
    category: InterventionCategory,
    title: &str,
    when: &str,
) -> HumanIntervention {
    let row = HumanIntervention {
        id: Uuid::new_v4(),
        tenant_id: tenant,
        channel: Channel::Slack,
        category,
        title: title.into(),
        metadata: Json::empty_object(),
        created_at: at(when),
        updated_at: at(when),
        ..Default::default()
    };
    f.app.state.store.insert(row).await.unwrap()
}

fn titles(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect()
}

#[tokio::test]
async fn create_then_list_by_category_and_status() {
    let f = fixture().await;
    f.principal(f.live_id, "alice", "Alice", "member").await;
    let made = f
        .post(
            "/api/v1/interventions",
            &f.live,
            json!({"category": "request", "title": "  Book the hall  ", "details": "for 40",
                   "principal_ref": "alice", "metadata": {"source": "crm"}}),
            201,
        )
        .await;
    assert_eq!(made["title"], "Book the hall");
    assert_eq!(made["status"], "open");
    assert_eq!(made["channel"], "api");
    assert_eq!(made["category"], "request");
    assert_eq!(made["principal_ref"], "alice");
    assert_eq!(made["metadata"], json!({"source": "crm"}));
    let stored: HumanIntervention = f
        .app
        .state
        .store
        .get(
            Some(f.live_id),
            storage::key().uuid(made["id"].as_str().unwrap().parse().unwrap()),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.category, InterventionCategory::Request);
    assert_eq!(stored.details.as_deref(), Some("for 40"));

    seed(
        &f,
        f.live_id,
        InterventionCategory::Escalation,
        "Angry member",
        "2020-01-02T00:00:00Z",
    )
    .await;
    seed(
        &f,
        f.live_id,
        InterventionCategory::MissingTool,
        "No refunds tool",
        "2020-01-01T00:00:00Z",
    )
    .await;

    let all = f.get("/api/v1/interventions", &f.live, 200).await;
    assert_eq!(
        titles(&all),
        ["Book the hall", "Angry member", "No refunds tool"]
    );
    assert_eq!(all["next_cursor"], Value::Null);
    let esc = f
        .get("/api/v1/interventions?category=escalation", &f.live, 200)
        .await;
    assert_eq!(titles(&esc), ["Angry member"]);

    let id = made["id"].as_str().unwrap();
    let moved = f
        .post(
            &format!("/api/v1/interventions/{id}/status"),
            &f.live,
            json!({"status": "in_progress"}),
            200,
        )
        .await;
    assert_eq!(moved["status"], "in_progress");
    let open = f
        .get("/api/v1/interventions?status=open", &f.live, 200)
        .await;
    assert_eq!(titles(&open), ["Angry member", "No refunds tool"]);
    let live = f
        .get(
            "/api/v1/interventions?status=open,in_progress&category=request",
            &f.live,
            200,
        )
        .await;
    assert_eq!(titles(&live), ["Book the hall"]);
}

#[tokio::test]
async fn status_transitions_follow_the_table() {
    let f = fixture().await;
    let row = seed(
        &f,
        f.live_id,
        InterventionCategory::Request,
        "r",
        "2026-01-01T00:00:00Z",
    )
    .await;
    let path = format!("/api/v1/interventions/{}/status", row.id);
    for (to, status, now) in [
        ("resolved", 200, "resolved"),
        ("resolved", 200, "resolved"), // a repeat changes nothing
        ("in_progress", 409, "resolved"),
        ("open", 200, "open"), // reopened
        ("cancelled", 200, "cancelled"),
        ("open", 409, "cancelled"), // final
    ] {
        let body = f.post(&path, &f.live, json!({"status": to}), status).await;
        if status == 409 {
            assert_eq!(body["error"]["code"], "conflict");
        }
        let stored: HumanIntervention = f
            .app
            .state
            .store
            .get(Some(f.live_id), storage::key().uuid(row.id))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.status.as_str(), now, "after {to}");
    }
    let stored: HumanIntervention = f
        .app
        .state
        .store
        .get(Some(f.live_id), storage::key().uuid(row.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, InterventionStatus::Cancelled);
    assert!(stored.updated_at > row.updated_at);
    f.post(
        &format!("/api/v1/interventions/{}/status", Uuid::new_v4()),
        &f.live,
        json!({"status": "resolved"}),
        404,
    )
    .await;
}

#[tokio::test]
async fn bad_intervention_input_names_the_field() {
    let f = fixture().await;
    for (body, field) in [
        (json!({"category": "gripe", "title": "t"}), "category"),
        (json!({"category": "request", "title": "   "}), "title"),
        (
            json!({"category": "request", "title": "x".repeat(201)}),
            "title",
        ),
        (
            json!({"category": "request", "title": "t", "details": "x".repeat(8001)}),
            "details",
        ),
        (
            json!({"category": "request", "title": "t", "channel": "fax"}),
            "channel",
        ),
        (
            json!({"category": "request", "title": "t", "metadata": [1]}),
            "metadata",
        ),
        (
            json!({"category": "request", "title": "t", "principal_ref": ""}),
            "principal_ref",
        ),
    ] {
        let resp = f
            .post("/api/v1/interventions", &f.live, body.clone(), 400)
            .await;
        assert_eq!(bad_field(&resp), field, "{body}");
    }
    f.post(
        "/api/v1/interventions",
        &f.live,
        json!({"category": "request", "title": "t", "principal_ref": "ghost"}),
        404,
    )
    .await;
    for (query, field) in [
        ("category=gripe", "category"),
        ("status=open,closed", "status"),
        ("limit=500", "limit"),
        ("cursor=%%%", "cursor"),
    ] {
        let body = f
            .get(&format!("/api/v1/interventions?{query}"), &f.live, 400)
            .await;
        assert_eq!(bad_field(&body), field, "{query}");
    }
    let row = seed(
        &f,
        f.live_id,
        InterventionCategory::Request,
        "r",
        "2026-01-01T00:00:00Z",
    )
    .await;
    let body = f
        .post(
            &format!("/api/v1/interventions/{}/status", row.id),
            &f.live,
            json!({"status": "done"}),
            400,
        )
        .await;
    assert_eq!(bad_field(&body), "status");
    let body = f
        .post(
            "/api/v1/interventions/not-a-uuid/status",
            &f.live,
            json!({"status": "open"}),
            400,
        )
        .await;
    assert_eq!(bad_field(&body), "id");
}

#[tokio::test]
async fn live_and_dev_keys_see_and_change_only_their_own_interventions() {
    let f = fixture().await;
    let live = seed(
        &f,
        f.live_id,
        InterventionCategory::Request,
        "live one",
        "2026-01-01T00:00:00Z",
    )
    .await;
    let dev = seed(
        &f,
        f.dev_id,
        InterventionCategory::Request,
        "dev one",
        "2026-01-01T00:00:00Z",
    )
    .await;
    assert_eq!(
        titles(&f.get("/api/v1/interventions", &f.live, 200).await),
        ["live one"]
    );
    assert_eq!(
        titles(&f.get("/api/v1/interventions", &f.dev, 200).await),
        ["dev one"]
    );
    // The other environment's row is not there at all.
    f.post(
        &format!("/api/v1/interventions/{}/status", dev.id),
        &f.live,
        json!({"status": "resolved"}),
        404,
    )
    .await;
    f.post(
        &format!("/api/v1/interventions/{}/status", live.id),
        &f.dev,
        json!({"status": "resolved"}),
        404,
    )
    .await;
    let made = f
        .post(
            "/api/v1/interventions",
            &f.dev,
            json!({"category": "escalation", "title": "from dev"}),
            201,
        )
        .await;
    let stored: Option<HumanIntervention> = f
        .app
        .state
        .store
        .get(
            Some(f.dev_id),
            storage::key().uuid(made["id"].as_str().unwrap().parse().unwrap()),
        )
        .await
        .unwrap();
    assert!(stored.is_some(), "written to the shadow");
    assert_eq!(
        titles(&f.get("/api/v1/interventions", &f.live, 200).await),
        ["live one"]
    );
}

#[tokio::test]
async fn interventions_page_without_repeats_or_gaps_while_new_ones_are_opened() {
    let f = fixture().await;
    let mut seeded = HashSet::new();
    for i in 0..7 {
        let r = seed(
            &f,
            f.live_id,
            InterventionCategory::Request,
            &format!("r{i}"),
            &format!("2026-01-0{}T00:00:00Z", 1 + i % 3),
        )
        .await;
        seeded.insert(r.id.to_string());
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            None => "/api/v1/interventions?limit=2".to_string(),
            Some(c) => format!("/api/v1/interventions?limit=2&cursor={c}"),
        };
        let page = f.get(&path, &f.live, 200).await;
        // Opened after the first page was read: newer than every seeded row.
        if cursor.is_some() {
            f.post(
                "/api/v1/interventions",
                &f.live,
                json!({"category": "request", "title": "late"}),
                201,
            )
            .await;
        }
        for i in page["items"].as_array().unwrap() {
            if i["title"] != "late" {
                seen.push(i["id"].as_str().unwrap().to_string());
            } else {
                panic!("a row newer than the first page appeared on a later page");
            }
        }
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 7, "{seen:?}");
    assert_eq!(seen.into_iter().collect::<HashSet<_>>(), seeded);
}

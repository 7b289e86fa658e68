//! The `/api/v1/integrations` routes with tenant isolation.

use super::*;

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn routes_register_list_refresh_rotate_disable_with_tenant_isolation() {
    let app = TestApp::spawn().await;
    let stub = StubBackend::start(SECRET).await.unwrap();
    let acme = key_for(&app, "acme").await;
    let other = key_for(&app, "other").await;

    // Generated secret, shown once.
    let (status, created) = json_of(
        app.post_json(
            "/api/v1/integrations",
            Some(&acme),
            &json!({"name": "stub", "base_url": format!("{}/", stub.base_url())}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let secret = created["signing_secret"].as_str().unwrap().to_string();
    assert_eq!(secret.len(), 64);
    assert_eq!(created["status"], "pending");
    assert_eq!(created["base_url"], stub.base_url());

    let (status, listed) = json_of(app.get("/api/v1/integrations", Some(&acme)).await).await;
    assert_eq!(status, 200);
    assert_eq!(listed["integrations"].as_array().unwrap().len(), 1);
    assert!(
        !listed.to_string().contains(&secret),
        "the secret is never listed"
    );

    // Bad input.
    for (body, needle) in [
        (
            json!({"name": "S", "base_url": stub.base_url()}),
            "name must match",
        ),
        (
            json!({"name": "ok-name", "base_url": "ftp://x"}),
            "base_url",
        ),
        (
            json!({"name": "ok-name", "base_url": stub.base_url(), "endpoint_paths": {"manifest": "nope"}}),
            "start with /",
        ),
        (
            json!({"name": "ok-name", "base_url": stub.base_url(), "endpoint_paths": {"nope": "/x"}}),
            "unknown key",
        ),
        (
            json!({"name": "ok-name", "base_url": stub.base_url(), "signing_secret": "short"}),
            "signing_secret",
        ),
    ] {
        let (status, v) = json_of(
            app.post_json("/api/v1/integrations", Some(&acme), &body)
                .await,
        )
        .await;
        assert_eq!(status, 400, "{body} → {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle),
            "{v}"
        );
    }
    let (status, _) = json_of(
        app.post_json(
            "/api/v1/integrations",
            Some(&acme),
            &json!({"name": "stub", "base_url": stub.base_url()}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 409);

    // The backend does not know the generated secret yet: refresh is a 502.
    let (status, v) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 502, "{v}");
    let message = v["error"]["message"].as_str().unwrap();
    // Exactly the generic text around the request id: no status, no body.
    let request_id = message
        .strip_prefix(
            "the integration backend could not be reached or gave an invalid answer; see the server log (request id ",
        )
        .and_then(|rest| rest.strip_suffix(")"))
        .unwrap_or_else(|| panic!("not the generic 502 text: {v}"));
    assert!(
        uuid::Uuid::parse_str(request_id).is_ok(),
        "only a request id is added: {v}"
    );
    stub.set_secret(secret.clone());
    let (status, v) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["status"], "active");
    assert_eq!(v["manifest"]["tools"].as_array().unwrap().len(), 4);

    // Rotation: a new secret, shown once; the backend must learn it.
    let (status, rotated) = json_of(
        app.post_json(
            "/api/v1/integrations/stub/rotate-secret",
            Some(&acme),
            &json!({}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    let new_secret = rotated["signing_secret"].as_str().unwrap().to_string();
    assert_ne!(new_secret, secret);
    let (status, _) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 502);
    stub.set_secret(new_secret);
    let (status, _) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 200);

    // Identity through the route.
    let (status, who) = json_of(
        app.post_json(
            "/api/v1/identity/resolve",
            Some(&acme),
            &json!({"slack_user_id": "U_MEMBER"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200, "{who}");
    assert_eq!(who["principal"]["principal_ref"], "member-1");
    let (_, nobody) = json_of(
        app.post_json(
            "/api/v1/identity/resolve",
            Some(&acme),
            &json!({"email": "nobody@example.org"}),
        )
        .await,
    )
    .await;
    assert_eq!(nobody["principal"], Value::Null);
    let (status, _) = json_of(
        app.post_json("/api/v1/identity/resolve", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 400);

    // Tenant B sees and touches nothing of A's.
    let (_, theirs) = json_of(app.get("/api/v1/integrations", Some(&other)).await).await;
    assert_eq!(theirs["integrations"], json!([]));
    for path in [
        "/api/v1/integrations/stub/refresh",
        "/api/v1/integrations/stub/rotate-secret",
    ] {
        let (status, _) = json_of(app.post_json(path, Some(&other), &json!({})).await).await;
        assert_eq!(status, 404, "{path}");
    }
    let (status, _) = json_of(app.delete("/api/v1/integrations/stub", Some(&other)).await).await;
    assert_eq!(status, 404);
    let (_, who) = json_of(
        app.post_json(
            "/api/v1/identity/resolve",
            Some(&other),
            &json!({"slack_user_id": "U_MEMBER"}),
        )
        .await,
    )
    .await;
    assert_eq!(who["principal"], Value::Null, "B has no integration to ask");

    // Disable; a disabled integration refreshes no more and resolves no one.
    let (status, v) = json_of(app.delete("/api/v1/integrations/stub", Some(&acme)).await).await;
    assert_eq!(status, 200);
    assert_eq!(v["status"], "disabled");
    let (status, _) = json_of(
        app.post_json("/api/v1/integrations/stub/refresh", Some(&acme), &json!({}))
            .await,
    )
    .await;
    assert_eq!(status, 422);
    let (_, who) = json_of(
        app.post_json(
            "/api/v1/identity/resolve",
            Some(&acme),
            &json!({"slack_user_id": "U_MEMBER"}),
        )
        .await,
    )
    .await;
    assert_eq!(who["principal"], Value::Null);
    // Re-registering a disabled name starts it over as pending.
    let (status, v) = json_of(
        app.post_json(
            "/api/v1/integrations",
            Some(&acme),
            &json!({"name": "stub", "base_url": stub.base_url(), "signing_secret": SECRET}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201, "{v}");
    assert_eq!(v["status"], "pending");
    assert_eq!(v["signing_secret"], SECRET);
    // Without a key: 401.
    let (status, _) = json_of(app.get("/api/v1/integrations", None).await).await;
    assert_eq!(status, 401);
}

/// `PUT /api/v1/integrations/{name}/tool-overrides` as `key`.
async fn put_overrides(app: &TestApp, key: &str, name: &str, body: &Value) -> (u16, Value) {
    json_of(
        reqwest::Client::new()
            .put(app.url(&format!("/api/v1/integrations/{name}/tool-overrides")))
            .bearer_auth(key)
            .json(body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn tool_overrides_route_sets_and_clears_validated_overrides_per_tenant() {
    let app = TestApp::spawn().await;
    let acme = key_for(&app, "acme").await;
    let other = key_for(&app, "other").await;
    let (status, _) = json_of(
        app.post_json(
            "/api/v1/integrations",
            Some(&acme),
            &json!({"name": "portal", "base_url": "https://backend.example.org"}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 201);

    // Two tools at once: stored (tidied), answered with the row.
    let (status, v) = put_overrides(
        &app,
        &acme,
        "portal",
        &json!({"overrides": {
            "book_room": {"description": "  Book a room.  ", "tiers": ["member", "member"]},
            "old_tool": {"removed": true},
        }}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["name"], "portal");
    assert_eq!(
        v["tool_overrides"]["book_room"],
        json!({"removed": false, "description": "Book a room.", "tiers": ["member"]})
    );
    assert_eq!(v["tool_overrides"]["old_tool"]["removed"], json!(true));

    // Clearing one keeps the other.
    let (status, v) = put_overrides(
        &app,
        &acme,
        "portal",
        &json!({"overrides": {"old_tool": null}}),
    )
    .await;
    assert_eq!(status, 200, "{v}");
    let tools: Vec<&String> = v["tool_overrides"].as_object().unwrap().keys().collect();
    assert_eq!(tools, ["book_room"]);

    // One invalid entry: 400 naming it, nothing changed.
    for (body, needle) in [
        (
            json!({"overrides": {"book_room": {"tiers": ["gold"]}, "x": {"channels": ["pigeon"]}}}),
            "x: channels: unknown channel",
        ),
        (
            json!({"overrides": {"book_room": {"description": " "}}}),
            "description must not be empty",
        ),
        (
            json!({"overrides": {"book_room": {"colour": "red"}}}),
            "colour",
        ),
        (json!({"overrides": {}}), "at least one tool"),
        (json!({"book_room": {"removed": true}}), "overrides"),
    ] {
        let (status, v) = put_overrides(&app, &acme, "portal", &body).await;
        assert_eq!(status, 400, "{body} → {v}");
        assert!(
            v["error"]["message"].as_str().unwrap().contains(needle)
                || v["error"]["field"] == "overrides",
            "{body} → {v}"
        );
    }
    let (_, listed) = json_of(app.get("/api/v1/integrations", Some(&acme)).await).await;
    assert_eq!(
        listed["integrations"][0]["tool_overrides"],
        json!({"book_room": {"removed": false, "description": "Book a room.", "tiers": ["member"]}}),
        "the refused calls changed nothing"
    );

    // Unknown integration, another tenant's integration: 404; no key: 401.
    let body = json!({"overrides": {"book_room": null}});
    assert_eq!(put_overrides(&app, &acme, "nope", &body).await.0, 404);
    assert_eq!(put_overrides(&app, &other, "portal", &body).await.0, 404);
    let anon = reqwest::Client::new()
        .put(app.url("/api/v1/integrations/portal/tool-overrides"))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(anon.status(), 401);
}

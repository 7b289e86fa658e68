//! The manifest: promotion to active, the 60 s cache, tool overrides,
//! materialization rules, endpoint path overrides; identity, roster, links
//! and escalations.

use super::*;

#[tokio::test]
async fn a_valid_manifest_promotes_pending_to_active_and_an_invalid_one_does_not() {
    let f = fixture().await;
    f.stub
        .set_manifest(json!({"protocol": "mcp/1", "tools": [{"name": "x", "description": ""}]}));
    let row = f.register("stub", None).await;
    assert_eq!(row.status, IntegrationStatus::Pending);
    let err = f.in_acme(f.integrations.refresh("stub")).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("protocol must start with root-int/"),
        "{text}"
    );
    assert!(text.contains("description must not be empty"), "{text}");
    assert!(f.in_acme(f.integrations.prime()).await.unwrap().is_empty());
    let row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    assert_eq!(row.status, IntegrationStatus::Pending);
    assert!(row.manifest.is_none());

    f.stub.set_manifest(StubBackend::default_manifest());
    let (row, manifest) = f.in_acme(f.integrations.refresh("stub")).await.unwrap();
    assert_eq!(row.status, IntegrationStatus::Active);
    assert_eq!(row.manifest_fetched_at, Some(Ts::from_secs(1_773_781_500)));
    assert_eq!(manifest.tools.len(), 4);
    let stored: Integration = f
        .store
        .get(Some(f.acme.id()), key().uuid(row.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.status, IntegrationStatus::Active);
    assert_eq!(
        stored.manifest.unwrap().0["tools"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[tokio::test]
async fn the_manifest_cache_serves_60_s_and_a_failed_refresh_keeps_the_stale_manifest() {
    let f = fixture().await;
    f.primed().await;
    let fetches = || f.stub.requests_to("/integration/manifest").len();
    assert_eq!(fetches(), 1);
    f.clock.advance_ms(59_999);
    f.in_acme(f.integrations.prime()).await.unwrap();
    assert_eq!(fetches(), 1, "fresh within 60 s");

    f.clock.advance_ms(1);
    f.stub
        .fail_next("/integration/manifest", 1, StubFailure::Status(500));
    let primed = f.in_acme(f.integrations.prime()).await.unwrap();
    assert_eq!(fetches(), 2);
    assert_eq!(primed.len(), 1, "stale manifest still served");
    assert_eq!(primed[0].tools.len(), 4);
    let row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    assert_eq!(row.manifest_fetched_at, Some(Ts::from_secs(1_773_781_500)));

    // The failure stamped the cache: no new fetch for another 60 s.
    f.clock.advance_ms(30_000);
    f.in_acme(f.integrations.prime()).await.unwrap();
    assert_eq!(fetches(), 2);
    f.clock.advance_ms(30_000);
    f.in_acme(f.integrations.prime()).await.unwrap();
    assert_eq!(fetches(), 3);
    let row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    assert_eq!(
        row.manifest_fetched_at,
        Some(Ts::from_secs(1_773_781_500 + 120))
    );

    // A new service (a restart) seeds its cache from the row: still fresh.
    let again = Integrations::new(f.store.clone(), f.client.clone(), Arc::new(f.clock.clone()));
    f.in_acme(again.prime()).await.unwrap();
    assert_eq!(fetches(), 3);
}

#[tokio::test]
async fn tool_overrides_apply_before_materialization() {
    let f = fixture().await;
    f.primed().await;
    let mut row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    row.tool_overrides = Json(json!({
        "book_room": {"removed": true},
        "lookup_member": {"description": "Find a member (override)", "tiers": ["partner"]},
        "admin_stats": {"admin_only": false, "tiers": ["member"]}
    }));
    f.store.update(row).await.unwrap();
    let primed = f.in_acme(f.integrations.prime()).await.unwrap().remove(0);
    assert_eq!(
        names(&primed.tools),
        ["lookup_member", "generate_report", "admin_stats"]
    );
    assert_eq!(
        primed.tool("lookup_member").unwrap().description,
        "Find a member (override)"
    );
    assert_eq!(
        names(&primed.tools_for("slack", "member", false)),
        ["generate_report", "admin_stats"]
    );
    assert_eq!(
        names(&primed.tools_for("slack", "partner", false)),
        ["lookup_member"]
    );
    // A removed tool cannot be invoked either.
    let r = f
        .in_acme(
            f.integrations
                .invoke(&primed, "book_room", request(json!({"room": "x"})), None),
        )
        .await;
    assert!(!r.success);

    // Unreadable overrides: the integration offers nothing (fail closed).
    let mut row = f.in_acme(f.integrations.get("stub")).await.unwrap();
    row.tool_overrides = Json(json!({"book_room": {"removed": "yes"}}));
    f.store.update(row).await.unwrap();
    assert!(f.in_acme(f.integrations.prime()).await.unwrap().is_empty());
}

#[tokio::test]
async fn materialization_of_the_stub_manifest_follows_channel_admin_and_tier_rules() {
    let f = fixture().await;
    let primed = f.primed().await;
    assert_eq!(
        names(&primed.tools_for("slack", "member", false)),
        ["lookup_member", "book_room", "generate_report"]
    );
    assert_eq!(
        names(&primed.tools_for("email", "partner", false)),
        ["lookup_member"]
    );
    assert_eq!(
        names(&primed.tools_for("web", "member", true)),
        [
            "lookup_member",
            "book_room",
            "generate_report",
            "admin_stats"
        ]
    );
    assert_eq!(
        names(&primed.tools_for("api", "partner", true)),
        ["lookup_member", "generate_report", "admin_stats"]
    );
    assert!(primed.tools_for("slack", "unresolved", false).is_empty());
    assert!(primed.tools_for("email", "public_email", false).is_empty());
    assert_eq!(
        primed.prompt_sections_for("slack", "member", false),
        ["Members can book the Garden and Library rooms with book_room."]
    );
    assert!(
        primed
            .prompt_sections_for("email", "member", false)
            .is_empty()
    );
    assert!(
        primed
            .prompt_sections_for("slack", "public", false)
            .is_empty()
    );
    let links = primed.link_destinations_for("slack", "member", false);
    assert_eq!(links.destinations, ["dashboard"]);
    assert!(
        primed
            .link_destinations_for("slack", "unresolved", false)
            .destinations
            .is_empty()
    );
    let tier = primed.manifest.access_tier("member").unwrap();
    assert_eq!(
        tier.core_tools.clone().unwrap(),
        ["search_knowledge_base", "escalate_to_admin"]
    );
    assert!(
        primed
            .manifest
            .access_tier("partner")
            .unwrap()
            .core_tools
            .is_none()
    );
}

#[tokio::test]
async fn endpoint_path_overrides_are_used_for_every_call() {
    let f = fixture().await;
    let paths = json!({"manifest": "/v2/manifest", "tool_invoke": "/v2/tools/:name",
                       "identity_resolve": "/v2/identity/resolve"});
    f.register("custom", Some(paths)).await;
    let primed = f.in_acme(f.integrations.prime()).await.unwrap().remove(0);
    assert_eq!(f.stub.requests_to("/v2/manifest").len(), 1);
    assert!(f.stub.requests_to("/integration/manifest").is_empty());
    let r = f
        .in_acme(f.integrations.invoke(
            &primed,
            "book_room",
            request(json!({"room": "Library"})),
            None,
        ))
        .await;
    assert!(r.success, "{r:?}");
    assert_eq!(f.stub.requests_to("/v2/tools/book_room").len(), 1);
    let who = f
        .in_acme(
            f.integrations
                .resolve_identity_via_integrations(&IdentityQuery {
                    channel: "slack".into(),
                    slack_user_id: Some("U_MEMBER".into()),
                    email: None,
                }),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(who.principal.unwrap().principal_ref, "member-1");
    assert_eq!(f.stub.requests_to("/v2/identity/resolve").len(), 1);

    let err = f
        .in_acme(f.integrations.register(NewIntegration {
            name: "bad".into(),
            base_url: f.stub.base_url().into(),
            signing_secret: None,
            endpoint_paths: Some(json!({"tool_invoke": "/v2/tools"})),
        }))
        .await
        .err()
        .unwrap();
    assert!(err.to_string().contains(":name"), "{err}");
}

#[tokio::test]
async fn identity_roster_links_and_escalations() {
    let f = fixture().await;
    let primed = f.primed().await;
    let resolve = |slack: Option<&str>, email: Option<&str>| {
        let q = IdentityQuery {
            channel: if slack.is_some() { "slack" } else { "email" }.into(),
            slack_user_id: slack.map(String::from),
            email: email.map(String::from),
        };
        let integrations = f.integrations.clone();
        f.in_acme(async move {
            integrations
                .resolve_identity_via_integrations(&q)
                .await
                .unwrap()
        })
    };
    let member = resolve(Some("U_MEMBER"), None).await.unwrap();
    let p = member.principal.unwrap();
    assert_eq!(
        (p.principal_ref.as_str(), p.tier.as_str()),
        ("member-1", "member")
    );
    assert_eq!(p.traits.unwrap()["cohort"], "2024");
    assert!(resolve(Some("U_NOBODY"), None).await.is_none());
    assert!(
        resolve(Some("U_PUBLIC"), None).await.is_none(),
        "a reserved tier does not resolve"
    );
    let delegate = resolve(None, Some("assistant@example.org")).await.unwrap();
    let acts_for = delegate.acts_for.unwrap();
    assert_eq!(acts_for.reason, "historical_cc");
    assert_eq!(acts_for.principal.principal_ref, "member-1");
    let sent = f.stub.requests_to("/integration/identity/resolve");
    assert_eq!(
        sent[0].json(),
        json!({"channel": "slack", "slack_user_id": "U_MEMBER"})
    );

    let roster = f.in_acme(f.integrations.roster("stub")).await.unwrap();
    let refs: Vec<&str> = roster.iter().map(|p| p.principal_ref.as_str()).collect();
    assert_eq!(refs, ["member-1", "admin-1", "partner-1"]);
    assert_eq!(roster[0].slack_user_id.as_deref(), Some("U_MEMBER"));
    f.stub
        .fail_next("/integration/identity/roster", 1, StubFailure::Status(404));
    let err = f.client.roster(&primed.integration).await.unwrap_err();
    assert!(matches!(err, CallError::Unsupported { .. }), "{err}");

    let url = f
        .in_acme(f.integrations.issue_link("stub", "dashboard", "member-1"))
        .await
        .unwrap();
    assert_eq!(
        url,
        "https://members.example.org/go/dashboard?principal=member-1"
    );

    let outcomes = f
        .in_acme(f.integrations.post_escalation(&Escalation {
            kind: "escalation".into(),
            principal_ref: Some("member-1".into()),
            user_name: Some("Ada Lovelace".into()),
            channel: "slack".into(),
            tier: Some("member".into()),
            escalation_reason: Some("Billing dispute".into()),
            user_request_summary: Some("Refund for March".into()),
            what_was_checked: Some("KB billing pages".into()),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 1);
    assert!(outcomes[0].1.is_ok());
    let got = f.stub.escalations();
    assert_eq!(got[0]["type"], "escalation");
    assert_eq!(got[0]["tenant_id"], json!(f.acme.id()));
    assert_eq!(got[0]["escalation_reason"], "Billing dispute");
}

//! What a turn is offered (acceptance 10) and the dispatch gate.

use super::*;

#[tokio::test]
async fn tools_unresolved_slack_user_is_offered_exactly_the_reserved_set() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let tools = turn_tools(&app, ctx.id(), TurnPrincipal::default(), None);
    assert_eq!(offered(&tools), UNRESOLVED_CORE_TOOLS.to_vec());
    assert!(tools.surface().degraded.is_some());
    // Every offered definition carries a generated object schema.
    for d in tools.definitions() {
        assert_eq!(d.parameters["type"], "object", "{}", d.name);
    }
}

#[tokio::test]
async fn tools_manifest_core_tools_restrict_exactly_to_the_allowlist() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let decls = [TierDeclaration {
        name: "partner".into(),
        core_tools: Some(vec!["who_knows".into(), "search_knowledge_base".into()]),
        knowledge_source_types: Some(vec!["faq".into()]),
        object_form: true,
    }];
    let s = surface(Some("partner"), &decls);
    let tools = turn_tools_on(&app, ctx.id(), TurnPrincipal::default(), s, None, None);
    assert_eq!(
        offered(&tools),
        vec!["search_knowledge_base", "who_knows", "escalate_to_admin"]
    );
}

#[tokio::test]
async fn tools_dispatch_gate_refuses_a_tool_outside_the_surface() {
    let app = TestApp::spawn().await;
    let ctx = tenant_ctx(&app, "acme").await;
    let tools = turn_tools(&app, ctx.id(), TurnPrincipal::default(), None);
    let result = tenancy::scope(
        ctx.clone(),
        tools.execute(
            "request_human_intervention",
            json!({"title": "sneaky"}),
            &ToolCaller::default(),
        ),
    )
    .await;
    assert!(!result.success);
    assert_eq!(
        result.error.as_deref(),
        Some("The tool request_human_intervention is not available in this conversation.")
    );
    // Nothing was written: the handler never ran.
    let rows: Vec<HumanIntervention> = app
        .state
        .store
        .scan(Some(ctx.id()), Scan::all())
        .await
        .unwrap();
    assert!(rows.is_empty());
}

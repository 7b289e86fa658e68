//! Seeding helpers shared by several modules: a tenant's stub integration,
//! indexed Slack messages.

use super::app::TestApp;

/// Register `stub` as the tenant's integration `stub` (status pending until
/// the next `prime`), signed with `secret`.
pub async fn register_stub(
    app: &TestApp,
    ctx: &root::platform::tenancy::TenantContext,
    stub: &testkit::stub::StubBackend,
    secret: &str,
) {
    let integrations = app.state.integrations.clone();
    let new = root::integrations::registry::NewIntegration {
        name: "stub".into(),
        base_url: stub.base_url().into(),
        signing_secret: Some(secret.into()),
        endpoint_paths: None,
    };
    root::platform::tenancy::scope(ctx.clone(), async move {
        integrations.register(new).await.unwrap();
    })
    .await;
}

/// Index Slack messages for the tenant of `ctx` and wait until search sees them.
pub async fn index_slack_messages(
    retrieval: &root::retrieval::Retrieval,
    ctx: &root::platform::tenancy::TenantContext,
    messages: Vec<storage::ProcessedSlackMessage>,
) {
    let r = retrieval.clone();
    root::platform::tenancy::scope(ctx.clone(), async move {
        let mut last = None;
        for m in messages {
            last = r.index_slack_message(m).await.unwrap().1;
        }
        r.wait_searchable(storage::IndexCorpus::SlackMessages, last)
            .await
            .unwrap();
    })
    .await;
}

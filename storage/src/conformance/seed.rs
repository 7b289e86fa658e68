//! `seed_every_table`: at least one row in every tenant-scoped table for a
//! tenant, parents before children. Shared by the checks that must touch
//! every table (uniqueness, tenant purge, isolation) and by `RedbStore`'s
//! own tests.

use uuid::Uuid;

use super::FullStore;
use crate::codec::{Embedding, Json, Redacted, Ts};
use crate::enums::*;
use crate::schema::*;

/// Ids of the parents created by [`seed_every_table`].
#[derive(Debug, Clone, Copy)]
pub struct Seeded {
    /// A principal.
    pub principal: Uuid,
    /// A knowledge source.
    pub source: Uuid,
    /// A knowledge page belonging to `source`.
    pub page: Uuid,
    /// A follow-up of `principal`.
    pub follow_up: Uuid,
}

/// Insert at least one row into every tenant-scoped table for `t`.
pub async fn seed_every_table<S: FullStore>(s: &S, t: Uuid) -> Seeded {
    let now = Ts::now();
    let p = s
        .insert(Principal {
            slack_user_id: Some("U1".into()),
            email: Some("Ada@Example.com".into()),
            ..Principal::new(t, "member-1")
        })
        .await
        .unwrap();
    let id = Uuid::new_v4;
    s.insert(TenantCredential {
        id: id(),
        tenant_id: t,
        kind: "slack_bot_token".into(),
        value: Redacted::new("xoxb-secret".into()),
        metadata: Json::empty_object(),
        updated_at: now,
    })
    .await
    .unwrap();
    s.insert(Integration {
        id: id(),
        tenant_id: t,
        name: "crm".into(),
        base_url: "http://127.0.0.1:9".into(),
        signing_secret: Redacted::new("s".into()),
        tool_overrides: Json::empty_object(),
        endpoint_paths: Json::empty_object(),
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    let mut log = ConversationLog::new(t, Channel::Slack, Direction::Inbound);
    log.principal_id = Some(p.id);
    log.dedupe_key = Some("slack_C1_1.0".into());
    log.thread_key = Some("C1:1.0".into());
    s.insert(log).await.unwrap();
    s.insert(RootPrompt {
        tenant_id: t,
        key: "shared.system.base".into(),
        content: "x".into(),
        created_at: now,
        updated_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(RootPromptVersion {
        id: id(),
        tenant_id: t,
        key: "shared.system.base".into(),
        content: "x".into(),
        saved_at: now,
        saved_by: None,
    })
    .await
    .unwrap();
    s.insert(LlmTokenUsage {
        id: id(),
        tenant_id: t,
        purpose: "agent".into(),
        model: "m".into(),
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(ApiRequestUsage {
        id: id(),
        tenant_id: t,
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(IntegrationToolCall {
        id: id(),
        tenant_id: t,
        tool_name: "lookup".into(),
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(SlackLog {
        id: id(),
        tenant_id: t,
        method: "chat.postMessage".into(),
        status: "sent".into(),
        metadata: Json::empty_object(),
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(EmailLog {
        id: id(),
        tenant_id: t,
        to_email: "a@b.c".into(),
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(TenantUser {
        id: id(),
        tenant_id: t,
        email: "owner@example.com".into(),
        role: TenantRole::Owner,
        created_at: now,
    })
    .await
    .unwrap();
    s.insert(TenantApiKey {
        id: id(),
        tenant_id: t,
        name: "k".into(),
        token_prefix: "rpk_live_abcdefgh".into(),
        token_hash: format!("hash-{t}"),
        environment: Environment::Live,
        revoked_at: None,
        created_at: now,
    })
    .await
    .unwrap();
    s.insert(TenantChannel {
        id: id(),
        tenant_id: t,
        channel_type: ChannelType::Web,
        config: Json::empty_object(),
        secrets: Json::empty_object().into(),
        created_at: now,
        updated_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(TenantAsset {
        id: id(),
        tenant_id: t,
        kind: "logo".into(),
        content_type: "image/png".into(),
        bytes: vec![1, 2, 3],
        updated_at: now,
    })
    .await
    .unwrap();
    s.insert(MemberPreference {
        id: id(),
        tenant_id: t,
        member_id: p.id,
        instructions: "be brief".into(),
        active: true,
        created_at: now,
        updated_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    let fu = s
        .insert(FollowUp {
            id: id(),
            tenant_id: t,
            member_id: p.id,
            instruction: "check in".into(),
            next_run_at: Some(now),
            capability_snapshot: Json::empty_array(),
            delivery: Json::empty_object(),
            created_at: now,
            updated_at: now,
            ..Default::default()
        })
        .await
        .unwrap();
    s.insert(FollowUpRun {
        id: id(),
        tenant_id: t,
        follow_up_id: fu.id,
        tool_calls: Json::empty_array(),
        missing_capabilities: Json::empty_array(),
        started_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    let alert = s
        .insert(RootActionAlert {
            id: id(),
            tenant_id: t,
            member_id: p.id,
            instruction: "tell me".into(),
            watch_tool_names: vec!["lookup".into()],
            status: "active".into(),
            created_at: now,
            updated_at: now,
            ..Default::default()
        })
        .await
        .unwrap();
    s.insert(RootActionAlertTrigger {
        id: id(),
        tenant_id: t,
        alert_id: alert.id,
        matched_tools: vec!["lookup".into()],
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(HumanIntervention {
        id: id(),
        tenant_id: t,
        principal_id: Some(p.id),
        title: "help".into(),
        metadata: Json::empty_object(),
        created_at: now,
        updated_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(EmailDelegation {
        id: id(),
        tenant_id: t,
        delegate_email: "assistant@example.com".into(),
        principal_id: p.id,
        created_at: now,
    })
    .await
    .unwrap();
    let src = s
        .insert(KnowledgeSource {
            id: id(),
            tenant_id: t,
            source_key: "docs".into(),
            name: "Docs".into(),
            request_headers: Json::empty_object().into(),
            auth_config: Json::empty_object(),
            secrets: Json::empty_object().into(),
            mapping: Json::empty_object(),
            created_at: now,
            updated_at: now,
            ..Default::default()
        })
        .await
        .unwrap();
    let page = s
        .insert(KnowledgePage {
            id: id(),
            tenant_id: t,
            slug: "welcome".into(),
            title: "Welcome".into(),
            content_html: "<p>hi</p>".into(),
            source_type: "api_push".into(),
            knowledge_source_id: Some(src.id),
            external_id: Some("ext-1".into()),
            public_id: Some("pub1".into()),
            is_public: true,
            created_at: now,
            updated_at: now,
            ..Default::default()
        })
        .await
        .unwrap();
    s.insert(KnowledgeChunk {
        id: id(),
        tenant_id: t,
        knowledge_page_id: page.id,
        chunk_index: 0,
        chunk_text: "hi".into(),
        embedding: Some(Embedding::from_f32("m", &[0.1, 0.2])),
        metadata: Json::empty_object(),
        created_at: now,
    })
    .await
    .unwrap();
    s.insert(KnowledgeSyncRun {
        id: id(),
        tenant_id: t,
        source_id: src.id,
        metadata: Json::empty_object(),
        created_at: now,
        updated_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(WebLinkToken {
        id: id(),
        tenant_id: t,
        token_hash: "tok".into(),
        knowledge_page_id: page.id,
        principal_id: p.id,
        expires_at: now,
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(WebBrowserSession {
        id: id(),
        tenant_id: t,
        session_hash: "sess".into(),
        expires_at: now,
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(ConversationWorkSaved {
        id: id(),
        tenant_id: t,
        exchange_key: "x1".into(),
        estimated_minutes: 5,
        confidence: 0.5,
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(ReplyMention {
        id: id(),
        tenant_id: t,
        mentioned_slack_user_id: Some("U1".into()),
        message_at: now,
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(ReplySourceUsage {
        id: id(),
        tenant_id: t,
        run_id: id(),
        source_type: SourceUsageType::KnowledgePage,
        source_ref: "welcome".into(),
        created_at: now,
    })
    .await
    .unwrap();
    s.insert(ProcessedSlackMessage {
        id: id(),
        tenant_id: t,
        channel_id: "C1".into(),
        message_ts: "1.0".into(),
        thread_ts: Some("1.0".into()),
        message_text: "hello".into(),
        message_date: now,
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(SlackThreadArtifact {
        id: id(),
        tenant_id: t,
        channel_id: "C1".into(),
        thread_ts: "1.0".into(),
        document_text: "doc".into(),
        created_at: now,
        updated_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(SlackMessageEnrichment {
        id: id(),
        tenant_id: t,
        channel_id: "C1".into(),
        message_ts: "1.0".into(),
        summary: "a chart".into(),
        created_at: now,
        updated_at: now,
    })
    .await
    .unwrap();
    s.insert(SlackKnowledgeExtraction {
        id: id(),
        tenant_id: t,
        title: "t".into(),
        content: "c".into(),
        created_at: now,
        updated_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(SlackExtractionState {
        tenant_id: t,
        watermark: Some(now),
        updated_at: now,
    })
    .await
    .unwrap();
    let install = s
        .insert(CommunityBuildInstall {
            id: id(),
            tenant_id: t,
            listing_id: id(),
            tools: Json::empty_array(),
            config: Json::empty_object().into(),
            enabled: true,
            created_at: now,
            updated_at: now,
            ..Default::default()
        })
        .await
        .unwrap();
    s.insert(CommunityBuildToolRun {
        id: id(),
        tenant_id: t,
        install_id: install.id,
        tool_name: "x".into(),
        logs: Json::empty_array(),
        created_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    s.insert(crate::IndexOutboxEntry {
        tenant_id: t,
        corpus: crate::IndexCorpus::Knowledge,
        seq: u64::from_be_bytes(id().as_bytes()[..8].try_into().unwrap()),
        row_id: id(),
    })
    .await
    .unwrap();
    s.insert(crate::IndexState {
        tenant_id: t,
        corpus: crate::IndexCorpus::Knowledge,
        applied_seq: 1,
    })
    .await
    .unwrap();
    let trace = s
        .insert(AgentTrace {
            id: id(),
            tenant_id: t,
            name: "agent.run".into(),
            started_at: now,
            ended_at: now,
            ..Default::default()
        })
        .await
        .unwrap();
    s.insert(AgentTraceSpan {
        id: id(),
        tenant_id: t,
        trace_id: trace.id,
        name: "llm:agent".into(),
        kind: TraceSpanKind::Llm,
        started_at: now,
        ended_at: now,
        ..Default::default()
    })
    .await
    .unwrap();
    Seeded {
        principal: p.id,
        source: src.id,
        page: page.id,
        follow_up: fu.id,
    }
}

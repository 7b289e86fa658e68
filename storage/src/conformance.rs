//! Behaviour every store implementation must show, written against the
//! traits only. `conformance_tests!` expands into one `#[tokio::test]` per
//! check for a given store factory (see `storage/tests/conformance.rs`).
//!
//! Each check receives a fresh, migrated store and panics on a violation.

use uuid::Uuid;

use crate::codec::{Embedding, Json, Redacted, Ts};
use crate::enums::*;
use crate::error::StorageError;
use crate::key::{Key, key};
use crate::queue::*;
use crate::schema::*;
use crate::store::{ApiKeyStore, MigrationStore, Store, TenantStore};
use crate::table::{Record, Scan};

/// Everything the suite needs from a backend.
pub trait FullStore: Store + TenantStore + ApiKeyStore + MigrationStore + JobQueue {}
impl<T: Store + TenantStore + ApiKeyStore + MigrationStore + JobQueue> FullStore for T {}

/// Expand the suite into `#[tokio::test]`s. `$make` is an expression
/// (evaluated once per test) returning `(store, guard)`: a fresh,
/// *un-migrated* store and whatever must live as long as it (a temp dir).
#[macro_export]
macro_rules! conformance_tests {
    ($make:expr) => {
        $crate::conformance_tests!(@each $make;
            migrations_are_idempotent_and_seed_the_root_tenant,
            tenant_slugs_are_unique_platform_wide,
            a_dev_shadow_pairs_with_its_live_tenant,
            unique_constraints_hold_within_a_tenant_only,
            unique_partial_constraints_ignore_nulls,
            api_key_hashes_are_unique_platform_wide_and_revocable,
            one_running_sync_run_per_source,
            deleting_a_tenant_leaves_no_row_of_it_anywhere,
            deleting_a_page_deletes_its_chunks_and_links,
            deleting_a_principal_cascades_and_sets_null,
            deleting_a_source_cascades_runs_and_detaches_pages,
            missing_parents_are_foreign_key_errors,
            check_constraints_reject_out_of_range_values,
            updates_move_unique_keys,
            reads_never_cross_tenants,
            batched_reads_keep_order_and_tenant,
            scans_follow_index_order,
            global_due_index_spans_tenants_and_honours_partial_conditions,
            insert_many_is_all_or_nothing,
            queue_delayed_jobs_wait_for_run_at,
            queue_retries_back_off_exponentially_then_fail,
            queue_permanent_errors_do_not_retry,
            queue_job_ids_dedupe_while_live,
            queue_coalescing_resets_timers_and_reruns_after_active,
            queue_expired_leases_return_jobs_with_their_checkpoint,
            queue_stats_and_events_and_retention,
            queue_complete_and_claim_hands_over_the_next_job,
        );
    };
    (@each $make:expr; $($name:ident),* $(,)?) => {$(
        #[tokio::test]
        async fn $name() {
            let (store, _guard) = $make;
            $crate::conformance::$name(store).await;
        }
    )*};
}

async fn migrated<S: FullStore>(s: &S) {
    s.migrate().await.expect("migrate");
}

async fn two_tenants<S: FullStore>(s: &S) -> (Uuid, Uuid) {
    migrated(s).await;
    let a = s
        .create_tenant(Tenant::new("alpha", "Alpha"))
        .await
        .unwrap();
    let b = s.create_tenant(Tenant::new("beta", "Beta")).await.unwrap();
    (a.id, b.id)
}

fn conflict(err: StorageError) -> &'static str {
    match err {
        StorageError::Conflict { constraint } => constraint,
        other => panic!("expected Conflict, got {other:?}"),
    }
}

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
        value: "xoxb-secret".into(),
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
            request_headers: Json::empty_object(),
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
            config: Json::empty_object(),
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

/// Migration 1 seeds root; a second run applies nothing and changes nothing.
pub async fn migrations_are_idempotent_and_seed_the_root_tenant<S: FullStore>(s: S) {
    let first = s.migrate().await.unwrap();
    assert_eq!(first.len(), crate::latest_version() as usize);
    assert_eq!(first[0].version, 1);
    let root = s
        .tenant_by_slug("root")
        .await
        .unwrap()
        .expect("root tenant seeded");
    assert_eq!(root.id, ROOT_TENANT_ID);
    assert_eq!(root.id.to_string(), "11111111-1111-4111-8111-111111111111");
    assert_eq!(root.agent_name, "Root");
    assert_eq!(root.environment, Environment::Live);
    assert_eq!(root.status, TenantStatus::Active);
    assert_eq!(root.timezone, "America/Los_Angeles");
    let second = s.migrate().await.unwrap();
    assert!(second.is_empty(), "second migrate applied {second:?}");
    assert_eq!(s.applied_migrations().await.unwrap().len(), first.len());
    assert_eq!(s.list_tenants().await.unwrap().len(), 1);
}

/// `tenants.slug` is UNIQUE.
pub async fn tenant_slugs_are_unique_platform_wide<S: FullStore>(s: S) {
    two_tenants(&s).await;
    let err = s
        .create_tenant(Tenant::new("alpha", "Again"))
        .await
        .unwrap_err();
    assert_eq!(conflict(err), Tenant::SLUG_KEY);
}

/// §1.1: `<slug>--dev`, `environment='dev'`, `live_tenant_id`, one shadow per live, identity mirrored.
pub async fn a_dev_shadow_pairs_with_its_live_tenant<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let shadow = s.ensure_dev_shadow(a).await.unwrap();
    assert_eq!(shadow.slug, "alpha--dev");
    assert_eq!(shadow.environment, Environment::Dev);
    assert_eq!(shadow.live_tenant_id, Some(a));
    assert_eq!(
        s.ensure_dev_shadow(a).await.unwrap().id,
        shadow.id,
        "idempotent"
    );
    assert_eq!(s.dev_shadow_of(a).await.unwrap().unwrap().id, shadow.id);
    let mut second = Tenant::new("alpha-dev2", "x");
    second.environment = Environment::Dev;
    second.live_tenant_id = Some(a);
    assert_eq!(
        conflict(s.create_tenant(second).await.unwrap_err()),
        Tenant::LIVE_TENANT_KEY
    );
    assert!(
        s.ensure_dev_shadow(shadow.id).await.is_err(),
        "a shadow has no shadow"
    );
    // Agent identity is mirrored across the pair when saved.
    let mut live = s.tenant_by_id(a).await.unwrap().unwrap();
    live.agent_name = "Ada".into();
    live.settings = Json(serde_json::json!({"persona": "kind", "limits": {"x": 1}}));
    s.save_tenant(live).await.unwrap();
    let shadow = s.tenant_by_id(shadow.id).await.unwrap().unwrap();
    assert_eq!(shadow.agent_name, "Ada");
    assert_eq!(shadow.settings.0["persona"], "kind");
    assert!(
        shadow.settings.0.get("limits").is_none(),
        "only identity is mirrored"
    );
}

async fn assert_unique<S: FullStore, R: Record>(
    s: &S,
    a: Uuid,
    b: Uuid,
    make: impl Fn(Uuid) -> R,
    constraint: &str,
) {
    s.insert(make(a))
        .await
        .unwrap_or_else(|e| panic!("{constraint}: first insert: {e}"));
    let err = s.insert(make(a)).await.expect_err(constraint);
    assert_eq!(conflict(err), constraint);
    s.insert(make(b))
        .await
        .unwrap_or_else(|e| panic!("{constraint}: other tenant must be allowed: {e}"));
}

/// Every tenant-scoped UNIQUE constraint: a duplicate in one tenant conflicts, the same value in another tenant is fine.
pub async fn unique_constraints_hold_within_a_tenant_only<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let sa = seed_every_table(&s, a).await;
    let sb = seed_every_table(&s, b).await;
    let pick = |t: Uuid, x: Uuid, y: Uuid| if t == a { x } else { y };
    let now = Ts::now();
    let id = Uuid::new_v4;
    assert_unique(
        &s,
        a,
        b,
        |t| TenantCredential {
            id: id(),
            tenant_id: t,
            kind: "k2".into(),
            value: "v".into(),
            metadata: Json::empty_object(),
            updated_at: now,
        },
        TenantCredential::KIND_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| Integration {
            id: id(),
            tenant_id: t,
            name: "erp".into(),
            environment: Environment::Live,
            tool_overrides: Json::empty_object(),
            endpoint_paths: Json::empty_object(),
            ..Default::default()
        },
        Integration::NAME_KEY,
    )
    .await;
    // Same integration name in the other environment is a different row.
    s.insert(Integration {
        id: id(),
        tenant_id: a,
        name: "erp".into(),
        environment: Environment::Dev,
        tool_overrides: Json::empty_object(),
        endpoint_paths: Json::empty_object(),
        ..Default::default()
    })
    .await
    .unwrap();
    assert_unique(
        &s,
        a,
        b,
        |t| Principal::new(t, "member-2"),
        Principal::REF_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| Principal {
            slack_user_id: Some("U9".into()),
            ..Principal::new(t, id().to_string())
        },
        Principal::SLACK_USER_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| {
            let mut l = ConversationLog::new(t, Channel::Email, Direction::Inbound);
            l.dedupe_key = Some("email_abc".into());
            l
        },
        ConversationLog::DEDUPE_KEY,
    )
    .await;
    // Case-insensitive email uniqueness for dashboard users.
    s.insert(TenantUser {
        id: id(),
        tenant_id: a,
        email: "Boss@Example.com".into(),
        role: TenantRole::Admin,
        created_at: now,
    })
    .await
    .unwrap();
    let err = s
        .insert(TenantUser {
            id: id(),
            tenant_id: a,
            email: "boss@example.COM".into(),
            role: TenantRole::Viewer,
            created_at: now,
        })
        .await
        .unwrap_err();
    assert_eq!(conflict(err), TenantUser::EMAIL_KEY);
    assert_unique(
        &s,
        a,
        b,
        |t| TenantChannel {
            id: id(),
            tenant_id: t,
            channel_type: ChannelType::Slack,
            config: Json::empty_object(),
            secrets: Json::empty_object().into(),
            ..Default::default()
        },
        TenantChannel::TYPE_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| TenantAsset {
            id: id(),
            tenant_id: t,
            kind: "banner".into(),
            ..Default::default()
        },
        TenantAsset::KIND_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| EmailDelegation {
            id: id(),
            tenant_id: t,
            delegate_email: "PA@example.com".into(),
            principal_id: pick(t, sa.principal, sb.principal),
            created_at: now,
        },
        EmailDelegation::DELEGATE_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| WebLinkToken {
            id: id(),
            tenant_id: t,
            token_hash: "tok2".into(),
            knowledge_page_id: pick(t, sa.page, sb.page),
            principal_id: pick(t, sa.principal, sb.principal),
            ..Default::default()
        },
        WebLinkToken::TOKEN_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| WebBrowserSession {
            id: id(),
            tenant_id: t,
            session_hash: "s2".into(),
            ..Default::default()
        },
        WebBrowserSession::SESSION_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| ConversationWorkSaved {
            id: id(),
            tenant_id: t,
            exchange_key: "x2".into(),
            ..Default::default()
        },
        ConversationWorkSaved::EXCHANGE_KEY,
    )
    .await;
    let run = id();
    assert_unique(
        &s,
        a,
        b,
        |t| ReplySourceUsage {
            id: id(),
            tenant_id: t,
            run_id: run,
            source_type: SourceUsageType::SlackMessage,
            source_ref: "C1:1.0".into(),
            created_at: now,
        },
        ReplySourceUsage::RUN_SOURCE_KEY,
    )
    .await;
    let log_id = id();
    assert_unique(
        &s,
        a,
        b,
        |t| ReplyMention {
            id: id(),
            tenant_id: t,
            conversation_log_id: Some(log_id),
            mentioned_name: Some("Ada".into()),
            matched_via: MatchedVia::Name,
            ..Default::default()
        },
        ReplyMention::LOG_MENTION_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| KnowledgeSource {
            id: id(),
            tenant_id: t,
            source_key: "blog".into(),
            ..Default::default()
        },
        KnowledgeSource::SOURCE_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| KnowledgePage {
            id: id(),
            tenant_id: t,
            slug: "faq".into(),
            content_html: "x".into(),
            ..Default::default()
        },
        KnowledgePage::SLUG_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| KnowledgePage {
            id: id(),
            tenant_id: t,
            slug: id().to_string(),
            content_html: "x".into(),
            knowledge_source_id: Some(pick(t, sa.source, sb.source)),
            external_id: Some("ext-2".into()),
            ..Default::default()
        },
        KnowledgePage::EXTERNAL_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| KnowledgePage {
            id: id(),
            tenant_id: t,
            slug: id().to_string(),
            content_html: "x".into(),
            public_id: Some("pub2".into()),
            ..Default::default()
        },
        KnowledgePage::PUBLIC_ID_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| KnowledgeChunk {
            id: id(),
            tenant_id: t,
            knowledge_page_id: pick(t, sa.page, sb.page),
            chunk_index: 7,
            ..Default::default()
        },
        KnowledgeChunk::PAGE_CHUNK_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| ProcessedSlackMessage {
            id: id(),
            tenant_id: t,
            channel_id: "C2".into(),
            message_ts: "2.0".into(),
            ..Default::default()
        },
        ProcessedSlackMessage::MESSAGE_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| SlackThreadArtifact {
            id: id(),
            tenant_id: t,
            channel_id: "C2".into(),
            thread_ts: "2.0".into(),
            kind: ArtifactKind::Burst,
            burst_ts: Some("2.1".into()),
            ..Default::default()
        },
        SlackThreadArtifact::ARTIFACT_KEY,
    )
    .await;
    // COALESCE(burst_ts, ''): two thread artifacts without burst_ts collide.
    assert_unique(
        &s,
        a,
        b,
        |t| SlackThreadArtifact {
            id: id(),
            tenant_id: t,
            channel_id: "C3".into(),
            thread_ts: "3.0".into(),
            kind: ArtifactKind::Thread,
            burst_ts: None,
            ..Default::default()
        },
        SlackThreadArtifact::ARTIFACT_KEY,
    )
    .await;
    assert_unique(
        &s,
        a,
        b,
        |t| SlackMessageEnrichment {
            id: id(),
            tenant_id: t,
            channel_id: "C2".into(),
            message_ts: "2.0".into(),
            ..Default::default()
        },
        SlackMessageEnrichment::MESSAGE_KEY,
    )
    .await;
    let listing = id();
    assert_unique(
        &s,
        a,
        b,
        |t| CommunityBuildInstall {
            id: id(),
            tenant_id: t,
            listing_id: listing,
            ..Default::default()
        },
        CommunityBuildInstall::LISTING_KEY,
    )
    .await;
    // Seeded once per tenant already: PK (tenant_id) refuses a second row.
    let err = s
        .insert(SlackExtractionState {
            tenant_id: a,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(conflict(err), SlackExtractionState::DEF.pkey);
    assert_unique(
        &s,
        a,
        b,
        |t| RootPrompt {
            tenant_id: t,
            key: "k".into(),
            ..Default::default()
        },
        RootPrompt::DEF.pkey,
    )
    .await;
    // Global tables.
    s.insert(PlatformAdmin {
        id: id(),
        email: "Admin@Root.dev".into(),
        created_at: now,
    })
    .await
    .unwrap();
    let err = s
        .insert(PlatformAdmin {
            id: id(),
            email: "admin@root.dev".into(),
            created_at: now,
        })
        .await
        .unwrap_err();
    assert_eq!(conflict(err), PlatformAdmin::EMAIL_KEY);
    s.insert(CommunityBuildListing {
        id: id(),
        slug: "weather".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let err = s
        .insert(CommunityBuildListing {
            id: id(),
            slug: "weather".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(conflict(err), CommunityBuildListing::SLUG_KEY);
    s.insert(PlatformSetting {
        key: "signup".into(),
        ..Default::default()
    })
    .await
    .unwrap();
    let err = s
        .insert(PlatformSetting {
            key: "signup".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(conflict(err), PlatformSetting::DEF.pkey);
}

/// NULLs never collide in unique-partial indexes.
pub async fn unique_partial_constraints_ignore_nulls<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    for i in 0..3 {
        s.insert(Principal::new(a, format!("no-slack-{i}")))
            .await
            .unwrap();
        s.insert(ConversationLog::new(a, Channel::Web, Direction::Outbound))
            .await
            .unwrap();
        s.insert(KnowledgePage {
            id: Uuid::new_v4(),
            tenant_id: a,
            slug: format!("p{i}"),
            content_html: "x".into(),
            external_id: Some("same".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    assert_eq!(s.count::<Principal>(Some(a)).await.unwrap(), 3);
    assert_eq!(s.count::<ConversationLog>(Some(a)).await.unwrap(), 3);
}

/// `token_hash UNIQUE` holds across tenants; lookup by hash finds the key; revocation sets `revoked_at`.
pub async fn api_key_hashes_are_unique_platform_wide_and_revocable<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let k = TenantApiKey {
        id: Uuid::new_v4(),
        tenant_id: a,
        name: "ci".into(),
        token_prefix: "rpk_live_0123abcd".into(),
        token_hash: "deadbeef".into(),
        environment: Environment::Live,
        revoked_at: None,
        created_at: Ts::now(),
    };
    s.insert(k.clone()).await.unwrap();
    let dup = TenantApiKey {
        id: Uuid::new_v4(),
        tenant_id: b,
        ..k.clone()
    };
    assert_eq!(
        conflict(s.insert(dup).await.unwrap_err()),
        TenantApiKey::TOKEN_HASH_KEY
    );
    let found = s.api_key_by_hash("deadbeef").await.unwrap().unwrap();
    assert_eq!((found.id, found.tenant_id), (k.id, a));
    assert!(s.api_key_by_hash("cafe").await.unwrap().is_none());
    assert!(s.revoke_api_key(a, k.id).await.unwrap());
    assert!(
        s.api_key_by_hash("deadbeef")
            .await
            .unwrap()
            .unwrap()
            .revoked_at
            .is_some()
    );
    assert!(
        !s.revoke_api_key(b, k.id).await.unwrap(),
        "another tenant cannot revoke it"
    );
}

/// `UNIQUE (source_id) WHERE status='running'`.
pub async fn one_running_sync_run_per_source<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    let run = |status| KnowledgeSyncRun {
        id: Uuid::new_v4(),
        tenant_id: a,
        source_id: seeded.source,
        status,
        created_at: Ts::now(),
        ..Default::default()
    };
    let first = s.insert(run(SyncRunStatus::Running)).await.unwrap();
    let err = s.insert(run(SyncRunStatus::Running)).await.unwrap_err();
    assert_eq!(conflict(err), KnowledgeSyncRun::ONE_RUNNING_KEY);
    let queued = s.insert(run(SyncRunStatus::Queued)).await.unwrap();
    let mut promote = queued.clone();
    promote.status = SyncRunStatus::Running;
    assert_eq!(
        conflict(s.update(promote.clone()).await.unwrap_err()),
        KnowledgeSyncRun::ONE_RUNNING_KEY
    );
    let mut done = first;
    done.status = SyncRunStatus::Succeeded;
    s.update(done).await.unwrap();
    s.update(promote)
        .await
        .expect("the slot is free once the first run finished");
}

/// Deleting a tenant removes every row it owns in every table; the other tenant is untouched.
pub async fn deleting_a_tenant_leaves_no_row_of_it_anywhere<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    seed_every_table(&s, a).await;
    seed_every_table(&s, b).await;
    let shadow = s.ensure_dev_shadow(a).await.unwrap();
    seed_every_table(&s, shadow.id).await;
    for (table, n) in s.tenant_row_counts(a).await.unwrap() {
        assert!(n > 0, "seed missed {table}");
    }
    assert!(s.delete_tenant(a).await.unwrap());
    for t in [a, shadow.id] {
        for (table, n) in s.tenant_row_counts(t).await.unwrap() {
            assert_eq!(n, 0, "{table} still has rows of a deleted tenant");
        }
    }
    assert!(
        s.tenant_by_id(shadow.id).await.unwrap().is_none(),
        "shadow cascades with its live tenant"
    );
    assert!(
        s.api_key_by_hash(&format!("hash-{a}"))
            .await
            .unwrap()
            .is_none(),
        "global index entries are gone"
    );
    // The slug is free again, the other tenant is intact.
    s.create_tenant(Tenant::new("alpha", "Alpha again"))
        .await
        .unwrap();
    for (table, n) in s.tenant_row_counts(b).await.unwrap() {
        assert!(n > 0, "{table} lost rows of an unrelated tenant");
    }
    assert!(
        s.api_key_by_hash(&format!("hash-{b}"))
            .await
            .unwrap()
            .is_some()
    );
}

/// `knowledge_chunks` and `web_link_tokens` cascade with their page.
pub async fn deleting_a_page_deletes_its_chunks_and_links<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    for i in 1..5 {
        s.insert(KnowledgeChunk {
            id: Uuid::new_v4(),
            tenant_id: a,
            knowledge_page_id: seeded.page,
            chunk_index: i,
            ..Default::default()
        })
        .await
        .unwrap();
    }
    assert_eq!(s.count::<KnowledgeChunk>(Some(a)).await.unwrap(), 5);
    assert!(
        s.delete::<KnowledgePage>(Some(a), key().uuid(seeded.page))
            .await
            .unwrap()
    );
    assert_eq!(s.count::<KnowledgeChunk>(Some(a)).await.unwrap(), 0);
    assert_eq!(s.count::<WebLinkToken>(Some(a)).await.unwrap(), 0);
    // The chunk slot (page, index) is free: re-creating the page and chunks works.
    assert!(
        !s.delete::<KnowledgePage>(Some(a), key().uuid(seeded.page))
            .await
            .unwrap()
    );
}

/// Principal delete: member features cascade (transitively), logs and interventions keep the row with `principal_id = NULL`.
pub async fn deleting_a_principal_cascades_and_sets_null<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    assert!(
        s.delete::<Principal>(Some(a), key().uuid(seeded.principal))
            .await
            .unwrap()
    );
    let logs: Vec<ConversationLog> = s.scan(Some(a), Scan::all()).await.unwrap();
    assert_eq!(logs.len(), 1);
    assert_eq!(logs[0].principal_id, None);
    let ivs: Vec<HumanIntervention> = s.scan(Some(a), Scan::all()).await.unwrap();
    assert_eq!(ivs.len(), 1);
    assert_eq!(ivs[0].principal_id, None);
    for (name, n) in [
        (
            "member_preferences",
            s.count::<MemberPreference>(Some(a)).await.unwrap(),
        ),
        ("follow_ups", s.count::<FollowUp>(Some(a)).await.unwrap()),
        (
            "follow_up_runs",
            s.count::<FollowUpRun>(Some(a)).await.unwrap(),
        ),
        (
            "root_action_alerts",
            s.count::<RootActionAlert>(Some(a)).await.unwrap(),
        ),
        (
            "root_action_alert_triggers",
            s.count::<RootActionAlertTrigger>(Some(a)).await.unwrap(),
        ),
        (
            "email_delegations",
            s.count::<EmailDelegation>(Some(a)).await.unwrap(),
        ),
        (
            "web_link_tokens",
            s.count::<WebLinkToken>(Some(a)).await.unwrap(),
        ),
    ] {
        assert_eq!(n, 0, "{name} should cascade from principals");
    }
    // The nulled FK no longer points at the principal: re-deleting is a no-op.
    let hits: Vec<HumanIntervention> = s
        .scan(
            Some(a),
            Scan::index(
                HumanIntervention::PRINCIPAL_IDX,
                key().uuid(seeded.principal),
            ),
        )
        .await
        .unwrap();
    assert!(hits.is_empty());
}

/// Source delete: runs cascade; pages stay, detached (`knowledge_source_id = NULL`).
pub async fn deleting_a_source_cascades_runs_and_detaches_pages<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    assert!(
        s.delete::<KnowledgeSource>(Some(a), key().uuid(seeded.source))
            .await
            .unwrap()
    );
    assert_eq!(s.count::<KnowledgeSyncRun>(Some(a)).await.unwrap(), 0);
    let page: KnowledgePage = s
        .get(Some(a), key().uuid(seeded.page))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(page.knowledge_source_id, None);
    assert_eq!(s.count::<KnowledgeChunk>(Some(a)).await.unwrap(), 1);
}

/// A child whose parent does not exist (or lives in another tenant) is refused.
pub async fn missing_parents_are_foreign_key_errors<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    let orphan = KnowledgeChunk {
        id: Uuid::new_v4(),
        tenant_id: a,
        knowledge_page_id: Uuid::new_v4(),
        ..Default::default()
    };
    assert!(
        matches!(s.insert(orphan).await.unwrap_err(), StorageError::ForeignKey { constraint } if constraint == KnowledgeChunk::PAGE_FKEY)
    );
    let cross = KnowledgeChunk {
        id: Uuid::new_v4(),
        tenant_id: b,
        knowledge_page_id: seeded.page,
        ..Default::default()
    };
    assert!(
        matches!(
            s.insert(cross).await.unwrap_err(),
            StorageError::ForeignKey { .. }
        ),
        "a parent in another tenant does not count"
    );
    let mut shadow = Tenant::new("ghost--dev", "x");
    shadow.environment = Environment::Dev;
    shadow.live_tenant_id = Some(Uuid::new_v4());
    assert!(matches!(
        s.create_tenant(shadow).await.unwrap_err(),
        StorageError::ForeignKey { .. }
    ));
}

/// CHECK constraints beyond enums.
pub async fn check_constraints_reject_out_of_range_values<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    for bad in [4, 43201] {
        let src = KnowledgeSource {
            id: Uuid::new_v4(),
            tenant_id: a,
            source_key: format!("s{bad}"),
            schedule_interval_minutes: Some(bad),
            ..Default::default()
        };
        assert!(
            matches!(s.insert(src).await.unwrap_err(), StorageError::Check { .. }),
            "{bad}"
        );
    }
    for ok in [5, 43200] {
        s.insert(KnowledgeSource {
            id: Uuid::new_v4(),
            tenant_id: a,
            source_key: format!("s{ok}"),
            schedule_interval_minutes: Some(ok),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let ws = |m, c| ConversationWorkSaved {
        id: Uuid::new_v4(),
        tenant_id: a,
        exchange_key: Uuid::new_v4().to_string(),
        estimated_minutes: m,
        confidence: c,
        ..Default::default()
    };
    assert!(s.insert(ws(481, 0.5)).await.is_err());
    assert!(s.insert(ws(-1, 0.5)).await.is_err());
    assert!(s.insert(ws(10, 1.5)).await.is_err());
    s.insert(ws(480, 1.0)).await.unwrap();
    assert!(matches!(
        s.create_tenant(Tenant::new("Bad Slug", "x"))
            .await
            .unwrap_err(),
        StorageError::Check { .. }
    ));
    let long = KnowledgePage {
        id: Uuid::new_v4(),
        tenant_id: a,
        slug: "long".into(),
        public_id: Some("x".repeat(17)),
        ..Default::default()
    };
    assert!(matches!(
        s.insert(long).await.unwrap_err(),
        StorageError::Check { .. }
    ));
    assert!("paused".parse::<TenantStatus>().is_err());
}

/// Updating a unique column frees the old value and claims the new one.
pub async fn updates_move_unique_keys<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let mut p = s.insert(Principal::new(a, "old-ref")).await.unwrap();
    let other = s.insert(Principal::new(a, "taken")).await.unwrap();
    p.ref_ = "taken".into();
    assert_eq!(
        conflict(s.update(p.clone()).await.unwrap_err()),
        Principal::REF_KEY
    );
    p.ref_ = "new-ref".into();
    s.update(p.clone()).await.unwrap();
    s.insert(Principal::new(a, "old-ref"))
        .await
        .expect("old value is free");
    let found: Principal = s
        .find_unique(Some(a), Principal::REF_KEY, key().str("new-ref"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.id, p.id);
    assert!(s.update(Principal::new(a, "never-inserted")).await.is_err());
    let _ = other;
}

/// `get_many` / `find_unique_many` answer in input order, `None` for misses,
/// and never see another tenant's rows.
pub async fn batched_reads_keep_order_and_tenant<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let p1 = s.insert(Principal::new(a, "one")).await.unwrap();
    let p2 = s.insert(Principal::new(a, "two")).await.unwrap();
    let ids = vec![
        key().uuid(p2.id),
        key().uuid(Uuid::new_v4()),
        key().uuid(p1.id),
    ];
    let got: Vec<Option<Principal>> = s.get_many(Some(a), ids.clone()).await.unwrap();
    assert_eq!(
        got.iter()
            .map(|p| p.as_ref().map(|p| p.id))
            .collect::<Vec<_>>(),
        vec![Some(p2.id), None, Some(p1.id)]
    );
    let other: Vec<Option<Principal>> = s.get_many(Some(b), ids).await.unwrap();
    assert!(other.iter().all(Option::is_none));
    let refs = vec![key().str("one"), key().str("nope"), key().str("two")];
    let got: Vec<Option<Principal>> = s
        .find_unique_many(Some(a), Principal::REF_KEY, refs.clone())
        .await
        .unwrap();
    assert_eq!(
        got.iter()
            .map(|p| p.as_ref().map(|p| p.id))
            .collect::<Vec<_>>(),
        vec![Some(p1.id), None, Some(p2.id)]
    );
    let other: Vec<Option<Principal>> = s
        .find_unique_many(Some(b), Principal::REF_KEY, refs)
        .await
        .unwrap();
    assert!(other.iter().all(Option::is_none));
}

/// Lookups with tenant B never see tenant A's rows.
pub async fn reads_never_cross_tenants<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let seeded = seed_every_table(&s, a).await;
    assert!(
        s.get::<Principal>(Some(b), key().uuid(seeded.principal))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.find_unique::<Principal>(Some(b), Principal::REF_KEY, key().str("member-1"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        s.scan::<KnowledgePage>(Some(b), Scan::all())
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        s.scan::<ConversationLog>(
            Some(b),
            Scan::index(ConversationLog::MESSAGE_AT_IDX, Key::default())
        )
        .await
        .unwrap()
        .is_empty()
    );
    assert!(
        !s.delete::<KnowledgePage>(Some(b), key().uuid(seeded.page))
            .await
            .unwrap()
    );
    assert!(
        s.get::<KnowledgePage>(Some(a), key().uuid(seeded.page))
            .await
            .unwrap()
            .is_some()
    );
    assert!(
        s.get::<Principal>(None, key().uuid(seeded.principal))
            .await
            .is_err(),
        "tenant-scoped tables demand a tenant"
    );
}

/// Newest-first scans over `(tenant, message_at DESC)` and a thread's range.
pub async fn scans_follow_index_order<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let base = Ts::now();
    let mut rows = Vec::new();
    for i in 0..30 {
        let mut l = ConversationLog::new(a, Channel::Slack, Direction::Inbound);
        l.message_at = base.plus_micros(i * 1000);
        l.thread_key = Some(if i % 2 == 0 { "even" } else { "odd" }.into());
        l.exchange_key = Some(format!("x{}", i / 2));
        rows.push(l);
    }
    s.insert_many(rows).await.unwrap();
    let mut other = ConversationLog::new(b, Channel::Slack, Direction::Inbound);
    other.thread_key = Some("even".into());
    s.insert(other).await.unwrap();
    let newest: Vec<ConversationLog> = s
        .scan(
            Some(a),
            Scan::index(ConversationLog::MESSAGE_AT_IDX, Key::default())
                .desc()
                .limit(5),
        )
        .await
        .unwrap();
    let times: Vec<i64> = newest
        .iter()
        .map(|l| (l.message_at.0 - base.0) / 1000)
        .collect();
    assert_eq!(times, vec![29, 28, 27, 26, 25]);
    let thread: Vec<ConversationLog> = s
        .scan(
            Some(a),
            Scan::index(ConversationLog::THREAD_KEY_IDX, key().str("even"))
                .desc()
                .limit(20),
        )
        .await
        .unwrap();
    assert_eq!(thread.len(), 15, "only tenant a's 'even' thread");
    assert!(thread.windows(2).all(|w| w[0].message_at > w[1].message_at));
    let window: Vec<ConversationLog> = s
        .scan(
            Some(a),
            Scan::index(ConversationLog::MESSAGE_AT_IDX, Key::default()).between(
                Some(key().ts(base.plus_micros(10_000))),
                Some(key().ts(base.plus_micros(13_000))),
            ),
        )
        .await
        .unwrap();
    assert_eq!(window.len(), 3, "[10, 13) ms");
    let exch: Vec<ConversationLog> = s
        .scan(
            Some(a),
            Scan::index(ConversationLog::EXCHANGE_KEY_IDX, key().str("x3")),
        )
        .await
        .unwrap();
    assert_eq!(exch.len(), 2);
}

/// The due indexes are platform-wide (for sweeps) and only hold active, scheduled rows.
pub async fn global_due_index_spans_tenants_and_honours_partial_conditions<S: FullStore>(s: S) {
    let (a, b) = two_tenants(&s).await;
    let sa = seed_every_table(&s, a).await;
    seed_every_table(&s, b).await;
    let due: Vec<FollowUp> = s
        .scan(
            None,
            Scan::index(FollowUp::DUE_IDX, Key::default()).until_ts(Ts::now()),
        )
        .await
        .unwrap();
    assert_eq!(due.len(), 2, "one due follow-up per tenant");
    let mut fu: FollowUp = s
        .get(Some(a), key().uuid(sa.follow_up))
        .await
        .unwrap()
        .unwrap();
    fu.status = FollowUpStatus::Processing;
    s.update(fu).await.unwrap();
    let due: Vec<FollowUp> = s
        .scan(None, Scan::index(FollowUp::DUE_IDX, Key::default()))
        .await
        .unwrap();
    assert_eq!(due.len(), 1);
    assert_eq!(due[0].tenant_id, b);
    let mut src = KnowledgeSource {
        id: Uuid::new_v4(),
        tenant_id: a,
        source_key: "sched".into(),
        schedule_interval_minutes: Some(60),
        next_sync_at: Some(Ts::now()),
        ..Default::default()
    };
    s.insert(src.clone()).await.unwrap();
    let due: Vec<KnowledgeSource> = s
        .scan(None, Scan::index(KnowledgeSource::DUE_IDX, Key::default()))
        .await
        .unwrap();
    assert_eq!(due.len(), 1, "unscheduled sources are not due");
    src.status = SourceStatus::Paused;
    s.update(src).await.unwrap();
    assert!(
        s.scan::<KnowledgeSource>(None, Scan::index(KnowledgeSource::DUE_IDX, Key::default()))
            .await
            .unwrap()
            .is_empty()
    );
}

/// A batch with one bad row writes nothing.
pub async fn insert_many_is_all_or_nothing<S: FullStore>(s: S) {
    let (a, _) = two_tenants(&s).await;
    let rows = vec![
        Principal::new(a, "x"),
        Principal::new(a, "y"),
        Principal::new(a, "x"),
    ];
    assert_eq!(
        conflict(s.insert_many(rows).await.unwrap_err()),
        Principal::REF_KEY
    );
    assert_eq!(s.count::<Principal>(Some(a)).await.unwrap(), 0);
}

const SEC: i64 = 1_000_000;

fn job(queue: &str, id: Option<&str>) -> NewJob {
    NewJob {
        queue: queue.into(),
        id: id.map(Into::into),
        tenant_id: None,
        payload: serde_json::json!({"n": 1}),
        max_attempts: 3,
        backoff_ms: 10_000,
        delay_ms: 0,
        mode: EnqueueMode::Dedupe,
    }
}

/// Delayed jobs are not claimed before `run_at`.
pub async fn queue_delayed_jobs_wait_for_run_at<S: FullStore>(s: S) {
    migrated(&s).await;
    let t0 = Ts::now();
    let (out, j) = s
        .enqueue(
            NewJob {
                delay_ms: 5_000,
                ..job("q", Some("later"))
            },
            t0,
        )
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Created);
    assert_eq!(j.state, JobState::Delayed);
    assert!(
        s.claim("q", "w1", t0.plus_micros(4 * SEC), 30_000, 10)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        s.next_due("q").await.unwrap(),
        Some(t0.plus_micros(5 * SEC))
    );
    let got = s
        .claim("q", "w1", t0.plus_micros(5 * SEC), 30_000, 10)
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].state, JobState::Active);
    assert_eq!(got[0].attempts_made, 1);
    assert!(
        s.claim("other", "w1", t0.plus_micros(60 * SEC), 30_000, 10)
            .await
            .unwrap()
            .is_empty(),
        "queues are separate"
    );
}

/// `base × 2^(attempt−1)`; after the last attempt the job is `failed` with an event.
pub async fn queue_retries_back_off_exponentially_then_fail<S: FullStore>(s: S) {
    migrated(&s).await;
    let mut now = Ts::now();
    s.enqueue(job("q", Some("r")), now).await.unwrap();
    for attempt in 1..=3u32 {
        let got = s.claim("q", "w", now, 30_000, 1).await.unwrap();
        assert_eq!(got.len(), 1, "attempt {attempt} is due");
        assert_eq!(got[0].attempts_made, attempt);
        let j = s
            .fail("q", "r", "w", "boom", false, now)
            .await
            .unwrap()
            .unwrap();
        if attempt < 3 {
            let wait = 10 * SEC * (1 << (attempt - 1));
            assert_eq!(j.state, JobState::Delayed);
            assert_eq!(j.run_at, now.plus_micros(wait), "attempt {attempt}");
            assert!(
                s.claim("q", "w", now.plus_micros(wait - 1), 30_000, 1)
                    .await
                    .unwrap()
                    .is_empty()
            );
            now = now.plus_micros(wait);
        } else {
            assert_eq!(j.state, JobState::Failed);
            assert_eq!(j.error.as_deref(), Some("boom"));
        }
    }
    assert_eq!(Job::backoff_for(10_000, 1), 10_000);
    assert_eq!(Job::backoff_for(10_000, 4), 80_000);
    let events = s.recent_events("q", 10).await.unwrap();
    assert_eq!(
        events.len(),
        1,
        "one event per finished job, not per attempt"
    );
    assert_eq!(events[0].status, JobEventStatus::Failed);
    assert_eq!(events[0].job_id, "r");
}

/// A handler can mark an error permanent: no retry.
pub async fn queue_permanent_errors_do_not_retry<S: FullStore>(s: S) {
    migrated(&s).await;
    let now = Ts::now();
    s.enqueue(job("q", Some("p")), now).await.unwrap();
    s.claim("q", "w", now, 30_000, 1).await.unwrap();
    let j = s
        .fail("q", "p", "w", "bad payload", true, now)
        .await
        .unwrap()
        .unwrap();
    assert_eq!((j.state, j.attempts_made), (JobState::Failed, 1));
    assert!(
        s.fail("q", "p", "w", "again", false, now)
            .await
            .unwrap()
            .is_none(),
        "no lease any more"
    );
}

/// An id that is waiting, delayed or active creates nothing new; a finished id is replaced.
pub async fn queue_job_ids_dedupe_while_live<S: FullStore>(s: S) {
    migrated(&s).await;
    let now = Ts::now();
    let (_, first) = s
        .enqueue(
            NewJob {
                delay_ms: 1000,
                ..job("q", Some("d"))
            },
            now,
        )
        .await
        .unwrap();
    let (out, same) = s
        .enqueue(
            NewJob {
                payload: serde_json::json!({"n": 2}),
                ..job("q", Some("d"))
            },
            now,
        )
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Deduplicated);
    assert_eq!(same, first, "delayed: unchanged");
    s.claim("q", "w", now.plus_micros(SEC), 30_000, 1)
        .await
        .unwrap();
    assert_eq!(
        s.enqueue(job("q", Some("d")), now).await.unwrap().0,
        EnqueueOutcome::Deduplicated,
        "active"
    );
    assert_eq!(s.stats("q", now.plus_micros(SEC)).await.unwrap().active, 1);
    s.complete("q", "d", "w", None, now.plus_micros(2 * SEC))
        .await
        .unwrap()
        .unwrap();
    let (out, fresh) = s
        .enqueue(job("q", Some("d")), now.plus_micros(3 * SEC))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Created, "completed ids can run again");
    assert_eq!(fresh.attempts_made, 0);
    // Once: a finished id is not run again (scheduled tick slots).
    let once = |id: &str| NewJob {
        mode: EnqueueMode::Once,
        ..job("tick", Some(id))
    };
    s.enqueue(once("tick:1"), now).await.unwrap();
    s.claim("tick", "w", now, 30_000, 1).await.unwrap();
    s.complete("tick", "tick:1", "w", None, now).await.unwrap();
    assert_eq!(
        s.enqueue(once("tick:1"), now).await.unwrap().0,
        EnqueueOutcome::Deduplicated
    );
    assert!(
        s.claim("tick", "w", now, 30_000, 1)
            .await
            .unwrap()
            .is_empty()
    );
    let (_, a) = s.enqueue(job("q", None), now).await.unwrap();
    let (_, b) = s.enqueue(job("q", None), now).await.unwrap();
    assert_ne!(a.id, b.id, "no id: always a new job");
}

/// Coalescing: a waiting re-add resets the timer; an active re-add guarantees exactly one more run.
pub async fn queue_coalescing_resets_timers_and_reruns_after_active<S: FullStore>(s: S) {
    migrated(&s).await;
    let t0 = Ts::now();
    let co = |delay_ms, n: i32| NewJob {
        delay_ms,
        mode: EnqueueMode::Coalesce,
        payload: serde_json::json!({"n": n}),
        ..job("distill", Some("thread-1"))
    };
    s.enqueue(co(600_000, 1), t0).await.unwrap();
    let (out, j) = s
        .enqueue(co(600_000, 2), t0.plus_micros(60 * SEC))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::Rescheduled);
    assert_eq!(
        j.run_at,
        t0.plus_micros(660 * SEC),
        "timer reset by the re-add"
    );
    assert!(
        s.claim("distill", "w", t0.plus_micros(600 * SEC), 30_000, 5)
            .await
            .unwrap()
            .is_empty()
    );
    let running = s
        .claim("distill", "w", t0.plus_micros(660 * SEC), 30_000, 5)
        .await
        .unwrap();
    assert_eq!(running[0].payload.0["n"], 2);
    // Two updates arrive while it runs: one more run, with the latest payload.
    s.enqueue(co(600_000, 3), t0.plus_micros(670 * SEC))
        .await
        .unwrap();
    let (out, _) = s
        .enqueue(co(600_000, 4), t0.plus_micros(680 * SEC))
        .await
        .unwrap();
    assert_eq!(out, EnqueueOutcome::RerunScheduled);
    assert_eq!(
        s.stats("distill", t0.plus_micros(680 * SEC))
            .await
            .unwrap()
            .waiting,
        0,
        "never two runs at once"
    );
    let after = s
        .complete("distill", "thread-1", "w", None, t0.plus_micros(700 * SEC))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(after.state, JobState::Delayed);
    assert_eq!(after.run_at, t0.plus_micros(1280 * SEC));
    let rerun = s
        .claim("distill", "w", t0.plus_micros(1280 * SEC), 30_000, 5)
        .await
        .unwrap();
    assert_eq!(rerun.len(), 1);
    assert_eq!(rerun[0].payload.0["n"], 4);
    let done = s
        .complete("distill", "thread-1", "w", None, t0.plus_micros(1300 * SEC))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(done.state, JobState::Completed, "exactly one extra run");
    assert_eq!(s.recent_events("distill", 10).await.unwrap().len(), 2);
}

/// A lease that expires (worker killed) returns the job to waiting with its checkpoint; the old owner is fenced off.
pub async fn queue_expired_leases_return_jobs_with_their_checkpoint<S: FullStore>(s: S) {
    migrated(&s).await;
    let now = Ts::now();
    s.enqueue(job("email-inbound", Some("m1")), now)
        .await
        .unwrap();
    s.claim("email-inbound", "dead", now, 30_000, 1)
        .await
        .unwrap();
    assert!(
        s.save_checkpoint(
            "email-inbound",
            "m1",
            "dead",
            serde_json::json!({"reply": "prepared"})
        )
        .await
        .unwrap()
    );
    assert!(
        !s.save_checkpoint("email-inbound", "m1", "intruder", serde_json::json!({}))
            .await
            .unwrap()
    );
    assert!(
        s.renew_lease("email-inbound", "m1", "dead", now.plus_micros(60 * SEC))
            .await
            .unwrap()
    );
    assert!(
        s.reclaim_expired(now.plus_micros(59 * SEC))
            .await
            .unwrap()
            .is_empty(),
        "renewed lease holds"
    );
    assert_eq!(
        s.next_lease_expiry().await.unwrap(),
        Some(now.plus_micros(60 * SEC))
    );
    let back = s.reclaim_expired(now.plus_micros(61 * SEC)).await.unwrap();
    assert_eq!(back.len(), 1);
    assert_eq!(back[0].state, JobState::Waiting);
    assert_eq!(back[0].attempts_made, 0, "a dead attempt is not counted");
    assert_eq!(back[0].checkpoint.as_ref().unwrap().0["reply"], "prepared");
    let again = s
        .claim(
            "email-inbound",
            "alive",
            now.plus_micros(61 * SEC),
            30_000,
            1,
        )
        .await
        .unwrap();
    assert_eq!(again[0].checkpoint.as_ref().unwrap().0["reply"], "prepared");
    assert!(
        s.complete(
            "email-inbound",
            "m1",
            "dead",
            None,
            now.plus_micros(62 * SEC)
        )
        .await
        .unwrap()
        .is_none(),
        "fenced"
    );
    assert!(
        s.complete(
            "email-inbound",
            "m1",
            "alive",
            None,
            now.plus_micros(62 * SEC)
        )
        .await
        .unwrap()
        .is_some()
    );
    // Release gives a job back without counting the attempt.
    s.enqueue(job("q", Some("rel")), now).await.unwrap();
    s.claim("q", "w", now, 30_000, 1).await.unwrap();
    assert!(
        s.release("q", "rel", "w", now.plus_micros(5 * SEC))
            .await
            .unwrap()
    );
    let j = s.job("q", "rel").await.unwrap().unwrap();
    assert_eq!((j.state, j.attempts_made), (JobState::Delayed, 0));
    // A job whose worker keeps dying is failed after MAX_STALLS.
    s.enqueue(job("poison", Some("x")), now).await.unwrap();
    let mut t = now;
    for _ in 0..crate::MAX_STALLS {
        s.claim("poison", "w", t, 1_000, 1).await.unwrap();
        t = t.plus_micros(2 * SEC);
        s.reclaim_expired(t).await.unwrap();
    }
    assert_eq!(
        s.job("poison", "x").await.unwrap().unwrap().state,
        JobState::Failed
    );
}

/// Depth/lag stats, events, and the §13 retention (completed 1 day / 200, failed 7 days).
pub async fn queue_stats_and_events_and_retention<S: FullStore>(s: S) {
    migrated(&s).await;
    let t0 = Ts::now();
    for i in 0..3 {
        s.enqueue(job("q", Some(&format!("due{i}"))), t0.plus_micros(i * SEC))
            .await
            .unwrap();
    }
    s.enqueue(
        NewJob {
            delay_ms: 60_000,
            ..job("q", Some("later"))
        },
        t0,
    )
    .await
    .unwrap();
    let st = s.stats("q", t0.plus_micros(10 * SEC)).await.unwrap();
    assert_eq!((st.waiting, st.delayed, st.active), (3, 1, 0));
    assert_eq!(st.oldest_due_at, Some(t0));
    assert_eq!(st.lag_ms, 10_000);
    // 250 completed jobs: retention keeps the newest 200, and none older than a day.
    let mut batch_time = t0;
    for i in 0..250 {
        let id = format!("c{i}");
        s.enqueue(job("tick", Some(&id)), batch_time).await.unwrap();
        s.claim("tick", "w", batch_time, 30_000, 1).await.unwrap();
        s.complete("tick", &id, "w", None, batch_time)
            .await
            .unwrap();
        batch_time = batch_time.plus_micros(1000);
    }
    s.enqueue(job("tick", Some("f")), t0).await.unwrap();
    s.claim("tick", "w", t0, 30_000, 1).await.unwrap();
    s.fail("tick", "f", "w", "x", true, t0).await.unwrap();
    let removed = s
        .prune_finished("tick", TICK_RETENTION, batch_time)
        .await
        .unwrap();
    assert_eq!(removed, 50);
    let st = s.stats("tick", batch_time).await.unwrap();
    assert_eq!((st.completed, st.failed), (200, 1));
    assert!(
        s.job("tick", "c0").await.unwrap().is_none()
            && s.job("tick", "c249").await.unwrap().is_some()
    );
    let day = 24 * 3600 * SEC;
    s.prune_finished("tick", TICK_RETENTION, batch_time.plus_micros(day + SEC))
        .await
        .unwrap();
    let st = s
        .stats("tick", batch_time.plus_micros(day + SEC))
        .await
        .unwrap();
    assert_eq!((st.completed, st.failed), (0, 1), "failed jobs stay 7 days");
    s.prune_finished("tick", TICK_RETENTION, t0.plus_micros(7 * day + SEC))
        .await
        .unwrap();
    assert_eq!(s.stats("tick", t0).await.unwrap().failed, 0);
    let events = s.recent_events("tick", 50).await.unwrap();
    assert_eq!(events.len(), 50);
    assert!(
        events
            .windows(2)
            .all(|w| w[0].created_at >= w[1].created_at),
        "newest first"
    );
    assert_eq!(
        s.prune_events(batch_time.plus_micros(1)).await.unwrap(),
        251
    );
    assert!(s.recent_events("tick", 5).await.unwrap().is_empty());
}

/// Completing a job can claim the next due one in the same transaction.
pub async fn queue_complete_and_claim_hands_over_the_next_job<S: FullStore>(s: S) {
    migrated(&s).await;
    let now = Ts::now();
    for id in ["a", "b"] {
        s.enqueue(job("q", Some(id)), now).await.unwrap();
    }
    s.enqueue(
        NewJob {
            delay_ms: 60_000,
            ..job("q", Some("later"))
        },
        now,
    )
    .await
    .unwrap();
    let first = s
        .claim("q", "w", now, 30_000, 1)
        .await
        .unwrap()
        .pop()
        .unwrap();
    let (done, next) = s
        .complete_and_claim("q", &first.id, "w", None, now, 30_000)
        .await
        .unwrap();
    assert_eq!(done.unwrap().state, JobState::Completed);
    let next = next.expect("the other due job");
    assert_eq!(
        (next.state, next.lease_owner.as_deref()),
        (JobState::Active, Some("w"))
    );
    let (_, none) = s
        .complete_and_claim("q", &next.id, "w", None, now, 30_000)
        .await
        .unwrap();
    assert!(none.is_none(), "the delayed job is not due");
    let (lost, none) = s
        .complete_and_claim("q", &next.id, "w", None, now, 30_000)
        .await
        .unwrap();
    assert!(
        lost.is_none() && none.is_none(),
        "no lease: nothing completed, nothing claimed"
    );
}

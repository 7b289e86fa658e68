//! Checks of the declared constraints across every table: UNIQUE within a
//! tenant (and platform-wide for global tables), unique-partial indexes
//! ignoring NULLs, CHECK ranges, foreign keys, unique keys moving on update,
//! and all-or-nothing batches.

use uuid::Uuid;

use super::seed::seed_every_table;
use super::{FullStore, conflict, two_tenants};
use crate::codec::{Json, Redacted, Ts};
use crate::enums::*;
use crate::error::StorageError;
use crate::key::key;
use crate::schema::*;
use crate::table::Record;

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
            value: Redacted::new("v".into()),
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

//! Unit tests of `RedbStore`: schema-version refusal, snapshots and
//! projections against the rows they mirror, migrations, close and the file
//! lock, relaxed writes, and tenant deletion emptying every index table.

use crate::schema::Tenant;
use crate::store::TenantStore;
use crate::table::Scope;

use super::*;

#[tokio::test]
async fn a_file_written_by_a_newer_binary_is_refused() {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let future = migrations::latest_version() + 1;
    store
        .insert(SchemaMigration {
            version: future,
            name: "from_the_future".into(),
            applied_at: Ts::now(),
        })
        .await
        .unwrap();
    let err = store.migrate().await.unwrap_err();
    assert!(
        matches!(err, StorageError::NewerSchema { found, known } if found == future && known == future - 1),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade root"));
}

#[tokio::test]
async fn a_snapshot_reads_rows_and_unique_lookups_in_one_transaction() {
    use crate::schema::Principal;
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store.tenant_by_slug("root").await.unwrap().unwrap();
    let other = store
        .create_tenant(crate::schema::Tenant::new("other", "Other"))
        .await
        .unwrap();
    let p = store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            ref_: "m-1".into(),
            ..Principal::default()
        })
        .await
        .unwrap();
    let (by_pk, by_ref, elsewhere) = store
        .snapshot(move |s| {
            let by_pk: Vec<Option<Principal>> = s.get_many(
                Some(t.id),
                &[
                    crate::key::key().uuid(p.id),
                    crate::key::key().uuid(Uuid::nil()),
                ],
            )?;
            let by_ref: Vec<Option<Principal>> = s.find_unique_many(
                Some(t.id),
                Principal::REF_KEY,
                &[crate::key::key().str("nope"), crate::key::key().str("m-1")],
            )?;
            // The same ref in another tenant is not visible.
            let elsewhere: Vec<Option<Principal>> = s.find_unique_many(
                Some(other.id),
                Principal::REF_KEY,
                &[crate::key::key().str("m-1")],
            )?;
            Ok((by_pk, by_ref, elsewhere))
        })
        .await
        .unwrap();
    assert_eq!(by_pk[0].as_ref().map(|r| r.id), Some(p.id));
    assert!(by_pk[1].is_none());
    assert!(by_ref[0].is_none());
    assert_eq!(by_ref[1].as_ref().map(|r| r.id), Some(p.id));
    assert!(elsewhere[0].is_none());
    let bad = store
        .snapshot(move |s| s.find_unique_many::<Principal>(Some(t.id), "no_such_key", &[]))
        .await;
    assert!(bad.is_err());
}

/// `KnowledgeChunkHit` reads exactly what a stored `KnowledgeChunk`
/// holds (bincode is positional: this fails when the layouts drift), with
/// and without an embedding, by pk and through the page/index constraint.
#[tokio::test]
async fn a_chunk_hit_reads_what_a_chunk_row_stores() {
    use crate::codec::{Embedding, Json};
    use crate::schema::{ChunkMetadata, KnowledgeChunk, KnowledgeChunkHit, KnowledgePage};
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store.tenant_by_slug("root").await.unwrap().unwrap();
    let page = store
        .insert(KnowledgePage {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            slug: "p".into(),
            title: "P".into(),
            ..KnowledgePage::default()
        })
        .await
        .unwrap();
    let chunk = |i: i32, embedding: Option<Embedding>| KnowledgeChunk {
        id: Uuid::new_v4(),
        tenant_id: t.id,
        knowledge_page_id: page.id,
        chunk_index: i,
        chunk_text: format!("chunk {i} — ünïcode"),
        embedding,
        metadata: Json(serde_json::json!({
            "title": "P", "slug": "p", "public_id": "pub-1", "source_type": "api",
            "author_name": null, "section_heading": format!("Part {i}"),
        })),
        created_at: Ts::now(),
    };
    let with = store
        .insert(chunk(0, Some(Embedding::from_f32("m", &[0.5; 3072]))))
        .await
        .unwrap();
    let without = store.insert(chunk(1, None)).await.unwrap();
    let (by_pk, by_index) = store
        .snapshot(move |s| {
            let by_pk: Vec<Option<KnowledgeChunkHit>> = s.get_many_projected(
                Some(t.id),
                &[
                    key().uuid(with.id),
                    key().uuid(Uuid::nil()),
                    key().uuid(without.id),
                ],
            )?;
            let by_index: Vec<Option<KnowledgeChunkHit>> = s.find_unique_many_projected(
                Some(t.id),
                KnowledgeChunk::PAGE_CHUNK_KEY,
                &[key().uuid(page.id).i64(1), key().uuid(page.id).i64(7)],
            )?;
            Ok((by_pk, by_index))
        })
        .await
        .unwrap();
    for (hit, row) in [
        (&by_pk[0], &with),
        (&by_pk[2], &without),
        (&by_index[0], &without),
    ] {
        let hit = hit.as_ref().expect("present");
        assert_eq!(
            (
                hit.id,
                hit.knowledge_page_id,
                hit.chunk_index,
                hit.chunk_text.as_str()
            ),
            (
                row.id,
                row.knowledge_page_id,
                row.chunk_index,
                row.chunk_text.as_str()
            )
        );
        assert_eq!(
            hit.metadata().unwrap(),
            ChunkMetadata {
                title: Some("P".into()),
                slug: Some("p".into()),
                public_id: Some("pub-1".into()),
                source_type: Some("api".into()),
                author_name: None,
                section_heading: Some(format!("Part {}", row.chunk_index)),
            }
        );
    }
    assert!(by_pk[1].is_none() && by_index[1].is_none());
    // The exact-rescoring projection reads the stored embedding, bit for bit.
    let vectors = store
        .snapshot(move |s| {
            s.get_many_projected::<crate::schema::KnowledgeChunkVector>(
                Some(t.id),
                &[key().uuid(with.id), key().uuid(without.id)],
            )
        })
        .await
        .unwrap();
    assert_eq!(
        vectors[0].as_ref().unwrap().embedding.as_ref(),
        with.embedding.as_ref()
    );
    assert_eq!(vectors[1].as_ref().unwrap().embedding, None);
    // A non-string value reads as absent without blanking the others.
    let odd = KnowledgeChunkHit {
        metadata_json: r#"{"title": 7, "slug": "p", "section_heading": null}"#.into(),
        ..by_pk[0].clone().unwrap()
    };
    let m = odd.metadata().unwrap();
    assert_eq!(
        (m.title, m.slug, m.section_heading),
        (None, Some("p".into()), None)
    );
    let broken = KnowledgeChunkHit {
        metadata_json: "{not json".into(),
        ..odd
    };
    assert!(broken.metadata().is_err());
}

/// `KnowledgePageSummary` decodes exactly what a `knowledge_pages` row
/// holds (fails when the layouts drift), and `scan_projected` counts
/// only kept rows against the limit.
#[tokio::test]
async fn a_page_summary_reads_what_a_page_row_stores() {
    use crate::schema::{KnowledgePage, KnowledgePageSummary};
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store.tenant_by_slug("root").await.unwrap().unwrap();
    let page = |i: u32, author: &str| KnowledgePage {
        id: Uuid::new_v4(),
        tenant_id: t.id,
        slug: format!("page-{i}"),
        title: format!("Page {i} — ünïcode"),
        source_url: Some(format!("https://example.org/{i}")),
        content_html: "<p>body</p>".repeat(1000),
        content_text: Some("body ".repeat(1000)),
        author_name: Some("Ada".into()),
        author_member_id: Some(author.into()),
        knowledge_date: Some("2025-01-02".into()),
        source_type: "api".into(),
        source_message_text: Some("from slack".into()),
        public_id: Some(format!("pub-{i}")),
        is_public: i.is_multiple_of(2),
        refresh_frequency: Some("daily".into()),
        extracted_knowledge_id: Some(Uuid::new_v4()),
        knowledge_source_id: None,
        external_id: Some(format!("ext-{i}")),
        content_hash: Some("h".into()),
        raw_content_hash: Some("r".into()),
        last_synced_at: Some(Ts(5)),
        fetched_at: Some(Ts(6)),
        created_at: Ts(7 + i64::from(i)),
        updated_at: Ts(8 + i64::from(i)),
    };
    let mut stored = Vec::new();
    for i in 0..5 {
        stored.push(
            store
                .insert(page(i, if i.is_multiple_of(2) { "a" } else { "b" }))
                .await
                .unwrap(),
        );
    }
    let (all, kept) = store
        .snapshot(move |s| {
            let all: Vec<KnowledgePageSummary> = s.scan_projected(
                Some(t.id),
                &Scan::index(KnowledgePage::SLUG_KEY, key()),
                |_| true,
            )?;
            let kept: Vec<KnowledgePageSummary> = s.scan_projected(
                Some(t.id),
                &Scan::index(KnowledgePage::SOURCE_TYPE_IDX, key().str("api")).limit(2),
                |p: &KnowledgePageSummary| p.author_member_id.as_deref() == Some("b"),
            )?;
            Ok((all, kept))
        })
        .await
        .unwrap();
    assert_eq!(all.len(), 5);
    for (s, p) in all.iter().zip(&stored) {
        // Decoded from the stored bytes vs. built from the full row: the
        // projection must read exactly the row's fields.
        assert_eq!(s, &KnowledgePageSummary::from(p));
    }
    assert_eq!(kept.len(), 2);
    assert!(
        kept.iter()
            .all(|p| p.author_member_id.as_deref() == Some("b"))
    );
}

/// A page's long text is stored packed (zstd) and reads back exactly; the
/// disk accounting sees the packed size in the page table.
#[tokio::test]
async fn long_page_text_is_stored_packed_and_disk_stats_account_for_it() {
    use crate::schema::KnowledgePage;
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("root.redb")).unwrap();
    store.migrate().await.unwrap();
    let t = store.tenant_by_slug("root").await.unwrap().unwrap();
    let body = "<p>The walrus keeps its tusks clean with kelp.</p>\n".repeat(2_000);
    let page = KnowledgePage {
        id: Uuid::new_v4(),
        tenant_id: t.id,
        slug: "walrus".into(),
        title: "Walrus".into(),
        content_html: body.clone(),
        content_text: Some(body.replace("<p>", "").replace("</p>", "")),
        source_type: "manual".into(),
        created_at: Ts(1),
        updated_at: Ts(1),
        ..Default::default()
    };
    let text_bytes = (page.content_html.len() + page.content_text.as_ref().unwrap().len()) as u64;
    store.insert(page.clone()).await.unwrap();
    let read: KnowledgePage = store
        .get(Some(t.id), key().uuid(page.id))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(read, page);
    let stats = store.disk_stats().unwrap();
    let pages = stats
        .tables
        .iter()
        .find(|t| t.name == "knowledge_pages")
        .expect("the page table is listed");
    assert!(
        pages.stored_bytes < text_bytes / 20,
        "{} stored bytes for {text_bytes} bytes of text",
        pages.stored_bytes
    );
    assert!(stats.stored_bytes >= pages.stored_bytes);
    assert!(stats.file_bytes >= stats.allocated_bytes, "{stats:?}");
    assert!(
        stats
            .tables
            .windows(2)
            .all(|w| w[0].total_bytes() >= w[1].total_bytes()),
        "largest first"
    );
    store.close().await;
}

/// `SlackMessageText` is the stored message minus its embedding (the
/// positional layout is checked field by field through `PartialEq`).
#[tokio::test]
async fn a_slack_message_text_reads_what_a_message_row_stores() {
    use crate::codec::Embedding;
    use crate::schema::{ProcessedSlackMessage, SlackMessageText};
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store.tenant_by_slug("root").await.unwrap().unwrap();
    let full = ProcessedSlackMessage {
        id: Uuid::new_v4(),
        tenant_id: t.id,
        channel_id: "C1".into(),
        channel_name: Some("general".into()),
        user_id: Some("U1".into()),
        user_name: None,
        message_ts: "1.000100".into(),
        thread_ts: Some("1.000000".into()),
        message_text: "hello — ünïcode".into(),
        message_date: Ts::from_secs(1_750_000_000),
        permalink: Some("https://x.slack.com/archives/C1/p1000100".into()),
        embedding: Some(Embedding::from_f32("m", &[0.25; 3072])),
        extraction_processed_at: None,
        withdrawn_at: Some(Ts::from_secs(1_750_000_100)),
        created_at: Ts::now(),
    };
    let stored = store.insert(full.clone()).await.unwrap();
    let read = store
        .snapshot(move |s| {
            s.get_many_projected::<SlackMessageText>(
                Some(t.id),
                &[key().uuid(stored.id), key().uuid(Uuid::nil())],
            )
        })
        .await
        .unwrap();
    let expected = ProcessedSlackMessage {
        embedding: None,
        ..full
    };
    assert_eq!(read[0].as_ref().map(|m| &m.0), Some(&expected));
    assert!(read[1].is_none());
}

/// `SlackMessageVector` is the stored message's embedding and withdrawal
/// (the text columns skipped by position).
#[tokio::test]
async fn a_slack_message_vector_reads_what_a_message_row_stores() {
    use crate::codec::Embedding;
    use crate::schema::{ProcessedSlackMessage, SlackMessageVector};
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store.tenant_by_slug("root").await.unwrap().unwrap();
    let row = |i: u32, withdrawn: Option<Ts>, embedding: Option<Embedding>| ProcessedSlackMessage {
        id: Uuid::new_v4(),
        tenant_id: t.id,
        channel_id: format!("C{i}"),
        channel_name: Some("général".into()),
        user_id: Some("U1".into()),
        user_name: Some("Ada".into()),
        message_ts: format!("1.00010{i}"),
        thread_ts: Some("1.000000".into()),
        message_text: "hello — ünïcode ".repeat(40),
        message_date: Ts::from_secs(1_750_000_000),
        permalink: None,
        embedding,
        extraction_processed_at: Some(Ts::from_secs(1_750_000_050)),
        withdrawn_at: withdrawn,
        created_at: Ts::from_secs(1_750_000_060),
    };
    let rows = [
        row(1, None, Some(Embedding::from_f32("m", &[0.25; 3072]))),
        row(2, Some(Ts::from_secs(1_750_000_100)), None),
    ];
    for r in &rows {
        store.insert(r.clone()).await.unwrap();
    }
    let pks = vec![
        key().uuid(rows[0].id),
        key().uuid(rows[1].id),
        key().uuid(Uuid::nil()),
    ];
    let read = store
        .snapshot(move |s| s.get_many_projected::<SlackMessageVector>(Some(t.id), &pks))
        .await
        .unwrap();
    for (got, full) in read.iter().zip(&rows) {
        let expected = SlackMessageVector {
            embedding: full.embedding.clone(),
            withdrawn_at: full.withdrawn_at,
        };
        assert_eq!(got.as_ref(), Some(&expected));
    }
    assert!(read[2].is_none());
}

#[tokio::test]
async fn migration_5_indexes_slack_messages_stored_before_the_user_index() {
    use crate::schema::ProcessedSlackMessage;
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store
        .create_tenant(Tenant::new("slack", "Slack"))
        .await
        .unwrap();
    store
        .insert(ProcessedSlackMessage {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            channel_id: "C1".into(),
            user_id: Some("U1".into()),
            message_ts: "1700000000.000001".into(),
            message_text: "hello".into(),
            message_date: Ts::from_secs(1_700_000_000),
            created_at: Ts::now(),
            ..Default::default()
        })
        .await
        .unwrap();
    let tenant = t.id;
    let by_user = || {
        store.scan::<ProcessedSlackMessage>(
            Some(tenant),
            Scan::index(ProcessedSlackMessage::USER_IDX, key().str("U1")),
        )
    };
    assert_eq!(by_user().await.unwrap().len(), 1);
    // A file written before the index existed has no entries in it.
    store
        .write(|w| {
            w.delete_table(raw_table(ProcessedSlackMessage::USER_IDX))?;
            migrations::ensure_tables(w)
        })
        .await
        .unwrap();
    assert!(by_user().await.unwrap().is_empty());
    for _ in 0..2 {
        store
            .write(migrations::m0005_slack_messages_by_user)
            .await
            .unwrap();
        assert_eq!(by_user().await.unwrap().len(), 1, "backfilled, idempotent");
    }
}

#[tokio::test]
async fn migration_6_indexes_follow_ups_claimed_before_the_processing_index() {
    use crate::enums::FollowUpStatus;
    use crate::schema::{FollowUp, Principal};
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store.create_tenant(Tenant::new("fu", "Fu")).await.unwrap();
    let member = store
        .insert(Principal {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            ref_: "U1".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    store
        .insert(FollowUp {
            id: Uuid::new_v4(),
            tenant_id: t.id,
            member_id: member.id,
            instruction: "check in".into(),
            status: FollowUpStatus::Processing,
            updated_at: Ts::from_secs(1_700_000_000),
            ..Default::default()
        })
        .await
        .unwrap();
    let claimed = || store.scan::<FollowUp>(None, Scan::index(FollowUp::PROCESSING_IDX, key()));
    assert_eq!(claimed().await.unwrap().len(), 1);
    store
        .write(|w| {
            w.delete_table(raw_table(FollowUp::PROCESSING_IDX))?;
            migrations::ensure_tables(w)
        })
        .await
        .unwrap();
    assert!(claimed().await.unwrap().is_empty());
    for _ in 0..2 {
        store
            .write(migrations::m0006_follow_ups_processing)
            .await
            .unwrap();
        assert_eq!(claimed().await.unwrap().len(), 1, "backfilled, idempotent");
    }
}

#[tokio::test]
async fn migration_7_indexes_conversation_logs_stored_before_the_principal_index() {
    use crate::enums::{Channel, Direction};
    use crate::schema::{ConversationLog, Principal};
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store
        .create_tenant(Tenant::new("memo", "Memo"))
        .await
        .unwrap();
    let p = store.insert(Principal::new(t.id, "U1")).await.unwrap();
    let mut log = ConversationLog::new(t.id, Channel::Api, Direction::Inbound);
    log.principal_id = Some(p.id);
    log.message_at = Ts::from_secs(1_700_000_000);
    store.insert(log).await.unwrap();
    let tenant = t.id;
    let by_principal = || {
        store.scan::<ConversationLog>(
            Some(tenant),
            Scan::index(ConversationLog::PRINCIPAL_MESSAGE_AT_IDX, key().uuid(p.id)),
        )
    };
    assert_eq!(by_principal().await.unwrap().len(), 1);
    // A file written before the index existed has no entries in it.
    store
        .write(|w| {
            w.delete_table(raw_table(ConversationLog::PRINCIPAL_MESSAGE_AT_IDX))?;
            migrations::ensure_tables(w)
        })
        .await
        .unwrap();
    assert!(by_principal().await.unwrap().is_empty());
    for _ in 0..2 {
        store
            .write(migrations::m0007_conversation_logs_by_principal)
            .await
            .unwrap();
        assert_eq!(
            by_principal().await.unwrap().len(),
            1,
            "backfilled, idempotent"
        );
    }
}

#[tokio::test]
async fn a_closed_store_refuses_work_and_releases_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("root.redb");
    let store = RedbStore::open(&path).unwrap();
    store.migrate().await.unwrap();
    store.close().await;
    assert!(store.ping().await.is_err());
    let again = RedbStore::open(&path).expect("lock released on close");
    assert!(
        again.tenant_by_slug("root").await.unwrap().is_some(),
        "data was flushed"
    );
}

#[tokio::test]
async fn relaxed_writes_are_visible_at_once_checked_and_flushed_on_close() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("root.redb");
    let store = RedbStore::open(&path).unwrap();
    store.migrate().await.unwrap();
    let t = store
        .create_tenant(Tenant::new("meter", "Meter"))
        .await
        .unwrap();
    let row = crate::schema::LlmTokenUsage {
        id: Uuid::new_v4(),
        tenant_id: t.id,
        purpose: "agent.planning".into(),
        model: "m".into(),
        created_at: Ts::now(),
        ..Default::default()
    };
    store.insert_relaxed(row.clone()).await.unwrap();
    let seen: Option<crate::schema::LlmTokenUsage> =
        store.get(Some(t.id), key().uuid(row.id)).await.unwrap();
    assert_eq!(
        seen.as_ref(),
        Some(&row),
        "visible without waiting for a flush"
    );
    // Constraints still hold: the same primary key again is a conflict.
    let err = store.insert_relaxed(row.clone()).await.unwrap_err();
    assert!(matches!(err, StorageError::Conflict { .. }), "{err}");
    // A relaxed transaction, then close: both are on disk afterwards.
    let second = crate::schema::LlmTokenUsage {
        id: Uuid::new_v4(),
        ..row.clone()
    };
    let s2 = second.clone();
    store
        .transact_relaxed(move |tx| tx.insert(&s2))
        .await
        .unwrap();
    store.close().await;
    let again = RedbStore::open(&path).unwrap();
    for id in [row.id, second.id] {
        let got: Option<crate::schema::LlmTokenUsage> =
            again.get(Some(t.id), key().uuid(id)).await.unwrap();
        assert!(got.is_some(), "relaxed row {id} flushed at close");
    }
}

#[tokio::test]
async fn a_second_process_cannot_open_the_same_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("root.redb");
    let _first = RedbStore::open(&path).unwrap();
    let err = RedbStore::open(&path).unwrap_err();
    assert!(matches!(err, StorageError::AlreadyOpen { .. }), "{err}");
    assert!(
        err.to_string()
            .contains("already opened by another process")
    );
}

#[tokio::test]
async fn deleting_a_tenant_empties_its_index_tables_too() {
    let store = RedbStore::open_in_memory().unwrap();
    store.migrate().await.unwrap();
    let t = store
        .create_tenant(Tenant::new("gone", "Gone"))
        .await
        .unwrap();
    crate::conformance::seed_every_table(&store, t.id).await;
    store.delete_tenant(t.id).await.unwrap();
    let leftovers = store
        .read(move |r| {
            let mut names = Vec::new();
            for def in crate::schema::all_tables().iter().map(|t| t.def()) {
                let tables = std::iter::once(def.name)
                    .chain(def.indexes.iter().filter(|i| !i.global).map(|i| i.name))
                    .chain(def.fks.iter().map(|f| f.name));
                for name in tables {
                    if def.scope != Scope::Tenant {
                        continue;
                    }
                    if let Some(tbl) = open_read(r, name)? {
                        let p = t.id.as_bytes().to_vec();
                        let end = Key(p.clone()).prefix_end().unwrap();
                        if tbl
                            .range::<&[u8]>(p.as_slice()..end.as_slice())?
                            .next()
                            .is_some()
                        {
                            names.push(name);
                        }
                    }
                }
            }
            Ok(names)
        })
        .await
        .unwrap();
    assert!(leftovers.is_empty(), "entries left in {leftovers:?}");
}

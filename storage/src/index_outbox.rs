//! The index outbox: how the derived search indexes (usearch + tantivy, in
//! the `index` crate) stay consistent with redb, which owns every vector.
//!
//! A write that changes an indexed row (a knowledge chunk, a Slack message, a
//! thread artifact) records an [`IndexOutboxEntry`] **in the same
//! transaction** (see [`Tx::index_change`]). The per-tenant index writer reads
//! pending entries, re-reads each row's *current* state (so an entry only
//! names the row, and replaying it twice is harmless), applies it to both
//! lanes, persists the index files, and then clears the entries up to the
//! persisted watermark ([`IndexOutboxStore::outbox_clear`]), which also
//! records that watermark in [`IndexState`]. A crash anywhere leaves either
//! the entries (replayed on start) or index files at least as new as the
//! recorded watermark; index files older than it are rebuilt from redb.

use async_trait::async_trait;
use redb::WriteTransaction;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::error::StorageResult;
use crate::key::{Key, key};
use crate::table::{self, Record, Scan, Scope, TableDef};

/// The corpora that have search indexes (one index pair per tenant each).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
pub enum IndexCorpus {
    /// `knowledge_chunks` (§10.2).
    Knowledge,
    /// `processed_slack_messages` (§10.3 message lanes).
    SlackMessages,
    /// `slack_thread_artifacts` (§10.3 artifact lane).
    SlackArtifacts,
}

impl IndexCorpus {
    /// Every corpus, in a fixed order.
    pub const ALL: [IndexCorpus; 3] = [
        IndexCorpus::Knowledge,
        IndexCorpus::SlackMessages,
        IndexCorpus::SlackArtifacts,
    ];

    /// Stable on-disk code (key byte; never renumber).
    pub fn code(self) -> u8 {
        match self {
            IndexCorpus::Knowledge => 1,
            IndexCorpus::SlackMessages => 2,
            IndexCorpus::SlackArtifacts => 3,
        }
    }

    /// Directory name under `index/<tenant>/`.
    pub fn dir_name(self) -> &'static str {
        match self {
            IndexCorpus::Knowledge => "knowledge",
            IndexCorpus::SlackMessages => "slack_messages",
            IndexCorpus::SlackArtifacts => "slack_artifacts",
        }
    }

    fn key(self) -> Key {
        key().u64(u64::from(self.code()))
    }
}

/// `index_outbox` — one pending index change (platform table, not in the spec).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexOutboxEntry {
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Which index pair the change is for.
    pub corpus: IndexCorpus,
    /// Global, strictly increasing sequence number.
    pub seq: u64,
    /// Id of the changed row in the corpus table.
    pub row_id: Uuid,
}

impl Record for IndexOutboxEntry {
    const DEF: TableDef = TableDef {
        name: "index_outbox",
        scope: Scope::Tenant,
        pkey: "index_outbox_pkey",
        indexes: &[],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        Some(self.tenant_id)
    }
    fn local_pk(&self) -> Key {
        self.corpus.key().u64(self.seq)
    }
}

/// `index_state` — per tenant and corpus, the highest outbox sequence whose
/// effect is persisted in the index files (entries up to it are cleared).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexState {
    /// Owning tenant.
    pub tenant_id: Uuid,
    /// Which index pair.
    pub corpus: IndexCorpus,
    /// Highest sequence persisted in the index files.
    pub applied_seq: u64,
}

impl Record for IndexState {
    const DEF: TableDef = TableDef {
        name: "index_state",
        scope: Scope::Tenant,
        pkey: "index_state_pkey",
        indexes: &[],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        Some(self.tenant_id)
    }
    fn local_pk(&self) -> Key {
        self.corpus.key()
    }
}

/// `index_outbox_seq` — the single global sequence counter.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IndexOutboxSeq {
    /// Always 0 (one row).
    pub id: u64,
    /// Last sequence handed out.
    pub last_seq: u64,
}

impl Record for IndexOutboxSeq {
    const DEF: TableDef = TableDef {
        name: "index_outbox_seq",
        scope: Scope::Global,
        pkey: "index_outbox_seq_pkey",
        indexes: &[],
        fks: &[],
    };
    fn tenant(&self) -> Option<Uuid> {
        None
    }
    fn local_pk(&self) -> Key {
        key().u64(self.id)
    }
}

/// A multi-table write transaction: row changes and their index outbox
/// entries commit together or not at all. Obtained from
/// [`crate::RedbStore::transact`]; lives only inside that call (never across
/// an `.await`).
pub struct Tx<'a> {
    pub(crate) w: &'a WriteTransaction,
    pub(crate) last_seq: Option<u64>,
}

impl Tx<'_> {
    /// Insert a new row (constraints as [`crate::Store::insert`]).
    pub fn insert<R: Record>(&self, row: &R) -> StorageResult<()> {
        table::insert(self.w, row)
    }

    /// Replace an existing row.
    pub fn update<R: Record>(&self, row: &R) -> StorageResult<()> {
        table::update(self.w, row)
    }

    /// Insert or replace by primary key.
    pub fn upsert<R: Record>(&self, row: &R) -> StorageResult<()> {
        let pk = table::full_pk::<R>(row.tenant(), &row.local_pk())?;
        if table::get_in_write::<R>(self.w, &pk)?.is_some() {
            table::update(self.w, row)
        } else {
            table::insert(self.w, row)
        }
    }

    /// Delete by local pk (cascades run); `false` when absent.
    pub fn delete<R: Record>(&self, tenant: Option<Uuid>, pk: Key) -> StorageResult<bool> {
        table::delete::<R>(self.w, &table::full_pk::<R>(tenant, &pk)?)
    }

    /// Read by local pk, seeing this transaction's own writes.
    pub fn get<R: Record>(&self, tenant: Option<Uuid>, pk: Key) -> StorageResult<Option<R>> {
        table::get_in_write::<R>(self.w, &table::full_pk::<R>(tenant, &pk)?)
    }

    /// Scan, seeing this transaction's own writes.
    pub fn scan<R: Record>(&self, tenant: Option<Uuid>, scan: Scan) -> StorageResult<Vec<R>> {
        table::scan_in_write::<R>(self.w, tenant, &scan)
    }

    /// Record that row `row_id` of `corpus` changed (inserted, updated or
    /// deleted) and its index entries must follow. Returns the entry's sequence.
    pub fn index_change(
        &mut self,
        tenant: Uuid,
        corpus: IndexCorpus,
        row_id: Uuid,
    ) -> StorageResult<u64> {
        let pk = table::full_pk::<IndexOutboxSeq>(None, &key().u64(0))?;
        let mut counter = table::get_in_write::<IndexOutboxSeq>(self.w, &pk)?
            .unwrap_or(IndexOutboxSeq { id: 0, last_seq: 0 });
        counter.last_seq += 1;
        let seq = counter.last_seq;
        if seq == 1 {
            table::insert(self.w, &counter)?;
        } else {
            table::update(self.w, &counter)?;
        }
        table::insert(
            self.w,
            &IndexOutboxEntry {
                tenant_id: tenant,
                corpus,
                seq,
                row_id,
            },
        )?;
        self.last_seq = Some(seq);
        Ok(seq)
    }

    /// The highest sequence recorded in this transaction so far.
    pub fn last_index_seq(&self) -> Option<u64> {
        self.last_seq
    }
}

/// The outbox operations the index writer uses.
#[async_trait]
pub trait IndexOutboxStore: Send + Sync {
    /// Pending entries of one tenant's corpus with `seq > after`, oldest first.
    async fn outbox_pending(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        after: u64,
        limit: usize,
    ) -> StorageResult<Vec<IndexOutboxEntry>>;
    /// Delete entries with `seq ≤ upto` and record `upto` as the persisted
    /// watermark (never lowers it).
    async fn outbox_clear(&self, tenant: Uuid, corpus: IndexCorpus, upto: u64)
    -> StorageResult<()>;
    /// The recorded watermark (0 when none).
    async fn index_applied_seq(&self, tenant: Uuid, corpus: IndexCorpus) -> StorageResult<u64>;
    /// The last sequence handed out (0 when none): a rebuild that starts now
    /// covers every entry up to it.
    async fn outbox_last_seq(&self) -> StorageResult<u64>;
    /// Every (tenant, corpus) with pending entries.
    async fn outbox_backlog(&self) -> StorageResult<Vec<(Uuid, IndexCorpus)>>;
}

pub(crate) fn clear_in_write(
    w: &WriteTransaction,
    tenant: Uuid,
    corpus: IndexCorpus,
    upto: u64,
) -> StorageResult<()> {
    let pending: Vec<IndexOutboxEntry> = table::scan_in_write(
        w,
        Some(tenant),
        &Scan::pk_prefix(corpus.key()).between(None, Some(key().u64(upto.saturating_add(1)))),
    )?;
    for e in pending {
        table::delete::<IndexOutboxEntry>(
            w,
            &table::full_pk::<IndexOutboxEntry>(Some(tenant), &e.local_pk())?,
        )?;
    }
    let state = IndexState {
        tenant_id: tenant,
        corpus,
        applied_seq: upto,
    };
    let pk = table::full_pk::<IndexState>(Some(tenant), &state.local_pk())?;
    match table::get_in_write::<IndexState>(w, &pk)? {
        Some(old) if old.applied_seq >= upto => Ok(()),
        Some(_) => table::update(w, &state),
        None => table::insert(w, &state),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Ts;
    use crate::schema::{KnowledgeChunk, KnowledgePage, Tenant};
    use crate::store::{MigrationStore, Store, TenantStore};
    use crate::{RedbStore, StorageError};

    async fn store_with_tenant() -> (RedbStore, Uuid) {
        let store = RedbStore::open_in_memory().unwrap();
        store.migrate().await.unwrap();
        let t = store
            .create_tenant(Tenant::new("acme", "Acme"))
            .await
            .unwrap();
        (store, t.id)
    }

    fn page(tenant: Uuid, slug: &str) -> KnowledgePage {
        KnowledgePage {
            id: Uuid::new_v4(),
            tenant_id: tenant,
            slug: slug.into(),
            title: slug.into(),
            source_type: "manual".into(),
            created_at: Ts::now(),
            updated_at: Ts::now(),
            ..Default::default()
        }
    }

    fn chunk(page: &KnowledgePage, i: i32) -> KnowledgeChunk {
        KnowledgeChunk {
            id: Uuid::new_v4(),
            tenant_id: page.tenant_id,
            knowledge_page_id: page.id,
            chunk_index: i,
            chunk_text: format!("chunk {i}"),
            created_at: Ts::now(),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn rows_and_outbox_entries_commit_together_and_clear_up_to_a_watermark() {
        let (store, t) = store_with_tenant().await;
        let p = page(t, "a");
        let (c0, c1) = (chunk(&p, 0), chunk(&p, 1));
        let ids = (c0.id, c1.id);
        let (_, last) = store
            .transact(move |tx| {
                tx.insert(&p)?;
                for c in [&c0, &c1] {
                    tx.insert(c)?;
                    tx.index_change(t, IndexCorpus::Knowledge, c.id)?;
                }
                Ok(())
            })
            .await
            .unwrap();
        assert_eq!(last, Some(2));
        assert_eq!(store.outbox_last_seq().await.unwrap(), 2);
        let pending = store
            .outbox_pending(t, IndexCorpus::Knowledge, 0, 100)
            .await
            .unwrap();
        assert_eq!(
            pending
                .iter()
                .map(|e| (e.seq, e.row_id))
                .collect::<Vec<_>>(),
            vec![(1, ids.0), (2, ids.1)]
        );
        assert_eq!(
            store.outbox_backlog().await.unwrap(),
            vec![(t, IndexCorpus::Knowledge)]
        );
        // Other corpora and `after` filter.
        assert!(
            store
                .outbox_pending(t, IndexCorpus::SlackMessages, 0, 100)
                .await
                .unwrap()
                .is_empty()
        );
        assert_eq!(
            store
                .outbox_pending(t, IndexCorpus::Knowledge, 1, 100)
                .await
                .unwrap()
                .len(),
            1
        );
        store
            .outbox_clear(t, IndexCorpus::Knowledge, 1)
            .await
            .unwrap();
        assert_eq!(
            store
                .index_applied_seq(t, IndexCorpus::Knowledge)
                .await
                .unwrap(),
            1
        );
        let left = store
            .outbox_pending(t, IndexCorpus::Knowledge, 0, 100)
            .await
            .unwrap();
        assert_eq!(left.len(), 1);
        assert_eq!(left[0].seq, 2);
        // The watermark never goes down.
        store
            .outbox_clear(t, IndexCorpus::Knowledge, 2)
            .await
            .unwrap();
        store
            .outbox_clear(t, IndexCorpus::Knowledge, 1)
            .await
            .unwrap();
        assert_eq!(
            store
                .index_applied_seq(t, IndexCorpus::Knowledge)
                .await
                .unwrap(),
            2
        );
        assert!(store.outbox_backlog().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_failed_transaction_leaves_neither_rows_nor_outbox_entries() {
        let (store, t) = store_with_tenant().await;
        let p = page(t, "a");
        let dup = page(t, "a");
        let err = store
            .transact(move |tx| {
                tx.insert(&p)?;
                tx.index_change(t, IndexCorpus::Knowledge, p.id)?;
                tx.insert(&dup)?; // same slug: unique violation
                Ok(())
            })
            .await
            .unwrap_err();
        assert!(matches!(err, StorageError::Conflict { .. }), "{err:?}");
        assert_eq!(store.count::<KnowledgePage>(Some(t)).await.unwrap(), 0);
        assert_eq!(store.outbox_last_seq().await.unwrap(), 0);
        assert!(store.outbox_backlog().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn sequences_are_global_and_tenants_are_separate() {
        let (store, a) = store_with_tenant().await;
        let b = store
            .create_tenant(Tenant::new("beta", "Beta"))
            .await
            .unwrap()
            .id;
        for t in [a, b, a] {
            store
                .transact(move |tx| tx.index_change(t, IndexCorpus::SlackMessages, Uuid::new_v4()))
                .await
                .unwrap();
        }
        let pa = store
            .outbox_pending(a, IndexCorpus::SlackMessages, 0, 10)
            .await
            .unwrap();
        let pb = store
            .outbox_pending(b, IndexCorpus::SlackMessages, 0, 10)
            .await
            .unwrap();
        assert_eq!(pa.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(pb.iter().map(|e| e.seq).collect::<Vec<_>>(), vec![2]);
        let mut backlog = store.outbox_backlog().await.unwrap();
        backlog.sort();
        let mut want = vec![
            (a, IndexCorpus::SlackMessages),
            (b, IndexCorpus::SlackMessages),
        ];
        want.sort();
        assert_eq!(backlog, want);
        // Deleting a tenant removes its outbox and state rows.
        store
            .outbox_clear(b, IndexCorpus::SlackMessages, 2)
            .await
            .unwrap();
        store.delete_tenant(b).await.unwrap();
        assert_eq!(
            store.outbox_backlog().await.unwrap(),
            vec![(a, IndexCorpus::SlackMessages)]
        );
        assert_eq!(
            store
                .index_applied_seq(b, IndexCorpus::SlackMessages)
                .await
                .unwrap(),
            0
        );
    }

    #[tokio::test]
    async fn tx_reads_see_its_own_writes() {
        let (store, t) = store_with_tenant().await;
        let p = page(t, "a");
        let c = chunk(&p, 0);
        let (n, _) = store
            .transact(move |tx| {
                tx.insert(&p)?;
                tx.insert(&c)?;
                let chunks: Vec<KnowledgeChunk> = tx.scan(
                    Some(t),
                    Scan::index(KnowledgeChunk::PAGE_CHUNK_KEY, key().uuid(p.id)),
                )?;
                let mut again = p.clone();
                again.title = "renamed".into();
                tx.upsert(&again)?;
                assert!(tx.delete::<KnowledgeChunk>(Some(t), key().uuid(c.id))?);
                Ok(chunks.len())
            })
            .await
            .unwrap();
        assert_eq!(n, 1);
        let pages: Vec<KnowledgePage> = store.scan(Some(t), Scan::all()).await.unwrap();
        assert_eq!(pages[0].title, "renamed");
        assert_eq!(store.count::<KnowledgeChunk>(Some(t)).await.unwrap(), 0);
    }
}

//! The redb implementation of the store traits: one file, blocking work on
//! tokio's blocking pool, every commit durable (`Durability::Immediate`)
//! before the call returns. No transaction ever lives across an `.await`:
//! each call opens, uses and commits its transaction inside one closure.
//!
//! This module holds `RedbStore` itself (open, close, the shared handle) and
//! the entry points of the generic traits (`Store`, `IndexOutboxStore`,
//! `MigrationStore`); the machinery lives beside it: `writer` (the
//! group-commit writer thread, durable vs relaxed writes), `reads` (read
//! transactions on the blocking pool), `snapshot` (`Snapshot`, several
//! reads in one transaction) and `tenants` (`TenantStore`, `ApiKeyStore`).

mod disk;
mod reads;
mod snapshot;
mod tenants;
#[cfg(test)]
mod tests;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use redb::{Database, ReadableTable, ReadableTableMetadata};
use uuid::Uuid;

use crate::codec::{Ts, decode_row};
use crate::error::{StorageError, StorageResult};
use crate::index_outbox::{
    self, IndexCorpus, IndexOutboxEntry, IndexOutboxSeq, IndexOutboxStore, IndexState,
};
use crate::key::{Key, key};
use crate::migrations::{self, MIGRATIONS};
use crate::schema::SchemaMigration;
use crate::store::{MigrationStore, Store};
use crate::table::{self, Record, Scan, raw_table};

pub use self::disk::{DiskStats, TableDisk};
use self::reads::{find_unique_many_in, open_read, read_get};
pub use self::snapshot::Snapshot;
pub use self::writer::RELAXED_FLUSH_INTERVAL;
use self::writer::{Queued, writer_loop};

/// A redb-backed store. Cheap to clone (shared handle).
#[derive(Clone)]
pub struct RedbStore {
    inner: Arc<Inner>,
}

struct Inner {
    /// `None` once closed; ops hold the read lock for their transaction so
    /// `close()` waits for in-flight work, then drops (flushes) the file.
    db: std::sync::RwLock<Option<Database>>,
    path: PathBuf,
    /// Queue of the group-commit writer thread.
    writes: std::sync::mpsc::Sender<Queued>,
}

impl Inner {
    fn with_db<T>(&self, f: impl FnOnce(&Database) -> StorageResult<T>) -> StorageResult<T> {
        let guard = self.db.read().unwrap_or_else(|p| p.into_inner());
        match guard.as_ref() {
            Some(db) => f(db),
            None => Err(StorageError::Backend(format!(
                "database {} is closed",
                self.path.display()
            ))),
        }
    }
}

impl std::fmt::Debug for RedbStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedbStore")
            .field("path", &self.inner.path)
            .finish()
    }
}

/// redb's page cache unless the caller chooses (`ROOT_REDB_CACHE_MB`).
/// The kernel's page cache holds the file as well, so this cache only saves
/// the copy out of it; with redb's own default (1 GiB) a server with a
/// 100k-chunk tenant held most rows it had ever read twice and grew past
/// 650 MiB after 500 searches (548 MiB with 128 MiB, at 0.1–0.2 ms more per
/// search when the rows are not cached; issue 23).
pub const DEFAULT_CACHE_BYTES: usize = 128 << 20;

impl RedbStore {
    /// Open (or create) the database file. Fails with `AlreadyOpen` when
    /// another process holds it, `Backend` for I/O problems.
    pub fn open(path: &Path) -> StorageResult<Self> {
        Self::open_with_cache(path, DEFAULT_CACHE_BYTES)
    }

    /// [`open`](Self::open) with redb's page cache (its read cache and
    /// write buffer together) bounded to `cache_bytes`.
    pub fn open_with_cache(path: &Path, cache_bytes: usize) -> StorageResult<Self> {
        let db = Database::builder()
            .set_cache_size(cache_bytes)
            .create(path)
            .map_err(|e| match e {
                redb::DatabaseError::DatabaseAlreadyOpen => StorageError::AlreadyOpen {
                    path: path.display().to_string(),
                },
                other => StorageError::Backend(format!("cannot open {}: {other}", path.display())),
            })?;
        Ok(Self::from_database(db, path.to_path_buf()))
    }

    fn from_database(db: Database, path: PathBuf) -> Self {
        let (tx, rx) = std::sync::mpsc::channel::<Queued>();
        let inner = Arc::new(Inner {
            db: std::sync::RwLock::new(Some(db)),
            path,
            writes: tx,
        });
        let weak = Arc::downgrade(&inner);
        std::thread::Builder::new()
            .name("redb-writer".into())
            .spawn(move || writer_loop(weak, rx))
            .expect("spawn the storage writer thread");
        RedbStore { inner }
    }

    /// An in-memory database (tests).
    pub fn open_in_memory() -> StorageResult<Self> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(StorageError::backend)?;
        Ok(Self::from_database(db, PathBuf::from(":memory:")))
    }

    /// Run `f` on the open database on the caller's thread (blocking work:
    /// whole-file copies and exports; `close()` waits for it).
    pub(crate) fn with_db_blocking<T>(
        &self,
        f: impl FnOnce(&Database) -> StorageResult<T>,
    ) -> StorageResult<T> {
        self.inner.with_db(f)
    }

    /// Path of the database file.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Wait for in-flight transactions, then flush and close the file. Every
    /// later call fails with a `Backend("… is closed")` error; the file lock
    /// is released so another process may open it.
    pub async fn close(&self) {
        let inner = self.inner.clone();
        let _ = tokio::task::spawn_blocking(move || {
            let mut guard = inner.db.write().unwrap_or_else(|p| p.into_inner());
            // Make relaxed writes durable before the file is closed.
            if let Some(db) = guard.as_ref() {
                let flushed = db
                    .begin_write()
                    .map_err(|e| e.to_string())
                    .and_then(|w| w.commit().map_err(|e| e.to_string()));
                if let Err(e) = flushed {
                    tracing::warn!(error = %e, "final flush before close failed");
                }
            }
            guard.take();
        })
        .await;
    }
}

#[async_trait]
impl IndexOutboxStore for RedbStore {
    async fn outbox_pending(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        after: u64,
        limit: usize,
    ) -> StorageResult<Vec<IndexOutboxEntry>> {
        let scan = Scan::pk_prefix(key().u64(u64::from(corpus.code())))
            .between(Some(key().u64(after.saturating_add(1))), None)
            .limit(limit);
        self.scan::<IndexOutboxEntry>(Some(tenant), scan).await
    }

    async fn outbox_clear(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        upto: u64,
    ) -> StorageResult<()> {
        self.write(move |w| index_outbox::clear_in_write(w, tenant, corpus, upto))
            .await
    }

    async fn index_applied_seq(&self, tenant: Uuid, corpus: IndexCorpus) -> StorageResult<u64> {
        let pk = key().u64(u64::from(corpus.code()));
        Ok(self
            .get::<IndexState>(Some(tenant), pk)
            .await?
            .map_or(0, |s| s.applied_seq))
    }

    async fn outbox_last_seq(&self) -> StorageResult<u64> {
        Ok(self
            .get::<IndexOutboxSeq>(None, key().u64(0))
            .await?
            .map_or(0, |s| s.last_seq))
    }

    async fn outbox_backlog(&self) -> StorageResult<Vec<(Uuid, IndexCorpus)>> {
        self.read(|r| {
            let Some(t) = open_read(r, IndexOutboxEntry::DEF.name)? else {
                return Ok(Vec::new());
            };
            // Skip from one (tenant, corpus) group to the next instead of
            // walking every entry: keys are tenant(16) + corpus(8) + seq.
            let mut out = Vec::new();
            let mut from: Vec<u8> = Vec::new();
            loop {
                let Some(item) = t.range::<&[u8]>(from.as_slice()..)?.next() else {
                    break;
                };
                let (_, v) = item?;
                let e: IndexOutboxEntry = decode_row(
                    IndexOutboxEntry::DEF.name,
                    IndexOutboxEntry::VERSION,
                    v.value(),
                )?;
                out.push((e.tenant_id, e.corpus));
                let group = table::full_pk::<IndexOutboxEntry>(
                    Some(e.tenant_id),
                    &key().u64(u64::from(e.corpus.code())),
                )?;
                match Key(group).prefix_end() {
                    Some(end) => from = end,
                    None => break,
                }
            }
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl Store for RedbStore {
    async fn insert<R: Record>(&self, row: R) -> StorageResult<R> {
        self.write(move |w| {
            table::insert(w, &row)?;
            Ok(row)
        })
        .await
    }

    async fn insert_many<R: Record>(&self, rows: Vec<R>) -> StorageResult<usize> {
        self.write(move |w| {
            for row in &rows {
                table::insert(w, row)?;
            }
            Ok(rows.len())
        })
        .await
    }

    async fn update<R: Record>(&self, row: R) -> StorageResult<R> {
        self.write(move |w| {
            table::update(w, &row)?;
            Ok(row)
        })
        .await
    }

    async fn delete<R: Record>(&self, tenant: Option<Uuid>, pk: Key) -> StorageResult<bool> {
        let full = table::full_pk::<R>(tenant, &pk)?;
        self.write(move |w| table::delete::<R>(w, &full)).await
    }

    async fn get<R: Record>(&self, tenant: Option<Uuid>, pk: Key) -> StorageResult<Option<R>> {
        let full = table::full_pk::<R>(tenant, &pk)?;
        self.read(move |r| read_get::<R>(r, &full)).await
    }

    async fn find_unique<R: Record>(
        &self,
        tenant: Option<Uuid>,
        constraint: &'static str,
        key: Key,
    ) -> StorageResult<Option<R>> {
        if !R::DEF.indexes.iter().any(|i| i.name == constraint) {
            return Err(StorageError::Backend(format!(
                "{} has no constraint {constraint}",
                R::DEF.name
            )));
        }
        let mut k = table::scan_prefix::<R>(tenant, Some(constraint))?;
        k.extend_from_slice(key.as_bytes());
        self.read(move |r| {
            let Some(ix) = open_read(r, constraint)? else {
                return Ok(None);
            };
            let Some(pk) = ix.get(k.as_slice())? else {
                return Ok(None);
            };
            read_get::<R>(r, pk.value())
        })
        .await
    }

    async fn get_many<R: Record>(
        &self,
        tenant: Option<Uuid>,
        pks: Vec<Key>,
    ) -> StorageResult<Vec<Option<R>>> {
        let full = pks
            .iter()
            .map(|pk| table::full_pk::<R>(tenant, pk))
            .collect::<StorageResult<Vec<_>>>()?;
        self.read(move |r| {
            let Some(t) = open_read(r, R::DEF.name)? else {
                return Ok(full.iter().map(|_| None).collect());
            };
            full.iter()
                .map(|pk| {
                    t.get(pk.as_slice())?
                        .map(|g| decode_row(R::DEF.name, R::VERSION, g.value()))
                        .transpose()
                })
                .collect()
        })
        .await
    }

    async fn find_unique_many<R: Record>(
        &self,
        tenant: Option<Uuid>,
        constraint: &'static str,
        keys: Vec<Key>,
    ) -> StorageResult<Vec<Option<R>>> {
        self.read(move |r| {
            find_unique_many_in::<R, R>(r, tenant, constraint, &keys, |b| {
                decode_row(R::DEF.name, R::VERSION, b)
            })
        })
        .await
    }

    async fn scan<R: Record>(&self, tenant: Option<Uuid>, scan: Scan) -> StorageResult<Vec<R>> {
        let prefix = table::scan_prefix::<R>(tenant, scan.index)?;
        self.read(move |r| {
            let Some(rows) = open_read(r, R::DEF.name)? else {
                return Ok(Vec::new());
            };
            match scan.index {
                Some(name) => match open_read(r, name)? {
                    Some(ix) => table::scan::<R, _, _>(Some(&ix), &rows, &prefix, &scan),
                    None => Ok(Vec::new()),
                },
                None => table::scan::<R, redb::ReadOnlyTable<&'static [u8], &'static [u8]>, _>(
                    None, &rows, &prefix, &scan,
                ),
            }
        })
        .await
    }

    async fn count<R: Record>(&self, tenant: Option<Uuid>) -> StorageResult<u64> {
        let prefix = table::scan_prefix::<R>(tenant, None)?;
        self.read(move |r| {
            let Some(t) = open_read(r, R::DEF.name)? else {
                return Ok(0);
            };
            if prefix.is_empty() {
                return Ok(t.len()?);
            }
            let p = Key(prefix);
            let range = match p.prefix_end() {
                Some(end) => t.range::<&[u8]>(p.as_bytes()..end.as_slice())?,
                None => t.range::<&[u8]>(p.as_bytes()..)?,
            };
            let mut n = 0u64;
            for item in range {
                item?;
                n += 1;
            }
            Ok(n)
        })
        .await
    }

    async fn ping(&self) -> StorageResult<()> {
        self.read(|r| {
            open_read(r, "schema_migrations")?;
            Ok(())
        })
        .await
    }
}

#[async_trait]
impl MigrationStore for RedbStore {
    async fn migrate(&self) -> StorageResult<Vec<SchemaMigration>> {
        self.write(|w| {
            migrations::ensure_tables(w)?;
            let applied: Vec<SchemaMigration> = {
                let t = w.open_table(raw_table("schema_migrations"))?;
                let mut out = Vec::new();
                for item in t.iter()? {
                    let (_, v) = item?;
                    out.push(decode_row(
                        SchemaMigration::DEF.name,
                        SchemaMigration::VERSION,
                        v.value(),
                    )?);
                }
                out
            };
            let found = applied.iter().map(|m| m.version).max().unwrap_or(0);
            let known = migrations::latest_version();
            if found > known {
                return Err(StorageError::NewerSchema { found, known });
            }
            let mut now_applied = Vec::new();
            for m in MIGRATIONS {
                if applied.iter().any(|a| a.version == m.version) {
                    continue;
                }
                (m.apply)(w)?;
                let rec = SchemaMigration {
                    version: m.version,
                    name: m.name.to_string(),
                    applied_at: Ts::now(),
                };
                table::insert(w, &rec)?;
                tracing::info!(version = m.version, name = m.name, "applied migration");
                now_applied.push(rec);
            }
            Ok(now_applied)
        })
        .await
    }

    async fn applied_migrations(&self) -> StorageResult<Vec<SchemaMigration>> {
        self.scan::<SchemaMigration>(None, Scan::all()).await
    }
}

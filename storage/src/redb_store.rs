//! The redb implementation of the store traits: one file, blocking work on
//! tokio's blocking pool, every commit durable (`Durability::Immediate`)
//! before the call returns. No transaction ever lives across an `.await`:
//! each call opens, uses and commits its transaction inside one closure.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use redb::{
    Database, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    WriteTransaction,
};
use uuid::Uuid;

use crate::codec::{Ts, decode_row};
use crate::error::{StorageError, StorageResult};
use crate::index_outbox::{
    self, IndexCorpus, IndexOutboxEntry, IndexOutboxSeq, IndexOutboxStore, IndexState, Tx,
};
use crate::key::{Key, key};
use crate::migrations::{self, MIGRATIONS};
use crate::schema::{SchemaMigration, Tenant, TenantApiKey};
use crate::store::{ApiKeyStore, MigrationStore, Store, TenantStore};
use crate::table::{self, Projection, Record, Scan, Scope, raw_table};

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

/// A write: runs in its own (non-durable) transaction on the writer thread
/// and returns whether to commit it, plus what to tell the caller once the
/// group's durable flush is done (`Some(error)` if the flush failed).
type WriteOp = Box<dyn FnOnce(&WriteTransaction) -> (bool, Finisher) + Send>;
type Finisher = Box<dyn FnOnce(Option<String>) + Send>;

/// A write on its way to the writer thread.
struct Queued {
    op: WriteOp,
    /// Acknowledge after the (non-durable) commit instead of after the
    /// durable flush; see [`RedbStore::insert_relaxed`].
    relaxed: bool,
}

/// Most writes folded into one durable flush.
const MAX_GROUP: usize = 512;

/// Longest time a relaxed write stays non-durable: the writer flushes when
/// it has been idle this long, or after a batch once this much time passed
/// since the first unflushed relaxed commit.
pub const RELAXED_FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(500);

/// One durable (empty) commit: makes every earlier non-durable commit durable.
fn flush_durable(inner: &Inner) -> Result<(), String> {
    inner
        .with_db(|db| {
            db.begin_write()
                .map_err(StorageError::backend)?
                .commit()
                .map_err(StorageError::backend)
        })
        .map_err(|e| e.to_string())
}

/// The group-commit writer. redb allows one writer at a time and every
/// durable commit pays an fsync; so each write commits with
/// `Durability::None` (atomic, isolated, cheap) and a batch of them is made
/// durable by one `Durability::Immediate` commit before any caller hears
/// back. Concurrent writers share one fsync; a lone writer pays one, as before.
///
/// Relaxed writes (metering, traces, hook bookkeeping) are acknowledged as
/// soon as their transaction commits — visible to readers at once — and
/// become durable with the next flush: the next durable group, or at the
/// latest [`RELAXED_FLUSH_INTERVAL`] later. A crash can lose only relaxed
/// writes of that window.
fn writer_loop(inner: std::sync::Weak<Inner>, rx: std::sync::mpsc::Receiver<Queued>) {
    use std::sync::mpsc::RecvTimeoutError;
    // When the oldest relaxed commit not yet durable was made.
    let mut dirty_since: Option<std::time::Instant> = None;
    loop {
        let first = if dirty_since.is_some() {
            match rx.recv_timeout(RELAXED_FLUSH_INTERVAL) {
                Ok(q) => q,
                Err(RecvTimeoutError::Timeout) => {
                    if let Some(inner) = inner.upgrade()
                        && let Err(e) = flush_durable(&inner)
                    {
                        tracing::warn!(error = %e, "flushing relaxed writes failed");
                    }
                    dirty_since = None;
                    continue;
                }
                Err(RecvTimeoutError::Disconnected) => {
                    if let Some(inner) = inner.upgrade() {
                        let _ = flush_durable(&inner);
                    }
                    return;
                }
            }
        } else {
            match rx.recv() {
                Ok(q) => q,
                Err(_) => return,
            }
        };
        let mut batch = vec![first];
        while batch.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(op) => batch.push(op),
                Err(_) => break,
            }
        }
        let Some(inner) = inner.upgrade() else { return };
        let outcome = inner.with_db(|db| {
            let mut committed: Vec<Finisher> = Vec::with_capacity(batch.len());
            let mut relaxed_committed = false;
            for Queued { op, relaxed } in batch.drain(..) {
                let mut w = match db.begin_write() {
                    Ok(w) => w,
                    Err(e) => {
                        let msg = e.to_string();
                        // The op never ran; fail it without running it.
                        drop(op);
                        tracing::error!(error = %msg, "cannot begin write transaction");
                        continue;
                    }
                };
                if let Err(e) = w.set_durability(redb::Durability::None) {
                    tracing::error!(error = %e, "cannot relax durability; committing durably");
                }
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| op(&w)));
                let Ok((ok, fin)) = ran else {
                    // A bug in a write closure must not take the writer down.
                    tracing::error!("a storage write panicked; its transaction was aborted");
                    drop(w);
                    continue;
                };
                if !ok {
                    drop(w); // abort: nothing of this op is kept
                    fin(None);
                    continue;
                }
                match w.commit() {
                    Ok(()) if relaxed => {
                        relaxed_committed = true;
                        fin(None);
                    }
                    Ok(()) => committed.push(fin),
                    Err(e) => fin(Some(e.to_string())),
                }
            }
            if relaxed_committed && dirty_since.is_none() {
                dirty_since = Some(std::time::Instant::now());
            }
            let overdue = dirty_since.is_some_and(|t| t.elapsed() >= RELAXED_FLUSH_INTERVAL);
            if committed.is_empty() && !overdue {
                return Ok(());
            }
            let flushed = db
                .begin_write()
                .map_err(|e| e.to_string())
                .and_then(|w| w.commit().map_err(|e| e.to_string()));
            if flushed.is_ok() {
                dirty_since = None;
            }
            let err = flushed.err();
            tracing::trace!(ops = committed.len(), "group commit");
            for fin in committed {
                fin(err.clone());
            }
            Ok(())
        });
        if let Err(e) = outcome {
            // Closed: fail every op of this batch (they were not run).
            tracing::debug!(error = %e, "write after close");
            for op in batch {
                drop(op);
            }
        }
    }
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

impl RedbStore {
    /// Open (or create) the database file. Fails with `AlreadyOpen` when
    /// another process holds it, `Backend` for I/O problems.
    pub fn open(path: &Path) -> StorageResult<Self> {
        let db = Database::create(path).map_err(|e| match e {
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

    /// Run `f` in one durable write transaction on the writer thread.
    pub(crate) async fn write<T, F>(&self, f: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteTransaction) -> StorageResult<T> + Send + 'static,
    {
        self.write_with(false, f).await
    }

    /// Insert a row whose loss in a crash is tolerable (metering, traces):
    /// the call returns once the row is committed and visible, without
    /// waiting for the disk; it is durable at the latest
    /// [`RELAXED_FLUSH_INTERVAL`] later. Constraints are checked as usual.
    pub async fn insert_relaxed<R: Record>(&self, row: R) -> StorageResult<R> {
        self.write_with(true, move |w| {
            table::insert(w, &row)?;
            Ok(row)
        })
        .await
    }

    /// [`RedbStore::transact`] with relaxed durability (see
    /// [`RedbStore::insert_relaxed`]).
    pub async fn transact_relaxed<T, F>(&self, f: F) -> StorageResult<(T, Option<u64>)>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> StorageResult<T> + Send + 'static,
    {
        self.write_with(true, move |w| {
            let mut tx = Tx { w, last_seq: None };
            let value = f(&mut tx)?;
            Ok((value, tx.last_seq))
        })
        .await
    }

    async fn write_with<T, F>(&self, relaxed: bool, f: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&WriteTransaction) -> StorageResult<T> + Send + 'static,
    {
        let (tx, rx) = tokio::sync::oneshot::channel::<StorageResult<T>>();
        let op: WriteOp = Box::new(move |w: &WriteTransaction| match f(w) {
            Ok(value) => {
                let fin: Finisher = Box::new(move |flush_err| {
                    let _ = tx.send(match flush_err {
                        None => Ok(value),
                        Some(e) => Err(StorageError::Backend(format!("commit failed: {e}"))),
                    });
                });
                (true, fin)
            }
            Err(e) => {
                let fin: Finisher = Box::new(move |_| {
                    let _ = tx.send(Err(e));
                });
                (false, fin)
            }
        });
        self.inner
            .writes
            .send(Queued { op, relaxed })
            .map_err(|_| StorageError::Backend("storage writer stopped".into()))?;
        match rx.await {
            Ok(result) => result,
            // The op was dropped unrun (store closed, transaction could not
            // begin) or panicked.
            Err(_) => Err(StorageError::Backend(format!(
                "write to {} failed: closed, not writable, or aborted",
                self.inner.path.display()
            ))),
        }
    }

    /// Run `f` in one durable multi-table write transaction (rows plus their
    /// index outbox entries). `f` runs on the writer thread: keep it to
    /// storage work (no I/O, no waiting). Returns `f`'s value and the highest
    /// index outbox sequence it recorded.
    pub async fn transact<T, F>(&self, f: F) -> StorageResult<(T, Option<u64>)>
    where
        T: Send + 'static,
        F: FnOnce(&mut Tx<'_>) -> StorageResult<T> + Send + 'static,
    {
        self.write(move |w| {
            let mut tx = Tx { w, last_seq: None };
            let value = f(&mut tx)?;
            Ok((value, tx.last_seq))
        })
        .await
    }

    /// Run `f` in one read transaction on the blocking pool.
    /// Run `f` over one consistent read snapshot on the blocking pool: several
    /// dependent reads (rows, then rows they point at) cost one hop and see
    /// the same committed state.
    pub async fn snapshot<T, F>(&self, f: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&Snapshot<'_>) -> StorageResult<T> + Send + 'static,
    {
        self.read(move |r| f(&Snapshot { r })).await
    }

    /// [`snapshot`](Self::snapshot) on the caller's thread, for work that is
    /// already in a blocking section — the blocking pool or
    /// `tokio::task::block_in_place` (a search reads its rows right after its
    /// lanes, without another hand-off). Never call it from plain async code.
    pub fn snapshot_blocking<T>(
        &self,
        f: impl FnOnce(&Snapshot<'_>) -> StorageResult<T>,
    ) -> StorageResult<T> {
        self.inner.with_db(|db| {
            let r = db.begin_read()?;
            f(&Snapshot { r: &r })
        })
    }

    pub(crate) async fn read<T, F>(&self, f: F) -> StorageResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&ReadTransaction) -> StorageResult<T> + Send + 'static,
    {
        let inner = self.inner.clone();
        run_blocking(move || {
            inner.with_db(|db| {
                let r = db.begin_read()?;
                f(&r)
            })
        })
        .await
    }
}

/// One read transaction (see [`RedbStore::snapshot`]). Same tenant rules as
/// [`Store`]: tenant-scoped tables need `Some(tenant)`.
pub struct Snapshot<'a> {
    r: &'a ReadTransaction,
}

impl Snapshot<'_> {
    /// Rows by local pk (same order, `None` where absent).
    pub fn get_many<R: Record>(
        &self,
        tenant: Option<Uuid>,
        pks: &[Key],
    ) -> StorageResult<Vec<Option<R>>> {
        self.get_many_with::<R, R>(tenant, pks, |b| decode_row(R::DEF.name, R::VERSION, b))
    }

    /// [`get_many`](Self::get_many) decoded as the projection `P`.
    pub fn get_many_projected<P: Projection>(
        &self,
        tenant: Option<Uuid>,
        pks: &[Key],
    ) -> StorageResult<Vec<Option<P>>> {
        self.get_many_with::<P::Of, P>(tenant, pks, P::decode)
    }

    fn get_many_with<R: Record, T>(
        &self,
        tenant: Option<Uuid>,
        pks: &[Key],
        decode: impl Fn(&[u8]) -> StorageResult<T>,
    ) -> StorageResult<Vec<Option<T>>> {
        let Some(t) = open_read(self.r, R::DEF.name)? else {
            return Ok(pks.iter().map(|_| None).collect());
        };
        pks.iter()
            .map(|pk| {
                let full = table::full_pk::<R>(tenant, pk)?;
                t.get(full.as_slice())?
                    .map(|g| decode(g.value()))
                    .transpose()
            })
            .collect()
    }

    /// A [`Scan`] of `P::Of` decoded as the projection `P`, keeping only
    /// the rows `keep` accepts (`scan.limit` counts kept rows, so a filter
    /// on a column no index covers still stops at the limit).
    pub fn scan_projected<P: Projection>(
        &self,
        tenant: Option<Uuid>,
        scan: &Scan,
        keep: impl FnMut(&P) -> bool,
    ) -> StorageResult<Vec<P>> {
        let prefix = table::scan_prefix::<P::Of>(tenant, scan.index)?;
        let Some(rows) = open_read(self.r, <P::Of as Record>::DEF.name)? else {
            return Ok(Vec::new());
        };
        match scan.index {
            Some(name) => match open_read(self.r, name)? {
                Some(ix) => table::scan_with::<P::Of, P, _, _>(
                    Some(&ix),
                    &rows,
                    &prefix,
                    scan,
                    P::decode,
                    keep,
                ),
                None => Ok(Vec::new()),
            },
            None => table::scan_with::<
                P::Of,
                P,
                redb::ReadOnlyTable<&'static [u8], &'static [u8]>,
                _,
            >(None, &rows, &prefix, scan, P::decode, keep),
        }
    }

    /// Rows through one UNIQUE constraint (same order, `None` where absent).
    pub fn find_unique_many<R: Record>(
        &self,
        tenant: Option<Uuid>,
        constraint: &'static str,
        keys: &[Key],
    ) -> StorageResult<Vec<Option<R>>> {
        find_unique_many_in::<R, R>(self.r, tenant, constraint, keys, |b| {
            decode_row(R::DEF.name, R::VERSION, b)
        })
    }

    /// [`find_unique_many`](Self::find_unique_many) decoded as the projection `P`.
    pub fn find_unique_many_projected<P: Projection>(
        &self,
        tenant: Option<Uuid>,
        constraint: &'static str,
        keys: &[Key],
    ) -> StorageResult<Vec<Option<P>>> {
        find_unique_many_in::<P::Of, P>(self.r, tenant, constraint, keys, P::decode)
    }
}

fn find_unique_many_in<R: Record, T>(
    r: &ReadTransaction,
    tenant: Option<Uuid>,
    constraint: &'static str,
    keys: &[Key],
    decode: impl Fn(&[u8]) -> StorageResult<T>,
) -> StorageResult<Vec<Option<T>>> {
    if !R::DEF.indexes.iter().any(|i| i.name == constraint) {
        return Err(StorageError::Backend(format!(
            "{} has no constraint {constraint}",
            R::DEF.name
        )));
    }
    let prefix = table::scan_prefix::<R>(tenant, Some(constraint))?;
    let (Some(ix), Some(rows)) = (open_read(r, constraint)?, open_read(r, R::DEF.name)?) else {
        return Ok(keys.iter().map(|_| None).collect());
    };
    keys.iter()
        .map(|k| {
            let full = [prefix.as_slice(), k.as_bytes()].concat();
            let Some(pk) = ix.get(full.as_slice())? else {
                return Ok(None);
            };
            rows.get(pk.value())?.map(|g| decode(g.value())).transpose()
        })
        .collect()
}

async fn run_blocking<T, F>(f: F) -> StorageResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> StorageResult<T> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StorageError::Backend(format!("storage task failed: {e}")))?
}

/// Open a table for reading; a table that does not exist yet reads as empty.
fn open_read(
    r: &ReadTransaction,
    name: &str,
) -> StorageResult<Option<redb::ReadOnlyTable<&'static [u8], &'static [u8]>>> {
    match r.open_table(raw_table(name)) {
        Ok(t) => Ok(Some(t)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn read_get<R: Record>(r: &ReadTransaction, pk: &[u8]) -> StorageResult<Option<R>> {
    let Some(t) = open_read(r, R::DEF.name)? else {
        return Ok(None);
    };
    t.get(pk)?
        .map(|g| decode_row(R::DEF.name, R::VERSION, g.value()))
        .transpose()
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

/// Fields of the agent identity mirrored across a live/dev pair (§1.1).
const MIRRORED_SETTINGS: &[&str] = &["persona", "agent_character"];

fn mirror_identity(from: &Tenant, to: &mut Tenant) {
    to.agent_name = from.agent_name.clone();
    let src = from.settings.0.as_object();
    if !to.settings.0.is_object() {
        to.settings = crate::codec::Json::empty_object();
    }
    if let Some(dst) = to.settings.0.as_object_mut() {
        for k in MIRRORED_SETTINGS {
            match src.and_then(|s| s.get(*k)) {
                Some(v) => {
                    dst.insert((*k).to_string(), v.clone());
                }
                None => {
                    dst.remove(*k);
                }
            }
        }
    }
    to.updated_at = Ts::now();
}

fn tenant_pk(id: Uuid) -> Vec<u8> {
    key().uuid(id).0
}

fn shadow_in_write(w: &WriteTransaction, live_id: Uuid) -> StorageResult<Option<Tenant>> {
    let pk = {
        let ix = w.open_table(raw_table(Tenant::LIVE_TENANT_KEY))?;
        let found = ix.get(key().uuid(live_id).as_bytes())?;
        found.map(|g| g.value().to_vec())
    };
    match pk {
        Some(pk) => table::get_in_write::<Tenant>(w, &pk),
        None => Ok(None),
    }
}

#[async_trait]
impl TenantStore for RedbStore {
    async fn create_tenant(&self, tenant: Tenant) -> StorageResult<Tenant> {
        self.insert(tenant).await
    }

    async fn tenant_by_slug(&self, slug: &str) -> StorageResult<Option<Tenant>> {
        self.find_unique::<Tenant>(None, Tenant::SLUG_KEY, key().str(slug))
            .await
    }

    async fn tenant_by_id(&self, id: Uuid) -> StorageResult<Option<Tenant>> {
        self.get::<Tenant>(None, key().uuid(id)).await
    }

    async fn dev_shadow_of(&self, live_id: Uuid) -> StorageResult<Option<Tenant>> {
        self.find_unique::<Tenant>(None, Tenant::LIVE_TENANT_KEY, key().uuid(live_id))
            .await
    }

    async fn ensure_dev_shadow(&self, live_id: Uuid) -> StorageResult<Tenant> {
        self.write(move |w| {
            let live = table::get_in_write::<Tenant>(w, &tenant_pk(live_id))?
                .ok_or(StorageError::NotFound { table: "tenants" })?;
            if live.live_tenant_id.is_some() {
                return Err(StorageError::Check {
                    column: "tenants.live_tenant_id",
                    message: format!("{} is itself a dev shadow", live.slug),
                });
            }
            if let Some(existing) = shadow_in_write(w, live_id)? {
                return Ok(existing);
            }
            let mut shadow = Tenant::new(live.dev_slug(), format!("{} (dev)", live.display_name));
            shadow.environment = crate::enums::Environment::Dev;
            shadow.live_tenant_id = Some(live.id);
            shadow.timezone = live.timezone.clone();
            shadow.status = live.status;
            mirror_identity(&live, &mut shadow);
            table::insert(w, &shadow)?;
            Ok(shadow)
        })
        .await
    }

    async fn save_tenant(&self, tenant: Tenant) -> StorageResult<Tenant> {
        self.write(move |w| {
            table::update(w, &tenant)?;
            let pair = match tenant.live_tenant_id {
                Some(live) => table::get_in_write::<Tenant>(w, &tenant_pk(live))?,
                None => shadow_in_write(w, tenant.id)?,
            };
            if let Some(mut pair) = pair {
                mirror_identity(&tenant, &mut pair);
                table::update(w, &pair)?;
            }
            Ok(tenant)
        })
        .await
    }

    async fn list_tenants(&self) -> StorageResult<Vec<Tenant>> {
        self.scan::<Tenant>(None, Scan::index(Tenant::SLUG_KEY, Key::default()))
            .await
    }

    async fn delete_tenant(&self, id: Uuid) -> StorageResult<bool> {
        self.delete::<Tenant>(None, key().uuid(id)).await
    }

    async fn tenant_row_counts(&self, tenant: Uuid) -> StorageResult<Vec<(&'static str, u64)>> {
        self.read(move |r| {
            let prefix = Key(tenant.as_bytes().to_vec());
            let end = prefix.prefix_end();
            let mut out = Vec::new();
            for t in crate::schema::all_tables() {
                let def = t.def();
                if def.scope != Scope::Tenant {
                    continue;
                }
                let mut n = 0u64;
                if let Some(tbl) = open_read(r, def.name)? {
                    let range = match &end {
                        Some(end) => tbl.range::<&[u8]>(prefix.as_bytes()..end.as_slice())?,
                        None => tbl.range::<&[u8]>(prefix.as_bytes()..)?,
                    };
                    for item in range {
                        item?;
                        n += 1;
                    }
                }
                out.push((def.name, n));
            }
            Ok(out)
        })
        .await
    }
}

#[async_trait]
impl ApiKeyStore for RedbStore {
    async fn api_key_by_hash(&self, token_hash: &str) -> StorageResult<Option<TenantApiKey>> {
        self.find_unique::<TenantApiKey>(None, TenantApiKey::TOKEN_HASH_KEY, key().str(token_hash))
            .await
    }

    async fn revoke_api_key(&self, tenant: Uuid, id: Uuid) -> StorageResult<bool> {
        self.write(move |w| {
            let pk = table::full_pk::<TenantApiKey>(Some(tenant), &key().uuid(id))?;
            let Some(mut k) = table::get_in_write::<TenantApiKey>(w, &pk)? else {
                return Ok(false);
            };
            if k.revoked_at.is_none() {
                k.revoked_at = Some(Ts::now());
                table::update(w, &k)?;
            }
            Ok(true)
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

#[cfg(test)]
mod tests {
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
            assert_eq!(
                s,
                &KnowledgePageSummary {
                    id: p.id,
                    slug: p.slug.clone(),
                    title: p.title.clone(),
                    source_url: p.source_url.clone(),
                    author_name: p.author_name.clone(),
                    author_member_id: p.author_member_id.clone(),
                    knowledge_date: p.knowledge_date.clone(),
                    source_type: p.source_type.clone(),
                    public_id: p.public_id.clone(),
                    is_public: p.is_public,
                    created_at: p.created_at,
                    updated_at: p.updated_at,
                }
            );
        }
        assert_eq!(kept.len(), 2);
        assert!(
            kept.iter()
                .all(|p| p.author_member_id.as_deref() == Some("b"))
        );
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
}

//! Per-tenant index registry: opens each tenant's [`CorpusIndex`] under
//! `ROOT_DATA_DIR/index/<tenant>/<corpus>/` on first use, rebuilds it from
//! redb when its files are missing, corrupt or behind, replays the outbox,
//! and runs one writer task per open index that applies outbox batches.
//!
//! Writer loop (GUIDE §4): wake on a commit → read up to
//! [`APPLY_BATCH`] outbox entries → load their rows in one read → apply to
//! both lanes and commit the keyword lane (one tantivy commit per batch, so
//! batches grow by themselves under load) → publish the applied sequence to
//! waiters. The vector lane and key map are snapshotted when
//! [`SNAPSHOT_INTERVAL`] has passed or [`SNAPSHOT_EVERY_CHANGES`] changes
//! piled up, and on shutdown; only then is the outbox cleared up to the
//! snapshot's sequence.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use index::corpus::{CorpusIndex, Opened};
use index::vector::VectorConfig;
use storage::{IndexCorpus, IndexOutboxStore, RedbStore};
use tokio::sync::{Notify, OnceCell, watch};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use uuid::Uuid;

use super::docs;
pub use super::params::{APPLY_BATCH, REBUILD_PAGE, SNAPSHOT_EVERY_CHANGES, SNAPSHOT_INTERVAL};

/// Errors of the registry.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    /// Storage failed.
    #[error(transparent)]
    Storage(#[from] storage::StorageError),
    /// Index files failed.
    #[error(transparent)]
    Corpus(#[from] index::corpus::CorpusError),
    /// The index did not catch up in time.
    #[error("index for {0:?} did not catch up within {1:?}")]
    Timeout(IndexCorpus, Duration),
    /// The registry is shutting down.
    #[error("index registry is shut down")]
    Closed,
    /// The tenant is being (or was) deleted: its indexes are not opened
    /// again, so no late request or job re-creates its files.
    #[error("the tenant {0} is deleted; its search indexes are closed")]
    Retired(Uuid),
    /// A blocking task panicked.
    #[error("index task failed: {0}")]
    Task(String),
}

/// One open index and its writer's progress.
pub struct CorpusHandle {
    /// Owning tenant.
    pub tenant: Uuid,
    /// Which corpus.
    pub corpus: IndexCorpus,
    /// The index pair (searches use it directly).
    pub index: Arc<CorpusIndex>,
    wake: Notify,
    applied: watch::Sender<u64>,
    /// Stops this writer (child of the registry's shutdown token).
    stop: CancellationToken,
    /// Set when the tenant is deleted: stop without flushing.
    discard: AtomicBool,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl CorpusHandle {
    /// Highest outbox sequence visible to searches.
    pub fn applied_seq(&self) -> u64 {
        *self.applied.borrow()
    }
}

type Slot = Arc<OnceCell<Arc<CorpusHandle>>>;

/// `data_dir/index`: every tenant's search index files (derived from redb).
pub fn index_root(data_dir: &Path) -> PathBuf {
    data_dir.join("index")
}

/// `data_dir/index/<tenant>`: one tenant's index files, every corpus.
pub fn tenant_index_dir(data_dir: &Path, tenant: Uuid) -> PathBuf {
    index_root(data_dir).join(tenant.to_string())
}

/// `data_dir/index/<tenant>/<corpus>`: one index pair.
pub fn corpus_dir(data_dir: &Path, tenant: Uuid, corpus: IndexCorpus) -> PathBuf {
    tenant_index_dir(data_dir, tenant).join(corpus.dir_name())
}

/// The registry of open indexes. Cheap to clone.
#[derive(Clone)]
pub struct IndexRegistry {
    inner: Arc<Inner>,
}

struct Inner {
    root: PathBuf,
    store: RedbStore,
    vector_cfg: VectorConfig,
    model: String,
    open: Mutex<HashMap<(Uuid, IndexCorpus), Slot>>,
    /// Tenants being deleted (see [`IndexRegistry::retire`]). Locked only
    /// while `open` is held, so a slot is either created before a tenant is
    /// retired (and found by [`IndexRegistry::drop_tenant`]) or never.
    retired: Mutex<std::collections::HashSet<Uuid>>,
    shutdown: CancellationToken,
    tasks: TaskTracker,
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, IndexError> + Send + 'static,
) -> Result<T, IndexError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| IndexError::Task(e.to_string()))?
}

impl IndexRegistry {
    /// A registry over `data_dir/index`. `model` is the embedding model whose
    /// vectors enter the vector lanes.
    pub fn new(data_dir: &Path, store: RedbStore, model: impl Into<String>) -> Self {
        Self::with_config(data_dir, store, model, super::params::vector_config())
    }

    /// Like [`new`](Self::new) with explicit vector parameters (tests use
    /// small dimensions).
    pub fn with_config(
        data_dir: &Path,
        store: RedbStore,
        model: impl Into<String>,
        vector_cfg: VectorConfig,
    ) -> Self {
        IndexRegistry {
            inner: Arc::new(Inner {
                root: index_root(data_dir),
                store,
                vector_cfg,
                model: model.into(),
                open: Mutex::new(HashMap::new()),
                retired: Mutex::new(Default::default()),
                shutdown: CancellationToken::new(),
                tasks: TaskTracker::new(),
            }),
        }
    }

    /// The embedding model whose vectors are indexed.
    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The indexes open in this process, each with the outbox sequence its
    /// searches see (for `/health` diagnostics), sorted.
    pub fn open_indexes(&self) -> Vec<(Uuid, IndexCorpus, u64)> {
        let open = self.inner.open.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: Vec<_> = open
            .iter()
            .filter_map(|((t, c), slot)| slot.get().map(|h| (*t, *c, h.applied_seq())))
            .collect();
        out.sort();
        out
    }

    fn dir(&self, tenant: Uuid, corpus: IndexCorpus) -> PathBuf {
        self.inner
            .root
            .join(tenant.to_string())
            .join(corpus.dir_name())
    }

    /// The open index of `tenant`'s `corpus`, opening (and if needed
    /// rebuilding and replaying) it on first use.
    pub async fn get(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
    ) -> Result<Arc<CorpusHandle>, IndexError> {
        if self.inner.shutdown.is_cancelled() {
            return Err(IndexError::Closed);
        }
        let slot: Slot = {
            let mut open = self.inner.open.lock().unwrap_or_else(|p| p.into_inner());
            if self.is_retired(tenant) {
                return Err(IndexError::Retired(tenant));
            }
            open.entry((tenant, corpus)).or_default().clone()
        };
        slot.get_or_try_init(|| self.open(tenant, corpus))
            .await
            .cloned()
    }

    async fn open(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
    ) -> Result<Arc<CorpusHandle>, IndexError> {
        let dir = self.dir(tenant, corpus);
        let cfg = self.inner.vector_cfg;
        let started = Instant::now();
        let (index, opened) = blocking(move || Ok(CorpusIndex::open(&dir, cfg)?)).await?;
        let index = Arc::new(index);
        let store = &self.inner.store;
        let recorded = store.index_applied_seq(tenant, corpus).await?;
        let start_seq = match opened {
            Opened::Loaded { snapshot_seq, .. } if snapshot_seq >= recorded => snapshot_seq,
            other => {
                let reason = match other {
                    Opened::Empty { reason } => reason,
                    Opened::Loaded { snapshot_seq, .. } => format!(
                        "files at sequence {snapshot_seq} are behind the recorded {recorded}"
                    ),
                };
                if recorded > 0 || !matches!(reason.as_str(), "no index files") {
                    tracing::warn!(%tenant, ?corpus, %reason, "rebuilding search index");
                }
                self.rebuild(tenant, corpus, &index).await?
            }
        };
        let (applied, _) = watch::channel(start_seq);
        let handle = Arc::new(CorpusHandle {
            tenant,
            corpus,
            index,
            wake: Notify::new(),
            applied,
            stop: self.inner.shutdown.child_token(),
            discard: AtomicBool::new(false),
            writer: Mutex::new(None),
        });
        // Replay anything after the snapshot before the first search sees it.
        let mut state = WriterState {
            applied: start_seq,
            snapshot_seq: start_seq,
            since_snapshot: 0,
            last_snapshot: Instant::now(),
        };
        self.drain(&handle, &mut state).await?;
        let me = self.clone();
        let h = handle.clone();
        let task = self
            .inner
            .tasks
            .spawn(async move { me.writer_loop(h, state).await });
        *handle.writer.lock().unwrap_or_else(|p| p.into_inner()) = Some(task);
        tracing::debug!(%tenant, ?corpus, docs = handle.index.len(), elapsed_ms = started.elapsed().as_millis() as u64, "search index open");
        Ok(handle)
    }

    /// Rebuild from redb: every change up to the sequence read first is
    /// covered by the scan; later ones are replayed from the outbox.
    async fn rebuild(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        index: &Arc<CorpusIndex>,
    ) -> Result<u64, IndexError> {
        let store = &self.inner.store;
        let seq = store.outbox_last_seq().await?;
        let idx = index.clone();
        blocking(move || Ok(idx.reset()?)).await?;
        let mut after = None;
        let mut n = 0usize;
        loop {
            let (changes, last) = docs::rebuild_page(
                store,
                tenant,
                corpus,
                after,
                REBUILD_PAGE,
                &self.inner.model,
            )
            .await?;
            n += changes.len();
            if !changes.is_empty() {
                let idx = index.clone();
                blocking(move || Ok(idx.apply(changes)?)).await?;
            }
            match last {
                Some(id) => after = Some(id),
                None => break,
            }
        }
        let idx = index.clone();
        blocking(move || {
            idx.commit(seq)?;
            idx.snapshot(seq)?;
            Ok(())
        })
        .await?;
        store.outbox_clear(tenant, corpus, seq).await?;
        tracing::info!(%tenant, ?corpus, docs = n, seq, "search index rebuilt");
        Ok(seq)
    }

    /// Apply every pending outbox entry (batch by batch).
    async fn drain(&self, h: &CorpusHandle, st: &mut WriterState) -> Result<(), IndexError> {
        let store = &self.inner.store;
        loop {
            let entries = store
                .outbox_pending(h.tenant, h.corpus, st.applied, APPLY_BATCH)
                .await?;
            let Some(last) = entries.last().map(|e| e.seq) else {
                return Ok(());
            };
            let mut rows: Vec<Uuid> = entries.iter().map(|e| e.row_id).collect();
            rows.sort_unstable();
            rows.dedup();
            let changes =
                docs::changes_for(store, h.tenant, h.corpus, &rows, &self.inner.model).await?;
            st.since_snapshot += changes.len();
            let idx = h.index.clone();
            blocking(move || {
                idx.apply(changes)?;
                idx.commit(last)?;
                Ok(())
            })
            .await?;
            st.applied = last;
            h.applied.send_replace(last);
            if st.since_snapshot >= SNAPSHOT_EVERY_CHANGES {
                self.snapshot(h, st).await?;
            }
        }
    }

    async fn snapshot(&self, h: &CorpusHandle, st: &mut WriterState) -> Result<(), IndexError> {
        if st.applied == st.snapshot_seq && st.since_snapshot == 0 {
            return Ok(());
        }
        let seq = st.applied;
        let idx = h.index.clone();
        blocking(move || Ok(idx.snapshot(seq)?)).await?;
        self.inner
            .store
            .outbox_clear(h.tenant, h.corpus, seq)
            .await?;
        st.snapshot_seq = seq;
        st.since_snapshot = 0;
        st.last_snapshot = Instant::now();
        Ok(())
    }

    async fn writer_loop(self, h: Arc<CorpusHandle>, mut st: WriterState) {
        let stop = h.stop.clone();
        loop {
            let dirty = st.since_snapshot > 0 || st.applied != st.snapshot_seq;
            let until_snapshot = SNAPSHOT_INTERVAL.saturating_sub(st.last_snapshot.elapsed());
            tokio::select! {
                _ = stop.cancelled() => break,
                _ = h.wake.notified() => {}
                _ = tokio::time::sleep(until_snapshot), if dirty => {}
            }
            let mut result = self.drain(&h, &mut st).await;
            if result.is_ok() && st.last_snapshot.elapsed() >= SNAPSHOT_INTERVAL {
                result = self.snapshot(&h, &mut st).await;
            }
            if let Err(e) = result {
                // The entries stay in the outbox; the next wake retries.
                tracing::error!(tenant = %h.tenant, corpus = ?h.corpus, error = %e, "index writer batch failed");
                tokio::select! {
                    _ = stop.cancelled() => break,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
                h.wake.notify_one();
            }
        }
        if h.discard.load(Ordering::SeqCst) {
            return;
        }
        // Shutdown: apply what is pending and persist, so the next start has
        // nothing to replay.
        let done = async {
            self.drain(&h, &mut st).await?;
            self.snapshot(&h, &mut st).await
        };
        if let Err(e) = done.await {
            tracing::warn!(tenant = %h.tenant, corpus = ?h.corpus, error = %e, "index flush at shutdown failed; the outbox will replay it");
        }
    }

    /// Tell the writer of `(tenant, corpus)` that the outbox has new entries
    /// (opens the index if needed).
    pub async fn notify(&self, tenant: Uuid, corpus: IndexCorpus) -> Result<(), IndexError> {
        self.get(tenant, corpus).await?.wake.notify_one();
        Ok(())
    }

    /// Wake the writer and wait until changes up to `seq` are searchable.
    pub async fn wait_applied(
        &self,
        tenant: Uuid,
        corpus: IndexCorpus,
        seq: u64,
        timeout: Duration,
    ) -> Result<(), IndexError> {
        let h = self.get(tenant, corpus).await?;
        h.wake.notify_one();
        let mut rx = h.applied.subscribe();
        match tokio::time::timeout(timeout, rx.wait_for(|a| *a >= seq)).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(IndexError::Closed),
            Err(_) => Err(IndexError::Timeout(corpus, timeout)),
        }
    }

    /// At start: open every index with pending outbox entries or files on
    /// disk, so replays and rebuilds happen before traffic needs them.
    pub async fn recover(&self) -> Result<usize, IndexError> {
        let mut wanted: Vec<(Uuid, IndexCorpus)> = self.inner.store.outbox_backlog().await?;
        if let Ok(entries) = std::fs::read_dir(&self.inner.root) {
            for entry in entries.flatten() {
                let Some(tenant) = entry
                    .file_name()
                    .to_str()
                    .and_then(|n| Uuid::parse_str(n).ok())
                else {
                    continue;
                };
                for corpus in IndexCorpus::ALL {
                    if entry.path().join(corpus.dir_name()).is_dir() {
                        wanted.push((tenant, corpus));
                    }
                }
            }
        }
        wanted.sort();
        wanted.dedup();
        let mut opened = 0;
        for (tenant, corpus) in wanted {
            // A tenant deleted while its files stayed behind: drop the files.
            if storage::TenantStore::tenant_by_id(&self.inner.store, tenant)
                .await?
                .is_none()
            {
                self.drop_tenant(tenant).await;
                continue;
            }
            self.get(tenant, corpus).await?;
            opened += 1;
        }
        Ok(opened)
    }

    fn is_retired(&self, tenant: Uuid) -> bool {
        self.inner
            .retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(&tenant)
    }

    /// Refuse to open `tenant`'s indexes from now on (a tenant delete
    /// starts): [`get`](Self::get) answers [`IndexError::Retired`]. Tenant
    /// ids are never reused, so the mark stays for the process's life
    /// unless [`unretire`](Self::unretire) takes it back after a failed
    /// delete.
    pub fn retire(&self, tenant: Uuid) {
        self.mark_retired(tenant, true);
    }

    /// Take back [`retire`](Self::retire): the delete did not happen.
    pub fn unretire(&self, tenant: Uuid) {
        self.mark_retired(tenant, false);
    }

    fn mark_retired(&self, tenant: Uuid, retired: bool) {
        let _open = self.inner.open.lock().unwrap_or_else(|p| p.into_inner());
        let mut set = self.inner.retired.lock().unwrap_or_else(|p| p.into_inner());
        if retired {
            set.insert(tenant);
        } else {
            set.remove(&tenant);
        }
    }

    /// Forget a deleted tenant: retire it, close its indexes (waiting for
    /// one still being opened) and delete their files.
    pub async fn drop_tenant(&self, tenant: Uuid) {
        let slots: Vec<Slot> = {
            let mut open = self.inner.open.lock().unwrap_or_else(|p| p.into_inner());
            self.inner
                .retired
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(tenant);
            let keys: Vec<_> = open.keys().filter(|(t, _)| *t == tenant).copied().collect();
            keys.iter().filter_map(|k| open.remove(k)).collect()
        };
        for slot in slots {
            // An open in flight finishes first (its handle is then closed
            // here); an idle slot answers at once.
            let opened = slot
                .get_or_try_init(|| async { Err(IndexError::Retired(tenant)) })
                .await
                .ok()
                .cloned();
            if let Some(h) = opened {
                h.discard.store(true, Ordering::SeqCst);
                h.stop.cancel();
                let task = h.writer.lock().unwrap_or_else(|p| p.into_inner()).take();
                if let Some(task) = task {
                    let _ = task.await;
                }
            }
        }
        let dir = self.inner.root.join(tenant.to_string());
        if let Err(e) = tokio::fs::remove_dir_all(&dir).await
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(%tenant, error = %e, "could not delete index files");
        }
    }

    /// Stop the writers after they flush and snapshot.
    pub async fn close(&self) {
        self.inner.shutdown.cancel();
        self.inner.tasks.close();
        self.inner.tasks.wait().await;
    }
}

struct WriterState {
    applied: u64,
    snapshot_seq: u64,
    since_snapshot: usize,
    last_snapshot: Instant,
}

//! The write path of `RedbStore`: the group-commit writer thread (one
//! thread owns every write transaction; a batch of non-durable commits is
//! made durable by one flush) and the `write` / `transact` / relaxed entry
//! points that queue work for it. Separate because it is the one piece of
//! the store with its own thread and its own durability rules.

use redb::WriteTransaction;

use super::{Inner, RedbStore};
use crate::error::{StorageError, StorageResult};
use crate::index_outbox::Tx;
use crate::table::{self, Record};

/// A write: runs in its own (non-durable) transaction on the writer thread
/// and returns whether to commit it, plus what to tell the caller once the
/// group's durable flush is done (`Some(error)` if the flush failed).
type WriteOp = Box<dyn FnOnce(&WriteTransaction) -> (bool, Finisher) + Send>;
type Finisher = Box<dyn FnOnce(Option<String>) + Send>;

/// A write on its way to the writer thread.
pub(super) struct Queued {
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
pub(super) fn writer_loop(inner: std::sync::Weak<Inner>, rx: std::sync::mpsc::Receiver<Queued>) {
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

impl RedbStore {
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
}

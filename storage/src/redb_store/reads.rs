//! The read path of `RedbStore`: one read transaction per call on tokio's
//! blocking pool, and the table-level read helpers (`open_read`, `read_get`,
//! `find_unique_many_in`) shared by the trait impls and `Snapshot`.

use redb::{ReadTransaction, ReadableDatabase};
use uuid::Uuid;

use super::RedbStore;
use crate::codec::decode_row;
use crate::error::{StorageError, StorageResult};
use crate::key::Key;
use crate::table::{self, Record, raw_table};

impl RedbStore {
    /// Run `f` in one read transaction on the blocking pool.
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

pub(super) fn find_unique_many_in<R: Record, T>(
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
pub(super) fn open_read(
    r: &ReadTransaction,
    name: &str,
) -> StorageResult<Option<redb::ReadOnlyTable<&'static [u8], &'static [u8]>>> {
    match r.open_table(raw_table(name)) {
        Ok(t) => Ok(Some(t)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub(super) fn read_get<R: Record>(r: &ReadTransaction, pk: &[u8]) -> StorageResult<Option<R>> {
    let Some(t) = open_read(r, R::DEF.name)? else {
        return Ok(None);
    };
    t.get(pk)?
        .map(|g| decode_row(R::DEF.name, R::VERSION, g.value()))
        .transpose()
}

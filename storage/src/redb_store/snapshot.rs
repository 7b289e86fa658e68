//! `Snapshot`: several dependent typed reads (rows, then the rows they
//! point at; full rows or `Projection`s) over one read transaction, on the
//! blocking pool (`RedbStore::snapshot`) or on the caller's thread
//! (`RedbStore::snapshot_blocking`). Separate because it is the hot read
//! API of search and listings, with its own lifetime-bound handle.

use redb::{ReadTransaction, ReadableDatabase};
use uuid::Uuid;

use super::RedbStore;
use super::reads::{find_unique_many_in, open_read};
use crate::codec::decode_row;
use crate::error::StorageResult;
use crate::key::Key;
use crate::table::{self, Projection, Record, Scan};

impl RedbStore {
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
}

/// One read transaction (see [`RedbStore::snapshot`]). Same tenant rules as
/// [`Store`](crate::Store): tenant-scoped tables need `Some(tenant)`.
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

    /// A [`Scan`] of whole rows of `R`, keeping only the rows `keep`
    /// accepts (`scan.limit` counts kept rows). A `keep` that counts and
    /// answers `false` folds over a range without collecting it.
    pub fn scan_filtered<R: Record>(
        &self,
        tenant: Option<Uuid>,
        scan: &Scan,
        keep: impl FnMut(&R) -> bool,
    ) -> StorageResult<Vec<R>> {
        let prefix = table::scan_prefix::<R>(tenant, scan.index)?;
        let Some(rows) = open_read(self.r, R::DEF.name)? else {
            return Ok(Vec::new());
        };
        let decode = |b: &[u8]| decode_row(R::DEF.name, R::VERSION, b);
        match scan.index {
            Some(name) => match open_read(self.r, name)? {
                Some(ix) => {
                    table::scan_with::<R, R, _, _>(Some(&ix), &rows, &prefix, scan, decode, keep)
                }
                None => Ok(Vec::new()),
            },
            None => table::scan_with::<R, R, redb::ReadOnlyTable<&'static [u8], &'static [u8]>, _>(
                None, &rows, &prefix, scan, decode, keep,
            ),
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

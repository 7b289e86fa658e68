//! The declarative table layer: every table of spec §2 is a [`Record`] with a
//! static [`TableDef`] (name, scope, unique + secondary indexes, foreign
//! keys), and one generic implementation of insert / update / delete / get /
//! scan keeps rows, indexes and cascades consistent inside one redb write
//! transaction.
//!
//! Physical layout (all keys are [`Key`] encodings, see `key.rs`):
//! - row table `<table>`: `[tenant_id] + local_pk → [version][bincode row]`
//! - unique index `<constraint>`: `[tenant_id] + values → full pk`
//! - secondary index `<index>`: `[tenant_id] + values + local_pk → full pk`
//! - foreign key `<fk>`: `[tenant_id] + parent local_pk + child local_pk → child full pk`
//!
//! Tenant-scoped tables put the 16 tenant bytes first everywhere, so a tenant
//! is one key range in every table and no read can cross into another tenant.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::OnceLock;

use redb::{ReadableTable, TableDefinition, WriteTransaction};
use serde::{Serialize, de::DeserializeOwned};
use uuid::Uuid;

use crate::codec::{decode_row, encode_row};
use crate::error::{StorageError, StorageResult};
use crate::key::Key;

pub(crate) fn raw_table(name: &str) -> TableDefinition<'_, &'static [u8], &'static [u8]> {
    TableDefinition::new(name)
}

/// Whether a table's rows belong to a tenant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Keyed by `tenant_id` first; deleted with the tenant.
    Tenant,
    /// Platform-wide (tenants themselves, platform admins, settings…).
    Global,
}

/// Unique constraint or plain ordered index.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexKind {
    /// UNIQUE (or unique-partial when the row yields no key).
    Unique,
    /// Non-unique ordered index.
    Secondary,
}

/// One index of a table.
#[derive(Debug)]
pub struct IndexDef {
    /// Stable name; also the redb table name. Never rename.
    pub name: &'static str,
    /// Unique or secondary.
    pub kind: IndexKind,
    /// A platform-wide index (no tenant prefix). Only for lookups that must
    /// happen before a tenant is known (API key by hash) and for platform
    /// sweeps that then enter each row's tenant (due follow-ups, due syncs).
    pub global: bool,
}

impl IndexDef {
    /// A tenant-scoped UNIQUE constraint.
    pub const fn unique(name: &'static str) -> Self {
        IndexDef {
            name,
            kind: IndexKind::Unique,
            global: false,
        }
    }
    /// A tenant-scoped ordered index.
    pub const fn secondary(name: &'static str) -> Self {
        IndexDef {
            name,
            kind: IndexKind::Secondary,
            global: false,
        }
    }
    /// A platform-wide UNIQUE constraint.
    pub const fn global_unique(name: &'static str) -> Self {
        IndexDef {
            name,
            kind: IndexKind::Unique,
            global: true,
        }
    }
    /// A platform-wide ordered index.
    pub const fn global_secondary(name: &'static str) -> Self {
        IndexDef {
            name,
            kind: IndexKind::Secondary,
            global: true,
        }
    }
}

/// What deleting the parent does to the child.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnDelete {
    /// Delete the child too.
    Cascade,
    /// Clear the child's reference (`Record::set_null`).
    SetNull,
}

/// A foreign key from this table to a parent table (same tenant).
#[derive(Debug)]
pub struct FkDef {
    /// Stable name; also the redb table of the reverse index.
    pub name: &'static str,
    /// Parent table name.
    pub parent: &'static str,
    /// Action when the parent row is deleted.
    pub on_delete: OnDelete,
}

/// Static description of a table.
#[derive(Debug)]
pub struct TableDef {
    /// Spec table name; also the redb table name. Never rename.
    pub name: &'static str,
    /// Tenant-scoped or global.
    pub scope: Scope,
    /// Name of the primary-key constraint (reported on duplicate pk).
    pub pkey: &'static str,
    /// Unique and secondary indexes.
    pub indexes: &'static [IndexDef],
    /// Foreign keys to parent tables.
    pub fks: &'static [FkDef],
}

impl TableDef {
    fn index_pos(&self, name: &str) -> Option<usize> {
        self.indexes.iter().position(|i| i.name == name)
    }
}

/// A lighter read of a [`Record`]'s rows: decoded from the very same stored
/// bytes (usually through [`crate::codec::decode_row_borrowed`]), keeping only
/// what a hot read path uses — knowledge search never needs a chunk's 6 KB
/// embedding. Read with `Snapshot::get_many_projected` /
/// `find_unique_many_projected`.
pub trait Projection: Sized {
    /// The table whose rows this reads.
    type Of: Record;
    /// Decode one stored row (format version byte included).
    fn decode(bytes: &[u8]) -> StorageResult<Self>;
}

/// A row type of spec §2. Implemented once per table (see `schema/`).
pub trait Record: Serialize + DeserializeOwned + Clone + Debug + Send + Sync + 'static {
    /// The table this row lives in.
    const DEF: TableDef;
    /// Row format version written in front of every encoded row. Bump it
    /// together with a migration that rewrites old rows.
    const VERSION: u8 = 1;
    /// The owning tenant for tenant-scoped tables, `None` for global ones.
    fn tenant(&self) -> Option<Uuid>;
    /// Primary key within the scope (usually `key().uuid(self.id)`).
    fn local_pk(&self) -> Key;
    /// One entry per `DEF.indexes`, same order. `None` leaves the row out of
    /// that index (NULL in a unique-partial index).
    fn index_keys(&self) -> Vec<Option<Key>> {
        Vec::new()
    }
    /// One entry per `DEF.fks`: the parent's local pk, `None` when NULL.
    fn fk_keys(&self) -> Vec<Option<Key>> {
        Vec::new()
    }
    /// Clear the column behind FK `fk` (for `ON DELETE SET NULL`).
    fn set_null(&mut self, _fk: &str) {}
    /// Columns (JSON field names) a tenant export leaves out: secrets and
    /// credential hashes. Every `Redacted` column is one.
    const SECRET_COLUMNS: &'static [&'static str] = &[];
    /// CHECK constraints beyond enums (ranges, non-empty, …).
    fn check(&self) -> StorageResult<()> {
        Ok(())
    }
}

fn scope_prefix(scope: Scope, tenant: Option<Uuid>, table: &'static str) -> StorageResult<Vec<u8>> {
    match (scope, tenant) {
        (Scope::Tenant, Some(t)) => Ok(t.as_bytes().to_vec()),
        (Scope::Global, _) => Ok(Vec::new()),
        (Scope::Tenant, None) => Err(StorageError::Check {
            column: "tenant_id",
            message: format!("{table} is tenant-scoped: a tenant is required"),
        }),
    }
}

/// Full primary key (scope prefix + local pk) for a row of `R`.
pub(crate) fn full_pk<R: Record>(tenant: Option<Uuid>, local: &Key) -> StorageResult<Vec<u8>> {
    let mut k = scope_prefix(R::DEF.scope, tenant, R::DEF.name)?;
    k.extend_from_slice(local.as_bytes());
    Ok(k)
}

fn row_prefix<R: Record>(row: &R) -> StorageResult<Vec<u8>> {
    scope_prefix(R::DEF.scope, row.tenant(), R::DEF.name)
}

/// One entry in an index table.
struct IndexEntry {
    /// Index (= redb table) name.
    name: &'static str,
    key: Vec<u8>,
    /// The row's full pk.
    value: Vec<u8>,
    unique: bool,
}

/// One entry in a reverse-FK table.
struct FkEntry {
    def: &'static FkDef,
    key: Vec<u8>,
    /// The child's full pk.
    value: Vec<u8>,
    /// The parent's full pk (checked for existence on write).
    parent_pk: Vec<u8>,
}

/// Entries a row contributes to its index and FK tables.
struct Entries {
    index: Vec<IndexEntry>,
    fks: Vec<FkEntry>,
}

fn entries<R: Record>(row: &R) -> StorageResult<Entries> {
    let prefix = row_prefix(row)?;
    let local = row.local_pk();
    let mut pk = prefix.clone();
    pk.extend_from_slice(local.as_bytes());
    let keys = row.index_keys();
    if keys.len() != R::DEF.indexes.len() {
        return Err(StorageError::Backend(format!(
            "{}: index_keys() returned {} keys for {} indexes",
            R::DEF.name,
            keys.len(),
            R::DEF.indexes.len()
        )));
    }
    let mut index = Vec::with_capacity(keys.len());
    for (def, k) in R::DEF.indexes.iter().zip(keys) {
        let Some(k) = k else { continue };
        let mut ik = if def.global {
            Vec::new()
        } else {
            prefix.clone()
        };
        ik.extend_from_slice(k.as_bytes());
        let unique = def.kind == IndexKind::Unique;
        if !unique {
            // Global index entries carry the full pk (tenant included).
            ik.extend_from_slice(if def.global { &pk } else { local.as_bytes() });
        }
        index.push(IndexEntry {
            name: def.name,
            key: ik,
            value: pk.clone(),
            unique,
        });
    }
    let fk_keys = row.fk_keys();
    if fk_keys.len() != R::DEF.fks.len() {
        return Err(StorageError::Backend(format!(
            "{}: fk_keys() returned {} keys for {} fks",
            R::DEF.name,
            fk_keys.len(),
            R::DEF.fks.len()
        )));
    }
    let mut fks = Vec::new();
    for (def, parent) in R::DEF.fks.iter().zip(fk_keys) {
        let Some(parent) = parent else { continue };
        let mut fk = prefix.clone();
        fk.extend_from_slice(parent.as_bytes());
        let mut parent_pk = prefix.clone();
        parent_pk.extend_from_slice(parent.as_bytes());
        fk.extend_from_slice(local.as_bytes());
        fks.push(FkEntry {
            def,
            key: fk,
            value: pk.clone(),
            parent_pk,
        });
    }
    Ok(Entries { index, fks })
}

/// Insert a new row; fails with `Conflict` on a duplicate pk or unique key.
pub(crate) fn insert<R: Record>(w: &WriteTransaction, row: &R) -> StorageResult<()> {
    row.check()?;
    let pk = full_pk::<R>(row.tenant(), &row.local_pk())?;
    if w.open_table(raw_table(R::DEF.name))?
        .get(pk.as_slice())?
        .is_some()
    {
        return Err(StorageError::Conflict {
            constraint: R::DEF.pkey,
        });
    }
    let e = entries(row)?;
    check_uniques(w, &e, &pk)?;
    check_parents(w, &e)?;
    w.open_table(raw_table(R::DEF.name))?
        .insert(pk.as_slice(), encode_row(R::VERSION, row)?.as_slice())?;
    write_entries(w, &e)
}

fn check_uniques(w: &WriteTransaction, e: &Entries, own_pk: &[u8]) -> StorageResult<()> {
    for ie in e.index.iter().filter(|ie| ie.unique) {
        let t = w.open_table(raw_table(ie.name))?;
        if let Some(existing) = t.get(ie.key.as_slice())?
            && existing.value() != own_pk
        {
            return Err(StorageError::Conflict {
                constraint: ie.name,
            });
        }
    }
    Ok(())
}

fn check_parents(w: &WriteTransaction, e: &Entries) -> StorageResult<()> {
    for fe in &e.fks {
        let t = w.open_table(raw_table(fe.def.parent))?;
        if t.get(fe.parent_pk.as_slice())?.is_none() {
            return Err(StorageError::ForeignKey {
                constraint: fe.def.name,
            });
        }
    }
    Ok(())
}

fn write_entries(w: &WriteTransaction, e: &Entries) -> StorageResult<()> {
    for ie in &e.index {
        w.open_table(raw_table(ie.name))?
            .insert(ie.key.as_slice(), ie.value.as_slice())?;
    }
    for fe in &e.fks {
        w.open_table(raw_table(fe.def.name))?
            .insert(fe.key.as_slice(), fe.value.as_slice())?;
    }
    Ok(())
}

fn remove_entries(w: &WriteTransaction, e: &Entries) -> StorageResult<()> {
    for ie in &e.index {
        w.open_table(raw_table(ie.name))?
            .remove(ie.key.as_slice())?;
    }
    for fe in &e.fks {
        w.open_table(raw_table(fe.def.name))?
            .remove(fe.key.as_slice())?;
    }
    Ok(())
}

/// Replace an existing row (same pk); uniques are re-checked, index entries moved.
pub(crate) fn update<R: Record>(w: &WriteTransaction, row: &R) -> StorageResult<()> {
    row.check()?;
    let pk = full_pk::<R>(row.tenant(), &row.local_pk())?;
    let old: R = get_in_write(w, &pk)?.ok_or(StorageError::NotFound { table: R::DEF.name })?;
    let old_e = entries(&old)?;
    let new_e = entries(row)?;
    check_uniques(w, &new_e, &pk)?;
    check_parents(w, &new_e)?;
    remove_entries(w, &old_e)?;
    write_entries(w, &new_e)?;
    w.open_table(raw_table(R::DEF.name))?
        .insert(pk.as_slice(), encode_row(R::VERSION, row)?.as_slice())?;
    Ok(())
}

/// Write the index and reverse-FK entries of every row of `R` again: the
/// backfill of a migration that adds an index to a table that has rows.
/// Idempotent (existing entries are rewritten unchanged); returns the rows seen.
pub(crate) fn rewrite_entries<R: Record>(w: &WriteTransaction) -> StorageResult<u64> {
    let mut all = Vec::new();
    {
        let t = w.open_table(raw_table(R::DEF.name))?;
        for item in t.iter()? {
            let (_, v) = item?;
            let row: R = decode_row(R::DEF.name, R::VERSION, v.value())?;
            all.push(entries(&row)?);
        }
    }
    for e in &all {
        write_entries(w, e)?;
    }
    Ok(all.len() as u64)
}

/// Read a row inside a write transaction.
pub(crate) fn get_in_write<R: Record>(w: &WriteTransaction, pk: &[u8]) -> StorageResult<Option<R>> {
    let t = w.open_table(raw_table(R::DEF.name))?;
    let v = t.get(pk)?;
    v.map(|g| decode_row(R::DEF.name, R::VERSION, g.value()))
        .transpose()
}

/// Delete a row by full pk, cascading to children; returns whether it existed.
pub(crate) fn delete<R: Record>(w: &WriteTransaction, pk: &[u8]) -> StorageResult<bool> {
    let Some(row) = get_in_write::<R>(w, pk)? else {
        return Ok(false);
    };
    let e = entries(&row)?;
    remove_entries(w, &e)?;
    w.open_table(raw_table(R::DEF.name))?.remove(pk)?;
    // Children referencing this row: the reverse FK tables are keyed by the
    // parent's full pk (child prefix == parent prefix within a tenant).
    for (child, fk) in children_of(R::DEF.name) {
        let prefix = Key(pk.to_vec());
        let mut child_pks = Vec::new();
        {
            let t = w.open_table(raw_table(fk.name))?;
            let range = match prefix.prefix_end() {
                Some(end) => t.range::<&[u8]>(prefix.as_bytes()..end.as_slice())?,
                None => t.range::<&[u8]>(prefix.as_bytes()..)?,
            };
            for item in range {
                let (_, v) = item?;
                child_pks.push(v.value().to_vec());
            }
        }
        for cpk in child_pks {
            match fk.on_delete {
                OnDelete::Cascade => {
                    child.delete_by_pk(w, &cpk)?;
                }
                OnDelete::SetNull => child.set_null_by_pk(w, &cpk, fk.name)?,
            }
        }
    }
    if R::DEF.name == crate::schema::TENANTS {
        purge_tenant(w, &pk[..16.min(pk.len())])?;
    }
    Ok(true)
}

/// Remove every tenant-scoped row and index entry of one tenant.
fn purge_tenant(w: &WriteTransaction, tenant: &[u8]) -> StorageResult<()> {
    let prefix = Key(tenant.to_vec());
    let end = prefix.prefix_end();
    for t in registry().values() {
        let def = t.def();
        if def.scope != Scope::Tenant {
            continue;
        }
        if def.indexes.iter().any(|i| i.global) {
            t.purge_global_entries(w, tenant)?;
        }
        let mut names: Vec<&str> = vec![def.name];
        names.extend(def.indexes.iter().filter(|i| !i.global).map(|i| i.name));
        names.extend(def.fks.iter().map(|f| f.name));
        for name in names {
            let mut table = w.open_table(raw_table(name))?;
            match &end {
                Some(end) => {
                    table.retain_in::<&[u8], _>(prefix.as_bytes()..end.as_slice(), |_, _| false)?
                }
                None => table.retain_in::<&[u8], _>(prefix.as_bytes().., |_, _| false)?,
            }
        }
    }
    Ok(())
}

/// Type-erased operations the cascade logic needs on any table.
pub(crate) trait DynTable: Send + Sync {
    fn def(&self) -> &'static TableDef;
    fn delete_by_pk(&self, w: &WriteTransaction, pk: &[u8]) -> StorageResult<bool>;
    fn set_null_by_pk(&self, w: &WriteTransaction, pk: &[u8], fk: &str) -> StorageResult<()>;
    fn create(&self, w: &WriteTransaction) -> StorageResult<()>;
    fn purge_global_entries(&self, w: &WriteTransaction, tenant: &[u8]) -> StorageResult<()>;
    fn secret_columns(&self) -> &'static [&'static str];
    fn export_range(
        &self,
        r: &redb::ReadTransaction,
        prefix: &Key,
        each: &mut dyn FnMut(&'static str, serde_json::Value) -> StorageResult<()>,
    ) -> StorageResult<u64>;
}

/// The [`DynTable`] of a record type.
pub(crate) struct Handle<R>(std::marker::PhantomData<fn() -> R>);

impl<R: Record> Handle<R> {
    pub(crate) const NEW: Self = Handle(std::marker::PhantomData);
}

impl<R: Record> DynTable for Handle<R> {
    fn def(&self) -> &'static TableDef {
        &R::DEF
    }
    fn secret_columns(&self) -> &'static [&'static str] {
        R::SECRET_COLUMNS
    }
    fn export_range(
        &self,
        r: &redb::ReadTransaction,
        prefix: &Key,
        each: &mut dyn FnMut(&'static str, serde_json::Value) -> StorageResult<()>,
    ) -> StorageResult<u64> {
        crate::backup::export_rows::<R>(r, prefix, each)
    }
    fn delete_by_pk(&self, w: &WriteTransaction, pk: &[u8]) -> StorageResult<bool> {
        delete::<R>(w, pk)
    }
    fn set_null_by_pk(&self, w: &WriteTransaction, pk: &[u8], fk: &str) -> StorageResult<()> {
        if let Some(mut row) = get_in_write::<R>(w, pk)? {
            row.set_null(fk);
            update(w, &row)?;
        }
        Ok(())
    }
    fn purge_global_entries(&self, w: &WriteTransaction, tenant: &[u8]) -> StorageResult<()> {
        let prefix = Key(tenant.to_vec());
        let mut doomed = Vec::new();
        {
            let t = w.open_table(raw_table(R::DEF.name))?;
            let range = match prefix.prefix_end() {
                Some(end) => t.range::<&[u8]>(prefix.as_bytes()..end.as_slice())?,
                None => t.range::<&[u8]>(prefix.as_bytes()..)?,
            };
            for item in range {
                let (_, v) = item?;
                let row: R = decode_row(R::DEF.name, R::VERSION, v.value())?;
                doomed.push(entries(&row)?);
            }
        }
        for e in doomed {
            for ie in &e.index {
                if R::DEF.indexes.iter().any(|i| i.global && i.name == ie.name) {
                    w.open_table(raw_table(ie.name))?
                        .remove(ie.key.as_slice())?;
                }
            }
        }
        Ok(())
    }
    fn create(&self, w: &WriteTransaction) -> StorageResult<()> {
        let def = &R::DEF;
        w.open_table(raw_table(def.name))?;
        for i in def.indexes {
            w.open_table(raw_table(i.name))?;
        }
        for f in def.fks {
            w.open_table(raw_table(f.name))?;
        }
        Ok(())
    }
}

/// Every table, by name.
pub(crate) fn registry() -> &'static HashMap<&'static str, &'static dyn DynTable> {
    static REG: OnceLock<HashMap<&'static str, &'static dyn DynTable>> = OnceLock::new();
    REG.get_or_init(|| {
        crate::schema::all_tables()
            .iter()
            .map(|t| (t.def().name, *t))
            .collect()
    })
}

fn children_of(parent: &str) -> Vec<(&'static dyn DynTable, &'static FkDef)> {
    type Children = Vec<(&'static dyn DynTable, &'static FkDef)>;
    static REV: OnceLock<HashMap<&'static str, Children>> = OnceLock::new();
    REV.get_or_init(|| {
        let mut m: HashMap<&'static str, Vec<_>> = HashMap::new();
        for t in crate::schema::all_tables() {
            for fk in t.def().fks {
                m.entry(fk.parent).or_default().push((*t, fk));
            }
        }
        m
    })
    .get(parent)
    .cloned()
    .unwrap_or_default()
}

/// Direction of a scan.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Order {
    /// Ascending key order.
    #[default]
    Asc,
    /// Descending key order (e.g. newest first on a timestamp index).
    Desc,
}

/// A range scan over the primary table or one secondary/unique index.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Index name, or `None` for primary-key order.
    pub index: Option<&'static str>,
    /// Encoded leading values every returned key starts with.
    pub prefix: Key,
    /// Inclusive lower bound, appended to the prefix.
    pub from: Option<Key>,
    /// Exclusive upper bound, appended to the prefix.
    pub until: Option<Key>,
    /// Scan direction.
    pub order: Order,
    /// Maximum rows returned (`0` = no limit).
    pub limit: usize,
}

impl Scan {
    /// Every row of the table within the scope, pk order.
    pub fn all() -> Self {
        Scan::default()
    }
    /// Rows of `index` whose values start with `prefix`.
    pub fn index(index: &'static str, prefix: Key) -> Self {
        Scan {
            index: Some(index),
            prefix,
            ..Default::default()
        }
    }
    /// Rows whose local primary key starts with `prefix`, pk order.
    pub fn pk_prefix(prefix: Key) -> Self {
        Scan {
            prefix,
            ..Default::default()
        }
    }
    /// Newest/largest first.
    pub fn desc(mut self) -> Self {
        self.order = Order::Desc;
        self
    }
    /// At most `n` rows.
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = n;
        self
    }
    /// Restrict to keys before `prefix + ts` (e.g. "due by now" on a timestamp index).
    pub fn until_ts(mut self, ts: crate::codec::Ts) -> Self {
        self.until = Some(crate::key::key().ts(ts.plus_micros(1)));
        self
    }
    /// Exclusive upper bound (appended to the prefix).
    pub fn until(mut self, until: Key) -> Self {
        self.until = Some(until);
        self
    }
    /// Restrict to `[prefix+from, prefix+until)`.
    pub fn between(mut self, from: Option<Key>, until: Option<Key>) -> Self {
        self.from = from;
        self.until = until;
        self
    }
}

/// Key prefix a scan of `R` (optionally through `index`) starts from.
pub(crate) fn scan_prefix<R: Record>(
    tenant: Option<Uuid>,
    index: Option<&str>,
) -> StorageResult<Vec<u8>> {
    let global = index
        .and_then(|ix| R::DEF.indexes.iter().find(|i| i.name == ix))
        .is_some_and(|i| i.global);
    if global || R::DEF.scope == Scope::Global {
        Ok(Vec::new())
    } else {
        full_pk::<R>(tenant, &Key::default())
    }
}

/// [`scan`] inside a write transaction (sees its own writes).
pub(crate) fn scan_in_write<R: Record>(
    w: &WriteTransaction,
    tenant: Option<Uuid>,
    scan: &Scan,
) -> StorageResult<Vec<R>> {
    let prefix = scan_prefix::<R>(tenant, scan.index)?;
    let rows = w.open_table(raw_table(R::DEF.name))?;
    match scan.index {
        Some(name) => {
            let ix = w.open_table(raw_table(name))?;
            self::scan::<R, _, _>(Some(&ix), &rows, &prefix, scan)
        }
        None => self::scan::<R, redb::Table<&'static [u8], &'static [u8]>, _>(
            None, &rows, &prefix, scan,
        ),
    }
}

/// Run a scan against any readable table pair; returns decoded rows.
pub(crate) fn scan<R: Record, T, U>(
    index_table: Option<&T>,
    rows: &U,
    prefix: &[u8],
    scan: &Scan,
) -> StorageResult<Vec<R>>
where
    T: ReadableTable<&'static [u8], &'static [u8]>,
    U: ReadableTable<&'static [u8], &'static [u8]>,
{
    scan_with::<R, R, T, U>(
        index_table,
        rows,
        prefix,
        scan,
        |b| decode_row(R::DEF.name, R::VERSION, b),
        |_| true,
    )
}

/// [`scan`] with another decoding of `R`'s stored rows (a [`Projection`])
/// and a filter: `scan.limit` counts only the rows `keep` accepts.
pub(crate) fn scan_with<R: Record, P, T, U>(
    index_table: Option<&T>,
    rows: &U,
    prefix: &[u8],
    scan: &Scan,
    decode: impl Fn(&[u8]) -> StorageResult<P>,
    mut keep: impl FnMut(&P) -> bool,
) -> StorageResult<Vec<P>>
where
    T: ReadableTable<&'static [u8], &'static [u8]>,
    U: ReadableTable<&'static [u8], &'static [u8]>,
{
    let mut global = false;
    if let Some(ix) = scan.index {
        let Some(pos) = R::DEF.index_pos(ix) else {
            return Err(StorageError::Backend(format!(
                "{} has no index {ix}",
                R::DEF.name
            )));
        };
        global = R::DEF.indexes[pos].global;
    }
    let mut base = if global { Vec::new() } else { prefix.to_vec() };
    base.extend_from_slice(scan.prefix.as_bytes());
    let lo = match &scan.from {
        Some(f) => [base.as_slice(), f.as_bytes()].concat(),
        None => base.clone(),
    };
    let hi = match &scan.until {
        Some(u) => Some([base.as_slice(), u.as_bytes()].concat()),
        None => Key(base.clone()).prefix_end(),
    };
    let limit = if scan.limit == 0 {
        usize::MAX
    } else {
        scan.limit
    };
    let mut out = Vec::new();
    let mut collect = |pk_or_row: &[u8], is_row: bool| -> StorageResult<bool> {
        let row: Option<P> = if is_row {
            Some(decode(pk_or_row)?)
        } else {
            rows.get(pk_or_row)?
                .map(|g| decode(g.value()))
                .transpose()?
        };
        if let Some(r) = row.filter(|r| keep(r)) {
            out.push(r);
        }
        Ok(out.len() < limit)
    };
    macro_rules! walk {
        ($table:expr, $is_row:expr) => {{
            let range = match &hi {
                Some(hi) => $table.range::<&[u8]>(lo.as_slice()..hi.as_slice())?,
                None => $table.range::<&[u8]>(lo.as_slice()..)?,
            };
            if scan.order == Order::Desc {
                for item in range.rev() {
                    let (_, v) = item?;
                    if !collect(v.value(), $is_row)? {
                        break;
                    }
                }
            } else {
                for item in range {
                    let (_, v) = item?;
                    if !collect(v.value(), $is_row)? {
                        break;
                    }
                }
            }
        }};
    }
    match index_table {
        Some(t) => walk!(t, false),
        None => walk!(rows, true),
    }
    Ok(out)
}

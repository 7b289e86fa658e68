//! Whole-file copies and tenant exports (spec §15.4, §2.6).
//!
//! A backup is every redb table — rows, index tables and reverse-FK tables
//! alike — as ONE read transaction sees them, copied key by key into a new
//! redb file. Writers keep committing meanwhile (redb's MVCC); nothing here
//! awaits, so the transaction never lives across an `.await`. The copy is
//! made durable by one `Durability::Immediate` commit at the end; anything
//! that dies before it leaves a file redb may open but whose checksum no
//! manifest vouches for (the app writes the manifest only after).
//!
//! [`inspect_file`] opens a file read-only and reports what a manifest
//! claims: the schema version and each table's entry count.

use std::collections::BTreeMap;
use std::path::Path;

use redb::{
    Database, Durability, ReadTransaction, ReadableDatabase, ReadableTable, ReadableTableMetadata,
    TableHandle,
};
use uuid::Uuid;

use crate::codec::decode_row;
use crate::error::{StorageError, StorageResult};
use crate::index_outbox::{IndexCorpus, IndexState};
use crate::key::Key;
use crate::redb_store::RedbStore;
use crate::schema::SchemaMigration;
use crate::table::{Record, Scope, raw_table};

/// Bytes copied per write transaction of the backup file (the last commit
/// is the durable one).
const COPY_BATCH_BYTES: usize = 32 << 20;

/// What a copied or inspected file holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileSummary {
    /// Highest migration recorded in `schema_migrations` (0: none).
    pub schema_version: u32,
    /// Entries per redb table (row tables, index and FK tables).
    pub tables: BTreeMap<String, u64>,
    /// Every (tenant, corpus) whose search index has persisted state: the
    /// index directories a restore marks for a rebuild.
    pub indexes: Vec<(Uuid, IndexCorpus)>,
}

impl RedbStore {
    /// Copy the whole database, as one read transaction sees it, into a new
    /// redb file at `dest` (which must not exist). Blocking: run it on the
    /// blocking pool; the server keeps reading and writing meanwhile.
    pub fn copy_to_blocking(&self, dest: &Path) -> StorageResult<FileSummary> {
        self.with_db_blocking(|db| {
            let r = db.begin_read()?;
            copy_snapshot(&r, dest)
        })
    }
}

/// Copy the database file at `src` (not held by another process) into a new
/// file at `dest`. Fails with `AlreadyOpen` when a server holds `src`.
pub fn copy_file(src: &Path, dest: &Path) -> StorageResult<FileSummary> {
    if !src.is_file() {
        return Err(StorageError::Backend(format!(
            "no database file at {}",
            src.display()
        )));
    }
    let db = redb::ReadOnlyDatabase::open(src).map_err(|e| open_error(src, e))?;
    let r = db.begin_read()?;
    copy_snapshot(&r, dest)
}

/// Open `path` read-only and summarise it (a backup being verified).
pub fn inspect_file(path: &Path) -> StorageResult<FileSummary> {
    let db = redb::ReadOnlyDatabase::open(path).map_err(|e| open_error(path, e))?;
    let r = db.begin_read()?;
    let mut tables = BTreeMap::new();
    for h in r.list_tables()? {
        let t = r.open_table(raw_table(h.name()))?;
        let mut n = 0u64;
        for item in t.iter()? {
            item?;
            n += 1;
        }
        tables.insert(h.name().to_string(), n);
    }
    Ok(FileSummary {
        schema_version: schema_version(&r)?,
        indexes: index_states(&r)?,
        tables,
    })
}

/// Whether the redb file at `path` is held by a running process. Probed
/// read-only, so the file's bytes stay as they are; a file redb cannot read
/// at all is not "in use" (restoring over it is the point).
pub fn file_in_use(path: &Path) -> StorageResult<bool> {
    if !path.exists() {
        return Ok(false);
    }
    match redb::ReadOnlyDatabase::open(path) {
        Ok(db) => {
            drop(db);
            Ok(false)
        }
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => Ok(true),
        Err(_) => Ok(false),
    }
}

fn open_error(path: &Path, e: redb::DatabaseError) -> StorageError {
    match e {
        redb::DatabaseError::DatabaseAlreadyOpen => StorageError::AlreadyOpen {
            path: path.display().to_string(),
        },
        other => StorageError::Backend(format!("cannot open {}: {other}", path.display())),
    }
}

fn copy_snapshot(r: &ReadTransaction, dest: &Path) -> StorageResult<FileSummary> {
    if dest.exists() {
        return Err(StorageError::Backend(format!(
            "{} already exists",
            dest.display()
        )));
    }
    if r.list_multimap_tables()?.next().is_some() {
        return Err(StorageError::Backend(
            "the database has multimap tables this binary cannot copy".into(),
        ));
    }
    create_owner_only(dest)?;
    let out = Database::create(dest)
        .map_err(|e| StorageError::Backend(format!("cannot create {}: {e}", dest.display())))?;
    let names: Vec<String> = r.list_tables()?.map(|h| h.name().to_string()).collect();
    let mut tables = BTreeMap::new();
    let mut w = out.begin_write()?;
    w.set_durability(Durability::None)
        .map_err(StorageError::backend)?;
    let mut pending = 0usize;
    for name in names {
        let src = r.open_table(raw_table(&name))?;
        let mut n = 0u64;
        let mut from: Option<Vec<u8>> = None;
        loop {
            // One batch of this table; a full batch commits (not durably)
            // and the copy resumes after the last key it wrote.
            let mut last: Option<Vec<u8>> = None;
            {
                let mut dst = w.open_table(raw_table(&name))?;
                let range = match &from {
                    Some(k) => src.range::<&[u8]>(k.as_slice()..)?,
                    None => src.range::<&[u8]>(..)?,
                };
                for item in range {
                    let (k, v) = item?;
                    if from.as_deref() == Some(k.value()) {
                        continue;
                    }
                    dst.insert(k.value(), v.value())?;
                    n += 1;
                    pending += k.value().len() + v.value().len();
                    if pending >= COPY_BATCH_BYTES {
                        last = Some(k.value().to_vec());
                        break;
                    }
                }
            }
            match last {
                Some(k) => {
                    w.commit()?;
                    w = out.begin_write()?;
                    w.set_durability(Durability::None)
                        .map_err(StorageError::backend)?;
                    pending = 0;
                    from = Some(k);
                }
                None => break,
            }
        }
        tables.insert(name, n);
    }
    w.set_durability(Durability::Immediate)
        .map_err(StorageError::backend)?;
    w.commit()?;
    drop(out);
    Ok(FileSummary {
        schema_version: schema_version(r)?,
        indexes: index_states(r)?,
        tables,
    })
}

/// Create `dest` empty with mode 0600 (and fail if it exists), before redb
/// writes into it: a backup holds every tenant's secrets, and a file redb
/// created would get the process umask (typically 0644, world-readable).
fn create_owner_only(dest: &Path) -> StorageResult<()> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(dest)
        .map(drop)
        .map_err(|e| StorageError::Backend(format!("cannot create {}: {e}", dest.display())))
}

fn schema_version(r: &ReadTransaction) -> StorageResult<u32> {
    let t = match r.open_table(raw_table(SchemaMigration::DEF.name)) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let mut max = 0;
    for item in t.iter()? {
        let (_, v) = item?;
        let m: SchemaMigration = decode_row(
            SchemaMigration::DEF.name,
            SchemaMigration::VERSION,
            v.value(),
        )?;
        max = max.max(m.version);
    }
    Ok(max)
}

fn index_states(r: &ReadTransaction) -> StorageResult<Vec<(Uuid, IndexCorpus)>> {
    let t = match r.open_table(raw_table(IndexState::DEF.name)) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for item in t.iter()? {
        let (_, v) = item?;
        let s: IndexState = decode_row(IndexState::DEF.name, IndexState::VERSION, v.value())?;
        if s.applied_seq > 0 {
            out.push((s.tenant_id, s.corpus));
        }
    }
    Ok(out)
}

/// Names of the tables whose rows belong to a tenant (keyed by its id): what
/// a tenant export writes and a tenant delete empties, besides the tenant's
/// own `tenants` row.
pub fn tenant_table_names() -> Vec<&'static str> {
    crate::schema::all_tables()
        .iter()
        .map(|t| t.def())
        .filter(|d| d.scope == Scope::Tenant)
        .map(|d| d.name)
        .collect()
}

/// The columns of `table` a tenant export leaves out (secrets and credential
/// hashes, `Record::SECRET_COLUMNS`); `None` for an unknown table.
pub fn secret_columns(table: &str) -> Option<&'static [&'static str]> {
    crate::table::registry()
        .get(table)
        .map(|t| t.secret_columns())
}

impl RedbStore {
    /// Every row of `tenant` in every tenant-scoped table, as JSON objects
    /// without the tables' secret columns, handed to `each(table, row)` in
    /// one read transaction. Returns the row count per table (every
    /// tenant-scoped table, zeros included). Blocking.
    pub fn export_tenant_blocking(
        &self,
        tenant: Uuid,
        each: &mut dyn FnMut(&'static str, serde_json::Value) -> StorageResult<()>,
    ) -> StorageResult<BTreeMap<&'static str, u64>> {
        self.with_db_blocking(|db| {
            let r = db.begin_read()?;
            let prefix = Key(tenant.as_bytes().to_vec());
            let mut counts = BTreeMap::new();
            for t in crate::schema::all_tables() {
                if t.def().scope != Scope::Tenant {
                    continue;
                }
                let n = t.export_range(&r, &prefix, each)?;
                counts.insert(t.def().name, n);
            }
            Ok(counts)
        })
    }

    /// Entries under `tenant`'s key prefix in every tenant-scoped row, index
    /// and FK table (a deleted tenant has none).
    pub async fn tenant_key_count(&self, tenant: Uuid) -> StorageResult<u64> {
        self.read(move |r| {
            let prefix = Key(tenant.as_bytes().to_vec());
            let end = prefix.prefix_end();
            let mut n = 0u64;
            for t in crate::schema::all_tables() {
                let def = t.def();
                if def.scope != Scope::Tenant {
                    continue;
                }
                let mut names = vec![def.name];
                names.extend(def.indexes.iter().filter(|i| !i.global).map(|i| i.name));
                names.extend(def.fks.iter().map(|f| f.name));
                for name in names {
                    let tbl = match r.open_table(raw_table(name)) {
                        Ok(t) => t,
                        Err(redb::TableError::TableDoesNotExist(_)) => continue,
                        Err(e) => return Err(e.into()),
                    };
                    if tbl.is_empty()? {
                        continue;
                    }
                    let range = match &end {
                        Some(end) => tbl.range::<&[u8]>(prefix.as_bytes()..end.as_slice())?,
                        None => tbl.range::<&[u8]>(prefix.as_bytes()..)?,
                    };
                    for item in range {
                        item?;
                        n += 1;
                    }
                }
            }
            Ok(n)
        })
        .await
    }
}

/// Decode every row of `R` under `prefix` as JSON without its secret columns.
pub(crate) fn export_rows<R: Record>(
    r: &ReadTransaction,
    prefix: &Key,
    each: &mut dyn FnMut(&'static str, serde_json::Value) -> StorageResult<()>,
) -> StorageResult<u64> {
    let t = match r.open_table(raw_table(R::DEF.name)) {
        Ok(t) => t,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let range = match prefix.prefix_end() {
        Some(end) => t.range::<&[u8]>(prefix.as_bytes()..end.as_slice())?,
        None => t.range::<&[u8]>(prefix.as_bytes()..)?,
    };
    let mut n = 0u64;
    for item in range {
        let (_, v) = item?;
        let row: R = decode_row(R::DEF.name, R::VERSION, v.value())?;
        let mut value = serde_json::to_value(&row)
            .map_err(|e| StorageError::Backend(format!("{}: {e}", R::DEF.name)))?;
        if let Some(obj) = value.as_object_mut() {
            for col in R::SECRET_COLUMNS {
                obj.remove(*col);
            }
        }
        each(R::DEF.name, value)?;
        n += 1;
    }
    Ok(n)
}

//! Where the database file's bytes go, by redb's own accounting: what the
//! rows take, what the B-trees add, and what is allocated but unused
//! (page rounding, freed pages the file keeps). Capacity planning and
//! `root bench retrieval` read it; it takes a write transaction (and
//! aborts it), so it waits for in-flight writes.

use redb::{ReadableDatabase, ReadableTableMetadata, TableHandle};

use super::RedbStore;
use crate::error::{StorageError, StorageResult};

/// One table's share of the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableDisk {
    /// Table name (the schema's, e.g. `knowledge_chunks`).
    pub name: String,
    /// Key and value bytes of its rows.
    pub stored_bytes: u64,
    /// B-tree overhead (page headers, branch pages).
    pub metadata_bytes: u64,
    /// Allocated to its pages but holding nothing.
    pub fragmented_bytes: u64,
}

impl TableDisk {
    /// Everything allocated to the table.
    pub fn total_bytes(&self) -> u64 {
        self.stored_bytes + self.metadata_bytes + self.fragmented_bytes
    }
}

/// The whole file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DiskStats {
    /// Length of the file.
    pub file_bytes: u64,
    /// Pages in use by any tree (tables and redb's own), in bytes.
    pub allocated_bytes: u64,
    /// Row bytes of every table.
    pub stored_bytes: u64,
    /// B-tree overhead of every table.
    pub metadata_bytes: u64,
    /// Allocated but unused inside pages.
    pub fragmented_bytes: u64,
    /// Per table, largest first.
    pub tables: Vec<TableDisk>,
}

impl DiskStats {
    /// File bytes no page uses: freed pages the file keeps for reuse (redb
    /// never shrinks its file on its own) and region headers.
    pub fn free_bytes(&self) -> u64 {
        self.file_bytes.saturating_sub(self.allocated_bytes)
    }
}

impl RedbStore {
    /// Where the file's bytes go (blocking; see the module docs).
    pub fn disk_stats(&self) -> StorageResult<DiskStats> {
        let file_bytes = std::fs::metadata(self.path()).map(|m| m.len()).unwrap_or(0);
        self.with_db_blocking(|db| {
            let w = db.begin_write().map_err(StorageError::backend)?;
            let s = w.stats().map_err(StorageError::backend)?;
            w.abort().map_err(StorageError::backend)?;
            let r = db.begin_read().map_err(StorageError::backend)?;
            let mut tables = Vec::new();
            for handle in r.list_tables().map_err(StorageError::backend)? {
                let t = r
                    .open_untyped_table(handle.clone())
                    .map_err(StorageError::backend)?;
                let ts = t.stats().map_err(StorageError::backend)?;
                tables.push(TableDisk {
                    name: handle.name().to_string(),
                    stored_bytes: ts.stored_bytes(),
                    metadata_bytes: ts.metadata_bytes(),
                    fragmented_bytes: ts.fragmented_bytes(),
                });
            }
            tables.sort_by_key(|t| std::cmp::Reverse(t.total_bytes()));
            Ok(DiskStats {
                file_bytes,
                allocated_bytes: s.allocated_pages() * s.page_size() as u64,
                stored_bytes: s.stored_bytes(),
                metadata_bytes: s.metadata_bytes(),
                fragmented_bytes: s.fragmented_bytes(),
                tables,
            })
        })
    }
}

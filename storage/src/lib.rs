//! Root's embedded storage: the row types of every table of spec §2, the
//! store traits the application uses, and their redb implementation.
//!
//! Flow: `RedbStore::open(path)` → `MigrationStore::migrate()` (creates the
//! tables, seeds the root tenant) → the app reads and writes through
//! [`Store`] (generic row operations) and the aggregate traits
//! ([`TenantStore`], [`ApiKeyStore`], …). Constraints (UNIQUE, unique-partial,
//! CHECK, FK cascade / set-null) are enforced here, inside one write
//! transaction per call; see `table.rs` for the physical layout.
#![warn(missing_docs)]

mod backup;
mod codec;
/// Conformance suite every store implementation must pass (the crate's own
/// tests, or the `conformance` feature).
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod enums;
mod error;
mod index_outbox;
mod key;
mod migrations;
pub mod packed_text;
mod queue;
mod queue_redb;
mod redb_store;
mod schema;
mod store;
mod table;

pub use backup::{
    FileSummary, copy_file, file_in_use, inspect_file, secret_columns, tenant_table_names,
};
pub use codec::{Embedding, Json, Redacted, Ts, decode_row, decode_row_borrowed, encode_row};
pub use enums::*;
pub use error::{StorageError, StorageResult};
pub use index_outbox::{
    IndexCorpus, IndexOutboxEntry, IndexOutboxSeq, IndexOutboxStore, IndexState, Tx,
};
pub use key::{Key, key};
pub use migrations::latest_version;
pub use queue::{
    EnqueueMode, EnqueueOutcome, Job, JobQueue, JobState, NewJob, QueueStats, Retention,
    TICK_RETENTION,
};
pub use queue_redb::MAX_STALLS;
pub use redb_store::{
    DEFAULT_CACHE_BYTES, DiskStats, RELAXED_FLUSH_INTERVAL, RedbStore, Snapshot, TableDisk,
};
pub use schema::*;
pub use store::{ApiKeyStore, MigrationStore, Store, TenantStore};
pub use table::{
    FkDef, IndexDef, IndexKind, OnDelete, Order, Projection, Record, Scan, Scope, TableDef,
};

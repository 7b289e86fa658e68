//! The storage error: small on purpose (callers branch on `NotFound` and `Conflict`).

use thiserror::Error;

/// Result alias for storage operations.
pub type StorageResult<T, E = StorageError> = std::result::Result<T, E>;

/// Everything a store can fail with.
#[derive(Debug, Error)]
pub enum StorageError {
    /// The row addressed by primary key does not exist.
    #[error("{table}: row not found")]
    NotFound {
        /// Table name as in spec §2.
        table: &'static str,
    },
    /// A UNIQUE / primary-key / unique-partial constraint would be violated.
    /// `constraint` is the stable constraint name (e.g. `tenants_slug_key`).
    #[error("unique constraint violated: {constraint}")]
    Conflict {
        /// Stable constraint name callers match on.
        constraint: &'static str,
    },
    /// A row references a parent that does not exist (FK violation).
    #[error("foreign key violated: {constraint}")]
    ForeignKey {
        /// Stable FK name.
        constraint: &'static str,
    },
    /// A CHECK constraint failed (enum value, numeric range, …).
    #[error("check constraint violated on {column}: {message}")]
    Check {
        /// The column (or `table.column`) that failed its check.
        column: &'static str,
        /// What was expected.
        message: String,
    },
    /// Stored bytes could not be decoded (wrong format version, truncated row…).
    #[error("corrupted data in {table}: {detail}")]
    Corrupted {
        /// Table whose row failed to decode.
        table: &'static str,
        /// What went wrong.
        detail: String,
    },
    /// The database file was written by a newer Root binary.
    #[error(
        "database schema version {found} is newer than this binary understands (latest known {known}); upgrade root"
    )]
    NewerSchema {
        /// Highest migration recorded in the file.
        found: u32,
        /// Highest migration this binary ships.
        known: u32,
    },
    /// Another process holds the database file lock.
    #[error(
        "the database {path} is already opened by another process (is another `root` running?)"
    )]
    AlreadyOpen {
        /// Path of the redb file.
        path: String,
    },
    /// Any I/O or backend failure (disk full, permission denied…).
    #[error("storage backend error: {0}")]
    Backend(String),
}

impl StorageError {
    pub(crate) fn backend(e: impl std::fmt::Display) -> Self {
        StorageError::Backend(e.to_string())
    }
}

macro_rules! from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for StorageError {
            fn from(e: $t) -> Self { StorageError::backend(e) }
        }
    )*};
}
from_redb!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

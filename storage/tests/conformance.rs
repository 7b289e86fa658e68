//! The store conformance suite against the redb implementation: once on a
//! real file in a temp dir (the production path, fsync included) and once on
//! redb's in-memory backend.

use storage::RedbStore;

fn on_file() -> (RedbStore, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = RedbStore::open(&dir.path().join("root.redb")).unwrap();
    (store, dir)
}

mod on_disk {
    storage::conformance_tests!(super::on_file());
}

mod in_memory {
    storage::conformance_tests!((storage::RedbStore::open_in_memory().unwrap(), ()));
}

//! `root backup` / `root restore` (§15.4): a backup is a redb file plus
//! `<file>.manifest.json` (format, schema version, entries per table, size,
//! SHA-256). The copy is written to `<file>.partial`, fsynced, then renamed;
//! the manifest is written the same way after it, so a file without a
//! manifest (a copy killed midway) is never taken for a complete backup.
//! Restore verifies everything before it touches the live file.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use storage::{FileSummary, IndexCorpus, RedbStore, Ts};
use uuid::Uuid;

/// The manifest's `format`.
pub const MANIFEST_FORMAT: &str = "root-backup/1";

/// Suffix of the file a backup is copied into before it is complete.
const PARTIAL_SUFFIX: &str = "partial";

/// `<backup>.manifest.json`: what the backup file holds and its checksum.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_FORMAT`].
    pub format: String,
    /// When the snapshot was taken.
    pub created_at: Ts,
    /// The `root` version that wrote it.
    pub root_version: String,
    /// Highest migration applied in the copied database.
    pub schema_version: u32,
    /// The backup file's name (beside the manifest).
    pub file: String,
    /// Its size in bytes.
    pub bytes: u64,
    /// SHA-256 of the file, lowercase hex.
    pub sha256: String,
    /// Entries per redb table (rows, index and FK tables).
    pub tables: BTreeMap<String, u64>,
}

/// The manifest path of a backup file: `<file>.manifest.json`.
pub fn manifest_path(file: &Path) -> PathBuf {
    with_suffix(file, "manifest.json")
}

fn with_suffix(file: &Path, suffix: &str) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(".");
    s.push(suffix);
    PathBuf::from(s)
}

/// Where a backup may be written: refuses an existing file or a missing
/// directory before any copying starts.
fn check_target(out: &Path) -> anyhow::Result<()> {
    if out.exists() || manifest_path(out).exists() {
        bail!(
            "{} (or its manifest) already exists; choose a new name",
            out.display()
        );
    }
    let dir = parent_dir(out);
    if !dir.is_dir() {
        bail!("directory {} does not exist", dir.display());
    }
    Ok(())
}

fn parent_dir(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Take a backup of the open `store` (a running server) into `out`. The
/// copy runs on the blocking pool; the store keeps serving.
pub async fn backup_store(store: &RedbStore, out: &Path, now: Ts) -> anyhow::Result<Manifest> {
    let store = store.clone();
    let out = out.to_path_buf();
    tokio::task::spawn_blocking(move || {
        write_backup(&out, now, |partial| Ok(store.copy_to_blocking(partial)?))
    })
    .await
    .context("backup task failed")?
}

/// Take a backup of the database file at `db` (no server holds it).
pub fn backup_file(db: &Path, out: &Path, now: Ts) -> anyhow::Result<Manifest> {
    write_backup(out, now, |partial| Ok(storage::copy_file(db, partial)?))
}

fn write_backup(
    out: &Path,
    now: Ts,
    copy: impl FnOnce(&Path) -> anyhow::Result<FileSummary>,
) -> anyhow::Result<Manifest> {
    check_target(out)?;
    let partial = with_suffix(out, PARTIAL_SUFFIX);
    // A partial file left by a killed earlier run is garbage.
    let _ = std::fs::remove_file(&partial);
    let summary = match copy(&partial) {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_file(&partial);
            return Err(e.context(format!("copying into {}", partial.display())));
        }
    };
    let (bytes, sha256) = fsync_and_hash(&partial)?;
    std::fs::rename(&partial, out)
        .with_context(|| format!("renaming {} to {}", partial.display(), out.display()))?;
    let manifest = Manifest {
        format: MANIFEST_FORMAT.into(),
        created_at: now,
        root_version: env!("CARGO_PKG_VERSION").into(),
        schema_version: summary.schema_version,
        file: out
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        bytes,
        sha256,
        tables: summary.tables,
    };
    write_atomically(&manifest_path(out), &serde_json::to_vec_pretty(&manifest)?)?;
    Ok(manifest)
}

/// fsync `path`, then return its size and SHA-256 (hex).
fn fsync_and_hash(path: &Path) -> anyhow::Result<(u64, String)> {
    let f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    f.sync_all()?;
    hash_file(path)
}

/// Size and SHA-256 (hex) of a file.
pub fn hash_file(path: &Path) -> anyhow::Result<(u64, String)> {
    use sha2::Digest;
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
    let mut hasher = sha2::Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut bytes = 0u64;
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        bytes += n as u64;
    }
    Ok((bytes, hex::encode(hasher.finalize())))
}

/// Write `bytes` to `path` through a fsynced temp file and a rename.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let tmp = with_suffix(path, PARTIAL_SUFFIX);
    // A leftover temp file would keep its old mode: start afresh, 0600
    // (manifests and exports describe or hold tenant data).
    let _ = std::fs::remove_file(&tmp);
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)
            .with_context(|| format!("creating {}", tmp.display()))?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
    sync_dir(&parent_dir(path));
    Ok(())
}

/// fsync a directory so renames in it survive a crash (best effort).
fn sync_dir(dir: &Path) {
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
}

/// A backup that passed every check of [`verify`].
#[derive(Debug)]
pub struct Verified {
    /// Its manifest.
    pub manifest: Manifest,
    /// The (tenant, corpus) indexes its database has state for.
    pub indexes: Vec<(Uuid, IndexCorpus)>,
}

/// Check a backup: its manifest parses and has the right format, the file's
/// size and SHA-256 match it, redb opens the file, its tables hold the
/// manifest's entry counts, and its schema is not newer than this binary.
pub fn verify(file: &Path) -> anyhow::Result<Verified> {
    let mpath = manifest_path(file);
    let raw = std::fs::read(&mpath).with_context(|| {
        format!(
            "no manifest {} (an incomplete backup, or not a backup)",
            mpath.display()
        )
    })?;
    let manifest: Manifest = serde_json::from_slice(&raw)
        .with_context(|| format!("manifest {} is not valid", mpath.display()))?;
    if manifest.format != MANIFEST_FORMAT {
        bail!(
            "manifest format {:?} is not {MANIFEST_FORMAT:?}",
            manifest.format
        );
    }
    let (bytes, sha256) = hash_file(file)?;
    if bytes != manifest.bytes {
        bail!(
            "{} has {bytes} bytes, the manifest says {} (truncated or changed)",
            file.display(),
            manifest.bytes
        );
    }
    if sha256 != manifest.sha256 {
        bail!(
            "{} does not match the manifest's SHA-256 (corrupt or changed)",
            file.display()
        );
    }
    let known = storage::latest_version();
    if manifest.schema_version > known {
        bail!(
            "the backup is at migration {}, newer than this binary's {known}: downgrades are refused",
            manifest.schema_version
        );
    }
    let summary = storage::inspect_file(file)
        .with_context(|| format!("redb cannot read {}", file.display()))?;
    if summary.schema_version != manifest.schema_version {
        bail!(
            "the file is at migration {}, the manifest says {}",
            summary.schema_version,
            manifest.schema_version
        );
    }
    if summary.tables != manifest.tables {
        bail!("the file's table entry counts differ from the manifest's");
    }
    Ok(Verified {
        manifest,
        indexes: summary.indexes,
    })
}

/// What a restore did.
#[derive(Debug)]
pub struct Restored {
    /// The verified backup's manifest.
    pub manifest: Manifest,
    /// Where the previous live file went (`None`: there was none).
    pub previous: Option<PathBuf>,
    /// Index directories marked for a rebuild on the next start.
    pub indexes_marked: usize,
}

/// Install the backup `file` as the database of `data_dir` (server stopped):
/// verify it, copy it beside the live file and verify the copy, move the
/// live file aside to `root.redb.before-restore`, rename the copy into
/// place, and drop the derived search indexes so the next start rebuilds
/// them. The live file is untouched until the new one is verified.
pub fn restore(data_dir: &Path, db_path: &Path, file: &Path) -> anyhow::Result<Restored> {
    if storage::file_in_use(db_path)? {
        bail!(
            "{} is in use: stop the server (root serve / root worker) before restoring",
            db_path.display()
        );
    }
    let verified = verify(file)?;
    let aside = with_suffix(db_path, "before-restore");
    if aside.exists() {
        bail!(
            "{} exists from an earlier restore: move or delete it first",
            aside.display()
        );
    }
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let incoming = with_suffix(db_path, "restoring");
    let _ = std::fs::remove_file(&incoming);
    std::fs::copy(file, &incoming)
        .with_context(|| format!("copying {} into {}", file.display(), incoming.display()))?;
    // `fs::copy` keeps the backup's mode; the live file is owner-only
    // whatever the backup was made with.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&incoming, std::fs::Permissions::from_mode(0o600))
            .with_context(|| format!("restricting {}", incoming.display()))?;
    }
    let (bytes, sha) = fsync_and_hash(&incoming)?;
    if bytes != verified.manifest.bytes || sha != verified.manifest.sha256 {
        let _ = std::fs::remove_file(&incoming);
        bail!(
            "the copy in {} does not match the backup",
            data_dir.display()
        );
    }
    let previous = if db_path.exists() {
        std::fs::rename(db_path, &aside)
            .with_context(|| format!("moving {} aside", db_path.display()))?;
        Some(aside)
    } else {
        None
    };
    std::fs::rename(&incoming, db_path)
        .with_context(|| format!("installing {}", db_path.display()))?;
    sync_dir(&parent_dir(db_path));
    let indexes_marked = mark_indexes_for_rebuild(data_dir, &verified.indexes)?;
    Ok(Restored {
        manifest: verified.manifest,
        previous,
        indexes_marked,
    })
}

/// The index files belong to the replaced database: delete them and leave
/// an empty directory per index the restored database has state for, which
/// start-up recovery opens, finds empty and rebuilds from the rows.
fn mark_indexes_for_rebuild(
    data_dir: &Path,
    indexes: &[(Uuid, IndexCorpus)],
) -> anyhow::Result<usize> {
    let root = crate::retrieval::registry::index_root(data_dir);
    match std::fs::remove_dir_all(&root) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("deleting {}", root.display())),
    }
    for (tenant, corpus) in indexes {
        let dir = crate::retrieval::registry::corpus_dir(data_dir, *tenant, *corpus);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    Ok(indexes.len())
}

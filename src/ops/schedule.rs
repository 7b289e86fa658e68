//! The daily backup (`ROOT_BACKUP_DIR`, `ROOT_BACKUP_KEEP`): a cron entry on
//! the workers' own scheduler (not a §13 queue: the table is fixed at 15),
//! plus a catch-up shortly after start when the newest backup is older than
//! a day. Backups are `root-<UTC time>.redb` with their manifests; after each
//! one only the newest `keep` are kept.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use storage::{RedbStore, Ts};

use super::backup::{Manifest, backup_store, manifest_path};
use crate::platform::clock::Clock;

/// When the daily backup runs: 03:30 UTC (seconds-first cron).
pub const BACKUP_CRON: &str = "0 30 3 * * *";

/// A day, in microseconds: older than this, the start-up catch-up runs.
const DAY_MICROS: i64 = 24 * 3600 * 1_000_000;

const PREFIX: &str = "root-";
const SUFFIX: &str = ".redb";

/// What the scheduled backup needs.
#[derive(Clone)]
pub struct BackupSchedule {
    /// The open database.
    pub store: RedbStore,
    /// `ROOT_BACKUP_DIR`.
    pub dir: PathBuf,
    /// `ROOT_BACKUP_KEEP`.
    pub keep: usize,
    /// The server's clock.
    pub clock: Arc<dyn Clock>,
}

impl BackupSchedule {
    /// Take one backup now into the directory, then prune to the newest
    /// `keep`. Returns the new backup's path and manifest.
    pub async fn run_once(&self) -> anyhow::Result<(PathBuf, Manifest)> {
        super::create_private_dir(&self.dir)
            .with_context(|| format!("creating {} (ROOT_BACKUP_DIR)", self.dir.display()))?;
        let now = self.clock.now();
        let path = self.dir.join(backup_name(now));
        let manifest = backup_store(&self.store, &path, now).await?;
        prune(&self.dir, self.keep)?;
        Ok((path, manifest))
    }

    /// The start-up catch-up: a backup when none in the directory is younger
    /// than a day.
    pub async fn catch_up(&self) -> anyhow::Result<Option<PathBuf>> {
        let newest = complete_backups(&self.dir)?
            .into_iter()
            .filter_map(|p| read_manifest(&p))
            .map(|m| m.created_at)
            .max();
        let now = self.clock.now();
        match newest {
            Some(t) if now.micros() - t.micros() < DAY_MICROS => Ok(None),
            _ => Ok(Some(self.run_once().await?.0)),
        }
    }

    /// Log the outcome of a scheduled run.
    pub async fn run_logged(&self) {
        match self.run_once().await {
            Ok((path, m)) => {
                tracing::info!(backup = %path.display(), bytes = m.bytes, "scheduled backup written")
            }
            Err(e) => {
                tracing::error!(dir = %self.dir.display(), error = %format!("{e:#}"), "scheduled backup failed")
            }
        }
    }
}

fn read_manifest(file: &Path) -> Option<Manifest> {
    let raw = std::fs::read(manifest_path(file)).ok()?;
    serde_json::from_slice(&raw).ok()
}

/// Backups in `dir` that have a manifest, oldest first (names sort by time).
pub fn complete_backups(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
        Err(e) => return Err(e).with_context(|| format!("reading {}", dir.display())),
    };
    for entry in entries {
        let path = entry?.path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if name.starts_with(PREFIX) && name.ends_with(SUFFIX) && manifest_path(&path).is_file() {
            out.push(path);
        }
    }
    out.sort();
    Ok(out)
}

/// Delete all but the newest `keep` complete backups (file and manifest).
pub fn prune(dir: &Path, keep: usize) -> anyhow::Result<Vec<PathBuf>> {
    let all = complete_backups(dir)?;
    let doomed: Vec<PathBuf> = all
        .iter()
        .take(all.len().saturating_sub(keep.max(1)))
        .cloned()
        .collect();
    for p in &doomed {
        std::fs::remove_file(manifest_path(p))
            .with_context(|| format!("deleting {}", manifest_path(p).display()))?;
        std::fs::remove_file(p).with_context(|| format!("deleting {}", p.display()))?;
    }
    Ok(doomed)
}

/// `ROOT_BACKUP_DIR` as a schedule, when set.
pub fn from_config(
    config: &crate::config::Config,
    store: &RedbStore,
    clock: Arc<dyn Clock>,
) -> Option<BackupSchedule> {
    config.backup_dir.as_ref().map(|dir| BackupSchedule {
        store: store.clone(),
        dir: dir.clone(),
        keep: config.backup_keep,
        clock,
    })
}

/// The file name of a scheduled backup taken at `now` (names sort by time).
pub fn backup_name(now: Ts) -> String {
    format!(
        "{PREFIX}{}.{:06}Z{SUFFIX}",
        now.to_jiff().strftime("%Y%m%dT%H%M%S"),
        now.micros().rem_euclid(1_000_000)
    )
}

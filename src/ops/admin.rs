//! The local admin channel: a Unix socket `ROOT_DATA_DIR/admin.sock` (mode
//! 0600 inside the 0700 data dir) through which `root backup` asks the
//! running server — which holds the redb file's lock — to take the backup.
//! Only a peer with the socket owner's uid is served. One JSON line in
//! (`{"op":"backup","out":"/abs/path"}`), one JSON line out.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use storage::RedbStore;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;

use super::backup::{Manifest, backup_store};
use crate::platform::clock::Clock;

/// The socket's file name in the data dir.
pub const SOCKET_NAME: &str = "admin.sock";

/// Longest request line accepted.
const MAX_REQUEST_BYTES: u64 = 16 * 1024;

/// The admin socket of `data_dir`.
pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET_NAME)
}

/// A request on the admin socket.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum AdminRequest {
    /// Take a backup into `out` (an absolute path the server can write).
    Backup {
        /// The backup file to create.
        out: PathBuf,
    },
}

/// The answer to one request.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct AdminResponse {
    /// The backup's manifest, when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manifest: Option<Manifest>,
    /// Why the request failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The listening admin socket; [`AdminSocket::stop`] closes and removes it.
pub struct AdminSocket {
    path: PathBuf,
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl AdminSocket {
    /// Listen on `data_dir/admin.sock`. The caller holds the redb file's
    /// lock, so a socket file already there is a dead server's: replaced.
    /// `None` (with a warning) when it cannot listen; the server runs on,
    /// and `root backup` then says the channel is missing.
    pub fn start(data_dir: &Path, store: RedbStore, clock: Arc<dyn Clock>) -> Option<AdminSocket> {
        let path = socket_path(data_dir);
        match bind(&path) {
            Ok(listener) => {
                let cancel = CancellationToken::new();
                let task = tokio::spawn(accept_loop(listener, store, clock, cancel.clone()));
                tracing::info!(socket = %path.display(), "admin socket listening");
                Some(AdminSocket { path, cancel, task })
            }
            Err(e) => {
                tracing::warn!(socket = %path.display(), error = %e,
                    "admin socket unavailable: `root backup` cannot reach this server");
                None
            }
        }
    }

    /// Stop accepting, wait for the loop, remove the socket file.
    pub async fn stop(self) {
        self.cancel.cancel();
        let _ = self.task.await;
        let _ = std::fs::remove_file(&self.path);
    }
}

fn bind(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600))?;
    Ok(listener)
}

async fn accept_loop(
    listener: UnixListener,
    store: RedbStore,
    clock: Arc<dyn Clock>,
    cancel: CancellationToken,
) {
    // One backup at a time; a second request waits for the first.
    let busy = Arc::new(tokio::sync::Mutex::new(()));
    let owner = std::fs::metadata(
        listener
            .local_addr()
            .ok()
            .and_then(|a| a.as_pathname().map(Path::to_path_buf))
            .unwrap_or_default(),
    )
    .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
    .ok();
    loop {
        let stream = tokio::select! {
            _ = cancel.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok((s, _)) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "admin socket accept failed");
                    continue;
                }
            },
        };
        let peer = stream.peer_cred().ok().map(|c| c.uid());
        if owner.is_none() || peer != owner {
            tracing::warn!(?peer, "admin socket: refused a peer of another user");
            continue;
        }
        let (store, clock, busy) = (store.clone(), clock.clone(), busy.clone());
        tokio::spawn(async move {
            if let Err(e) = serve_one(stream, &store, clock.as_ref(), &busy).await {
                tracing::warn!(error = %e, "admin socket request failed");
            }
        });
    }
}

async fn serve_one(
    stream: UnixStream,
    store: &RedbStore,
    clock: &dyn Clock,
    busy: &tokio::sync::Mutex<()>,
) -> anyhow::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    tokio::io::AsyncReadExt::take(BufReader::new(read), MAX_REQUEST_BYTES)
        .read_line(&mut line)
        .await?;
    let answer = match serde_json::from_str::<AdminRequest>(line.trim()) {
        Err(e) => AdminResponse {
            error: Some(format!("bad request: {e}")),
            ..Default::default()
        },
        Ok(AdminRequest::Backup { out }) if !out.is_absolute() => AdminResponse {
            error: Some(format!("{} is not an absolute path", out.display())),
            ..Default::default()
        },
        Ok(AdminRequest::Backup { out }) => {
            let _one = busy.lock().await;
            tracing::info!(out = %out.display(), "backup requested over the admin socket");
            match backup_store(store, &out, clock.now()).await {
                Ok(m) => {
                    tracing::info!(out = %out.display(), bytes = m.bytes, "backup written");
                    AdminResponse {
                        manifest: Some(m),
                        ..Default::default()
                    }
                }
                Err(e) => {
                    tracing::error!(out = %out.display(), error = %format!("{e:#}"), "backup failed");
                    AdminResponse {
                        error: Some(format!("{e:#}")),
                        ..Default::default()
                    }
                }
            }
        }
    };
    let mut bytes = serde_json::to_vec(&answer)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    write.shutdown().await?;
    Ok(())
}

/// Ask the server holding `data_dir` to write a backup into `out`.
pub async fn request_backup(data_dir: &Path, out: &Path) -> anyhow::Result<Manifest> {
    let path = socket_path(data_dir);
    let stream = UnixStream::connect(&path).await.with_context(|| {
        format!(
            "the database is held by a running server, but its admin socket {} does not answer",
            path.display()
        )
    })?;
    let (read, mut write) = stream.into_split();
    let mut req = serde_json::to_vec(&AdminRequest::Backup {
        out: out.to_path_buf(),
    })?;
    req.push(b'\n');
    write.write_all(&req).await?;
    let mut line = String::new();
    BufReader::new(read).read_line(&mut line).await?;
    if line.trim().is_empty() {
        bail!("the server closed the admin socket without an answer (see its log)");
    }
    let answer: AdminResponse =
        serde_json::from_str(line.trim()).context("the server's answer is not valid")?;
    match (answer.manifest, answer.error) {
        (Some(m), _) => Ok(m),
        (None, Some(e)) => bail!("the server could not take the backup: {e}"),
        (None, None) => bail!("the server answered neither a manifest nor an error"),
    }
}

//! Start-up and shutdown: open the data dir and storage, migrate, bind, serve
//! until a signal, then let in-flight requests finish and close storage.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use storage::{MigrationStore, RedbStore};
use tokio::net::TcpListener;

use crate::config::Config;
use crate::platform::tenancy::TenantCache;

/// Shared state handed to every handler (cheap to clone).
#[derive(Clone)]
pub struct AppState {
    /// Parsed configuration.
    pub config: Arc<Config>,
    /// The one storage handle.
    pub store: RedbStore,
    /// 30-second tenant cache.
    pub tenants: TenantCache,
}

/// Open (creating if needed) the data dir and the redb file, then migrate.
pub async fn open_store(config: &Config) -> anyhow::Result<RedbStore> {
    let dir = &config.data_dir;
    std::fs::create_dir_all(dir).with_context(|| {
        format!(
            "data directory {} cannot be created (ROOT_DATA_DIR)",
            dir.display()
        )
    })?;
    let path = config.database_path();
    let store = RedbStore::open(&path)?;
    let applied = store
        .migrate()
        .await
        .with_context(|| format!("migrating {}", path.display()))?;
    if !applied.is_empty() {
        tracing::info!(count = applied.len(), path = %path.display(), "migrations applied");
    }
    Ok(store)
}

/// A bound, ready-to-serve application.
pub struct App {
    state: AppState,
    listener: TcpListener,
}

impl App {
    /// Open storage, migrate, and bind `bind:PORT` (port 0 picks a free port).
    pub async fn build(config: Config) -> anyhow::Result<App> {
        let store = open_store(&config).await?;
        let addr = format!("{}:{}", config.bind, config.port);
        let listener = TcpListener::bind(&addr)
            .await
            .with_context(|| format!("cannot listen on {addr} (PORT / ROOT_BIND)"))?;
        let state = AppState {
            tenants: TenantCache::new(store.clone()),
            config: Arc::new(config),
            store,
        };
        Ok(App { state, listener })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The shared state (tests use it to seed data).
    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serve until `shutdown` resolves; in-flight requests finish, then
    /// storage is flushed and closed.
    pub async fn run_until(
        self,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let App { state, listener } = self;
        tracing::info!(addr = %listener.local_addr()?, "root listening");
        let router = crate::http::router(state.clone());
        axum::serve(listener, router)
            .with_graceful_shutdown(shutdown)
            .await
            .context("HTTP server failed")?;
        tracing::info!("shutting down: closing storage");
        state.store.close().await;
        Ok(())
    }
}

/// Resolves on SIGINT (Ctrl-C) or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!(error = %e, "cannot listen for SIGINT");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot listen for SIGTERM");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => tracing::info!("SIGINT received"),
        _ = term => tracing::info!("SIGTERM received"),
    }
}

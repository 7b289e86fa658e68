//! `root tenant export` and `root tenant delete` (§2.6, §15.4): one tenant's
//! data on request, out or gone. Both take the tenant together with its
//! `--dev` shadow and run with the server stopped (the CLI opens redb).
//!
//! Export layout, per tenant (`<out>/<slug>/`, and `<out>/<slug>--dev/`):
//! `tenants.jsonl` (its row), `tables/<table>.jsonl` for every tenant-scoped
//! table of the storage registry (empty tables included), `pages/<slug>.html`
//! for its knowledge pages; `<out>/export.json` lists what was written and
//! which secret columns were left out.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::Serialize;
use storage::{JobQueue, ROOT_TENANT_ID, RedbStore, StorageError, Tenant, TenantStore};
use uuid::Uuid;

use super::backup::write_atomically;
use crate::retrieval::IndexRegistry;
use crate::retrieval::registry::tenant_index_dir;

/// `<out>/export.json`.
#[derive(Debug, Serialize)]
pub struct ExportSummary {
    /// Every exported tenant (the live one first), with its row counts.
    pub tenants: Vec<TenantExport>,
    /// Columns left out of the export, per table.
    pub omitted_columns: BTreeMap<&'static str, &'static [&'static str]>,
}

/// One tenant's part of an export.
#[derive(Debug, Serialize)]
pub struct TenantExport {
    /// Its slug (also its directory name).
    pub slug: String,
    /// Its id.
    pub id: Uuid,
    /// Rows per tenant-scoped table.
    pub tables: BTreeMap<&'static str, u64>,
    /// Knowledge pages written as HTML.
    pub pages: usize,
}

/// Why a tenant export or delete was refused before it started (callers
/// downcast the `anyhow` error to answer with the right status).
#[derive(Debug, thiserror::Error)]
pub enum TenantRefusal {
    /// No tenant has the slug.
    #[error("no tenant with slug {0:?}")]
    Unknown(String),
    /// The slug names a dev shadow.
    #[error("{0} is a dev shadow; name its live tenant (the shadow comes with it)")]
    DevShadow(String),
    /// The platform's own tenant.
    #[error("the platform's own tenant {0:?} cannot be deleted")]
    RootTenant(String),
}

/// The live tenant named `slug` and its dev shadow, if any. A shadow's slug
/// is refused: the pair is handled through its live slug.
async fn tenant_pair(store: &RedbStore, slug: &str) -> anyhow::Result<Vec<Tenant>> {
    let tenant = store
        .tenant_by_slug(slug)
        .await?
        .ok_or_else(|| TenantRefusal::Unknown(slug.to_string()))?;
    if tenant.live_tenant_id.is_some() {
        return Err(TenantRefusal::DevShadow(slug.to_string()).into());
    }
    let shadow = store.dev_shadow_of(tenant.id).await?;
    Ok(std::iter::once(tenant).chain(shadow).collect())
}

/// Export `slug` (and its dev shadow) into the new directory `out`.
pub async fn export_tenant(
    store: &RedbStore,
    slug: &str,
    out: &Path,
) -> anyhow::Result<ExportSummary> {
    let tenants = tenant_pair(store, slug).await?;
    if out.exists() && std::fs::read_dir(out)?.next().is_some() {
        bail!("{} exists and is not empty", out.display());
    }
    super::create_private_dir(out).with_context(|| format!("creating {}", out.display()))?;
    let mut exported = Vec::new();
    for tenant in tenants {
        let (store, dir) = (store.clone(), out.join(&tenant.slug));
        let one = tokio::task::spawn_blocking(move || export_one(&store, &tenant, &dir))
            .await
            .context("export task failed")??;
        exported.push(one);
    }
    let summary = ExportSummary {
        tenants: exported,
        omitted_columns: storage::tenant_table_names()
            .into_iter()
            .filter_map(|t| {
                storage::secret_columns(t)
                    .filter(|c| !c.is_empty())
                    .map(|c| (t, c))
            })
            .collect(),
    };
    write_atomically(
        &out.join("export.json"),
        &serde_json::to_vec_pretty(&summary)?,
    )?;
    Ok(summary)
}

fn export_one(store: &RedbStore, tenant: &Tenant, dir: &Path) -> anyhow::Result<TenantExport> {
    let tables_dir = dir.join("tables");
    let pages_dir = dir.join("pages");
    for d in [&tables_dir, &pages_dir] {
        std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let mut row = serde_json::to_vec(tenant)?;
    row.push(b'\n');
    std::fs::write(dir.join("tenants.jsonl"), row)?;
    let mut files: BTreeMap<&'static str, std::io::BufWriter<std::fs::File>> = BTreeMap::new();
    for t in storage::tenant_table_names() {
        let f = std::fs::File::create(tables_dir.join(format!("{t}.jsonl")))?;
        files.insert(t, std::io::BufWriter::new(f));
    }
    let mut pages = 0usize;
    let io = |e: std::io::Error| StorageError::Backend(format!("writing the export: {e}"));
    let counts = store.export_tenant_blocking(tenant.id, &mut |table, value| {
        if table == <storage::KnowledgePage as storage::Record>::DEF.name {
            write_page(&pages_dir, &value).map_err(io)?;
            pages += 1;
        }
        let f = files
            .get_mut(table)
            .ok_or_else(|| StorageError::Backend(format!("unknown table {table}")))?;
        serde_json::to_writer(&mut *f, &value)
            .map_err(|e| StorageError::Backend(format!("{table}: {e}")))?;
        f.write_all(b"\n").map_err(io)
    })?;
    for (_, mut f) in files {
        f.flush()?;
        f.get_ref().sync_all()?;
    }
    Ok(TenantExport {
        slug: tenant.slug.clone(),
        id: tenant.id,
        tables: counts,
        pages,
    })
}

/// A knowledge page as a standalone HTML file named after its slug.
fn write_page(dir: &Path, page: &serde_json::Value) -> std::io::Result<()> {
    let text = |k: &str| page.get(k).and_then(|v| v.as_str()).unwrap_or_default();
    let mut name: String = text("slug")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    if name.is_empty() || name.starts_with('.') {
        name = text("id").to_string();
    }
    let html = format!(
        "<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>{}</title></head>\n<body>\n<h1>{}</h1>\n{}\n</body></html>\n",
        escape(text("title")),
        escape(text("title")),
        text("content_html")
    );
    std::fs::write(dir.join(format!("{name}.html")), html)
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// What a tenant delete removed.
#[derive(Debug)]
pub struct Deleted {
    /// (slug, id, rows) per deleted tenant.
    pub tenants: Vec<(String, Uuid, u64)>,
    /// Index directories removed.
    pub index_dirs: Vec<PathBuf>,
    /// Queued jobs (any state) of the pair removed from `queue_jobs`.
    pub jobs: usize,
}

/// Delete `slug`, its dev shadow, every row of both (the tenant delete
/// cascades and range-deletes each tenant-scoped table), their queued jobs
/// and their index directories under `data_dir`. The platform's own `root`
/// tenant is refused. With the server stopped (the CLI).
pub async fn delete_tenant(
    store: &RedbStore,
    data_dir: &Path,
    slug: &str,
) -> anyhow::Result<Deleted> {
    delete_tenant_with(store, data_dir, slug, None).await
}

/// [`delete_tenant`] while the server runs: the pair's open indexes are
/// closed and dropped from `registry` (its writers stopped) before their
/// directories are removed.
pub async fn delete_tenant_with(
    store: &RedbStore,
    data_dir: &Path,
    slug: &str,
    registry: Option<&IndexRegistry>,
) -> anyhow::Result<Deleted> {
    let tenants = tenant_pair(store, slug).await?;
    if tenants.iter().any(|t| t.id == ROOT_TENANT_ID) {
        return Err(TenantRefusal::RootTenant(slug.to_string()).into());
    }
    let mut report = Vec::new();
    for t in &tenants {
        let rows: u64 = store
            .tenant_row_counts(t.id)
            .await?
            .iter()
            .map(|(_, n)| n)
            .sum();
        report.push((t.slug.clone(), t.id, rows));
    }
    // No request or job still in flight may re-open (and re-create) the
    // indexes once the rows are gone.
    if let Some(registry) = registry {
        tenants.iter().for_each(|t| registry.retire(t.id));
    }
    if let Err(e) = store.delete_tenant(tenants[0].id).await {
        if let Some(registry) = registry {
            tenants.iter().for_each(|t| registry.unretire(t.id));
        }
        return Err(e.into());
    }
    let mut jobs = 0;
    for t in &tenants {
        jobs += store.delete_tenant_jobs(t.id).await?;
    }
    let mut index_dirs = Vec::new();
    for t in &tenants {
        let dir = tenant_index_dir(data_dir, t.id);
        let existed = dir.exists();
        if let Some(registry) = registry {
            // Stops the writers and closes the handles, then removes the files.
            registry.drop_tenant(t.id).await;
        }
        if existed && !dir.exists() {
            index_dirs.push(dir);
        }
    }
    for t in &tenants {
        if store.tenant_by_id(t.id).await?.is_some() {
            bail!("tenant {} is still there after the delete", t.slug);
        }
        let left = store.tenant_key_count(t.id).await?;
        if left > 0 {
            bail!(
                "{left} entries of {} are still stored after the delete",
                t.slug
            );
        }
        let dir = tenant_index_dir(data_dir, t.id);
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => index_dirs.push(dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("deleting {}", dir.display())),
        }
    }
    Ok(Deleted {
        tenants: report,
        index_dirs,
        jobs,
    })
}

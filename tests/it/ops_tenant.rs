//! Tenant export and deletion (§2.6, §15.4): the export holds every
//! tenant-scoped table of the storage registry, only the tenant's (and its
//! dev shadow's) rows, no secret column and no secret value, and its pages
//! as HTML; the delete leaves no entry of either tenant in any
//! tenant-scoped table and no index directory, and another tenant intact.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;
use storage::conformance::seed_every_table;
use storage::{Integration, JobQueue, Store, Tenant, TenantStore};
use uuid::Uuid;

use root::app::open_store;
use root::ops::tenant::{delete_tenant, export_tenant};
use root::retrieval::registry::tenant_index_dir;

use crate::support::test_config;

const SECRET: &str = "sk-topsecret-int";

async fn seeded(store: &storage::RedbStore, slug: &str) -> (Tenant, Tenant) {
    let live = store.create_tenant(Tenant::new(slug, slug)).await.unwrap();
    let dev = store.ensure_dev_shadow(live.id).await.unwrap();
    for t in [&live, &dev] {
        seed_every_table(store, t.id).await;
        store
            .insert(Integration::new(
                t.id,
                "billing",
                "https://b.example",
                SECRET,
            ))
            .await
            .unwrap();
    }
    (live, dev)
}

fn jsonl(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn all_text(dir: &Path) -> String {
    let mut out = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.push_str(&all_text(&p));
        } else {
            out.push_str(&std::fs::read_to_string(&p).unwrap());
        }
    }
    out
}

#[tokio::test]
async fn ops_tenant_export_has_every_table_only_this_tenant_and_no_secrets() {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(&dir.path().join("data"), &[]);
    let store = open_store(&config).await.unwrap();
    let (live, dev) = seeded(&store, "acme").await;
    let (other, _) = seeded(&store, "other").await;
    let out = dir.path().join("export");
    let summary = export_tenant(&store, "acme", &out).await.unwrap();
    assert_eq!(summary.tenants.len(), 2, "the live tenant and its shadow");

    let tables: BTreeSet<&str> = storage::tenant_table_names().into_iter().collect();
    let ours: BTreeSet<String> = [live.id, dev.id].iter().map(Uuid::to_string).collect();
    for t in [&live, &dev] {
        let tdir = out.join(&t.slug);
        let files: BTreeSet<String> = std::fs::read_dir(tdir.join("tables"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        let expected: BTreeSet<String> = tables.iter().map(|t| format!("{t}.jsonl")).collect();
        assert_eq!(files, expected, "one file per tenant-scoped table");
        let rows = jsonl(&tdir.join("tenants.jsonl"));
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0]["id"], t.id.to_string());
        let stored: std::collections::BTreeMap<&str, u64> = store
            .tenant_row_counts(t.id)
            .await
            .unwrap()
            .into_iter()
            .collect();
        let exported = &summary
            .tenants
            .iter()
            .find(|e| e.id == t.id)
            .unwrap()
            .tables;
        assert_eq!(exported, &stored, "every row of every table, counted");
        for table in &tables {
            let rows = jsonl(&tdir.join(format!("tables/{table}.jsonl")));
            assert_eq!(rows.len() as u64, stored[table], "{table}");
            for row in &rows {
                assert_eq!(row["tenant_id"], t.id.to_string(), "{table}: {row}");
                for col in storage::secret_columns(table).unwrap() {
                    assert!(row.get(*col).is_none(), "{table}.{col} exported: {row}");
                }
            }
        }
        let filled = stored.values().filter(|n| **n > 0).count();
        assert!(
            filled * 2 > tables.len(),
            "the seed fills most tables: {stored:?}"
        );
        let pages: Vec<_> = std::fs::read_dir(tdir.join("pages")).unwrap().collect();
        assert!(!pages.is_empty(), "knowledge pages as HTML");
        let rows = jsonl(&tdir.join("tables/knowledge_pages.jsonl"));
        assert_eq!(pages.len(), rows.len());
    }
    let text = all_text(&out);
    assert!(!text.contains(SECRET), "an integration secret leaked");
    assert!(!text.contains("xoxb-secret"), "a credential leaked");
    assert!(
        !text.contains(&format!("hash-{}", live.id)),
        "an API key hash leaked"
    );
    assert!(!text.contains(&other.id.to_string()), "another tenant's id");
    for id in &ours {
        assert!(text.contains(id.as_str()));
    }
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(out.join("export.json")).unwrap()).unwrap();
    assert_eq!(
        manifest["omitted_columns"]["integrations"][0],
        "signing_secret"
    );

    // Refusals: a shadow slug, an unknown slug, a non-empty directory.
    for (slug, why) in [
        ("acme--dev", "dev shadow"),
        ("nobody", "no tenant"),
        ("acme", "not empty"),
    ] {
        let e = export_tenant(&store, slug, &out).await.unwrap_err();
        assert!(format!("{e:#}").contains(why), "{slug}: {e:#}");
    }
    store.close().await;
}

#[tokio::test]
async fn ops_tenant_delete_leaves_no_row_and_no_index_dir() {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let config = test_config(&data_dir, &[]);
    let store = open_store(&config).await.unwrap();
    let (live, dev) = seeded(&store, "acme").await;
    let (other, _) = seeded(&store, "other").await;
    for t in [&live, &dev, &other] {
        std::fs::create_dir_all(tenant_index_dir(&data_dir, t.id).join("knowledge")).unwrap();
        assert!(store.tenant_key_count(t.id).await.unwrap() > 0);
    }
    for t in [&live, &dev, &other] {
        crate::platform_api::queue_job(&store, "ops-tenant-test", &t.slug, t.id).await;
    }
    let other_before = store.tenant_key_count(other.id).await.unwrap();

    let e = delete_tenant(&store, &data_dir, "root").await.unwrap_err();
    assert!(format!("{e:#}").contains("cannot be deleted"), "{e:#}");

    let done = delete_tenant(&store, &data_dir, "acme").await.unwrap();
    assert_eq!(done.tenants.len(), 2);
    assert!(done.tenants.iter().all(|(_, _, rows)| *rows > 0));
    assert_eq!(done.index_dirs.len(), 2);
    assert_eq!(done.jobs, 2, "the pair's queued jobs");
    for t in [&live, &dev] {
        let job = store.job("ops-tenant-test", &t.slug).await.unwrap();
        assert!(job.is_none(), "{}'s queued job is left", t.slug);
        assert!(store.tenant_by_id(t.id).await.unwrap().is_none());
        assert_eq!(store.tenant_key_count(t.id).await.unwrap(), 0, "{}", t.slug);
        for (table, n) in store.tenant_row_counts(t.id).await.unwrap() {
            assert_eq!(n, 0, "{table} of {}", t.slug);
        }
        assert!(!tenant_index_dir(&data_dir, t.id).exists());
    }
    assert_eq!(
        store.tenant_key_count(other.id).await.unwrap(),
        other_before
    );
    assert!(tenant_index_dir(&data_dir, other.id).exists());
    let job = store.job("ops-tenant-test", "other").await.unwrap();
    assert!(job.is_some(), "another tenant's job stays");
    store.close().await;
}

/// A request or job already past authentication when the delete starts
/// cannot re-open the deleted tenant's index (and re-create its files);
/// another tenant's index opens as before.
#[tokio::test]
async fn ops_tenant_delete_retires_the_tenants_indexes_for_late_requests() {
    use root::retrieval::{IndexError, IndexRegistry};
    use storage::IndexCorpus;
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let config = test_config(&data_dir, &[]);
    let store = open_store(&config).await.unwrap();
    let live = store
        .create_tenant(Tenant::new("acme", "acme"))
        .await
        .unwrap();
    let other = store
        .create_tenant(Tenant::new("other", "other"))
        .await
        .unwrap();
    let registry = IndexRegistry::new(&data_dir, store.clone(), "root/hashing-v1");
    for t in [&live, &other] {
        registry.get(t.id, IndexCorpus::Knowledge).await.unwrap();
        assert!(tenant_index_dir(&data_dir, t.id).exists());
    }

    root::ops::tenant::delete_tenant_with(&store, &data_dir, "acme", Some(&registry))
        .await
        .unwrap();
    for corpus in IndexCorpus::ALL {
        match registry.get(live.id, corpus).await {
            Err(IndexError::Retired(id)) => assert_eq!(id, live.id),
            Err(e) => panic!("{corpus:?}: expected Retired, got {e}"),
            Ok(_) => panic!("{corpus:?}: a deleted tenant's index was opened again"),
        }
    }
    assert!(
        !tenant_index_dir(&data_dir, live.id).exists(),
        "no late open re-created the files"
    );
    let open: Vec<Uuid> = registry.open_indexes().iter().map(|(t, _, _)| *t).collect();
    assert_eq!(
        open,
        vec![other.id],
        "only the other tenant's index stays open"
    );
    registry
        .get(other.id, IndexCorpus::SlackMessages)
        .await
        .unwrap();
    registry.close().await;
    store.close().await;
}

#[test]
fn ops_tenant_delete_cli_refuses_without_yes() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_root"))
            .env_clear()
            .env("ROOT_DATA_DIR", dir.path())
            .env("RUST_LOG", "warn")
            .args(args)
            .output()
            .unwrap()
    };
    assert!(
        run(&["tenant", "create", "acme", "--with-dev"])
            .status
            .success()
    );
    let out = run(&["tenant", "delete", "acme"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--yes"));
    let export = dir.path().join("x");
    let out = run(&[
        "tenant",
        "export",
        "acme",
        "--out",
        export.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(export.join("acme--dev/tables").is_dir());
    let out = run(&["tenant", "delete", "acme", "--yes"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let list = run(&["tenant", "list"]);
    assert!(!String::from_utf8_lossy(&list.stdout).contains("acme"));
}

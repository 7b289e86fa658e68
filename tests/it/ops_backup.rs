//! Online backup and restore (§15.4): a backup taken through the running
//! server's admin socket while it answers searches, restored into the data
//! dir, gives the same rows and the same search answers; the CLI takes it
//! directly or through the server; a copy killed midway leaves the live data
//! intact and is refused; corrupt, truncated, foreign-manifest and newer
//! backups are refused with the reason and the live file untouched.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use storage::{Store, TenantStore};

use root::app::open_store;
use root::ops::backup::{self, manifest_path};
use root::ops::schedule::{BackupSchedule, complete_backups};
use root::platform::clock::{Clock, ManualClock, SystemClock};

use crate::kb::{key_for, put_page, search};
use crate::support::{TestApp, run_child_until_marker_then_sigkill, test_config};

const CHILD_ENV: &str = "ROOT_OPS_BACKUP_CHILD_DIR";

fn slugs(v: &Value) -> Vec<String> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["slug"].as_str().unwrap().to_string())
        .collect()
}

const QUERIES: [&str; 3] = ["walrus herring", "otters sleeping", "narwhal tusks"];

async fn answers(app: &TestApp, key: &str) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for q in QUERIES {
        out.push(slugs(&search(app, key, json!({ "query": q })).await));
    }
    out
}

async fn row_counts(app: &TestApp, slug: &str) -> Vec<(&'static str, u64)> {
    let t = app.state.store.tenant_by_slug(slug).await.unwrap().unwrap();
    app.state.store.tenant_row_counts(t.id).await.unwrap()
}

fn error_text(e: anyhow::Error) -> String {
    format!("{e:#}")
}

#[tokio::test]
async fn ops_backup_while_serving_then_restore_gives_same_rows_and_search_answers() {
    let app = TestApp::spawn().await;
    let key = key_for(&app, "acme").await;
    for (slug, title, body) in [
        (
            "walrus-care",
            "Walrus care",
            "Feed the walrus herring twice a day.",
        ),
        ("otter-notes", "Otters", "Otters hold hands while sleeping."),
        (
            "narwhal-care",
            "Narwhals",
            "Narwhal tusks need gentle polishing.",
        ),
    ] {
        put_page(
            &app,
            &key,
            json!({"slug": slug, "title": title, "content_html": format!("<p>{body}</p>")}),
        )
        .await;
    }
    let before = answers(&app, &key).await;
    assert_eq!(before[0], vec!["walrus-care"], "{before:?}");
    let rows_before = row_counts(&app, "acme").await;

    // The backup goes through the admin socket while searches keep coming.
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("snap.redb");
    let data_dir = app.data_dir.clone();
    let request = {
        let out = out.clone();
        tokio::spawn(async move { root::ops::admin::request_backup(&data_dir, &out).await })
    };
    let mut served = 0;
    loop {
        assert_eq!(answers(&app, &key).await, before);
        served += 1;
        if request.is_finished() {
            break;
        }
    }
    let manifest = request.await.unwrap().expect("the server took the backup");
    assert!(served > 0);
    assert_eq!(manifest.schema_version, storage::latest_version());
    assert!(manifest.tables["knowledge_pages"] >= 3, "{manifest:?}");
    let on_disk: backup::Manifest =
        serde_json::from_slice(&std::fs::read(manifest_path(&out)).unwrap()).unwrap();
    assert_eq!(on_disk, manifest);
    assert_eq!(backup::hash_file(&out).unwrap().1, manifest.sha256);

    // A change after the backup, which the restore takes back.
    put_page(
        &app,
        &key,
        json!({"slug": "late", "title": "Late", "content_html": "<p>walrus herring late</p>"}),
    )
    .await;
    let data_dir = app.data_dir.clone();
    let db = data_dir.join("root.redb");
    let dir = app.stop_keep_dir().await;

    let restored = backup::restore(&data_dir, &db, &out).expect("restores");
    assert_eq!(restored.manifest, manifest);
    assert!(data_dir.join("root.redb.before-restore").is_file());
    assert!(restored.indexes_marked >= 1, "{restored:?}");

    let app = TestApp::spawn_in(dir, &[]).await;
    assert_eq!(row_counts(&app, "acme").await, rows_before);
    assert_eq!(
        answers(&app, &key).await,
        before,
        "same answers, no late page"
    );

    // A second restore is refused while the first one's old file is kept.
    let data_dir = app.data_dir.clone();
    let dir = app.stop_keep_dir().await;
    let again = backup::restore(&data_dir, &db, &out).unwrap_err();
    assert!(error_text(again).contains("before-restore"));
    drop(dir);
}

/// A backup with a manifest in a fresh dir of its own, and the live file's
/// bytes before any restore attempt.
async fn backup_of_a_small_db() -> (tempfile::TempDir, PathBuf, PathBuf, String) {
    let dir = tempfile::tempdir().unwrap();
    let data_dir = dir.path().join("data");
    let config = test_config(&data_dir, &[]);
    let store = open_store(&config).await.unwrap();
    store
        .create_tenant(storage::Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    let out = dir.path().join("b.redb");
    backup::backup_store(&store, &out, SystemClock.now())
        .await
        .unwrap();
    store.close().await;
    let live = backup::hash_file(&config.database_path()).unwrap().1;
    (dir, data_dir, out, live)
}

fn refused(data_dir: &Path, file: &Path, live_sha: &str, reason: &str) {
    let db = data_dir.join("root.redb");
    let e = error_text(backup::restore(data_dir, &db, file).unwrap_err());
    assert!(e.contains(reason), "expected {reason:?} in: {e}");
    assert_eq!(
        backup::hash_file(&db).unwrap().1,
        live_sha,
        "live file untouched"
    );
    assert!(!data_dir.join("root.redb.before-restore").exists());
}

#[tokio::test]
async fn ops_backup_corrupt_truncated_or_newer_backups_are_refused() {
    let (dir, data_dir, out, live) = backup_of_a_small_db().await;
    let good = std::fs::read(&out).unwrap();
    let manifest_bytes = std::fs::read(manifest_path(&out)).unwrap();

    // Truncated.
    std::fs::write(&out, &good[..good.len() / 2]).unwrap();
    refused(&data_dir, &out, &live, "truncated");
    // Same size, one byte flipped.
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    std::fs::write(&out, &bad).unwrap();
    refused(&data_dir, &out, &live, "SHA-256");
    std::fs::write(&out, &good).unwrap();
    // A manifest claiming other contents.
    let mut m: Value = serde_json::from_slice(&manifest_bytes).unwrap();
    m["tables"]["tenants"] = json!(99);
    std::fs::write(manifest_path(&out), serde_json::to_vec(&m).unwrap()).unwrap();
    refused(&data_dir, &out, &live, "entry counts");
    // From a newer binary: downgrades are refused.
    let mut m: Value = serde_json::from_slice(&manifest_bytes).unwrap();
    m["schema_version"] = json!(storage::latest_version() + 1);
    std::fs::write(manifest_path(&out), serde_json::to_vec(&m).unwrap()).unwrap();
    refused(&data_dir, &out, &live, "downgrades are refused");
    // No manifest at all.
    std::fs::remove_file(manifest_path(&out)).unwrap();
    refused(&data_dir, &out, &live, "no manifest");
    // Not a redb file, with a manifest that vouches for it.
    std::fs::write(&out, b"not a database").unwrap();
    let (bytes, sha256) = backup::hash_file(&out).unwrap();
    let mut m: Value = serde_json::from_slice(&manifest_bytes).unwrap();
    m["bytes"] = json!(bytes);
    m["sha256"] = json!(sha256);
    std::fs::write(manifest_path(&out), serde_json::to_vec(&m).unwrap()).unwrap();
    refused(&data_dir, &out, &live, "redb cannot read");
    // The good one still restores.
    std::fs::write(&out, &good).unwrap();
    std::fs::write(manifest_path(&out), &manifest_bytes).unwrap();
    backup::restore(&data_dir, &data_dir.join("root.redb"), &out).expect("restores");
    drop(dir);
}

/// Child entry point: a no-op unless started by the crash test. Fills the
/// database, then copies it; the marker appears once the copy has begun.
#[tokio::test]
async fn ops_backup_crash_child_copier() {
    let Some(dir) = std::env::var_os(CHILD_ENV).map(PathBuf::from) else {
        return;
    };
    let config = test_config(&dir.join("data"), &[]);
    let store = open_store(&config).await.unwrap();
    let tenant = store
        .create_tenant(storage::Tenant::new("acme", "Acme"))
        .await
        .unwrap();
    let rows: Vec<storage::Principal> = (0..20_000)
        .map(|i| storage::Principal {
            display_name: Some("x".repeat(2000)),
            ..storage::Principal::new(tenant.id, format!("member-{i}"))
        })
        .collect();
    store.insert_many(rows).await.unwrap();
    std::fs::write(dir.join("filled"), b"1").unwrap();
    let partial = dir.join("b.redb.partial");
    let marker = dir.join("copying");
    std::thread::spawn(move || {
        while std::fs::metadata(&partial).map_or(0, |m| m.len()) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::fs::write(marker, b"1").unwrap();
    });
    backup::backup_store(&store, &dir.join("b.redb"), SystemClock.now())
        .await
        .unwrap();
    std::fs::write(dir.join("finished"), b"1").unwrap();
    std::future::pending::<()>().await;
}

#[tokio::test]
async fn ops_backup_killed_midway_leaves_live_data_and_no_restorable_file() {
    let dir = tempfile::tempdir().unwrap();
    run_child_until_marker_then_sigkill(
        "ops_backup::ops_backup_crash_child_copier",
        CHILD_ENV,
        dir.path(),
        "copying",
        Duration::from_secs(120),
    )
    .await;
    assert!(dir.path().join("filled").exists());
    let out = dir.path().join("b.redb");
    let partial = dir.path().join("b.redb.partial");
    if !dir.path().join("finished").exists() {
        assert!(
            !manifest_path(&out).exists(),
            "no manifest for a killed copy"
        );
    }
    // Whatever the kill left behind is refused.
    let data_dir = dir.path().join("data");
    let config = test_config(&data_dir, &[]);
    for candidate in [&partial, &out] {
        if candidate.exists() && !manifest_path(candidate).exists() {
            let e = backup::restore(&data_dir, &config.database_path(), candidate).unwrap_err();
            assert!(error_text(e).contains("no manifest"));
        }
    }
    // The live data is all there.
    let store = open_store(&config).await.unwrap();
    let t = store.tenant_by_slug("acme").await.unwrap().unwrap();
    assert_eq!(
        store.count::<storage::Principal>(Some(t.id)).await.unwrap(),
        20_000
    );
    // A new backup over the leftovers works.
    let again = dir.path().join("c.redb");
    backup::backup_store(&store, &again, SystemClock.now())
        .await
        .unwrap();
    store.close().await;
    backup::verify(&again).expect("a complete backup verifies");
}

fn root_cmd(data_dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_root"));
    c.env_clear()
        .env("ROOT_DATA_DIR", data_dir)
        .env("PORT", "0")
        .env("RUST_LOG", "warn")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c
}

fn output(cmd: &mut Command) -> (bool, String) {
    let out = cmd.output().expect("runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[tokio::test]
async fn ops_backup_cli_direct_and_through_the_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (ok, text) = output(root_cmd(&data).args(["tenant", "create", "acme"]));
    assert!(ok, "{text}");
    // No server: the CLI copies the file itself.
    let direct = dir.path().join("direct.redb");
    let (ok, text) = output(root_cmd(&data).args(["backup", "--out"]).arg(&direct));
    assert!(ok && text.contains("directly"), "{text}");
    backup::verify(&direct).expect("verifies");
    // An existing target is refused.
    let (ok, text) = output(root_cmd(&data).args(["backup", "--out"]).arg(&direct));
    assert!(!ok && text.contains("already exists"), "{text}");

    let mut server = root_cmd(&data)
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let sock = data.join("admin.sock");
    for _ in 0..600 {
        if sock.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(sock.exists(), "the server opened its admin socket");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&sock).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let online = dir.path().join("online.redb");
    let (ok, text) = output(root_cmd(&data).args(["backup", "--out"]).arg(&online));
    assert!(ok && text.contains("by the running server"), "{text}");
    backup::verify(&online).expect("verifies");
    // Restore refuses while the server holds the file.
    let (ok, text) = output(root_cmd(&data).arg("restore").arg(&online));
    assert!(!ok && text.contains("stop the server"), "{text}");
    let pid = server.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    server.wait().unwrap();
    assert!(!sock.exists(), "a clean stop removes the socket");
    let (ok, text) = output(root_cmd(&data).arg("restore").arg(&online));
    assert!(ok && text.contains("before-restore"), "{text}");
    let (ok, text) = output(root_cmd(&data).args(["tenant", "list"]));
    assert!(ok && text.contains("acme"), "{text}");
}

#[tokio::test]
async fn ops_backup_scheduled_keeps_the_newest_n() {
    let dir = tempfile::tempdir().unwrap();
    let config = test_config(&dir.path().join("data"), &[]);
    let store = open_store(&config).await.unwrap();
    let clock = Arc::new(ManualClock::new(storage::Ts::from_secs(1_800_000_000)));
    let schedule = BackupSchedule {
        store: store.clone(),
        dir: dir.path().join("backups"),
        keep: 3,
        clock: clock.clone(),
    };
    let first = schedule
        .catch_up()
        .await
        .unwrap()
        .expect("none yet: one now");
    assert!(schedule.catch_up().await.unwrap().is_none(), "one is fresh");
    let mut names = vec![first];
    for _ in 0..4 {
        clock.advance_ms(24 * 3600 * 1000);
        names.push(schedule.run_once().await.unwrap().0);
    }
    let kept = complete_backups(&schedule.dir).unwrap();
    assert_eq!(kept, names[2..].to_vec(), "the newest three");
    for p in &names[..2] {
        assert!(!p.exists() && !manifest_path(p).exists());
    }
    for p in &kept {
        backup::verify(p).expect("each kept backup verifies");
    }
    // The catch-up is due again after a day without one.
    clock.advance_ms(25 * 3600 * 1000);
    assert!(schedule.catch_up().await.unwrap().is_some());
    store.close().await;
}

#[tokio::test]
async fn ops_backup_server_with_backup_dir_takes_one_at_start() {
    let backups = tempfile::tempdir().unwrap();
    let dir_s = backups.path().display().to_string();
    let mut app =
        TestApp::spawn_with(&[("ROOT_BACKUP_DIR", &dir_s), ("ROOT_BACKUP_KEEP", "2")]).await;
    let mut found = Vec::new();
    for _ in 0..200 {
        found = complete_backups(backups.path()).unwrap();
        if !found.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(found.len(), 1, "the start-up catch-up wrote one");
    backup::verify(&found[0]).expect("verifies");
    app.stop().await;
}

fn owner_only(p: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(p).unwrap().permissions().mode();
    assert_eq!(mode & 0o077, 0, "{} is mode {mode:o}", p.display());
}

/// Review L-7: a backup holds every tenant's secrets; the file, its
/// manifest and a database restored from it are the owner's alone,
/// whatever the umask.
#[tokio::test]
async fn security_l7_backups_manifests_and_restores_are_owner_only() {
    // In process (the running server's path, and the scheduled one).
    let (dir, data_dir, online, _) = backup_of_a_small_db().await;
    owner_only(&online);
    owner_only(&manifest_path(&online));
    let db = data_dir.join("root.redb");
    let direct = dir.path().join("direct.redb");
    backup::backup_file(&db, &direct, SystemClock.now()).unwrap();
    owner_only(&direct);
    owner_only(&manifest_path(&direct));

    // The CLI under a permissive umask.
    let cli = dir.path().join("cli.redb");
    let (ok, text) = output(
        Command::new("sh")
            .arg("-c")
            .arg(r#"umask 022 && exec "$0" "$@""#)
            .arg(env!("CARGO_BIN_EXE_root"))
            .args(["backup", "--out"])
            .arg(&cli)
            .env_clear()
            .env("ROOT_DATA_DIR", &data_dir)
            .env("PORT", "0")
            .env("RUST_LOG", "warn")
            .env("PATH", std::env::var_os("PATH").unwrap_or_default()),
    );
    assert!(ok, "{text}");
    owner_only(&cli);
    owner_only(&manifest_path(&cli));

    // A backup made world-readable by hand still restores owner-only.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o644)).unwrap();
    backup::restore(&data_dir, &db, &cli).unwrap();
    owner_only(&db);

    // The scheduled backup.
    let store = open_store(&test_config(&data_dir, &[])).await.unwrap();
    let schedule = BackupSchedule {
        store: store.clone(),
        dir: dir.path().join("daily"),
        keep: 2,
        clock: Arc::new(SystemClock),
    };
    let (daily, _) = schedule.run_once().await.unwrap();
    owner_only(&daily);
    owner_only(&manifest_path(&daily));
    store.close().await;
}

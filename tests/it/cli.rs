//! The real `root` binary: seeding, tenant creation, serve + SIGTERM, and
//! clear failures for a bad data dir or a file held by another process.

use std::process::{Command, Stdio};
use std::time::Duration;

fn root(data_dir: &std::path::Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_root"));
    c.env_clear()
        .env("ROOT_DATA_DIR", data_dir)
        .env("RUST_LOG", "warn")
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c
}

fn run_ok(cmd: &mut Command) -> String {
    let out = cmd.output().expect("runs");
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn seed_and_tenant_commands_create_working_credentials() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(root(dir.path()).arg("migrate"));
    let out =
        run_ok(root(dir.path()).args(["tenant", "create", "acme", "--name", "Acme", "--with-dev"]));
    assert!(
        out.contains("created tenant acme") && out.contains("acme--dev"),
        "{out}"
    );
    let live = run_ok(root(dir.path()).args(["seed", "api-key", "--tenant", "acme"]));
    assert!(
        live.trim().starts_with("rpk_live_") && live.trim().len() == 9 + 48,
        "{live}"
    );
    let dev = run_ok(root(dir.path()).args([
        "seed", "api-key", "--tenant", "root", "--env", "dev", "--name", "ci",
    ]));
    assert!(dev.trim().starts_with("rpk_dev_"), "{dev}");
    let token = run_ok(root(dir.path()).args(["seed", "web-token", "--tenant", "acme"]));
    assert_eq!(token.trim().len(), 48);
    // `tenant channel web` rotates it and prints the chat URL.
    let url = run_ok(root(dir.path()).args(["tenant", "channel", "web", "acme"]));
    let url = url.trim();
    assert!(url.contains("/web/acme/test?token="), "{url}");
    assert!(!url.ends_with(token.trim()), "a new token");
    let user = run_ok(root(dir.path()).args([
        "seed",
        "config-user",
        "--tenant",
        "acme",
        "--email",
        "Owner@Acme.org",
        "--role",
        "owner",
    ]));
    assert!(user.contains("owner"), "{user}");
    let again = run_ok(root(dir.path()).args([
        "seed",
        "config-user",
        "--tenant",
        "acme",
        "--email",
        "owner@acme.org",
        "--role",
        "viewer",
    ]));
    assert!(
        again.contains("updated"),
        "same user, case-insensitive: {again}"
    );
    let list = run_ok(root(dir.path()).args(["tenant", "list"]));
    for slug in ["root", "root--dev", "acme", "acme--dev"] {
        assert!(
            list.lines().any(|l| l.starts_with(&format!("{slug}\t"))),
            "{slug} in {list}"
        );
    }
    let dup = root(dir.path())
        .args(["tenant", "create", "acme"])
        .output()
        .unwrap();
    assert!(!dup.status.success());
    assert!(String::from_utf8_lossy(&dup.stderr).contains("already exists"));
    let bad_role = root(dir.path())
        .args([
            "seed",
            "config-user",
            "--tenant",
            "acme",
            "--email",
            "a@b.c",
            "--role",
            "god",
        ])
        .output()
        .unwrap();
    assert!(!bad_role.status.success());
    assert!(String::from_utf8_lossy(&bad_role.stderr).contains("owner|admin|viewer|member"));
}

#[test]
fn an_unusable_data_dir_is_a_one_line_error_not_a_panic() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("not-a-dir");
    std::fs::write(&file, b"x").unwrap();
    let out = root(&file.join("data")).arg("migrate").output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("data directory") && err.contains("ROOT_DATA_DIR"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_data_dir_held_by_another_process_is_refused_clearly() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(root(dir.path()).arg("migrate"));
    let _held = storage::RedbStore::open(&dir.path().join("root.redb")).unwrap();
    let out = root(dir.path()).arg("migrate").output().unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already opened by another process"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn invalid_configuration_stops_start_up_naming_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let out = root(dir.path())
        .env("PORT", "eighty")
        .arg("serve")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("PORT") && err.contains("TCP port"), "{err}");
}

#[test]
fn the_dev_harness_refuses_to_start_on_a_non_loopback_bind() {
    let dir = tempfile::tempdir().unwrap();
    let out = root(dir.path())
        .env("ROOT_DEV_HARNESS", "true")
        .env("ROOT_BIND", "0.0.0.0")
        .arg("serve")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ROOT_BIND") && err.contains("loopback"),
        "{err}"
    );
    let out = root(dir.path())
        .env("ROOT_DEV_HARNESS", "true")
        .env("NODE_ENV", "production")
        .arg("serve")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("ROOT_DEV_HARNESS"));
}

#[cfg(unix)]
#[test]
fn a_new_data_dir_is_private_to_its_user() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("nested").join("data");
    run_ok(root(&data).arg("migrate"));
    let mode = std::fs::metadata(&data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "{mode:o}");
}

#[test]
fn serve_answers_health_and_exits_cleanly_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let mut child = root(dir.path())
        .env("PORT", port.to_string())
        .env("ROOT_BIND", "127.0.0.1")
        .arg("serve")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let body = rt.block_on(async {
        let url = format!("http://127.0.0.1:{port}/health");
        for _ in 0..200 {
            if let Ok(r) = reqwest::get(&url).await {
                return r.text().await.unwrap();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("server did not come up");
    });
    assert_eq!(body, r#"{"status":"ok"}"#);
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "graceful exit on SIGTERM: {status:?}");
    assert!(dir.path().join("root.redb").exists());
}

#[test]
fn tenant_settings_are_validated_and_saved() {
    let dir = tempfile::tempdir().unwrap();
    run_ok(root(dir.path()).arg("migrate"));
    run_ok(root(dir.path()).args(["tenant", "create", "acme"]));
    let out = run_ok(root(dir.path()).args([
        "tenant",
        "settings",
        "acme",
        "--set",
        "access.slack=integration",
        "--set",
        r#"access.email_domains=["Acme.org"]"#,
    ]));
    let shown: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(shown["access"]["slack"], "integration");
    assert_eq!(
        shown["access"]["email_domains"],
        serde_json::json!(["acme.org"])
    );
    // A bad value is refused with the reason, and nothing is written.
    let bad = root(dir.path())
        .args(["tenant", "settings", "acme", "--set", "access.slack=closed"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr)
            .contains("access.slack must be \"open\" or \"integration\""),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
    let again = run_ok(root(dir.path()).args(["tenant", "settings", "acme"]));
    let shown: serde_json::Value = serde_json::from_str(&again).unwrap();
    assert_eq!(
        shown["access"]["slack"], "integration",
        "persisted, unchanged by the refused edit"
    );
}

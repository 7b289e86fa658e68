//! The crash-test harness: run one test of this binary in a child process
//! and SIGKILL it at a marker, so a test can check what survives.

/// Crash-test harness: run the test `child_test` of this binary in a child
/// process (with `env_var` = `dir`), wait until it creates `dir/marker`
/// (failing if it exits first or takes over `deadline`), then SIGKILL it.
pub async fn run_child_until_marker_then_sigkill(
    child_test: &str,
    env_var: &str,
    dir: &std::path::Path,
    marker: &str,
    deadline: std::time::Duration,
) {
    use std::process::{Command, Stdio};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", child_test, "--nocapture", "--test-threads", "1"])
        .env(env_var, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let marker = dir.join(marker);
    let until = std::time::Instant::now() + deadline;
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < until,
            "child {child_test} never reached {}",
            marker.display()
        );
        if let Some(status) = child.try_wait().unwrap() {
            panic!("child exited early: {status:?}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    child.wait().unwrap();
}

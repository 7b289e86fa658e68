//! The community-build sandbox (§15.1) on the real binary: each limit
//! (time, memory, output), the missing host APIs, the NDJSON protocol and
//! its failures, progress forwarding, and `fetch` through the guard; the
//! child's OS-level confinement and the caps on live children (review L-4).

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::{Value, json};

use root::builds::sandbox::{LandlockLevel, LogKind, SandboxOutcome, SandboxRunner, ToolCall};
use root::outbound::OutboundPolicy;

fn policy(allow_private: bool) -> OutboundPolicy {
    OutboundPolicy {
        allow_private,
        require_https: false,
    }
}

fn runner(allow_private: bool) -> SandboxRunner {
    SandboxRunner::new(env!("CARGO_BIN_EXE_root"), policy(allow_private))
}

fn call(source: &str, timeout_ms: u64) -> ToolCall {
    ToolCall {
        module_source: source.into(),
        tool: "t".into(),
        params: json!({"a": 2, "b": 3}),
        config: json!({"greeting": "hi"}),
        principal: json!({"id": "p1", "name": "Ada"}),
        channel: "slack".into(),
        timeout: Duration::from_millis(timeout_ms),
        tenant: None,
    }
}

async fn run(r: &SandboxRunner, source: &str, timeout_ms: u64) -> SandboxOutcome {
    r.run_tool(&call(source, timeout_ms), &mut |_| {}).await
}

fn error(o: &SandboxOutcome) -> &str {
    assert!(!o.ok, "expected a failure, got {o:?}");
    o.error.as_deref().unwrap_or_default()
}

#[tokio::test]
async fn sandbox_runs_invoke_with_params_ctx_and_collects_logs() {
    let src = r#"
        export async function invoke(tool, params, ctx) {
            ctx.log("adding " + params.a + " and " + params.b);
            console.log("via console", {x: 1});
            return { tool, sum: params.a + params.b, greeting: ctx.config.greeting,
                     who: ctx.principal.name, channel: ctx.channel };
        }"#;
    let o = run(&runner(false), src, 10_000).await;
    assert!(o.ok, "{o:?}");
    assert_eq!(
        o.result,
        Some(json!({"tool": "t", "sum": 5, "greeting": "hi", "who": "Ada", "channel": "slack"}))
    );
    let logs: Vec<_> = o
        .logs
        .iter()
        .map(|l| (l.kind, l.message.as_str()))
        .collect();
    assert_eq!(
        logs,
        vec![
            (LogKind::Log, "adding 2 and 3"),
            (LogKind::Log, r#"via console {"x":1}"#)
        ]
    );
}

#[tokio::test]
async fn sandbox_infinite_loop_is_a_timeout_failure_within_the_limit() {
    let o = run(
        &runner(false),
        "export function invoke() { while (true) {} }",
        300,
    )
    .await;
    assert!(error(&o).contains("timed out after 300 ms"), "{o:?}");
    assert!(o.duration < Duration::from_secs(5), "{:?}", o.duration);
}

#[tokio::test]
async fn sandbox_huge_allocation_is_a_memory_failure() {
    let src = r#"
        export function invoke() {
            const hoard = [];
            while (true) { hoard.push(new Array(1000000).fill(1.5)); }
        }"#;
    let o = run(&runner(false), src, 60_000).await;
    assert!(
        error(&o).contains("memory limit exceeded (256 MB)"),
        "{o:?}"
    );
}

#[tokio::test]
async fn sandbox_has_no_process_require_std_os_env_or_file_access() {
    let src = r#"
        export async function invoke() {
            const names = ["process", "require", "std", "os", "Deno", "Bun", "scriptArgs",
                           "environment", "module", "__root_emit", "__root_fetch"];
            const kinds = {};
            for (const n of names) kinds[n] = typeof globalThis[n];
            let file;
            try { await import("/etc/passwd"); file = "read"; }
            catch (e) { file = "refused"; }
            return { kinds, file };
        }"#;
    let o = run(&runner(false), src, 10_000).await;
    assert!(o.ok, "{o:?}");
    let result = o.result.unwrap();
    for (name, kind) in result["kinds"].as_object().unwrap() {
        assert_eq!(kind, "undefined", "{name} is visible to the module");
    }
    assert_eq!(result["file"], "refused");
}

/// A stand-in child (a shell script) to see what the parent gives it and
/// how it reads what comes back.
fn script(body: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("child.sh");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, path)
}

#[tokio::test]
async fn sandbox_child_gets_an_empty_environment_and_an_empty_directory() {
    let (_dir, path) = script(
        r#"cat > /dev/null
printf '{"type":"result","ok":true,"result":{"env":"%s","files":"%s","arg":"%s"}}\n' "$(env | tr '\n' ' ')" "$(ls -A | tr '\n' ' ')" "$1""#,
    );
    let o = run(&SandboxRunner::new(path, policy(false)), "", 10_000).await;
    assert!(o.ok, "{o:?}");
    let r = o.result.unwrap();
    let env = r["env"].as_str().unwrap();
    // The test process has CARGO_* and HOME; the child has none of them.
    assert!(!env.contains("CARGO"), "{env}");
    assert!(!env.contains("HOME="), "{env}");
    assert_eq!(r["files"], "");
    assert_eq!(r["arg"], "sandbox-run");
}

#[tokio::test]
async fn sandbox_garbage_missing_result_and_crashes_are_failures() {
    let cases = [
        (
            "cat > /dev/null; echo 'hello, not json'",
            "not its protocol",
        ),
        (
            r#"cat > /dev/null; echo '{"type":"log","message":"x"}'"#,
            "ended without a result",
        ),
        ("cat > /dev/null; echo oops >&2; exit 3", "crashed"),
        (
            r#"cat > /dev/null; echo '{"type":"result","ok":true}'; echo '{"type":"log","message":"late"}'"#,
            "not its protocol",
        ),
    ];
    for (body, want) in cases {
        let (_dir, path) = script(body);
        let o = run(&SandboxRunner::new(path, policy(false)), "", 10_000).await;
        assert!(error(&o).contains(want), "{body}: {o:?}");
    }
    let (_dir, path) = script("cat > /dev/null; echo oops >&2; exit 3");
    let o = run(&SandboxRunner::new(path, policy(false)), "", 10_000).await;
    assert!(error(&o).contains("oops"), "{o:?}");
}

#[tokio::test]
async fn sandbox_parent_kills_a_child_that_ignores_its_deadline() {
    let (_dir, path) = script("cat > /dev/null; sleep 30");
    let o = run(&SandboxRunner::new(path, policy(false)), "", 300).await;
    assert!(error(&o).contains("timed out after 300 ms"), "{o:?}");
    assert!(o.duration < Duration::from_secs(5), "{:?}", o.duration);
}

#[tokio::test]
async fn sandbox_bad_modules_fail_with_the_reason() {
    let r = runner(false);
    let cases = [
        ("export function invoke( {", "SyntaxError"),
        ("export const x = 1;", "does not export an invoke"),
        (
            "export async function invoke() { throw new Error('boom'); }",
            "the tool threw: Error: boom",
        ),
        (
            "export function invoke() { return new Promise(() => {}); }",
            "never settled",
        ),
        (
            "import x from 'fs'; export function invoke() {}",
            "the tool threw",
        ),
    ];
    for (src, want) in cases {
        let o = run(&r, src, 10_000).await;
        assert!(error(&o).contains(want), "{src}: {o:?}");
    }
}

#[tokio::test]
async fn sandbox_forwards_progress_live_in_order_and_truncated() {
    let src = r#"
        export async function invoke(tool, params, ctx) {
            ctx.progress("one");
            ctx.log("between");
            ctx.progress("two");
            ctx.progress("x".repeat(600));
            return "done";
        }"#;
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = seen.clone();
    let o = runner(false)
        .run_tool(&call(src, 10_000), &mut |m: &str| {
            sink.lock().unwrap().push(m.to_string())
        })
        .await;
    assert!(o.ok, "{o:?}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3);
    assert_eq!(seen[..2], ["one".to_string(), "two".to_string()]);
    assert_eq!(seen[2].chars().count(), 500);
    let kinds: Vec<_> = o.logs.iter().map(|l| l.kind).collect();
    assert_eq!(
        kinds,
        [
            LogKind::Progress,
            LogKind::Log,
            LogKind::Progress,
            LogKind::Progress
        ]
    );
}

#[tokio::test]
async fn sandbox_printing_a_gigabyte_is_stopped_at_the_output_cap() {
    let src = r#"
        export function invoke(tool, params, ctx) {
            const line = "x".repeat(4000);
            for (let i = 0; i < 260000; i++) ctx.log(line);  // ~1 GB
            return "printed";
        }"#;
    let o = run(&runner(false), src, 60_000).await;
    assert!(
        error(&o).contains("more than 4194304 bytes of output"),
        "{o:?}"
    );
    assert!(o.duration < Duration::from_secs(30), "{:?}", o.duration);
}

/// A fake public API on 127.0.0.1 echoing what it received.
async fn echo_server() -> String {
    async fn echo(headers: HeaderMap, body: String) -> Json<Value> {
        let token = headers
            .get("x-token")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        Json(json!({"temp": 21, "token": token, "body": body}))
    }
    let app = axum::Router::new().route("/weather", post(echo).get(echo));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/weather")
}

fn fetch_call(url: &str, src: &str) -> ToolCall {
    let mut c = call(src, 20_000);
    c.config = json!({"url": url});
    c
}

#[tokio::test]
async fn sandbox_fetch_reaches_loopback_only_when_private_fetch_is_allowed() {
    let url = echo_server().await;
    let src = r#"
        export async function invoke(tool, params, ctx) {
            const r = await fetch(ctx.config.url, {method: "POST",
                headers: {"x-token": "abc"}, body: {q: "city"}});
            return { status: r.status, ok: r.ok, data: await r.json(),
                     type: r.headers["content-type"] };
        }"#;
    let allowed = runner(true)
        .run_tool(&fetch_call(&url, src), &mut |_| {})
        .await;
    assert!(allowed.ok, "{allowed:?}");
    let r = allowed.result.unwrap();
    assert_eq!(r["status"], 200);
    assert_eq!(
        r["data"],
        json!({"temp": 21, "token": "abc", "body": r#"{"q":"city"}"#})
    );
    assert_eq!(r["type"], "application/json");

    let refused = runner(false)
        .run_tool(&fetch_call(&url, src), &mut |_| {})
        .await;
    let e = error(&refused);
    assert!(
        e.contains("fetch failed") && e.contains("not a public address"),
        "{e}"
    );
}

#[tokio::test]
async fn sandbox_fetch_in_a_loop_hits_the_request_cap() {
    let url = echo_server().await;
    let src = r#"
        export async function invoke(tool, params, ctx) {
            while (true) await fetch(ctx.config.url);
        }"#;
    let o = runner(true)
        .run_tool(&fetch_call(&url, src), &mut |_| {})
        .await;
    assert!(
        error(&o).contains("request limit reached (50 per run)"),
        "{o:?}"
    );
}

/// Review L-4: the child confines itself before it reads its request, and
/// says what the kernel applied (`/proc/self/status` afterwards).
#[tokio::test]
async fn security_l4_child_reports_no_new_privs_seccomp_and_landlock() {
    let o = run(
        &runner(false),
        "export function invoke() { return 1; }",
        10_000,
    )
    .await;
    assert!(o.ok, "{o:?}");
    let c = o.confinement.expect("the child reports its confinement");
    assert_eq!(c.no_new_privs, 1, "{c:?}");
    assert_eq!(c.seccomp, 2, "{c:?}");
    assert_ne!(c.landlock, LandlockLevel::None, "{c:?}");
    assert!(c.rlimits, "{c:?}");
    assert!(c.missing.is_empty(), "{c:?}");
}

/// `root sandbox-probe` confines itself exactly as a child does, then tries
/// what a compromised child would.
fn probe(open: &[&std::path::Path]) -> Value {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_root"));
    cmd.arg("sandbox-probe").env_clear();
    for p in open {
        cmd.arg("--open").arg(p);
    }
    let out = cmd.output().expect("the probe runs");
    assert!(out.status.success(), "{out:?}");
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

fn refused(attempt: &Value) {
    assert_eq!(attempt["allowed"], false, "{attempt}");
    let errno = attempt["errno"].as_i64().unwrap();
    assert!(errno == 13 || errno == 1, "EACCES or EPERM: {attempt}");
}

#[tokio::test]
async fn security_l4_confined_child_cannot_open_the_database_read_the_parent_environment_or_fork() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let db = data.join("root.redb");
    std::fs::write(&db, b"every tenant's secrets").unwrap();
    // The test process itself can read both; the confined probe cannot.
    assert!(std::fs::read(&db).is_ok());
    assert!(std::fs::read("/proc/self/environ").is_ok());
    let report = probe(&[&db, std::path::Path::new("/etc/hosts")]);
    let c = &report["confinement"];
    assert_eq!(c["no_new_privs"], 1, "{report}");
    assert_eq!(c["seccomp"], 2, "{report}");
    refused(&report["open"][0]);
    assert_eq!(
        report["open"][1]["allowed"], true,
        "what the resolver reads stays readable: {report}"
    );
    refused(&report["parent_environ"]);
    refused(&report["unix_socket"]);
    refused(&report["fork"]);
}

/// Live `root sandbox-run` children of this process, counted from `/proc`.
fn live_children() -> usize {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            // `pid (comm) state ppid …`: the ppid is the 2nd field after the ')'.
            let ppid = stat
                .rsplit_once(')')
                .and_then(|(_, rest)| rest.split_whitespace().nth(1));
            ppid == Some(me.as_str())
                && std::fs::read(e.path().join("cmdline"))
                    .is_ok_and(|c| c.split(|b| *b == 0).any(|arg| arg == b"sandbox-run"))
        })
        .count()
}

#[tokio::test]
async fn security_l4_sixty_four_parallel_runs_never_exceed_the_process_cap() {
    let cap = root::builds::sandbox::slots::max_children();
    assert_eq!(
        cap,
        (2 * std::thread::available_parallelism().unwrap().get()).max(4)
    );
    let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watch = {
        let done = done.clone();
        tokio::task::spawn_blocking(move || {
            let mut peak = 0;
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                peak = peak.max(live_children());
                std::thread::sleep(Duration::from_millis(2));
            }
            peak
        })
    };
    let src =
        "export function invoke() { let s = 0; for (let i = 0; i < 1e4; i++) s += i; return s; }";
    let r = runner(false);
    let mut runs = tokio::task::JoinSet::new();
    for _ in 0..64 {
        let (r, c) = (r.clone(), call(src, 60_000));
        runs.spawn(async move { r.run_tool(&c, &mut |_| {}).await });
    }
    while let Some(o) = runs.join_next().await {
        let o = o.unwrap();
        assert!(o.ok, "{o:?}");
    }
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    let peak = watch.await.unwrap();
    assert!(peak >= 1, "the watcher saw the children");
    assert!(peak <= cap, "{peak} live children, cap {cap}");
}

#[tokio::test]
async fn security_l4_a_community_gets_two_children_then_a_bounded_wait() {
    assert_eq!(root::builds::sandbox::slots::MAX_CHILDREN_PER_TENANT, 2);
    let tenant = Some(uuid::Uuid::new_v4());
    let mut busy = call("export function invoke() { while (true) {} }", 4_000);
    busy.tenant = tenant;
    let mut holders = tokio::task::JoinSet::new();
    for _ in 0..2 {
        let (r, c) = (runner(false), busy.clone());
        holders.spawn(async move { r.run_tool(&c, &mut |_| {}).await });
    }
    // Both take the community's slots at once (waiting, if need be, for
    // the process's).
    tokio::time::sleep(Duration::from_millis(300)).await;
    let third = runner(false)
        .with_slot_wait(Duration::from_millis(200))
        .run_tool(&busy, &mut |_| {})
        .await;
    assert!(
        error(&third).contains("this community already runs 2 tools at once"),
        "{third:?}"
    );
    assert!(
        third.duration < Duration::from_secs(2),
        "{:?}",
        third.duration
    );
    assert!(third.confinement.is_none(), "no child was started");
    // Another community is not held up by the first one's queue.
    let mut other = call("export function invoke() { return 'ran'; }", 10_000);
    other.tenant = Some(uuid::Uuid::new_v4());
    let o = runner(false).run_tool(&other, &mut |_| {}).await;
    assert_eq!(o.result, Some(json!("ran")), "{o:?}");
    while let Some(o) = holders.join_next().await {
        assert!(error(&o.unwrap()).contains("timed out"));
    }
}

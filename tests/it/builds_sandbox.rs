//! The community-build sandbox (§15.1) on the real binary: each limit
//! (time, memory, output), the missing host APIs, the NDJSON protocol and
//! its failures, progress forwarding, and `fetch` through the guard.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::{Value, json};

use root::builds::sandbox::{LogKind, SandboxOutcome, SandboxRunner, ToolCall};
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

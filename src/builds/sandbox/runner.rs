//! The parent side: take a child slot, spawn `root sandbox-run`, hand it
//! the request, read its NDJSON with a byte cap, forward progress live,
//! kill it at the deadline, and turn whatever happened into a
//! [`SandboxOutcome`].

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};
use uuid::Uuid;

use super::slots::{self, SLOT_WAIT};
use super::{
    ChildLine, Confinement, KILL_GRACE, LOG_MAX_CHARS, MAX_OUTPUT_BYTES, PROGRESS_MAX_CHARS,
    SandboxRequest, truncate_chars,
};
use crate::outbound::{LineError, LineSplitter, OutboundPolicy};

/// How much of the child's stderr a crash report quotes.
const STDERR_EXCERPT_BYTES: usize = 2_000;

/// One tool call to run. `Debug` is written by hand: `config` holds the
/// install's secrets and prints `[redacted]`.
#[derive(Clone)]
pub struct ToolCall {
    /// The build's ES module.
    pub module_source: String,
    /// The tool's name.
    pub tool: String,
    /// The model's arguments.
    pub params: Value,
    /// The install's config.
    pub config: Value,
    /// `ctx.principal`.
    pub principal: Value,
    /// `ctx.channel`.
    pub channel: String,
    /// The run's wall clock.
    pub timeout: Duration,
    /// The community the call runs for: its calls share
    /// [`slots::MAX_CHILDREN_PER_TENANT`] children (`None`: only the
    /// process-wide cap applies).
    pub tenant: Option<Uuid>,
}

impl std::fmt::Debug for ToolCall {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCall")
            .field("tool", &self.tool)
            .field("params", &self.params)
            .field("config", &storage::Redacted::new(()))
            .field("channel", &self.channel)
            .field("timeout", &self.timeout)
            .field("tenant", &self.tenant)
            .finish_non_exhaustive()
    }
}

/// A collected log line's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LogKind {
    /// `ctx.log` / `console.*`.
    Log,
    /// `ctx.progress` (also forwarded live).
    Progress,
}

/// One collected line (`sandboxLogs`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SandboxLog {
    /// `log` or `progress`.
    #[serde(rename = "type")]
    pub kind: LogKind,
    /// The text.
    pub message: String,
}

/// What a run came to.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SandboxOutcome {
    /// The tool returned a result.
    pub ok: bool,
    /// The tool's result (when `ok`).
    pub result: Option<Value>,
    /// Why it failed (when not `ok`): the tool's own error, or the
    /// sandbox's reason (timeout, memory, crash, bad output).
    pub error: Option<String>,
    /// Log and progress lines in order.
    pub logs: Vec<SandboxLog>,
    /// What OS-level confinement the child reported (`None`: it reported
    /// none, e.g. it never started).
    #[serde(skip)]
    pub confinement: Option<Confinement>,
    /// Wall-clock time of the whole run, spawn to exit.
    #[serde(skip)]
    pub duration: Duration,
}

/// Spawns sandbox children.
#[derive(Clone, Debug)]
pub struct SandboxRunner {
    binary: PathBuf,
    policy: OutboundPolicy,
    max_output: u64,
    slot_wait: Duration,
}

impl SandboxRunner {
    /// Children are `binary sandbox-run`; their `fetch` follows `policy`.
    pub fn new(binary: impl Into<PathBuf>, policy: OutboundPolicy) -> Self {
        SandboxRunner {
            binary: binary.into(),
            policy,
            max_output: MAX_OUTPUT_BYTES,
            slot_wait: SLOT_WAIT,
        }
    }

    /// Children re-execute this very binary.
    pub fn current_exe(policy: OutboundPolicy) -> std::io::Result<Self> {
        Ok(Self::new(std::env::current_exe()?, policy))
    }

    /// A lower output cap (tests).
    pub fn with_max_output(mut self, bytes: u64) -> Self {
        self.max_output = bytes;
        self
    }

    /// A shorter (or longer) wait for a child slot than [`SLOT_WAIT`]
    /// (tests).
    pub fn with_slot_wait(mut self, wait: Duration) -> Self {
        self.slot_wait = wait;
        self
    }

    /// Run one tool call; `progress` receives each progress line as it
    /// arrives. Waits for a child slot first (see [`slots`]); a run that
    /// gets none fails with the reason.
    pub async fn run_tool(
        &self,
        call: &ToolCall,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> SandboxOutcome {
        let started = Instant::now();
        let mut logs = Vec::new();
        let mut confinement = None;
        let verdict = match slots::acquire(call.tenant, self.slot_wait).await {
            // The slot is held until the child has been reaped.
            Ok(_slot) => {
                self.drive(call, &mut logs, &mut confinement, progress)
                    .await
            }
            Err(busy) => Err(busy),
        };
        let (ok, result, error) = match verdict {
            Ok(v) => (true, Some(v), None),
            Err(e) => (false, None, Some(e)),
        };
        SandboxOutcome {
            ok,
            result,
            error,
            logs,
            confinement,
            duration: started.elapsed(),
        }
    }

    async fn drive(
        &self,
        call: &ToolCall,
        logs: &mut Vec<SandboxLog>,
        confinement: &mut Option<Confinement>,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Value, String> {
        let dir = tempfile::tempdir()
            .map_err(|e| format!("the sandbox's working directory was not created: {e}"))?;
        let timeout_ms = u64::try_from(call.timeout.as_millis()).unwrap_or(u64::MAX);
        let request = SandboxRequest {
            module_source: call.module_source.clone(),
            tool: call.tool.clone(),
            params: call.params.clone(),
            config: call.config.clone(),
            principal: call.principal.clone(),
            channel: call.channel.clone(),
            allow_private_fetch: self.policy.allow_private,
            require_https: self.policy.require_https,
            timeout_ms,
        };
        let mut line = serde_json::to_vec(&request)
            .map_err(|e| format!("the sandbox request was not encoded: {e}"))?;
        line.push(b'\n');
        let mut child = Command::new(&self.binary)
            .arg("sandbox-run")
            .env_clear()
            .current_dir(dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("the sandbox did not start: {e}"))?;
        let stderr = child.stderr.take().map(|s| tokio::spawn(excerpt(s)));
        let deadline = tokio::time::Instant::now() + call.timeout + KILL_GRACE;
        let talk = tokio::time::timeout_at(
            deadline,
            self.converse(&mut child, &line, logs, confinement, progress),
        )
        .await;
        note_confinement(confinement.as_ref());
        let stderr_text = || async {
            match stderr {
                Some(task) => tokio::time::timeout(Duration::from_secs(1), task)
                    .await
                    .ok()
                    .and_then(Result::ok)
                    .unwrap_or_default(),
                None => String::new(),
            }
        };
        match talk {
            Err(_) => {
                kill(&mut child).await;
                Err(format!(
                    "timed out after {timeout_ms} ms (the sandbox was stopped)"
                ))
            }
            Ok(Err(Stop::Reason(reason))) => {
                kill(&mut child).await;
                Err(reason)
            }
            Ok(Err(Stop::Io(e))) => {
                kill(&mut child).await;
                let err = stderr_text().await;
                Err(crash_reason(&format!("its pipes failed ({e})"), &err))
            }
            Ok(Ok((status, result))) => match (status.success(), result) {
                (true, Some(Ok(v))) => Ok(v),
                (true, Some(Err(e))) => Err(e),
                (true, None) => Err("the sandbox ended without a result".into()),
                (false, _) => {
                    let err = stderr_text().await;
                    Err(crash_reason(&format!("it exited with {status}"), &err))
                }
            },
        }
    }

    /// Write the request, read lines until EOF, wait for the exit.
    async fn converse(
        &self,
        child: &mut Child,
        request: &[u8],
        logs: &mut Vec<SandboxLog>,
        confinement: &mut Option<Confinement>,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<(std::process::ExitStatus, Option<Result<Value, String>>), Stop> {
        if let Some(mut stdin) = child.stdin.take() {
            // A child that died at once shows up as a bad exit below.
            let _ = stdin.write_all(request).await;
            drop(stdin);
        }
        let mut stdout = child
            .stdout
            .take()
            .ok_or_else(|| Stop::Reason("the sandbox has no stdout".into()))?;
        let mut splitter = LineSplitter::new(self.max_output as usize, self.max_output);
        let mut result: Option<Result<Value, String>> = None;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = stdout.read(&mut buf).await.map_err(Stop::Io)?;
            let lines = if n == 0 {
                splitter.finish().into_iter().collect()
            } else {
                splitter.push(&buf[..n]).map_err(|e| match e {
                    LineError::LineTooLong { .. } | LineError::StreamTooLong { .. } => {
                        Stop::Reason(format!(
                            "the sandbox wrote more than {} bytes of output (stopped)",
                            self.max_output
                        ))
                    }
                })?
            };
            for raw in lines {
                handle_line(&raw, &mut result, logs, confinement, progress)?;
            }
            if n == 0 {
                break;
            }
        }
        let status = child.wait().await.map_err(Stop::Io)?;
        Ok((status, result))
    }
}

/// Why the conversation stopped early.
enum Stop {
    Reason(String),
    Io(std::io::Error),
}

fn handle_line(
    raw: &[u8],
    result: &mut Option<Result<Value, String>>,
    logs: &mut Vec<SandboxLog>,
    confinement: &mut Option<Confinement>,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<(), Stop> {
    let text = String::from_utf8_lossy(raw);
    let text = text.trim();
    if text.is_empty() {
        return Ok(());
    }
    let garbage = || {
        Stop::Reason(format!(
            "the sandbox wrote a line that is not its protocol: {:?}",
            truncate_chars(text, 80)
        ))
    };
    if result.is_some() {
        return Err(garbage());
    }
    let line: ChildLine = serde_json::from_str(text).map_err(|_| garbage())?;
    match line {
        // Only as the first line: later, it would come from the module's
        // side of the child.
        ChildLine::Confinement(c) if confinement.is_none() && logs.is_empty() => {
            *confinement = Some(c);
        }
        ChildLine::Confinement(_) => return Err(garbage()),
        ChildLine::Log { message } => logs.push(SandboxLog {
            kind: LogKind::Log,
            message: truncate_chars(&message, LOG_MAX_CHARS),
        }),
        ChildLine::Progress { message } => {
            let message = truncate_chars(&message, PROGRESS_MAX_CHARS);
            progress(&message);
            logs.push(SandboxLog {
                kind: LogKind::Progress,
                message,
            });
        }
        ChildLine::Result {
            ok,
            result: r,
            error,
        } => {
            *result = Some(if ok {
                Ok(r.unwrap_or(Value::Null))
            } else {
                Err(error.unwrap_or_else(|| "the tool failed without a reason".into()))
            });
        }
    }
    Ok(())
}

/// Log what the children are confined by: the first report at INFO (or
/// WARN when a layer is missing, so an operator learns the kernel's limits
/// once, not per call), later ones at DEBUG unless a layer is missing.
fn note_confinement(c: Option<&Confinement>) {
    static FIRST: AtomicBool = AtomicBool::new(true);
    static WARNED: AtomicBool = AtomicBool::new(false);
    let first = FIRST.swap(false, Ordering::Relaxed);
    match c {
        Some(c) if c.is_complete() => {
            if first {
                tracing::info!(no_new_privs = c.no_new_privs, seccomp = c.seccomp, landlock = ?c.landlock,
                    dropped_root = c.dropped_root, "sandbox children are confined");
            } else {
                tracing::debug!(?c, "sandbox child confined");
            }
        }
        Some(c) => {
            if !WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(missing = ?c.missing, no_new_privs = c.no_new_privs, seccomp = c.seccomp,
                    landlock = ?c.landlock, "sandbox children run with less OS-level confinement than intended (QuickJS's limits still apply); logged once");
            }
        }
        None => {
            if !WARNED.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "a sandbox child reported no OS-level confinement (not the root binary, or it failed first); logged once"
                );
            }
        }
    }
}

fn crash_reason(what: &str, stderr: &str) -> String {
    let stderr = stderr.trim();
    if stderr.is_empty() {
        format!("the sandbox crashed: {what}")
    } else {
        format!(
            "the sandbox crashed: {what}: {}",
            truncate_chars(stderr, 300)
        )
    }
}

async fn kill(child: &mut Child) {
    if let Err(e) = child.kill().await {
        tracing::warn!(error = %e, "could not kill a sandbox child");
    }
}

/// The first bytes of a stream (the rest is read and dropped, so the child
/// never blocks on a full pipe).
async fn excerpt(mut stream: impl AsyncRead + Unpin) -> String {
    let mut kept = Vec::new();
    let mut buf = [0u8; 8 * 1024];
    loop {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                let room = STDERR_EXCERPT_BYTES.saturating_sub(kept.len());
                kept.extend_from_slice(&buf[..n.min(room)]);
            }
        }
    }
    String::from_utf8_lossy(&kept).into_owned()
}

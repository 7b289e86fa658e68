//! The sandbox child: `root sandbox-run` (hidden). Reads one
//! [`SandboxRequest`] line from stdin, runs the module's
//! `invoke(toolName, params, ctx)` in QuickJS, and speaks NDJSON on stdout
//! ([`ChildLine`]), always ending with one `result` line unless it is
//! killed. Started by [`super::SandboxRunner`] with an empty environment
//! in an empty temporary directory; the JavaScript it runs has no host
//! API but `ctx.log`, `ctx.progress`, `console.*` and `fetch`.

use std::cell::{Cell, RefCell};
use std::io::{BufRead, Read, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use rquickjs::{Context, Ctx, Function, Module, Promise, Runtime, Value};

use super::fetch::Fetcher;
use super::{
    ChildLine, LOG_MAX_CHARS, MAX_REQUEST_BYTES, MEMORY_LIMIT_BYTES, PROGRESS_MAX_CHARS,
    SandboxRequest, confine, truncate_chars,
};

/// The JavaScript glue evaluated before the module.
const BOOTSTRAP: &str = include_str!("bootstrap.js");

/// The QuickJS stack limit (deep recursion becomes a RangeError).
const MAX_STACK_BYTES: usize = 1024 * 1024;

/// Run the child protocol on this process's stdin/stdout. `false` when no
/// result line could be written (the parent reports the run as failed).
pub fn main() -> bool {
    // Confined before the request is read: nothing untrusted (module,
    // params, config) has reached this process yet.
    if !write_line(&ChildLine::Confinement(confine::apply())) {
        return false;
    }
    let outcome = match read_request() {
        Ok(req) => execute(&req),
        Err(e) => Err(e),
    };
    let line = match outcome {
        Ok(result) => ChildLine::Result {
            ok: true,
            result: Some(result),
            error: None,
        },
        Err(error) => ChildLine::Result {
            ok: false,
            result: None,
            error: Some(error),
        },
    };
    write_line(&line)
}

fn read_request() -> Result<SandboxRequest, String> {
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .take(MAX_REQUEST_BYTES)
        .read_line(&mut line)
        .map_err(|e| format!("the sandbox could not read its request: {e}"))?;
    serde_json::from_str(&line).map_err(|e| format!("the sandbox request is not valid: {e}"))
}

/// Write one NDJSON line and flush it (so progress is live). `false` when
/// stdout is gone.
fn write_line(line: &ChildLine) -> bool {
    let Ok(mut text) = serde_json::to_string(line) else {
        return false;
    };
    text.push('\n');
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes()).is_ok() && out.flush().is_ok()
}

/// `ctx.log` / `ctx.progress` / `console.*` from JavaScript.
fn emit(kind: String, message: String) {
    let line = if kind == "progress" {
        ChildLine::Progress {
            message: truncate_chars(&message, PROGRESS_MAX_CHARS),
        }
    } else {
        ChildLine::Log {
            message: truncate_chars(&message, LOG_MAX_CHARS),
        }
    };
    if !write_line(&line) {
        // The parent closed our stdout (it gave up on us): stop now.
        std::process::exit(3);
    }
}

/// Why a run failed, before it is worded.
enum Failure {
    /// A JavaScript exception (its description).
    Thrown(String),
    /// The job queue ran dry with the tool's promise still pending.
    NeverSettled,
    /// Anything else rquickjs reported.
    Engine(String),
}

fn execute(req: &SandboxRequest) -> Result<serde_json::Value, String> {
    let timeout = Duration::from_millis(req.timeout_ms);
    let deadline = Instant::now() + timeout;
    let runtime =
        Runtime::new().map_err(|e| format!("the JavaScript runtime did not start: {e}"))?;
    runtime.set_memory_limit(MEMORY_LIMIT_BYTES);
    runtime.set_max_stack_size(MAX_STACK_BYTES);
    let interrupted = Rc::new(Cell::new(false));
    let flag = interrupted.clone();
    runtime.set_interrupt_handler(Some(Box::new(move || {
        let over = Instant::now() >= deadline;
        if over {
            flag.set(true);
        }
        over
    })));
    let context = Context::full(&runtime)
        .map_err(|e| format!("the JavaScript context did not start: {e}"))?;
    let fetcher = Rc::new(RefCell::new(Fetcher::new(req, deadline)));
    let answer = context.with(|ctx| run_module(&ctx, req, fetcher));
    let timeout_message = || format!("timed out after {} ms", req.timeout_ms);
    match answer {
        Ok(json) => {
            serde_json::from_str(&json).map_err(|e| format!("the tool's result is not JSON: {e}"))
        }
        Err(_) if interrupted.get() => Err(timeout_message()),
        Err(Failure::Thrown(m)) | Err(Failure::Engine(m)) if is_out_of_memory(&m) => Err(format!(
            "memory limit exceeded ({} MB)",
            MEMORY_LIMIT_BYTES / (1024 * 1024)
        )),
        Err(Failure::Thrown(m)) => Err(format!("the tool threw: {m}")),
        Err(Failure::NeverSettled) => Err(
            "the tool's promise never settled (nothing left to run; timers are not available)"
                .into(),
        ),
        Err(Failure::Engine(m)) => Err(format!("the JavaScript engine failed: {m}")),
    }
}

fn is_out_of_memory(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("out of memory") || m.contains("allocation failed")
}

fn run_module<'js>(
    ctx: &Ctx<'js>,
    req: &SandboxRequest,
    fetcher: Rc<RefCell<Fetcher>>,
) -> Result<String, Failure> {
    let fail = |e: rquickjs::Error| failure(ctx, e);
    let emit_fn = Function::new(ctx.clone(), emit).map_err(fail)?;
    let fetch_fn = Function::new(ctx.clone(), move |request: String| {
        fetcher.borrow_mut().fetch(&request)
    })
    .map_err(fail)?;
    let boot: Function = ctx.eval(BOOTSTRAP).map_err(fail)?;
    let run: Function = boot.call((emit_fn, fetch_fn)).map_err(fail)?;
    let (module, loaded) = Module::declare(ctx.clone(), "index.js", req.module_source.as_str())
        .and_then(|m| m.eval())
        .map_err(fail)?;
    loaded.finish::<Value>().map_err(fail)?;
    let invoke: Value = module.get("invoke").map_err(fail)?;
    let params = serde_json::to_string(&req.params).unwrap_or_else(|_| "null".into());
    let context = serde_json::json!({
        "config": req.config,
        "principal": req.principal,
        "channel": req.channel,
    })
    .to_string();
    let pending: Promise = run
        .call((invoke, req.tool.as_str(), params, context))
        .map_err(fail)?;
    pending.finish::<String>().map_err(fail)
}

fn failure<'js>(ctx: &Ctx<'js>, e: rquickjs::Error) -> Failure {
    match e {
        rquickjs::Error::Exception => Failure::Thrown(describe(ctx, ctx.catch())),
        rquickjs::Error::WouldBlock => Failure::NeverSettled,
        other => Failure::Engine(other.to_string()),
    }
}

/// A thrown value as text: `Name: message` for errors.
fn describe<'js>(ctx: &Ctx<'js>, thrown: Value<'js>) -> String {
    if let Some(obj) = thrown.as_object()
        && let Ok(message) = obj.get::<_, String>("message")
    {
        let name = obj
            .get::<_, String>("name")
            .unwrap_or_else(|_| "Error".into());
        return truncate_chars(&format!("{name}: {message}"), LOG_MAX_CHARS);
    }
    if let Some(s) = thrown.as_string() {
        return truncate_chars(&s.to_string().unwrap_or_default(), LOG_MAX_CHARS);
    }
    match ctx.json_stringify(thrown) {
        Ok(Some(s)) => truncate_chars(&s.to_string().unwrap_or_default(), LOG_MAX_CHARS),
        _ => "an exception without a description".into(),
    }
}

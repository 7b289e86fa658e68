//! A scripted OpenAI-compatible chat-completions server on 127.0.0.1:0,
//! shared by every integration test that needs an LLM. It records each
//! request (headers and JSON body) and answers from a script, one reply per
//! request in order. It speaks raw HTTP/1.1 so a stream can be sent in
//! pieces, with pauses, or stalled. Never the internet.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the fake answers to the next request.
pub enum Reply {
    /// A JSON body with this status.
    Json(u16, Vec<u8>),
    /// An SSE body written in pieces of `piece` bytes, `gap` apart.
    Sse {
        body: Vec<u8>,
        piece: usize,
        gap: Duration,
    },
    /// SSE headers and a keep-alive comment, then silence.
    StallStream,
    /// A 200 JSON body sent only once `gate` hands out a permit: a model
    /// that blocks until the test releases it.
    Gated {
        gate: Arc<tokio::sync::Semaphore>,
        body: Vec<u8>,
    },
}

struct Recorded {
    headers: String,
    body: Value,
}

#[derive(Default)]
struct FakeState {
    requests: Mutex<Vec<Recorded>>,
    script: Mutex<VecDeque<Reply>>,
    /// Woken on every recorded request.
    arrived: tokio::sync::Notify,
}

pub struct FakeLlm {
    pub base_url: String,
    state: Arc<FakeState>,
}

impl FakeLlm {
    pub async fn start() -> FakeLlm {
        let state = Arc::new(FakeState::default());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let s = state.clone();
        tokio::spawn(async move {
            while let Ok((conn, _)) = listener.accept().await {
                tokio::spawn(serve(conn, s.clone()));
            }
        });
        FakeLlm {
            base_url: format!("http://{addr}/api/v1"),
            state,
        }
    }

    pub fn then(&self, reply: Reply) -> &Self {
        self.state.script.lock().unwrap().push_back(reply);
        self
    }

    pub fn json(&self, body: Vec<u8>) -> &Self {
        self.then(Reply::Json(200, body))
    }

    pub fn sse(&self, body: Vec<u8>) -> &Self {
        self.then(Reply::Sse {
            body,
            piece: 37,
            gap: Duration::from_millis(2),
        })
    }

    pub fn bodies(&self) -> Vec<Value> {
        let r = self.state.requests.lock().unwrap();
        r.iter().map(|r| r.body.clone()).collect()
    }

    /// Wait (without sleeping) until at least `n` requests were received.
    pub async fn wait_for_requests(&self, n: usize) {
        loop {
            let arrived = self.state.arrived.notified();
            if self.state.requests.lock().unwrap().len() >= n {
                return;
            }
            arrived.await;
        }
    }

    pub fn headers(&self, i: usize) -> String {
        self.state.requests.lock().unwrap()[i].headers.clone()
    }
}

async fn serve(mut conn: TcpStream, state: Arc<FakeState>) {
    let mut buf = Vec::new();
    let mut tmp = [0u8; 8192];
    let head_end = loop {
        let Ok(n) = conn.read(&mut tmp).await else {
            return;
        };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(p) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break p + 4;
        }
    };
    let headers = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    assert!(
        headers.starts_with("post /api/v1/chat/completions "),
        "{headers}"
    );
    let length: usize = headers
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .map(|v| v.trim().parse().unwrap())
        .unwrap_or(0);
    while buf.len() < head_end + length {
        let n = conn.read(&mut tmp).await.unwrap();
        assert!(n > 0, "request body cut short");
        buf.extend_from_slice(&tmp[..n]);
    }
    let body: Value = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap();
    state
        .requests
        .lock()
        .unwrap()
        .push(Recorded { headers, body });
    let reply = state.script.lock().unwrap().pop_front();
    state.arrived.notify_waiters();
    // An unscripted request gets a non-retryable error the test will see.
    let reply = reply.unwrap_or_else(|| {
        Reply::Json(
            418,
            br#"{"error":{"code":418,"message":"unscripted request"}}"#.to_vec(),
        )
    });
    let sse_head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\
                    cache-control: no-cache\r\nconnection: close\r\n\r\n";
    match reply {
        Reply::Json(status, body) => {
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes()).await;
            let _ = conn.write_all(&body).await;
        }
        Reply::Sse { body, piece, gap } => {
            let _ = conn.write_all(sse_head.as_bytes()).await;
            for p in body.chunks(piece) {
                if conn.write_all(p).await.is_err() {
                    return;
                }
                let _ = conn.flush().await;
                tokio::time::sleep(gap).await;
            }
        }
        Reply::Gated { gate, body } => {
            let _permit = gate.acquire().await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes()).await;
            let _ = conn.write_all(&body).await;
        }
        Reply::StallStream => {
            let _ = conn.write_all(sse_head.as_bytes()).await;
            let _ = conn.write_all(b": OPENROUTER PROCESSING\n\n").await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    }
    let _ = conn.shutdown().await;
}

/// A non-streamed answer with `content` (OpenRouter shape, leading keep-alive).
pub fn completion(content: &str) -> Vec<u8> {
    let body = json!({
        "id": "gen-test", "object": "chat.completion", "model": "acme/model-x",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120, "cost": 2.5e-4}
    });
    format!("\n         \n{body}").into_bytes()
}

/// A non-streamed answer with optional `content` and these tool calls
/// (`(id, name, arguments)`; arguments are sent as given, so a test can
/// send malformed JSON).
pub fn tool_calls(content: Option<&str>, calls: &[(&str, &str, &str)]) -> Vec<u8> {
    let calls: Vec<Value> = calls
        .iter()
        .map(|(id, name, args)| {
            json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}})
        })
        .collect();
    json!({
        "id": "gen-tools", "object": "chat.completion", "model": "acme/model-x",
        "choices": [{"index": 0, "finish_reason": "tool_calls",
                     "message": {"role": "assistant", "content": content, "tool_calls": calls}}],
        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60, "cost": 1.0e-4}
    })
    .to_string()
    .into_bytes()
}

/// A provider error with `status`.
pub fn error(status: u16) -> Reply {
    Reply::Json(
        status,
        json!({"error": {"code": status, "message": format!("upstream said {status}")}})
            .to_string()
            .into_bytes(),
    )
}

/// A streamed (SSE) answer delivering `pieces` as separate content deltas,
/// then the finish reason and usage.
pub fn sse_text(pieces: &[&str]) -> Vec<u8> {
    let mut out = String::new();
    for p in pieces {
        let chunk = json!({"id": "gen-sse", "model": "acme/model-x",
            "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": null}]});
        out.push_str(&format!("data: {chunk}\n\n"));
    }
    let last = json!({"id": "gen-sse", "model": "acme/model-x",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 70, "completion_tokens": 9, "total_tokens": 79}});
    out.push_str(&format!("data: {last}\n\ndata: [DONE]\n\n"));
    out.into_bytes()
}

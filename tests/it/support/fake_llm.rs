//! A scripted OpenAI-compatible chat-completions server on 127.0.0.1:0,
//! shared by every integration test that needs an LLM: a [`FakeHttp`] with
//! one route, `POST /api/v1/chat/completions`, answering from a script, one
//! reply per request in order (an unscripted request gets a 418 the test
//! will see; any other path, e.g. embeddings, a 404). Never the internet.

use std::time::Duration;

use serde_json::{Value, json};

use root::ai::embeddings::HashingEmbedder;

use super::fake_http::FakeHttp;
pub use super::fake_http::Reply;

const PATH: &str = "/api/v1/chat/completions";

pub struct FakeLlm {
    /// The provider base URL (`OPENROUTER_BASE_URL`).
    pub base_url: String,
    pub http: FakeHttp,
}

impl FakeLlm {
    pub async fn start() -> FakeLlm {
        let http = FakeHttp::start().await;
        http.route("POST", PATH, |_| {
            Reply::raw_json(
                418,
                br#"{"error":{"code":418,"message":"unscripted request"}}"#.to_vec(),
            )
        });
        let llm = FakeLlm {
            base_url: http.url("/api/v1"),
            http,
        };
        // The capability-gap classification (§4.6) runs on its own task
        // after some turns; by default it finds no gap and never takes a
        // scripted reply (`gap_assessment` changes the answer).
        llm.gap_assessment(json!({
            "requires_new_tool": false, "requested_capability_summary": "",
            "reasoning": "no gap", "confidence": 0.0,
            "suggested_tool_name": null, "implementation_notes": null
        }));
        llm
    }

    /// Answer every capability-gap classification with `answer` (outside
    /// the script; its requests are not in [`FakeLlm::bodies`]).
    pub fn gap_assessment(&self, answer: Value) -> &Self {
        let body = completion(&answer.to_string());
        self.http.side_route(
            "POST",
            PATH,
            "capability-gap",
            is_gap_assessment,
            move |_| Reply::raw_json(200, body.clone()),
        );
        self
    }

    /// Answer `POST /api/v1/embeddings` with the offline hashing embedder's
    /// vectors (the same text always gets the same vector), so searches
    /// run their vector lane and report cosine similarities.
    pub fn serve_embeddings(&self) -> &Self {
        self.http.route("POST", "/api/v1/embeddings", |req| {
            let inputs: Vec<String> = match &req.body["input"] {
                Value::Array(a) => a
                    .iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect(),
                Value::String(s) => vec![s.clone()],
                _ => Vec::new(),
            };
            let data: Vec<Value> = inputs
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    json!({"object": "embedding", "index": i,
                           "embedding": HashingEmbedder::embed_text(t)})
                })
                .collect();
            let body = json!({"object": "list", "data": data, "model": req.body["model"],
                              "usage": {"prompt_tokens": 1, "total_tokens": 1}});
            Reply::raw_json(200, body.to_string().into_bytes())
        });
        self
    }

    /// The capability-gap classification requests so far.
    pub fn gap_bodies(&self) -> Vec<Value> {
        self.http
            .requests_to(PATH)
            .into_iter()
            .filter(is_gap_assessment)
            .map(|r| r.body)
            .collect()
    }

    pub fn then(&self, reply: Reply) -> &Self {
        self.http.script("POST", PATH, [reply]);
        self
    }

    /// A 200 JSON answer.
    pub fn json(&self, body: Vec<u8>) -> &Self {
        self.then(Reply::raw_json(200, body))
    }

    /// A 200 SSE answer, written in 37-byte pieces 2 ms apart.
    pub fn sse(&self, body: Vec<u8>) -> &Self {
        self.then(Reply::sse_pieces(body, 37, Duration::from_millis(2)))
    }

    /// The JSON bodies of the chat-completion requests so far (the
    /// capability-gap classifications left out: [`FakeLlm::gap_bodies`]).
    pub fn bodies(&self) -> Vec<Value> {
        self.http
            .requests_to(PATH)
            .into_iter()
            .filter(|r| !is_gap_assessment(r))
            .map(|r| r.body)
            .collect()
    }

    /// Wait (without sleeping) until at least `n` chat-completion requests
    /// were received.
    pub async fn wait_for_requests(&self, n: usize) {
        self.http.wait_for_requests_to(PATH, n).await
    }

    /// Chat-completion request `i`'s headers as lower-case `name: value`
    /// lines.
    pub fn headers(&self, i: usize) -> String {
        self.http.requests_to(PATH)[i].headers_text()
    }
}

/// Is `req` the capability-gap classification (its response schema's name)?
fn is_gap_assessment(req: &super::fake_http::SeenRequest) -> bool {
    req.body["response_format"]["json_schema"]["name"] == "capability_gap_assessment"
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
    Reply::raw_json(
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

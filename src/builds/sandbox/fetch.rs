//! The sandbox's only network door: a host function behind the module's
//! `fetch(url, {method, headers, body})`, performing the request through
//! the SSRF-guarded [`OutboundClient`] (private ranges refused unless the
//! operator allows them, no redirects followed, no proxies) with a cap on
//! the number of requests per run and on each response body. Synchronous
//! on a current-thread runtime: the child runs one tool and nothing else.

use std::collections::BTreeMap;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{
    FETCH_TIMEOUT, MAX_FETCH_BODY_BYTES, MAX_FETCH_REQUEST_BYTES, MAX_FETCHES, SandboxRequest,
};
use crate::outbound::{self, OutboundClient, OutboundPolicy, read_capped};

/// What the bootstrap's `fetch` sends to the host.
#[derive(Debug, Deserialize)]
struct FetchRequest {
    url: String,
    #[serde(default = "get")]
    method: String,
    #[serde(default)]
    headers: BTreeMap<String, serde_json::Value>,
    #[serde(default)]
    body: Option<String>,
}

fn get() -> String {
    "GET".into()
}

/// What the host answers: a response, or why there is none.
#[derive(Debug, Serialize)]
#[serde(untagged)]
enum FetchAnswer {
    Response {
        status: u16,
        headers: BTreeMap<String, String>,
        body: String,
    },
    Refused {
        error: String,
    },
}

/// The per-run fetch state. The runtime and HTTP client are built on the
/// first `fetch`: most tools never call it, and building them (a tokio
/// runtime, a rustls client config with its root store) is a large part
/// of a cold child's start.
pub(super) struct Fetcher {
    policy: OutboundPolicy,
    net: Option<Net>,
    deadline: Instant,
    used: u32,
}

/// What the first `fetch` builds.
struct Net {
    runtime: tokio::runtime::Runtime,
    client: OutboundClient,
}

impl Net {
    fn start(policy: OutboundPolicy) -> Result<Net, String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("the sandbox's network runtime did not start: {e}"))?;
        // Built inside the runtime it will be driven by.
        let client = {
            let _entered = runtime.enter();
            OutboundClient::new(policy, |b| {
                b.user_agent(concat!("Root-community-build/", env!("CARGO_PKG_VERSION")))
            })
            .map_err(|e| format!("the sandbox's HTTP client did not start: {e}"))?
        };
        Ok(Net { runtime, client })
    }
}

impl Fetcher {
    /// A fetcher for `req`'s policy whose requests end by `deadline`.
    pub(super) fn new(req: &SandboxRequest, deadline: Instant) -> Self {
        Fetcher {
            policy: OutboundPolicy {
                allow_private: req.allow_private_fetch,
                require_https: req.require_https,
            },
            net: None,
            deadline,
            used: 0,
        }
    }

    /// Perform one request (JSON in, JSON out — the bootstrap turns a
    /// refusal into a thrown `TypeError`).
    pub(super) fn fetch(&mut self, request: &str) -> String {
        let answer = match self.perform(request) {
            Ok(a) => a,
            Err(error) => FetchAnswer::Refused { error },
        };
        serde_json::to_string(&answer).unwrap_or_else(|_| r#"{"error":"unencodable"}"#.into())
    }

    fn perform(&mut self, request: &str) -> Result<FetchAnswer, String> {
        if self.used >= MAX_FETCHES {
            return Err(format!("request limit reached ({MAX_FETCHES} per run)"));
        }
        self.used += 1;
        let req: FetchRequest =
            serde_json::from_str(request).map_err(|e| format!("bad request: {e}"))?;
        let method = reqwest::Method::from_bytes(req.method.to_ascii_uppercase().as_bytes())
            .map_err(|_| format!("unknown method {:?}", req.method))?;
        let remaining = self.deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err("the run's time is up".into());
        }
        let policy = self.policy;
        let net: &Net = match &mut self.net {
            Some(net) => net,
            empty => empty.insert(Net::start(policy)?),
        };
        let mut builder = net
            .client
            .request(method, &req.url)
            .map_err(|e| e.to_string())?
            .timeout(remaining.min(FETCH_TIMEOUT));
        for (name, value) in &req.headers {
            let value = match value {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            builder = builder.header(name.as_str(), value);
        }
        if let Some(body) = req.body {
            if body.len() > MAX_FETCH_REQUEST_BYTES {
                return Err(format!("request body over {MAX_FETCH_REQUEST_BYTES} bytes"));
            }
            builder = builder.body(body);
        }
        net.runtime.block_on(async move {
            let resp = builder.send().await.map_err(|e| describe_send_error(&e))?;
            let status = resp.status().as_u16();
            let mut headers: BTreeMap<String, String> = BTreeMap::new();
            for (name, value) in resp.headers() {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                headers
                    .entry(name.as_str().to_string())
                    .and_modify(|v| {
                        v.push_str(", ");
                        v.push_str(&value);
                    })
                    .or_insert(value);
            }
            let body = read_capped(resp, MAX_FETCH_BODY_BYTES)
                .await
                .map_err(|e| e.to_string())?;
            Ok(FetchAnswer::Response {
                status,
                headers,
                body: String::from_utf8_lossy(&body).into_owned(),
            })
        })
    }
}

fn describe_send_error(e: &reqwest::Error) -> String {
    if let Some(refused) = outbound::refused_destination(e) {
        return refused.to_string();
    }
    if e.is_timeout() {
        return "timed out".into();
    }
    if e.is_connect() {
        return "could not connect".into();
    }
    "the request failed".into()
}

//! DNS-rebinding guard for browser-facing routes.
//!
//! A page on `evil.example` can make a victim's browser send requests to a
//! server on the victim's machine or LAN by pointing `evil.example` at that
//! address (DNS rebinding); the browser then treats the answers as
//! same-origin. The one thing such a request cannot fake is its `Host`:
//! it names the attacker's domain. Browser-facing routes (the dev harness,
//! the web chat, KB pages, logos, the dashboard with `/auth/*` and signup;
//! MCP through rmcp's own check) therefore answer only when `Host` names
//! `PLATFORM_BASE_URL`'s host or a loopback name.
//! Machine-to-machine routes (`/api/v1`, webhooks) authenticate every
//! request instead and are not checked, so a proxy may reach them under
//! any name.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::HOST;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::web::error::ApiError;

/// The host names a browser-facing request may carry (lower-case, no port).
#[derive(Clone, Debug)]
pub struct AllowedHosts(Arc<Vec<String>>);

impl AllowedHosts {
    /// `PLATFORM_BASE_URL`'s host plus the loopback names (`localhost`,
    /// `127.0.0.1`, `::1`), which no remote page can make a browser send.
    pub fn from_base_url(platform_base_url: &str) -> AllowedHosts {
        let mut hosts: Vec<String> = ["localhost", "127.0.0.1", "::1"]
            .iter()
            .map(|h| h.to_string())
            .collect();
        if let Some(h) = reqwest::Url::parse(platform_base_url)
            .ok()
            .and_then(|u| u.host_str().map(normalize))
            && !hosts.contains(&h)
        {
            hosts.push(h);
        }
        AllowedHosts(Arc::new(hosts))
    }

    /// The allowed names (lower-case, no port).
    pub fn names(&self) -> &[String] {
        &self.0
    }

    /// Whether an `authority` (`host[:port]`, as in `Host`) is allowed.
    pub fn allows(&self, authority: &str) -> bool {
        host_of(authority).is_some_and(|h| self.0.contains(&h))
    }
}

/// The host part of `host[:port]` / `[v6]:port`, lower-cased, without the
/// brackets of an IPv6 literal; `None` when it is empty or malformed.
fn host_of(authority: &str) -> Option<String> {
    let a = authority.trim();
    let host = if let Some(rest) = a.strip_prefix('[') {
        let (h, tail) = rest.split_once(']')?;
        if !(tail.is_empty() || tail.starts_with(':')) {
            return None;
        }
        h
    } else {
        match a.rsplit_once(':') {
            Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
            Some(_) => return None,
            None => a,
        }
    };
    (!host.is_empty()).then(|| normalize(host))
}

fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

/// Middleware: refuse (421) a request whose `Host` (or HTTP/2 authority)
/// is not an allowed name.
pub async fn require_known_host(
    State(allowed): State<AllowedHosts>,
    req: Request,
    next: Next,
) -> Response {
    let authority = req
        .headers()
        .get(HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    match authority {
        Some(a) if allowed.allows(&a) => next.run(req).await,
        other => {
            tracing::warn!(
                host = other.as_deref().unwrap_or("-"),
                path = %req.uri().path(),
                "browser-facing request refused: Host is not PLATFORM_BASE_URL's host or loopback"
            );
            ApiError::MisdirectedRequest(
                "this route answers only under the server's configured host (PLATFORM_BASE_URL)"
                    .into(),
            )
            .into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_host_and_loopback_names_are_allowed_with_any_port() {
        let a = AllowedHosts::from_base_url("https://Root.Example.org/app");
        for ok in [
            "root.example.org",
            "ROOT.example.org:443",
            "root.example.org.",
            "localhost:4000",
            "127.0.0.1:1",
            "[::1]:4000",
            "[::1]",
        ] {
            assert!(a.allows(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:4000",
            "root.example.org.evil.example",
            "127.0.0.2:4000",
            "",
            "root.example.org:http",
            "[::1]x",
            "[::1",
        ] {
            assert!(!a.allows(bad), "{bad}");
        }
    }

    #[test]
    fn a_malformed_base_url_still_allows_loopback() {
        let a = AllowedHosts::from_base_url("not a url");
        assert!(a.allows("localhost:4000"));
        assert!(!a.allows("example.org"));
    }
}

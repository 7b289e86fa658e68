//! The guarded outbound HTTP client: every request the platform makes on
//! its own initiative to a URL a tenant controls (integration backends
//! today; knowledge sources, webhooks and community-build fetches later)
//! goes through [`OutboundClient`], so no tenant can point Root at its own
//! loopback, the LAN or a cloud metadata service (SSRF).
//!
//! - [`OutboundPolicy`] — http(s) only, `https://` in production, IP
//!   literals checked before sending (reqwest never resolves them).
//! - [`resolve`] — the resolver that drops non-public addresses, so the
//!   address connected to is the address checked (no DNS rebinding).
//! - [`address`] — which addresses are public.
//! - [`body`] — capped body reads and off-thread parsing of big bodies.
//! - [`lines`] — the incremental line splitter for NDJSON/SSE streams.
//!
//! Redirects are never followed (a 3xx is the answer) and system proxies
//! are ignored. `ROOT_ALLOW_PRIVATE_FETCH=true` (LAN self-hosting, tests)
//! allows private addresses and plain http; redirects stay off.

pub mod address;
pub mod body;
pub mod lines;
pub mod resolve;

use std::net::IpAddr;
use std::sync::Arc;

use reqwest::Url;

use crate::config::{Config, RunMode};
pub use body::{BodyError, read_capped, read_prefix};
pub use lines::{LineError, LineSplitter};
pub use resolve::{GuardedResolver, RefusedDestination};

/// What platform-initiated requests may reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutboundPolicy {
    /// Loopback, private, link-local… addresses allowed (and plain http
    /// in production): `ROOT_ALLOW_PRIVATE_FETCH`.
    pub allow_private: bool,
    /// Only `https://` URLs.
    pub require_https: bool,
}

impl OutboundPolicy {
    /// The policy of `config`: https is required in production unless
    /// private fetches are allowed.
    pub fn from_config(config: &Config) -> Self {
        OutboundPolicy {
            allow_private: config.allow_private_fetch,
            require_https: config.mode == RunMode::Production && !config.allow_private_fetch,
        }
    }

    /// Public destinations only, http or https.
    pub fn strict() -> Self {
        OutboundPolicy {
            allow_private: false,
            require_https: false,
        }
    }

    /// Check a URL before anything is sent: scheme, https in production,
    /// and a host that is not a refused IP literal. Names are checked when
    /// they are resolved (see [`resolve`]).
    pub fn check_url(&self, url: &Url) -> Result<(), OutboundError> {
        match url.scheme() {
            "https" => {}
            "http" if self.require_https => return Err(OutboundError::HttpsRequired),
            "http" => {}
            other => return Err(OutboundError::Scheme(other.to_string())),
        }
        let host = match url.host_str() {
            None | Some("") => return Err(OutboundError::NoHost),
            Some(h) => h,
        };
        // IPv6 literals come bracketed; the parser has already normalized
        // IPv4 spellings (`2130706433`, `0x7f.1`) to dotted quads.
        let literal = host
            .strip_prefix('[')
            .and_then(|h| h.strip_suffix(']'))
            .unwrap_or(host);
        let Ok(ip) = literal.parse::<IpAddr>() else {
            return Ok(());
        };
        if self.allow_private || address::is_public(ip) {
            Ok(())
        } else {
            Err(OutboundError::NonPublicAddress(ip))
        }
    }

    /// Parse and check `raw`.
    pub fn parse_url(&self, raw: &str) -> Result<Url, OutboundError> {
        let url = Url::parse(raw).map_err(|e| OutboundError::Invalid(e.to_string()))?;
        self.check_url(&url)?;
        Ok(url)
    }
}

/// A destination the policy refuses (before anything is sent).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OutboundError {
    /// Not http(s).
    #[error("{0}:// URLs are not allowed (http or https only)")]
    Scheme(String),
    /// Plain http in production.
    #[error("must use https:// (plain http is refused in production)")]
    HttpsRequired,
    /// No host to connect to.
    #[error("the URL has no host")]
    NoHost,
    /// An IP literal outside the public unicast ranges.
    #[error(
        "{0} is not a public address; refused (set ROOT_ALLOW_PRIVATE_FETCH=true to allow private addresses)"
    )]
    NonPublicAddress(IpAddr),
    /// Not a URL.
    #[error("not a URL ({0})")]
    Invalid(String),
}

/// The guarded client: one connection pool, the policy's resolver, no
/// proxies, no redirects. Cheap to clone.
#[derive(Clone, Debug)]
pub struct OutboundClient {
    http: reqwest::Client,
    policy: OutboundPolicy,
}

impl OutboundClient {
    /// Build the client; `configure` sets timeouts, user agent… — the guard
    /// settings (resolver, no proxy, no redirects, https-only) are applied
    /// after it, so it cannot undo them.
    pub fn new(
        policy: OutboundPolicy,
        configure: impl FnOnce(reqwest::ClientBuilder) -> reqwest::ClientBuilder,
    ) -> Result<Self, reqwest::Error> {
        let http = configure(reqwest::Client::builder())
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .https_only(policy.require_https)
            .dns_resolver(Arc::new(GuardedResolver::new(policy.allow_private)))
            .build()?;
        Ok(OutboundClient { http, policy })
    }

    /// The policy this client enforces.
    pub fn policy(&self) -> OutboundPolicy {
        self.policy
    }

    /// A request to `url` after the policy's URL check.
    pub fn request(
        &self,
        method: reqwest::Method,
        url: &str,
    ) -> Result<reqwest::RequestBuilder, OutboundError> {
        let url = self.policy.parse_url(url)?;
        Ok(self.http.request(method, url))
    }
}

/// The resolver's refusal, if that is why `e` (a failed send) failed.
pub fn refused_destination<'a>(
    e: &'a (dyn std::error::Error + 'static),
) -> Option<&'a RefusedDestination> {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if let Some(r) = err.downcast_ref::<RefusedDestination>() {
            return Some(r);
        }
        current = err.source();
    }
    None
}

/// The error and its sources, e.g. "error sending request: connection
/// refused" (for logs; never shown to tenants or models).
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(allow_private: bool, require_https: bool) -> OutboundPolicy {
        OutboundPolicy {
            allow_private,
            require_https,
        }
    }

    #[test]
    fn ip_literals_in_refused_ranges_are_refused_unless_private_is_allowed() {
        let strict = OutboundPolicy::strict();
        for url in [
            "http://127.0.0.1:8080/x",
            "http://169.254.169.254/latest/meta-data/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[fd00::1]/",
            "http://10.1.2.3/",
            "http://0.0.0.0/",
            // The URL parser normalizes these to 127.0.0.1.
            "http://2130706433/",
            "http://0x7f.1/",
        ] {
            assert!(
                matches!(
                    strict.parse_url(url),
                    Err(OutboundError::NonPublicAddress(_))
                ),
                "{url}"
            );
            assert!(policy(true, false).parse_url(url).is_ok(), "{url}");
        }
        assert!(strict.parse_url("https://93.184.216.34/").is_ok());
        assert!(strict.parse_url("http://backend.example.org/").is_ok());
        assert_eq!(
            strict.parse_url("ftp://example.org/"),
            Err(OutboundError::Scheme("ftp".into()))
        );
        assert!(matches!(
            strict.parse_url("file:///etc/passwd"),
            Err(OutboundError::Scheme(_))
        ));
    }

    #[test]
    fn production_requires_https_unless_private_fetches_are_allowed() {
        let vars = |extra: &[(&str, &str)]| {
            let mut v: Vec<(String, String)> = vec![
                ("NODE_ENV".into(), "production".into()),
                ("SESSION_COOKIE_SECRET".into(), "x".repeat(32)),
                (
                    "PLATFORM_BASE_URL".into(),
                    "https://root.example.org".into(),
                ),
            ];
            v.extend(extra.iter().map(|(k, v)| (k.to_string(), v.to_string())));
            Config::from_vars(v).unwrap()
        };
        let prod = OutboundPolicy::from_config(&vars(&[]));
        assert_eq!(prod, policy(false, true));
        assert_eq!(
            prod.parse_url("http://backend.example.org/"),
            Err(OutboundError::HttpsRequired)
        );
        assert!(prod.parse_url("https://backend.example.org/").is_ok());
        let lan = OutboundPolicy::from_config(&vars(&[("ROOT_ALLOW_PRIVATE_FETCH", "true")]));
        assert_eq!(lan, policy(true, false));
        assert!(lan.parse_url("http://192.168.1.10:3000/").is_ok());
        let dev = OutboundPolicy::from_config(&Config::from_vars(Vec::new()).unwrap());
        assert_eq!(dev, policy(false, false));
    }
}

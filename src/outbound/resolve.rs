//! The DNS resolver of the guarded client. reqwest connects only to the
//! addresses this resolver hands back, so checking them here — not the
//! name before the request — closes DNS rebinding: the address connected
//! to is the address that was checked, on every connection.

use std::net::SocketAddr;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};

use super::address::is_public;

/// A name resolved only to addresses the outbound policy refuses. Found in
/// a failed request's error chain by [`super::refused_destination`].
#[derive(Debug, thiserror::Error)]
#[error(
    "{host} resolves only to non-public addresses; refused (set ROOT_ALLOW_PRIVATE_FETCH=true to allow)"
)]
pub struct RefusedDestination {
    /// The name that was looked up.
    pub host: String,
}

/// System resolution (getaddrinfo on the blocking pool, through tokio)
/// filtered to public addresses unless private fetches are allowed.
#[derive(Clone, Copy, Debug)]
pub struct GuardedResolver {
    allow_private: bool,
}

impl GuardedResolver {
    /// A resolver that drops non-public addresses (or keeps every address
    /// when `allow_private`).
    pub fn new(allow_private: bool) -> Self {
        GuardedResolver { allow_private }
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_string();
        Box::pin(async move {
            let found: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let usable = filter_addrs(found, allow_private);
            if usable.is_empty() {
                tracing::warn!(%host, "outbound request refused: name resolves only to non-public addresses");
                return Err(Box::new(RefusedDestination { host }) as _);
            }
            Ok(Box::new(usable.into_iter()) as Addrs)
        })
    }
}

/// The addresses a connection may use, in resolver order.
fn filter_addrs(addrs: Vec<SocketAddr>, allow_private: bool) -> Vec<SocketAddr> {
    if allow_private {
        return addrs;
    }
    addrs.into_iter().filter(|a| is_public(a.ip())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_answers_are_dropped_and_public_ones_kept() {
        let addrs: Vec<SocketAddr> = ["127.0.0.1:0", "93.184.216.34:0", "[::1]:0", "10.0.0.2:0"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(
            filter_addrs(addrs.clone(), false),
            vec!["93.184.216.34:0".parse::<SocketAddr>().unwrap()]
        );
        assert_eq!(filter_addrs(addrs.clone(), true), addrs);
    }

    #[tokio::test]
    async fn localhost_is_refused_unless_private_fetches_are_allowed() {
        let name: Name = "localhost".parse().unwrap();
        let err = match GuardedResolver::new(false).resolve(name).await {
            Ok(_) => panic!("localhost resolved to a usable address"),
            Err(e) => e,
        };
        let refused = err.downcast_ref::<RefusedDestination>().expect("a refusal");
        assert_eq!(refused.host, "localhost");
        let name: Name = "localhost".parse().unwrap();
        let addrs: Vec<SocketAddr> = GuardedResolver::new(true)
            .resolve(name)
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty());
    }
}

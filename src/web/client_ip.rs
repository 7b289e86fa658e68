//! The [`ClientIp`] extractor: the address the sign-in limits key on
//! (security finding M-4). It is the socket's peer (the server runs with
//! `into_make_service_with_connect_info`), or, when that peer is one of
//! `ROOT_TRUSTED_PROXIES`, the client that proxy names in
//! `X-Forwarded-For` ([`TrustedProxies::client_ip`]).

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;

use crate::config::client_ip::TrustedProxies;
use crate::state::AppState;

/// The `X-Forwarded-For` header (read only from trusted proxies).
const FORWARDED_FOR: &str = "x-forwarded-for";

/// The requesting client; `None` when the router is driven without a
/// socket (in-process tests), which then share one rate-limit key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClientIp(pub Option<IpAddr>);

impl ClientIp {
    /// The client of a request with these `parts` under `trusted`.
    pub fn of(parts: &Parts, trusted: &TrustedProxies) -> ClientIp {
        let Some(ConnectInfo(peer)) = parts.extensions.get::<ConnectInfo<SocketAddr>>() else {
            return ClientIp(None);
        };
        let forwarded = parts
            .headers
            .get_all(FORWARDED_FOR)
            .iter()
            .filter_map(|v| v.to_str().ok());
        ClientIp(Some(trusted.client_ip(peer.ip(), forwarded)))
    }
}

impl FromRequestParts<AppState> for ClientIp {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Infallible> {
        Ok(ClientIp::of(parts, &state.config.trusted_proxies))
    }
}

//! Which address a request came from, for the per-client sign-in limits
//! (security finding M-4). The socket's peer is the client unless the
//! operator names the reverse proxies in front (`ROOT_TRUSTED_PROXIES`):
//! only then is `X-Forwarded-For` read, because anyone else can write it.

use std::net::IpAddr;

/// One `ROOT_TRUSTED_PROXIES` entry: an address or a CIDR block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IpBlock {
    net: IpAddr,
    prefix: u8,
}

impl IpBlock {
    /// `10.0.0.1`, `10.0.0.0/8`, `::1` or `fd00::/8`; `None` otherwise.
    pub fn parse(s: &str) -> Option<IpBlock> {
        let s = s.trim();
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().ok()?)),
            None => (s, None),
        };
        let net = addr.parse::<IpAddr>().ok()?.to_canonical();
        let max = if net.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        (prefix <= max).then_some(IpBlock { net, prefix })
    }

    /// Whether `ip` is inside the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.net, ip.to_canonical()) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - self.prefix as u32).unwrap_or(0);
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = u128::MAX.checked_shl(128 - self.prefix as u32).unwrap_or(0);
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for IpBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.net, self.prefix)
    }
}

/// `ROOT_TRUSTED_PROXIES`: the proxies whose `X-Forwarded-For` is believed
/// (default none: the socket's peer is the client).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpBlock>);

impl std::fmt::Display for TrustedProxies {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, b) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{b}")?;
        }
        Ok(())
    }
}

impl TrustedProxies {
    /// A comma-separated list of addresses and CIDR blocks (blank: none);
    /// `Err` with the first entry that is neither.
    pub fn parse(list: &str) -> Result<TrustedProxies, String> {
        list.split(',')
            .map(str::trim)
            .filter(|e| !e.is_empty())
            .map(|e| IpBlock::parse(e).ok_or_else(|| e.to_string()))
            .collect::<Result<Vec<_>, _>>()
            .map(TrustedProxies)
    }

    /// No proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `ip` is one of the trusted proxies.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|b| b.contains(ip))
    }

    /// The client of a request whose socket peer is `peer` and whose
    /// `X-Forwarded-For` header values are `forwarded_for` (in order). Each
    /// trusted proxy appends the address it saw, so the list is read from
    /// the right: the first entry that is not itself a trusted proxy is the
    /// client. An unparsable entry ends the walk at the last trusted hop
    /// (what precedes it may be forged).
    pub fn client_ip<'a>(
        &self,
        peer: IpAddr,
        forwarded_for: impl IntoIterator<Item = &'a str>,
    ) -> IpAddr {
        let peer = peer.to_canonical();
        if !self.contains(peer) {
            return peer;
        }
        let hops: Vec<&str> = forwarded_for
            .into_iter()
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .collect();
        let mut client = peer;
        for hop in hops.iter().rev() {
            let Some(ip) = parse_hop(hop) else {
                break;
            };
            client = ip;
            if !self.contains(ip) {
                break;
            }
        }
        client
    }
}

/// An `X-Forwarded-For` entry: `1.2.3.4`, `1.2.3.4:5678`, `::1` or `[::1]:5678`.
fn parse_hop(hop: &str) -> Option<IpAddr> {
    if let Ok(ip) = hop.parse::<IpAddr>() {
        return Some(ip.to_canonical());
    }
    hop.parse::<std::net::SocketAddr>()
        .ok()
        .map(|s| s.ip().to_canonical())
}

/// The rate-limit key of a client: an IPv4 address as is, an IPv6 address
/// by its /64 (one subscriber usually holds a whole /64, so single
/// addresses would be free to rotate). `None` (no socket address, as in
/// in-process router tests) shares one key.
pub fn client_key(ip: Option<IpAddr>) -> String {
    match ip.map(|i| i.to_canonical()) {
        Some(IpAddr::V4(v4)) => v4.to_string(),
        Some(IpAddr::V6(v6)) => {
            let net = u128::from(v6) & (u128::MAX << 64);
            format!("{}/64", std::net::Ipv6Addr::from(net))
        }
        None => "unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn blocks_parse_and_match() {
        let b = IpBlock::parse("10.0.0.0/8").unwrap();
        assert!(b.contains(ip("10.200.3.4")) && !b.contains(ip("11.0.0.1")));
        let one = IpBlock::parse(" 127.0.0.1 ").unwrap();
        assert!(one.contains(ip("127.0.0.1")) && !one.contains(ip("127.0.0.2")));
        assert!(one.contains(ip("::ffff:127.0.0.1")), "v4-mapped v6");
        let v6 = IpBlock::parse("fd00::/8").unwrap();
        assert!(v6.contains(ip("fd12::1")) && !v6.contains(ip("fe80::1")));
        assert!(!v6.contains(ip("10.0.0.1")));
        assert!(IpBlock::parse("0.0.0.0/0").unwrap().contains(ip("8.8.8.8")));
        for bad in [
            "",
            "10.0.0.0/33",
            "::/129",
            "example.org",
            "10.0.0.0/x",
            "10.0.0/8",
        ] {
            assert_eq!(IpBlock::parse(bad), None, "{bad}");
        }
        assert_eq!(
            TrustedProxies::parse("127.0.0.1, ::1,10.0.0.0/8")
                .unwrap()
                .0
                .len(),
            3
        );
        assert!(TrustedProxies::parse(" ").unwrap().is_empty());
        assert_eq!(
            TrustedProxies::parse("127.0.0.1,proxy").unwrap_err(),
            "proxy"
        );
    }

    #[test]
    fn forwarded_for_is_read_only_from_trusted_proxies() {
        let none = TrustedProxies::default();
        assert_eq!(
            none.client_ip(ip("127.0.0.1"), ["203.0.113.9"]),
            ip("127.0.0.1")
        );
        let lo = TrustedProxies::parse("127.0.0.1,10.0.0.0/8").unwrap();
        // An untrusted peer's header is ignored.
        assert_eq!(
            lo.client_ip(ip("198.51.100.7"), ["203.0.113.9"]),
            ip("198.51.100.7")
        );
        // The proxy's view: the right-most untrusted hop, not a forged left one.
        assert_eq!(
            lo.client_ip(ip("127.0.0.1"), ["1.1.1.1, 203.0.113.9"]),
            ip("203.0.113.9")
        );
        assert_eq!(
            lo.client_ip(ip("127.0.0.1"), ["1.1.1.1", "203.0.113.9, 10.1.1.1"]),
            ip("203.0.113.9"),
            "two proxies, two header lines"
        );
        assert_eq!(
            lo.client_ip(ip("127.0.0.1"), ["[2001:db8::1]:443"]),
            ip("2001:db8::1")
        );
        assert_eq!(
            lo.client_ip(ip("127.0.0.1"), ["203.0.113.9:5000"]),
            ip("203.0.113.9")
        );
        // No header, or only garbage: the proxy itself.
        assert_eq!(lo.client_ip(ip("127.0.0.1"), []), ip("127.0.0.1"));
        assert_eq!(lo.client_ip(ip("127.0.0.1"), ["unknown"]), ip("127.0.0.1"));
        assert_eq!(
            lo.client_ip(ip("127.0.0.1"), ["203.0.113.9, junk, 10.0.0.2"]),
            ip("10.0.0.2"),
            "a walk that hits garbage stops at the last trusted hop"
        );
    }

    #[test]
    fn ipv6_clients_are_keyed_by_their_64() {
        assert_eq!(client_key(Some(ip("192.0.2.1"))), "192.0.2.1");
        assert_eq!(client_key(Some(ip("::ffff:192.0.2.1"))), "192.0.2.1");
        assert_eq!(
            client_key(Some(ip("2001:db8:1:2:aaaa::1"))),
            client_key(Some(ip("2001:db8:1:2:bbbb::9")))
        );
        assert_ne!(
            client_key(Some(ip("2001:db8:1:2::1"))),
            client_key(Some(ip("2001:db8:1:3::1")))
        );
        assert_eq!(client_key(None), "unknown");
    }
}

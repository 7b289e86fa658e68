//! Which IP addresses a platform request to a tenant-controlled URL may
//! reach: only globally routable unicast. Everything an attacker could use
//! to reach the host itself, the LAN or a cloud metadata service is refused
//! — including IPv6 forms that embed a refused IPv4 address, because the
//! kernel (or a NAT64/6to4 gateway) would deliver them to that address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address a tenant URL may resolve to.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// IPv4: refuses this-network (0/8, incl. unspecified), RFC 1918, loopback,
/// CGNAT (100.64/10), link-local (169.254/16: cloud metadata), the IETF
/// protocol block (192.0.0/24), the documentation nets, the 6to4 relay
/// anycast, benchmarking (198.18/15), multicast and 240/4 (incl. broadcast).
pub fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let refused = a == 0
        || a == 10
        || a == 127
        || (a == 100 && (64..=127).contains(&b))
        || (a == 169 && b == 254)
        || (a == 172 && (16..=31).contains(&b))
        || (a == 192 && b == 168)
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 192 && b == 88 && c == 99)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224;
    !refused
}

/// IPv6: only global unicast (2000::/3) outside its special blocks, so
/// `::`, `::1`, the deprecated v4-compatible `::a.b.c.d`, ULA, link- and
/// site-local and multicast are all refused; the v4-mapped, NAT64
/// (64:ff9b::/96) and 6to4 (2002::/16) forms are judged by the IPv4
/// address they carry.
pub fn is_public_v6(ip: Ipv6Addr) -> bool {
    let s = ip.segments();
    // ::ffff:a.b.c.d — v4-mapped: the socket connects to a.b.c.d.
    if s[..6] == [0, 0, 0, 0, 0, 0xffff] {
        return is_public_v4(embedded_v4(s[6], s[7]));
    }
    // 64:ff9b::/96 — the well-known NAT64 prefix.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return is_public_v4(embedded_v4(s[6], s[7]));
    }
    // 2002:AABB:CCDD::/48 — 6to4 of AA.BB.CC.DD.
    if s[0] == 0x2002 {
        return is_public_v4(embedded_v4(s[1], s[2]));
    }
    let global_unicast = s[0] & 0xe000 == 0x2000;
    // 2001::/23 IETF assignments (Teredo, benchmarking, ORCHID) and
    // 2001:db8::/32 documentation.
    let ietf_or_doc = s[0] == 0x2001 && (s[1] < 0x0200 || s[1] == 0x0db8);
    // 3fff::/20 documentation.
    let doc_3fff = s[0] & 0xfff0 == 0x3ff0;
    global_unicast && !ietf_or_doc && !doc_3fff
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    let [a, b] = hi.to_be_bytes();
    let [c, d] = lo.to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(s: &str) -> bool {
        is_public(s.parse().unwrap())
    }

    #[test]
    fn loopback_private_link_local_and_reserved_v4_are_refused() {
        for refused in [
            "0.0.0.0",
            "0.1.2.3",
            "127.0.0.1",
            "127.255.255.254",
            "10.0.0.1",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.8",
            "192.0.2.1",
            "192.88.99.1",
            "198.18.0.1",
            "198.19.255.255",
            "198.51.100.7",
            "203.0.113.9",
            "224.0.0.1",
            "239.255.255.250",
            "240.0.0.1",
            "255.255.255.255",
        ] {
            assert!(!public(refused), "{refused} must be refused");
        }
        for ok in [
            "1.1.1.1",
            "8.8.8.8",
            "93.184.216.34",
            "100.63.255.255",
            "100.128.0.1",
            "172.15.255.255",
            "172.32.0.1",
            "169.253.0.1",
            "192.0.1.1",
            "198.17.0.1",
            "198.20.0.1",
            "223.255.255.254",
        ] {
            assert!(public(ok), "{ok} is public");
        }
    }

    #[test]
    fn v6_special_ranges_and_v4_embeddings_are_refused() {
        for refused in [
            "::",
            "::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:10.1.2.3",
            "::127.0.0.1",
            "::10.0.0.1",
            "::8.8.8.8",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::7f00:1",
            "64:ff9b:1::1",
            "2002:7f00:0001::1",
            "2002:a9fe:a9fe::",
            "2002:c0a8:0101::1",
            "fc00::1",
            "fd12:3456:789a::1",
            "fe80::1",
            "febf::1",
            "fec0::1",
            "ff02::1",
            "ff05::1:3",
            "2001:db8::1",
            "2001::1",
            "2001:2::1",
            "2001:10::1",
            "3fff::1",
            "100::1",
            "5f00::1",
        ] {
            assert!(!public(refused), "{refused} must be refused");
        }
        for ok in [
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
            "2002:0808:0808::1",
            "2001:4860:4860::8888",
        ] {
            assert!(public(ok), "{ok} is public");
        }
    }
}

//! Who a connection's client is: its address (the peer, or what our own proxies say), and
//! the block limits count it in.

use std::net::{IpAddr, Ipv6Addr};

use axum::http::HeaderMap;

/// The client's address: `peer`, or the entry our `hops` trusted proxies wrote into
/// `X-Forwarded-For`. Entries left of those are the client's own words and are never trusted.
pub(crate) fn client_ip(peer: IpAddr, headers: &HeaderMap, hops: usize) -> IpAddr {
    if hops == 0 {
        return peer;
    }
    let forwarded: Vec<&str> = headers
        .get_all("x-forwarded-for")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .collect();
    forwarded
        .len()
        .checked_sub(hops)
        .and_then(|i| forwarded[i].parse().ok())
        .unwrap_or(peer)
}

/// The block a client address is counted in: an IPv4 address, or an IPv6 /64 (one
/// household's or one machine's whole prefix). IPv4 seen through a dual-stack socket
/// (`::ffff:a.b.c.d`) counts as the IPv4 address.
pub(crate) fn client_prefix(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_client_address_comes_from_trusted_proxies_only() {
        let peer: IpAddr = "10.0.0.9".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("x-forwarded-for", "6.6.6.6, 203.0.113.7".parse().unwrap());
        // No trusted proxy: a client's header is ignored.
        assert_eq!(client_ip(peer, &headers, 0), peer);
        // One proxy appended the real client address; what the client sent before it is a lie.
        assert_eq!(
            client_ip(peer, &headers, 1),
            "203.0.113.7".parse::<IpAddr>().unwrap()
        );
        assert_eq!(
            client_ip(peer, &headers, 2),
            "6.6.6.6".parse::<IpAddr>().unwrap()
        );
        // Fewer entries than proxies, or garbage: fall back to the peer.
        assert_eq!(client_ip(peer, &headers, 3), peer);
        headers.insert("x-forwarded-for", "not-an-ip".parse().unwrap());
        assert_eq!(client_ip(peer, &headers, 1), peer);
    }
}

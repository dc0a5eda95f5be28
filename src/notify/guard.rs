//! Where a call may go: the push-service allow-list and the addresses a push may reach.
//!
//! A Web Push endpoint is a URL the fan chose, so the server must never be made to call into
//! the operator's own network with it. The rule, checked at subscribe time and again at
//! send time:
//!
//! 1. The endpoint is an absolute URL without user info.
//! 2. Its host is on the show's allow-list (`pushServices`), whose entries are
//!    - a host name (`fcm.googleapis.com`): that host exactly;
//!    - `*.` and a name (`*.notify.windows.com`): any host below that name, not the name
//!      itself; a `*` anywhere else is no pattern;
//!    - a full origin whose host is an IP address (`http://127.0.0.1:8123`): exactly that
//!      scheme, address and port, `http` included (for tests and a push service of one's
//!      own). Only such an entry lets an endpoint name an IP address.
//!
//!    A host matched by name must be reached over `https` on port 443.
//! 3. The name is resolved once, when a connection is opened, and every address it resolves
//!    to is checked: loopback, private (RFC 1918, `fc00::/7`), link-local, unspecified,
//!    multicast, broadcast, reserved, carrier-grade NAT (`100.64.0.0/10`), and the IPv4 forms
//!    of those inside IPv6 (IPv4-mapped, IPv4-compatible, NAT64) are refused, and so is a
//!    name any of whose addresses is one (a rebinding name mixes them). The connection goes
//!    to the addresses checked (no second resolution); TLS still names the host.
//!
//! The operator's webhook (`notifyUrl`) is trusted and is not held to this rule.

use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use hyper::Uri;
use hyper_util::client::legacy::connect::dns::Name;

use super::Refusal;

/// The push services browsers use, the allow-list of a show that names none: Chrome, Edge's
/// Chromium and most others (Firebase Cloud Messaging), Firefox (Mozilla's autopush), the
/// Windows Push Notification Services older Edge used, and Safari (Apple's web push).
pub const DEFAULT_PUSH_SERVICES: &[&str] = &[
    "fcm.googleapis.com",
    "updates.push.services.mozilla.com",
    "*.notify.windows.com",
    "web.push.apple.com",
    "*.push.apple.com",
];

/// The longest allow-list entry taken.
const MAX_ENTRY: usize = 255;

/// One parsed allow-list entry.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Entry {
    /// This host name exactly (lowercase).
    Host(String),
    /// Any host ending in `.` and this name (lowercase).
    Below(String),
    /// Exactly this scheme (`http` or `https`), address and port.
    Origin { https: bool, addr: SocketAddr },
}

/// A parsed allow-list: an empty list stands for [`DEFAULT_PUSH_SERVICES`].
#[derive(Clone, Debug)]
pub(crate) struct Allowed(Vec<Entry>);

impl Allowed {
    /// The entries of `list` (or the defaults when it is empty), each checked.
    pub(crate) fn parse(list: &[String]) -> Result<Allowed, Refusal> {
        let entries: Result<Vec<Entry>, Refusal> = if list.is_empty() {
            DEFAULT_PUSH_SERVICES
                .iter()
                .map(|e| parse_entry(e))
                .collect()
        } else {
            list.iter().map(|e| parse_entry(e)).collect()
        };
        entries.map(Allowed)
    }

    /// Where `endpoint` may be sent, or why not: the allow-list half of the rule (the
    /// addresses are checked when the connection is made, by [`CheckedResolver`]).
    pub(crate) fn check(&self, endpoint: &str) -> Result<Target, Refusal> {
        let uri: Uri = endpoint.parse().map_err(|_| Refusal::EndpointNotUrl)?;
        let https = match uri.scheme_str() {
            Some("https") => true,
            Some("http") => false,
            _ => return Err(Refusal::EndpointNotUrl),
        };
        let authority = uri.authority().ok_or(Refusal::EndpointNotUrl)?;
        if authority.as_str().contains('@') {
            return Err(Refusal::EndpointNotUrl);
        }
        let host = authority.host();
        let port = authority.port_u16();
        if let Some(ip) = ip_literal(host) {
            let addr = SocketAddr::new(ip, port.unwrap_or(if https { 443 } else { 80 }));
            let listed = self.0.contains(&Entry::Origin { https, addr });
            return if listed {
                Ok(Target { uri })
            } else {
                Err(Refusal::HostNotAllowed(host.to_owned()))
            };
        }
        let name = host.to_ascii_lowercase();
        let listed = self.0.iter().any(|e| match e {
            Entry::Host(h) => *h == name,
            Entry::Below(suffix) => name
                .strip_suffix(suffix.as_str())
                .and_then(|rest| rest.strip_suffix('.'))
                .is_some_and(|label| !label.is_empty()),
            Entry::Origin { .. } => false,
        });
        if !listed {
            return Err(Refusal::HostNotAllowed(name));
        }
        if !https {
            return Err(Refusal::NotHttps);
        }
        if port.is_some_and(|p| p != 443) {
            return Err(Refusal::HostNotAllowed(authority.as_str().to_owned()));
        }
        Ok(Target { uri })
    }
}

/// An endpoint the allow-list lets through.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    pub(crate) uri: Uri,
}

/// One allow-list entry, as the module docs describe them.
fn parse_entry(entry: &str) -> Result<Entry, Refusal> {
    let bad = || Refusal::BadPushService(entry.chars().take(64).collect());
    let entry = entry.trim();
    if entry.is_empty() || entry.len() > MAX_ENTRY {
        return Err(bad());
    }
    if let Some(rest) = entry
        .strip_prefix("http://")
        .map(|r| (false, r))
        .or_else(|| entry.strip_prefix("https://").map(|r| (true, r)))
    {
        let (https, authority) = rest;
        let authority = authority.strip_suffix('/').unwrap_or(authority);
        let uri: Uri = format!("http://{authority}/").parse().map_err(|_| bad())?;
        let a = uri.authority().ok_or_else(bad)?;
        if a.as_str() != authority || authority.contains('@') {
            return Err(bad());
        }
        let ip = ip_literal(a.host()).ok_or_else(bad)?;
        let port = a.port_u16().unwrap_or(if https { 443 } else { 80 });
        return Ok(Entry::Origin {
            https,
            addr: SocketAddr::new(ip, port),
        });
    }
    let (below, name) = match entry.strip_prefix("*.") {
        Some(name) => (true, name),
        None => (false, entry),
    };
    let name = name.to_ascii_lowercase();
    if !is_dns_name(&name) || name.parse::<IpAddr>().is_ok() {
        return Err(bad());
    }
    Ok(if below {
        Entry::Below(name)
    } else {
        Entry::Host(name)
    })
}

/// A host name of letters, digits and hyphens in dot-separated labels of 1 to 63, with no
/// trailing dot.
fn is_dns_name(name: &str) -> bool {
    (1..=253).contains(&name.len())
        && name.split('.').all(|label| {
            (1..=63).contains(&label.len())
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The address a URL's host names, if it is an IP literal (`[…]` for IPv6).
fn ip_literal(host: &str) -> Option<IpAddr> {
    match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
        None => host.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
    }
}

/// Whether a push may never be sent to `ip`: an address of a network of one's own, or none
/// that a public service has.
pub(crate) fn forbidden(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                return forbidden_v4(v4);
            }
            let first = v6.segments()[0];
            v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                // fc00::/7, unique local
                || (first & 0xfe00) == 0xfc00
                // fe80::/10, link-local, and fec0::/10, the former site-local
                || (first & 0xffc0) == 0xfe80
                || (first & 0xffc0) == 0xfec0
        }
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_broadcast()
        // 0.0.0.0/8, "this network"
        || a == 0
        // 100.64.0.0/10, carrier-grade NAT
        || (a == 100 && (b & 0xc0) == 64)
        // 240.0.0.0/4, reserved
        || a >= 240
}

/// The IPv4 address an IPv6 one carries: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`, deprecated) or the NAT64 well-known prefix (`64:ff9b::a.b.c.d`).
fn embedded_v4(v6: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = v6.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = v6.segments();
    let low = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    let compatible = s[..6] == [0; 6] && !v6.is_unspecified() && !v6.is_loopback();
    let nat64 = s[..6] == [0x64, 0xff9b, 0, 0, 0, 0];
    (compatible || nat64).then_some(low)
}

/// Why a connection was not opened: the name resolved to an address a push may not reach.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves to {ip}, an address a push may not reach")]
pub(crate) struct AddressRefused {
    pub(crate) host: String,
    pub(crate) ip: IpAddr,
}

/// Checks every address a name resolves to, or refuses the name (see the module docs).
pub(crate) fn checked(host: &str, addrs: Vec<SocketAddr>) -> std::io::Result<Vec<SocketAddr>> {
    if let Some(bad) = addrs.iter().find(|a| forbidden(a.ip())) {
        return Err(std::io::Error::other(AddressRefused {
            host: host.to_owned(),
            ip: bad.ip(),
        }));
    }
    if addrs.is_empty() {
        return Err(std::io::Error::other(format!("{host} resolves to nothing")));
    }
    Ok(addrs)
}

/// The resolver of the push client's connector: resolves a name once and hands the connector
/// only addresses that passed [`checked`], so the connection goes where was checked. (The
/// connector does not ask it of an IP literal, which only an `Origin` entry lets through.)
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CheckedResolver;

impl tower::Service<Name> for CheckedResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = std::io::Result<Self::Response>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let addrs = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            Ok(checked(&host, addrs)?.into_iter())
        })
    }
}

/// Whether `error` (or any error under it) is the guard's refusal: a push that must not be
/// tried again.
pub(crate) fn refused(error: &(dyn std::error::Error + 'static)) -> Option<String> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(r) = e.downcast_ref::<AddressRefused>() {
            return Some(r.to_string());
        }
        if let Some(inner) = e
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|i| i.downcast_ref::<AddressRefused>())
        {
            return Some(inner.to_string());
        }
        next = e.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Allowed {
        Allowed::parse(&[]).unwrap()
    }

    fn list(entries: &[&str]) -> Allowed {
        Allowed::parse(&entries.iter().map(|e| e.to_string()).collect::<Vec<_>>()).unwrap()
    }

    #[test]
    fn only_https_to_a_listed_service_passes() {
        let allowed = defaults();
        for ok in [
            "https://fcm.googleapis.com/fcm/send/abc:def",
            "https://updates.push.services.mozilla.com/wpush/v2/gAAAA",
            "https://wns2-par02p.notify.windows.com/w/?token=BQYAAA",
            "https://web.push.apple.com/QGuQyavXutnMH",
            "https://FCM.googleapis.com:443/x",
        ] {
            assert!(allowed.check(ok).is_ok(), "{ok}");
        }
        let refusals = [
            ("http://fcm.googleapis.com/x", Refusal::NotHttps),
            (
                "https://evil.example/x",
                Refusal::HostNotAllowed("evil.example".into()),
            ),
            // A suffix entry matches below the name only, and on a label boundary.
            (
                "https://notify.windows.com/x",
                Refusal::HostNotAllowed("notify.windows.com".into()),
            ),
            (
                "https://evilnotify.windows.com/x",
                Refusal::HostNotAllowed("evilnotify.windows.com".into()),
            ),
            (
                "https://fcm.googleapis.com.evil.example/x",
                Refusal::HostNotAllowed("fcm.googleapis.com.evil.example".into()),
            ),
            (
                "https://fcm.googleapis.com:8443/x",
                Refusal::HostNotAllowed("fcm.googleapis.com:8443".into()),
            ),
            (
                "https://127.0.0.1/x",
                Refusal::HostNotAllowed("127.0.0.1".into()),
            ),
            ("https://[::1]/x", Refusal::HostNotAllowed("[::1]".into())),
            (
                "https://localhost/x",
                Refusal::HostNotAllowed("localhost".into()),
            ),
            ("https://user@fcm.googleapis.com/x", Refusal::EndpointNotUrl),
            ("ftp://fcm.googleapis.com/x", Refusal::EndpointNotUrl),
            ("/relative", Refusal::EndpointNotUrl),
            ("not a url", Refusal::EndpointNotUrl),
        ];
        for (endpoint, why) in refusals {
            assert_eq!(allowed.check(endpoint).unwrap_err(), why, "{endpoint}");
        }
    }

    #[test]
    fn an_origin_entry_allows_exactly_that_origin() {
        let allowed = list(&["http://127.0.0.1:8123"]);
        assert!(allowed.check("http://127.0.0.1:8123/push/1").is_ok());
        for other in [
            "http://127.0.0.1:8124/push/1",
            "https://127.0.0.1:8123/push/1",
            "http://127.0.0.2:8123/push/1",
            "http://localhost:8123/push/1",
            "https://fcm.googleapis.com/x",
        ] {
            assert!(allowed.check(other).is_err(), "{other}");
        }
        let v6 = list(&["https://[::1]:9443/"]);
        assert!(v6.check("https://[::1]:9443/p").is_ok());
        assert!(v6.check("https://[::1]/p").is_err());
    }

    #[test]
    fn bad_entries_are_named() {
        for bad in [
            "",
            "*",
            "*.",
            "fcm.*.com",
            "http://push.example:80",
            "https://user@127.0.0.1",
            "127.0.0.1",
            "a..b",
            "-a.com",
            "http://127.0.0.1:8123/path",
        ] {
            let list = vec![bad.to_owned()];
            assert!(
                matches!(Allowed::parse(&list), Err(Refusal::BadPushService(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn every_private_range_is_refused() {
        for ip in [
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "127.0.0.1",
            "127.8.9.10",
            "169.254.169.254",
            "0.0.0.0",
            "0.1.2.3",
            "224.0.0.1",
            "255.255.255.255",
            "100.64.0.1",
            "100.127.255.255",
            "240.0.0.1",
            "::",
            "::1",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "fec0::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:100.64.0.1",
            "::10.0.0.1",
            "64:ff9b::10.0.0.1",
        ] {
            assert!(forbidden(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "8.8.8.8",
            "142.250.74.42",
            "100.63.255.255",
            "100.128.0.1",
            "172.32.0.1",
            "2a00:1450:4007:80e::200a",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
        ] {
            assert!(!forbidden(ip.parse().unwrap()), "{ip}");
        }
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_and_named() {
        use tower::Service;
        let err = CheckedResolver
            .call("localhost".parse().unwrap())
            .await
            .unwrap_err();
        let why = refused(&err).expect("the guard's refusal");
        assert!(why.contains("localhost resolves to"), "{why}");
        // One good address among bad ones does not make a name good.
        let mixed = vec![
            "8.8.8.8:0".parse().unwrap(),
            "[::ffff:192.168.0.1]:0".parse().unwrap(),
        ];
        assert!(checked("rebind.example", mixed).is_err());
        let good = vec!["8.8.8.8:0".parse().unwrap()];
        assert_eq!(checked("dns.example", good.clone()).unwrap(), good);
    }
}

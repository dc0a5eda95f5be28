//! Bypass rules (docs/bypass.md): per show, the requests let through without queueing. A rule
//! is one of a token a request carries in `X-Bypass-Token` (monitors, checks), kept as its
//! SHA-256 only; an address range (a staff network); or links an operator signs, each with its
//! expiry (support staff). A request a rule matches is admitted at once, under the stock rule
//! like any admission, and the audit records the rule's kind, never who.

use std::net::IpAddr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The most rules a show may hold.
pub(crate) const MAX_BYPASS_RULES: usize = 32;
/// The shortest prefix of a network rule: a staff network, never the Internet.
const SHORTEST_V4_PREFIX: u8 = 16;
const SHORTEST_V6_PREFIX: u8 = 48;

/// One bypass rule.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum BypassRule {
    /// A request carrying `X-Bypass-Token` whose SHA-256 is `sha256` (64 hex digits: the
    /// token itself is never stored, nor sent in a URL).
    Token {
        /// SHA-256 of the token, in hex.
        sha256: String,
    },
    /// A request from an address in `cidr` (`10.1.0.0/16`, `2001:db8:1::/48`): at least a /16
    /// (IPv4) or a /48 (IPv6). The address judged is the connection's own, or, when that is
    /// a proxy on our own network (loopback or private), the client's as `TRUSTED_PROXY_HOPS`
    /// reads it from `X-Forwarded-For`.
    Network {
        /// The range.
        cidr: String,
    },
    /// A link an operator signs (`POST …/{showId}/bypass-links`), until its expiry; removing
    /// the rule voids every link signed.
    Link,
}

/// A bypass rule's kind, as the audit and the metrics name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum BypassKind {
    /// [`BypassRule::Token`].
    Token,
    /// [`BypassRule::Network`].
    Network,
    /// [`BypassRule::Link`].
    Link,
}

impl BypassKind {
    /// Its name, as the audit records it.
    pub fn as_str(self) -> &'static str {
        match self {
            BypassKind::Token => "token",
            BypassKind::Network => "network",
            BypassKind::Link => "link",
        }
    }
}

/// What a request brings that a rule may match.
#[derive(Clone, Copy, Debug)]
pub struct BypassRequest<'a> {
    /// The client's address.
    pub client: IpAddr,
    /// Its `X-Bypass-Token`, if any.
    pub token: Option<&'a str>,
    /// Whether it carries a link this server signed for the show, still running.
    pub signed_link: bool,
}

/// The kind of the first of `rules` that lets `request` through, if one does.
pub fn bypass_kind(rules: &[BypassRule], request: &BypassRequest<'_>) -> Option<BypassKind> {
    let token = request.token.map(|t| hex(&Sha256::digest(t.as_bytes())));
    rules.iter().find_map(|rule| match rule {
        BypassRule::Token { sha256 } => token
            .as_deref()
            .filter(|t| same(t.as_bytes(), sha256.to_ascii_lowercase().as_bytes()))
            .map(|_| BypassKind::Token),
        BypassRule::Network { cidr } => Network::parse(cidr)
            .ok()
            .filter(|n| n.holds(request.client))
            .map(|_| BypassKind::Network),
        BypassRule::Link => request.signed_link.then_some(BypassKind::Link),
    })
}

/// Checks a show's rules: at most [`MAX_BYPASS_RULES`], each well formed; `Err` says which
/// and why.
pub(crate) fn check_rules(rules: &[BypassRule]) -> Result<(), String> {
    if rules.len() > MAX_BYPASS_RULES {
        return Err(format!("at most {MAX_BYPASS_RULES} rules"));
    }
    for (i, rule) in rules.iter().enumerate() {
        let n = i + 1;
        match rule {
            BypassRule::Token { sha256 } => {
                if sha256.len() != 64 || !sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(format!(
                        "rule {n}: sha256 is the token's SHA-256 in 64 hex digits (printf %s \
                         \"$TOKEN\" | sha256sum), never the token"
                    ));
                }
            }
            BypassRule::Network { cidr } => {
                Network::parse(cidr).map_err(|why| format!("rule {n}: {why}"))?;
            }
            BypassRule::Link => {}
        }
    }
    Ok(())
}

/// An address range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Network {
    base: IpAddr,
    prefix: u8,
}

impl Network {
    /// `a.b.c.d/n` or `x:y::/n`, with no bits set past the prefix, at least the shortest
    /// prefix allowed.
    fn parse(text: &str) -> Result<Network, String> {
        let bad = || format!("{text:?} is not an address range such as 10.1.0.0/16");
        let (addr, prefix) = text.split_once('/').ok_or_else(bad)?;
        let base: IpAddr = addr.parse().map_err(|_| bad())?;
        if prefix.is_empty() || prefix.len() > 3 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        let (most, least) = match base {
            IpAddr::V4(_) => (32, SHORTEST_V4_PREFIX),
            IpAddr::V6(_) => (128, SHORTEST_V6_PREFIX),
        };
        if prefix > most {
            return Err(bad());
        }
        if prefix < least {
            return Err(format!(
                "{text}: a bypass network is a staff network, at least a /{least}"
            ));
        }
        if bits(base) & !mask(base, prefix) != 0 {
            return Err(format!("{text}: bits set past the prefix"));
        }
        Ok(Network { base, prefix })
    }

    /// Whether `addr` lies in the range (an IPv4 address mapped into IPv6 counts as IPv4).
    fn holds(&self, addr: IpAddr) -> bool {
        let addr = match addr {
            IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(addr, IpAddr::V4),
            v4 => v4,
        };
        if addr.is_ipv4() != self.base.is_ipv4() {
            return false;
        }
        let m = mask(self.base, self.prefix);
        bits(addr) & m == bits(self.base) & m
    }
}

/// An address's bits, in the low end of a u128.
fn bits(addr: IpAddr) -> u128 {
    match addr {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    }
}

/// The mask of `prefix` leading bits for `addr`'s family.
fn mask(addr: IpAddr, prefix: u8) -> u128 {
    let width = if addr.is_ipv4() { 32 } else { 128 };
    if prefix == 0 {
        return 0;
    }
    let ones = u128::MAX >> (128 - width);
    (ones << (width - u32::from(prefix))) & ones
}

/// Lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Equal, in time that does not tell how much of a guess was right.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request<'a>(client: &str, token: Option<&'a str>) -> BypassRequest<'a> {
        BypassRequest {
            client: client.parse().unwrap(),
            token,
            signed_link: false,
        }
    }

    #[test]
    fn each_rule_lets_through_only_what_it_names() {
        let rules = vec![
            BypassRule::Token {
                // SHA-256 of "monitor-secret".
                sha256: hex(&Sha256::digest(b"monitor-secret")).to_ascii_uppercase(),
            },
            BypassRule::Network {
                cidr: "10.1.0.0/16".into(),
            },
            BypassRule::Network {
                cidr: "2001:db8:1::/48".into(),
            },
        ];
        assert_eq!(check_rules(&rules), Ok(()));
        let kind = |client, token| bypass_kind(&rules, &request(client, token));
        assert_eq!(
            kind("192.0.2.1", Some("monitor-secret")),
            Some(BypassKind::Token)
        );
        assert_eq!(kind("192.0.2.1", Some("monitor-secreT")), None);
        assert_eq!(kind("192.0.2.1", None), None);
        assert_eq!(kind("10.1.200.3", None), Some(BypassKind::Network));
        assert_eq!(kind("::ffff:10.1.0.9", None), Some(BypassKind::Network));
        assert_eq!(kind("10.2.0.1", None), None);
        assert_eq!(kind("2001:db8:1::5", None), Some(BypassKind::Network));
        assert_eq!(kind("2001:db8:2::5", None), None);
        // A link matches only where the show allows links.
        let signed = BypassRequest {
            signed_link: true,
            ..request("192.0.2.1", None)
        };
        assert_eq!(bypass_kind(&rules, &signed), None);
        assert_eq!(
            bypass_kind(&[BypassRule::Link], &signed),
            Some(BypassKind::Link)
        );
    }

    #[test]
    fn malformed_or_too_wide_rules_are_refused() {
        let network = |cidr: &str| check_rules(&[BypassRule::Network { cidr: cidr.into() }]);
        for bad in [
            "10.0.0.0",
            "10.0.0.0/33",
            "0.0.0.0/0",
            "10.0.0.0/8",
            "8.0.0.0/8",
            "::/8",
            "2a00::/16",
            "2001:db8::/32",
            "10.0.0.1/24",
            "10.0.0.0/+16",
            "10.0.0.0/",
            "ten/16",
        ] {
            assert!(network(bad).is_err(), "{bad}");
        }
        for good in [
            "10.1.0.0/16",
            "192.168.1.7/32",
            "2001:db8:1::/48",
            "fd00:1:2::/48",
        ] {
            assert_eq!(network(good), Ok(()), "{good}");
        }
        let token = |sha256: &str| {
            check_rules(&[BypassRule::Token {
                sha256: sha256.into(),
            }])
        };
        assert!(token("monitor-secret").is_err());
        assert!(token(&"g".repeat(64)).is_err());
        assert_eq!(token(&"a".repeat(64)), Ok(()));
        assert!(check_rules(&vec![BypassRule::Link; 33]).is_err());
    }
}

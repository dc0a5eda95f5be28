//! The loopback source addresses a run connects from.
//!
//! A server counts its limits per client address: with its defaults, 5 joins a second
//! (`JOIN_RATE_LIMIT`, bursts of 10) and 20 open streams (`MAX_STREAMS_PER_CLIENT`) per IPv4
//! address. A load run from one address would be throttled after its tenth join, and so, by
//! default, a run spreads its fans over loopback addresses from 127.0.0.2 up: one address for
//! every [`FANS_PER_ADDRESS`] fans and for every [`JOINS_PER_ADDRESS`] joins a second of
//! `--join-rate`, at most one per fan and at most [`MAX_ADDRESSES`]. That stays at half the
//! server's defaults, so that fans bunched up by a busy machine still fit. Fan `i` connects
//! from address `i` modulo their number. Linux routes the whole of 127.0.0.0/8 to loopback;
//! where an address cannot be bound (macOS without aliases), or a server is reached over
//! IPv6 (one `::1` is all loopback has), the run connects from one address and says so.
//! `--source-ips` names the addresses instead, and `--no-source-spread` turns the spread off.

use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener};
use std::sync::OnceLock;

use reqwest::{Client, Url};

use super::LoadArgs;
use crate::follow;

/// The server's default joins a second per client address (`JOIN_RATE_LIMIT`).
pub const SERVER_JOINS_PER_SECOND: u32 = 5;

/// The server's default open streams per client address (`MAX_STREAMS_PER_CLIENT`).
pub const SERVER_STREAMS: u64 = 20;

/// Fans per address: half of [`SERVER_STREAMS`], each fan holding one stream.
pub const FANS_PER_ADDRESS: u64 = SERVER_STREAMS / 2;

/// Joins a second per address: under half of [`SERVER_JOINS_PER_SECOND`].
pub const JOINS_PER_ADDRESS: u32 = SERVER_JOINS_PER_SECOND / 2;

/// The most addresses a spread uses (as `--source-ips` allows): 127.0.0.2 to 127.1.0.1.
pub const MAX_ADDRESSES: u64 = 65_536;

/// Where a spread starts: 127.0.0.1 is what a run without one connects from.
const FIRST: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// How many addresses a run of `fans` fans joining at `join_rate` a second spreads over.
pub fn spread(fans: u64, join_rate: u32) -> u64 {
    let for_streams = fans.div_ceil(FANS_PER_ADDRESS);
    let for_joins = u64::from(join_rate.div_ceil(JOINS_PER_ADDRESS));
    for_streams.max(for_joins).min(fans).clamp(1, MAX_ADDRESSES)
}

/// The first `n` addresses of a spread.
fn spread_addrs(n: u64) -> Vec<IpAddr> {
    (0..n as u32)
        .map(|k| IpAddr::V4(Ipv4Addr::from(u32::from(FIRST) + k)))
        .collect()
}

/// The source addresses of the run: `--source-ips`, one (the system's choice) with
/// `--no-source-spread`, else the spread when it can be used.
pub(super) fn addresses(args: &LoadArgs) -> anyhow::Result<Vec<Option<IpAddr>>> {
    if let Some(range) = &args.source_ips {
        let addrs = range.addrs();
        let ends = [addrs.first(), addrs.last()];
        if let Some(&unusable) = ends.into_iter().flatten().find(|&&ip| !bindable(ip)) {
            anyhow::bail!(
                "--source-ips: cannot connect from {unusable} (on this system only some loopback \
                 addresses exist; add them, or leave --source-ips out)"
            );
        }
        return Ok(addrs.into_iter().map(Some).collect());
    }
    if args.no_source_spread {
        return Ok(vec![None]);
    }
    if args.urls.iter().any(over_ipv6) {
        return Ok(vec![None]);
    }
    spread_or_one(args.fans, args.join_rate)
}

/// Whether `url` is reached over IPv6 (its host bracketed, `[::1]`), which has one loopback
/// address; if so, says the run connects from it alone.
fn over_ipv6(url: &Url) -> bool {
    let v6 = url.host_str().is_some_and(|h| h.starts_with('['));
    if v6 {
        eprintln!(
            "note: {url} is reached over IPv6, which has one loopback address: connecting from \
             it alone (the server's limits per address may throttle the run)"
        );
    }
    v6
}

/// Whether fans may connect to `url` from a loopback spread: its host is `localhost` or an
/// IPv4 loopback address (Linux connects from a loopback address to loopback only).
fn on_ipv4_loopback(url: &Url) -> bool {
    url.host_str().is_some_and(|h| {
        h.eq_ignore_ascii_case("localhost")
            || h.parse::<Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
    })
}

/// The spread for `fans` joining at `join_rate` a second, or one address (the system's
/// choice) where the spread's addresses cannot be bound.
fn spread_or_one(fans: u64, join_rate: u32) -> anyhow::Result<Vec<Option<IpAddr>>> {
    let one = || Ok(vec![None]);
    let addrs = spread_addrs(spread(fans, join_rate));
    let last = *addrs.last().expect("a spread has an address");
    if !bindable(last) {
        eprintln!(
            "note: cannot connect from {last}: connecting from one address (the server's limits \
             per address may throttle the run; add loopback addresses, or use --source-ips)"
        );
        return one();
    }
    Ok(addrs.into_iter().map(Some).collect())
}

/// Whether this system lets a socket be bound to `ip`.
pub(crate) fn bindable(ip: IpAddr) -> bool {
    TcpListener::bind(SocketAddr::new(ip, 0)).is_ok()
}

/// The run's source addresses, each with its HTTP client (reqwest binds per client), made
/// when a fan first uses it: a client costs a few kB and a spread may hold 65,536 addresses,
/// most of them unused by a run stopped early.
pub(crate) struct Sources {
    addrs: Vec<Option<IpAddr>>,
    clients: Vec<OnceLock<Client>>,
}

impl Sources {
    /// The run's addresses (see [`addresses`]), the first one's client made at once: the
    /// run's own calls (opening the show, changing its rate) go through it.
    pub(super) fn of(args: &LoadArgs) -> anyhow::Result<Sources> {
        Sources::from_addrs(addresses(args)?)
    }

    /// A spread for `fans` joining at most `join_rate` a second (see [`spread`]), as a
    /// rehearsal's fans connect from, when `url`'s host is `localhost` or an IPv4 loopback
    /// address; else one address (the system's choice).
    pub(crate) fn spread(url: &Url, fans: u64, join_rate: u32) -> anyhow::Result<Sources> {
        if over_ipv6(url) || !on_ipv4_loopback(url) {
            return Sources::from_addrs(vec![None]);
        }
        Sources::from_addrs(spread_or_one(fans, join_rate)?)
    }

    fn from_addrs(addrs: Vec<Option<IpAddr>>) -> anyhow::Result<Sources> {
        let sources = Sources {
            clients: addrs.iter().map(|_| OnceLock::new()).collect(),
            addrs,
        };
        sources.client(0)?;
        Ok(sources)
    }

    /// How many addresses the run connects from.
    pub(crate) fn len(&self) -> usize {
        self.addrs.len()
    }

    /// The first address's client.
    pub(crate) fn first(&self) -> &Client {
        self.clients[0].get().expect("made by Sources::of")
    }

    /// Fan `i`'s address (address `i` modulo their number) and its client.
    pub(crate) fn client(&self, i: u64) -> reqwest::Result<(Option<IpAddr>, &Client)> {
        let k = (i % self.addrs.len() as u64) as usize;
        let (ip, slot) = (self.addrs[k], &self.clients[k]);
        if let Some(client) = slot.get() {
            return Ok((ip, client));
        }
        // Two fans may make one at once; the first kept is every later fan's.
        let client = follow::http_client(ip)?;
        Ok((ip, slot.get_or_init(|| client)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spread_keeps_each_address_at_half_the_servers_defaults() {
        // 200 fans at 500 joins a second: 250 addresses for the joins, but one per fan is
        // enough.
        assert_eq!(spread(200, 500), 200);
        // 10,000 fans at 500 joins a second: 10 fans (streams) an address.
        assert_eq!(spread(10_000, 500), 1_000);
        // 1,000 fans at 2,000 joins a second: 2 joins a second an address.
        assert_eq!(spread(1_000, 2_000), 1_000);
        assert_eq!(spread(5_000, 2_000), 1_000);
        assert_eq!(spread(1, 1), 1);
        assert_eq!(spread(1_000_000, 500), MAX_ADDRESSES);
        for (fans, rate) in [(200, 500), (10_000, 500), (5_000, 2_000), (37, 3)] {
            let n = spread(fans, rate);
            assert!(fans.div_ceil(n) <= SERVER_STREAMS / 2, "{fans} over {n}");
            assert!(
                f64::from(rate) / n as f64 <= f64::from(SERVER_JOINS_PER_SECOND) / 2.0 || n == fans
            );
        }
    }

    #[test]
    fn a_spread_starts_after_127_0_0_1_and_stays_on_loopback() {
        let addrs = spread_addrs(MAX_ADDRESSES);
        assert_eq!(addrs[0], IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)));
        assert_eq!(addrs[254], IpAddr::V4(Ipv4Addr::new(127, 0, 1, 0)));
        assert_eq!(addrs.last(), Some(&IpAddr::V4(Ipv4Addr::new(127, 1, 0, 1))));
        assert!(addrs.iter().all(IpAddr::is_loopback));
    }

    #[test]
    fn only_an_ipv4_loopback_host_is_spread_to() {
        for (url, spread) in [
            ("http://localhost:8080", true),
            ("http://LOCALHOST", true),
            ("http://127.0.0.1:8080", true),
            ("http://127.3.4.5", true),
            ("http://[::1]:8080", false),
            ("http://10.0.0.7:8080", false),
            ("https://staging.example.com", false),
        ] {
            let url: Url = url.parse().unwrap();
            assert_eq!(on_ipv4_loopback(&url), spread, "{url}");
        }
    }
}

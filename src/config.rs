//! Configuration: every setting is a flag with an environment variable of the same name.

use std::net::SocketAddr;
use std::time::Duration;

use clap::Args;

use crate::protocol::Origin;
use crate::store::PubSub;
use crate::words::parse_duration;

/// How the server runs. Bad values stop the start with clap's message.
#[derive(Clone, Debug, Args)]
pub struct Config {
    /// Address to listen on.
    #[arg(long, env = "BIND", default_value = "0.0.0.0:8080")]
    pub bind: SocketAddr,

    /// Redis to share queues with other instances (`redis://host:6379`); unset: the embedded,
    /// single-instance, non-durable store.
    #[arg(long, env = "REDIS_URL", hide_env_values = true)]
    pub redis_url: Option<String>,

    /// Redis behind Sentinel: the Sentinels, `host:port` comma-separated; the server finds
    /// the primary through them and follows it through failovers (with
    /// `REDIS_SENTINEL_MASTER`; instead of `REDIS_URL`).
    #[arg(
        long,
        env = "REDIS_SENTINELS",
        conflicts_with = "redis_url",
        requires = "redis_sentinel_master"
    )]
    pub redis_sentinels: Option<String>,

    /// The primary's name in the Sentinels' configuration (`sentinel monitor <name> …`).
    #[arg(long, env = "REDIS_SENTINEL_MASTER")]
    pub redis_sentinel_master: Option<String>,

    /// The password of the Redis data nodes behind Sentinel (`requirepass`); never printed.
    #[arg(long, env = "REDIS_PASSWORD", hide_env_values = true)]
    pub redis_password: Option<String>,

    /// The Sentinels' own password, if they ask one; never printed.
    #[arg(long, env = "REDIS_SENTINEL_PASSWORD", hide_env_values = true)]
    pub redis_sentinel_password: Option<String>,

    /// Replicas that must confirm every write (`WAIT`) before it is answered: a join, an
    /// admission tick, an order, a redemption. Not confirmed in `REDIS_WAIT_TIMEOUT`: 503 with
    /// `Retry-After`. 0 (the default): answered once the primary has it. Not on a cluster.
    #[arg(long, env = "REDIS_WAIT_REPLICAS", default_value_t = 0)]
    pub redis_wait_replicas: u32,

    /// How long the replicas may take to confirm a write.
    #[arg(long, env = "REDIS_WAIT_TIMEOUT", default_value = "500ms", value_parser = parse_ttl)]
    pub redis_wait_timeout: Duration,

    /// The least time between two calls of a busy show's joins (and of its status reads), so
    /// each call carries the joins that arrived meanwhile: Redis and the instance spend less a
    /// join, a join waits at most this much more. A show with no call out still goes at once.
    /// `0s`: a call as soon as the previous one is answered.
    #[arg(long, env = "REDIS_GATHER_WINDOW", default_value = "2ms", value_parser = parse_gather_window)]
    pub redis_gather_window: Duration,

    /// `REDIS_URL` names Redis Cluster nodes, comma-separated (any few of them will do).
    #[arg(long, env = "REDIS_CLUSTER", requires = "redis_url")]
    pub redis_cluster: bool,

    /// How a Redis Cluster carries show events: `sharded` (`SPUBLISH` per show, Redis 7 or
    /// later: an instance hears only the shows its fans wait for), `plain` (`PUBLISH`, which
    /// every node relays to every instance), or `auto` (sharded if every node has it).
    #[arg(long, env = "REDIS_PUBSUB", value_enum, default_value_t = PubSub::Auto)]
    pub redis_pubsub: PubSub,

    /// Tickets admitted per show per second, unless a show has its own rate (at most
    /// 10,000: one tick is one Redis script, and it must stay short).
    #[arg(long, env = "ADMIT_PER_SECOND", default_value_t = 20,
          value_parser = clap::value_parser!(u32).range(1..=i64::from(crate::store::MAX_RATE)))]
    pub admit_per_second: u32,

    /// How long an admission lasts (`5m`, `90s`, `500ms`).
    #[arg(long, env = "ADMISSION_TTL", default_value = "5m", value_parser = parse_ttl)]
    pub admission_ttl: Duration,

    /// Most fans admitted and not yet done buying at once, per show (admitted is not
    /// bought: a tick fills only the free places). 0: no cap, admit the rate every second.
    #[arg(long, env = "MAX_ACTIVE_BUYERS", default_value_t = 0)]
    pub max_active_buyers: u32,

    /// With a cap on active buyers: how long an admission may go untaken (no poll, no live
    /// stream, no order) before its place goes to the next fan (`60s`; `0s` turns it off).
    #[arg(long, env = "ARRIVAL_WINDOW", default_value = "60s", value_parser = parse_window)]
    pub arrival_window: Duration,

    /// Bearer token for the operator calls; generated and printed once when unset.
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// The secret access codes are kept under (docs/lanes.md): the store and the audit hold
    /// only HMAC-SHA256 of each code under it, so nobody who reads them can try codes
    /// offline. Every instance needs the same; unset, it is derived from `ADMIN_TOKEN` (so a
    /// new operator token voids the codes: set this to keep them across one).
    #[arg(long, env = "ACCESS_CODE_KEY", hide_env_values = true)]
    pub access_code_key: Option<String>,

    /// Keys that sign admission passes and join challenges: `kid:base64secret[,kid:…]`, each
    /// secret at least 32 bytes; the first signs, all verify (rotate by putting the new key
    /// first and dropping the old one after an admission TTL). Unset: a random key, good on
    /// this instance only (several instances behind one balancer need the same keys).
    /// Checked at start, so that an error never echoes a secret.
    #[arg(long, env = "PASS_KEYS", hide_env_values = true)]
    pub pass_keys: Option<String>,

    /// Most joins a second one client address may make (429 beyond it); 0 turns it off.
    #[arg(long, env = "JOIN_RATE_LIMIT", default_value_t = 5)]
    pub join_rate_limit: u32,

    /// Wrong (or missing) operator tokens one client address may send a minute on this
    /// instance; beyond them every operator call from it is 429 for the rest of the minute.
    /// 0 turns it off (an API fuzzer sending tokens it was not given, say).
    #[arg(long, env = "OPERATOR_TOKEN_GUESSES", default_value_t = OPERATOR_TOKEN_GUESSES)]
    pub operator_token_guesses: u32,

    /// Reverse proxies in front of this server that append to `X-Forwarded-For` (nginx's
    /// `$proxy_add_x_forwarded_for`): the client is that many entries from the right. 0 trusts
    /// no header and uses the peer address.
    #[arg(long, env = "TRUSTED_PROXY_HOPS", default_value_t = 0)]
    pub trusted_proxy_hops: usize,

    /// How long a client may take to send a request's head, and how long a kept-alive
    /// connection may sit idle between requests, before it is closed (`10s`, `500ms`).
    #[arg(long, env = "HEADER_TIMEOUT", default_value = "10s", value_parser = parse_header_timeout)]
    pub header_timeout: Duration,

    /// Most connections served at once. Beyond them, `RESERVE_CONNECTIONS` more serve only
    /// `/healthz`, `/readyz`, `/metrics` and the operator (anything else: 503), and beyond
    /// those a connection gets a bare 503 and is closed. With the reserve, keep it under
    /// `ulimit -n`.
    #[arg(long, env = "MAX_CONNECTIONS", default_value_t = 18_000,
          value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    pub max_connections: u32,

    /// Connections kept for health checks, metrics and the operator when `MAX_CONNECTIONS`
    /// are all taken.
    #[arg(long, env = "RESERVE_CONNECTIONS", default_value_t = 64,
          value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub reserve_connections: u32,

    /// Without `PASS_KEYS`, instances on one Redis share a pass key kept there, and make a
    /// new one this often (`24h`); a superseded key still verifies while what it signed lives.
    #[arg(long, env = "PASS_KEY_ROTATION", default_value = "24h", value_parser = parse_rotation)]
    pub pass_key_rotation: Duration,

    /// Most connections one client address may hold (IPv6: per /64), so that no single
    /// client fills the server; beyond them its connections are turned away with 503. Unset:
    /// half of `MAX_CONNECTIONS`; 0 turns it off (behind a proxy every connection comes from
    /// the proxy: `TRUSTED_PROXY_HOPS` > 0 turns it off too).
    #[arg(long, env = "MAX_CONNECTIONS_PER_CLIENT")]
    pub max_connections_per_client: Option<u32>,

    /// Most streams (SSE and WebSocket together) one client address may hold open on this
    /// instance (IPv6: per /64); 429 beyond. 0 turns it off.
    #[arg(long, env = "MAX_STREAMS_PER_CLIENT", default_value_t = 20)]
    pub max_streams_per_client: u32,

    /// Most of the crowd's requests (joins, polls, stream openings, the waiting page) at work
    /// on this instance at once, each a store call or two; past it they are answered 503 with
    /// `Retry-After` at once, before they pile up and time out. The bound in force shrinks
    /// while answers come later than half a second, and grows back to this. 0: no bound.
    #[arg(long, env = "MAX_STORE_CALLS", default_value_t = 1024)]
    pub max_store_calls: u32,

    /// Waiting fans at or ahead of this place are pushed every tick; further back, whose
    /// page counts down exactly between pushes, every `ceil(position / PUSH_FRONT)` ticks
    /// (at most 30), and at once whenever the count would be wrong. 0: every fan every tick.
    #[arg(long, env = "PUSH_FRONT", default_value_t = crate::hub::DEFAULT_PUSH_FRONT,
          value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    pub push_front: u64,

    /// The address fans' browsers use (`https://tickets.example.com`): join forms must come
    /// from it, and https makes the ticket cookie `Secure`. Unset: forms must come from the
    /// host the request names.
    #[arg(long, env = "PUBLIC_URL")]
    pub public_url: Option<Origin>,

    /// How logs are written: `text` (coloured only on a terminal) or `json` (one object a
    /// line, for a collector).
    #[arg(long, env = "LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Open a show `demo` with simulated fans already queued and a slow rate.
    #[arg(long, env = "DEMO")]
    pub demo: bool,

    /// Gateway mode: the shop's origin (`http://shop:8000`, http only). Every request that
    /// is not the waiting room's own (and `/`) goes on to it.
    #[arg(long, env = "UPSTREAM_URL")]
    pub upstream_url: Option<String>,

    /// With `UPSTREAM_URL`: path prefixes only an admitted fan of that show reaches
    /// (`/checkout=show-42,/api/buy=show-42`); anyone else is sent to queue (303).
    #[arg(long, env = "PROTECT", requires = "upstream_url")]
    pub protect: Option<String>,

    /// How long the origin may take to answer a request's head (504 beyond it).
    #[arg(long, env = "UPSTREAM_TIMEOUT", default_value = "30s", value_parser = parse_ttl)]
    pub upstream_timeout: Duration,

    /// How `PROTECT`'s prefixes compare with a request path's letters: `insensitive` (the
    /// default: `/Checkout` is guarded as `/checkout`, since Express, ASP.NET and IIS route
    /// it there) or `sensitive`.
    #[arg(long, env = "PROTECT_CASE", value_enum, default_value_t = ProtectCase::Insensitive)]
    pub protect_case: ProtectCase,

    /// The longest a client may leave what it is sent unread (a response body it stopped
    /// reading, the origin's answer in gateway mode): past it the connection is cut, and the
    /// origin's with it, so a client that stops reading pins nothing.
    #[arg(long, env = "UPSTREAM_IDLE_TIMEOUT", default_value = "30s", value_parser = parse_ttl)]
    pub upstream_idle_timeout: Duration,

    /// Threads of their own that serve the connections, each a single-threaded runtime (as
    /// nginx's workers: a connection never waits for another thread); 0 serves them on the
    /// server's runtime with everything else. At most 256.
    #[arg(long, env = "SERVE_THREADS", default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=256))]
    pub serve_threads: u16,
}

/// How logs are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines, coloured only on a terminal.
    Text,
    /// One JSON object a line, for a log collector.
    Json,
}

fn parse_rotation(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s)?;
    if d < Duration::from_secs(1) {
        return Err("must be at least 1s".into());
    }
    Ok(d)
}

fn parse_header_timeout(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s).map_err(|e| format!("{e} (try 10s or 500ms)"))?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(600) {
        return Err("must be between 100ms and 10m".into());
    }
    Ok(d)
}

fn parse_window(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s).map_err(|e| format!("{e} (try 60s or 2m)"))?;
    let shortest = crate::store::MIN_ARRIVAL_WINDOW;
    if !d.is_zero() && (d < shortest || d > Duration::from_secs(24 * 3600)) {
        return Err(format!("must be 0s (off) or between {shortest:?} and 24h"));
    }
    Ok(d)
}

fn parse_gather_window(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s).map_err(|e| format!("{e} (try 2ms, or 0s for none)"))?;
    if d > Duration::from_millis(100) {
        return Err("must be at most 100ms: every join may wait that long".into());
    }
    Ok(d)
}

fn parse_ttl(s: &str) -> Result<Duration, String> {
    let d = parse_duration(s).map_err(|e| format!("{e} (try 5m, 90s or 500ms)"))?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(24 * 3600) {
        return Err("must be between 100ms and 24h".into());
    }
    Ok(d)
}

impl Config {
    /// Defaults for tests and embedding: port 0 on loopback, embedded store.
    pub fn for_tests() -> Self {
        Config {
            bind: "127.0.0.1:0".parse().expect("literal address"),
            redis_url: None,
            redis_cluster: false,
            redis_sentinels: None,
            redis_sentinel_master: None,
            redis_password: None,
            redis_sentinel_password: None,
            redis_wait_replicas: 0,
            redis_wait_timeout: Duration::from_millis(500),
            redis_gather_window: crate::store::GATHER_WINDOW,
            redis_pubsub: PubSub::Auto,
            admit_per_second: 20,
            admission_ttl: Duration::from_secs(300),
            max_active_buyers: 0,
            arrival_window: Duration::from_secs(60),
            admin_token: Some("test-operator-token".into()),
            access_code_key: None,
            pass_keys: None,
            join_rate_limit: 0,
            operator_token_guesses: OPERATOR_TOKEN_GUESSES,
            trusted_proxy_hops: 0,
            header_timeout: Duration::from_secs(10),
            max_connections: 18_000,
            reserve_connections: 64,
            max_connections_per_client: Some(0),
            pass_key_rotation: Duration::from_secs(24 * 3600),
            // Tests open many streams from 127.0.0.1; the ones about the limit set it.
            max_streams_per_client: 0,
            max_store_calls: 1024,
            push_front: crate::hub::DEFAULT_PUSH_FRONT,
            public_url: None,
            demo: false,
            log_format: LogFormat::Text,
            upstream_url: None,
            protect: None,
            upstream_timeout: Duration::from_secs(30),
            protect_case: ProtectCase::Insensitive,
            upstream_idle_timeout: Duration::from_secs(30),
            serve_threads: 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ttl_accepts_human_durations_and_refuses_nonsense() {
        assert_eq!(parse_ttl("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_ttl("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_ttl("five minutes").is_err());
        assert!(parse_ttl("0s").is_err());
        assert!(parse_ttl("3d").is_err());
        assert!(parse_ttl("-5m").is_err());
        assert_eq!(parse_ttl("1h 30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_ttl("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_ttl(" 90s ").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_window("0s").unwrap(), Duration::ZERO);
        assert_eq!(
            parse_rotation("24h").unwrap(),
            Duration::from_secs(24 * 3600)
        );
    }

    /// The configuration these command-line arguments give (no environment set).
    fn parsed(args: &[&str]) -> Config {
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            config: Config,
        }
        let args = std::iter::once("waiting-room").chain(args.iter().copied());
        <Cli as clap::Parser>::try_parse_from(args).unwrap().config
    }

    #[test]
    fn the_defaults_parse_and_bound_slow_and_greedy_clients() {
        let config = parsed(&[]);
        assert_eq!(config.header_timeout, Duration::from_secs(10));
        assert_eq!(config.max_connections, 18_000);
        assert_eq!(config.reserve_connections, 64);
        assert_eq!(config.max_streams_per_client, 20);
        assert!(config.public_url.is_none());
        let config = parsed(&[
            "--max-connections=100000",
            "--public-url=https://tickets.example/",
        ]);
        assert_eq!(config.max_connections, 100_000);
        assert!(config.public_url.unwrap().is_https());
    }

    #[test]
    fn header_timeout_is_bounded() {
        assert_eq!(
            parse_header_timeout("10s").unwrap(),
            Duration::from_secs(10)
        );
        assert!(parse_header_timeout("10ms").is_err());
        assert!(parse_header_timeout("1h").is_err());
    }

    #[test]
    fn the_gather_window_defaults_to_the_stores_and_is_bounded() {
        assert_eq!(parsed(&[]).redis_gather_window, crate::store::GATHER_WINDOW);
        assert_eq!(
            parsed(&["--redis-gather-window=0s"]).redis_gather_window,
            Duration::ZERO
        );
        assert_eq!(parse_gather_window("0s").unwrap(), Duration::ZERO);
        assert_eq!(
            parse_gather_window("5ms").unwrap(),
            Duration::from_millis(5)
        );
        assert!(parse_gather_window("1s").is_err());
        assert!(parse_gather_window("soon").is_err());
    }
}

/// Wrong operator tokens one address block may send a minute, by default (`OPERATOR_TOKEN_GUESSES`).
pub const OPERATOR_TOKEN_GUESSES: u32 = 20;

/// How `PROTECT`'s prefixes compare with a request's path (`PROTECT_CASE`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ProtectCase {
    /// `/Checkout` is `/checkout`: Express, ASP.NET, IIS and a case-insensitive file system
    /// route it so, and a guard that told them apart would let it through unguarded.
    #[default]
    Insensitive,
    /// Letter case matters, as it does to the origin (nginx, Tomcat, Spring by default).
    Sensitive,
}

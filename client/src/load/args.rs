//! The command line of `load`: what to run, against which servers, and where the results go.

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use reqwest::Url;
use waiting_room::model::ShowId;

use super::choices::{Away, Choices};
use super::rate_change::RateChange;
use crate::follow::Transport;

/// `load`: a bounded load run against loopback servers.
#[derive(Clone, Debug, clap::Args)]
pub struct LoadArgs {
    /// A server to load (loopback only); repeat to spread fans over several, fan i going to
    /// the i-th modulo their number.
    #[arg(long = "url", value_name = "URL", required = true, value_parser = crate::server_url)]
    pub urls: Vec<Url>,

    /// The show the fans queue for.
    #[arg(long)]
    pub show: ShowId,

    /// How many fans join, in all.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub fans: u64,

    /// How fans follow their tickets.
    #[arg(long, value_enum, default_value_t = Transport::Sse)]
    pub transport: Transport,

    /// With `--transport poll`: how often each fan asks for its ticket (`1s`, the seed's
    /// client; at least 100 ms).
    #[arg(long, default_value = "1s", value_parser = parse_poll_interval)]
    pub poll_interval: Duration,

    /// Joins started per second, across all fans.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub join_rate: u32,

    /// The run stops after this long whatever is left (`30s`, `2m`; at most 1 h).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Loopback source addresses to spread connections over (`127.0.0.2-127.0.0.50`, or one
    /// address): each gives every server another ~28,000 ephemeral ports. Without it a run
    /// spreads by itself from 127.0.0.2 up: one address for every 10 fans and for every 2
    /// joins a second of --join-rate (at most one per fan, at most 65,536), half of what a
    /// server allows one address by default (JOIN_RATE_LIMIT 5 a second, MAX_STREAMS_PER_CLIENT
    /// 20), so a run against default settings is not throttled.
    #[arg(long, value_name = "FIRST-LAST")]
    pub source_ips: Option<SourceIps>,

    /// Connect from one address (the system's choice, 127.0.0.1), as one browser would:
    /// against a server's default limits most joins are then throttled.
    #[arg(long, conflicts_with = "source_ips")]
    pub no_source_spread: bool,

    /// The operator token, for `--open`, `--admit-per-second` and `--rate-change`.
    #[arg(long, env = "ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,

    /// Open the show on every --url before the first join (creating it if needed).
    #[arg(long)]
    pub open: bool,

    /// Set the show's admission rate on every --url before the first join (creating it,
    /// closed, if needed).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub admit_per_second: Option<u32>,

    /// Change the show's rate AFTER into the run: `30s:10` sets 10 a second 30 s in
    /// (`PUT …/config` on the first --url, with the operator token). Repeat for more changes.
    #[arg(long = "rate-change", value_name = "AFTER:RATE")]
    pub rate_changes: Vec<RateChange>,

    /// Announce the --rate-change at the start of the run instead of making it live
    /// (`PUT …/config {"rateChangeAt","rateChangeTo"}`): the server applies it at its time and
    /// every ETA counts with it from the start. One change at most.
    #[arg(long, requires = "rate_changes")]
    pub announce_rate_changes: bool,

    /// Where to write the once-a-second timeline.
    #[arg(long, default_value = "load.csv")]
    pub csv: PathBuf,

    /// Where to draw connections and messages over time (SVG).
    #[arg(long, default_value = "load.svg")]
    pub plot: PathBuf,

    /// Print the report as JSON (for scripts that add up several processes).
    #[arg(long)]
    pub json: bool,

    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long)]
    pub quiet: bool,

    /// Fans join and stop there, following nothing: measures the join path alone.
    #[arg(long)]
    pub join_only: bool,

    /// Each fan sends an `Idempotency-Key` of its own with every attempt of its join, as the
    /// waiting page does (a retried join then takes no second place); without it, none.
    #[arg(long)]
    pub idempotency_key: bool,

    /// Most joins awaiting an answer at once; the rest wait their turn. Each holds a
    /// connection, so this keeps a saturated server from running the process out of files.
    #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_in_flight: u32,

    /// Share of admitted fans who buy at once: `POST /orders` with header
    /// `X-Admission-Ticket` and a hold of their own (0 to 1; the rest stay, unless they
    /// abandon).
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub buy: Option<f64>,

    /// Share of admitted fans who close their stream at once and never order (0 to 1).
    /// Without --buy and --abandon every admitted fan does that (as `--abandon 1`); with
    /// either, those who neither buy nor abandon stay, following until the admission expires.
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub abandon: Option<f64>,

    /// The first-ETA error counts fans whose real wait was longer than this (`10s`; `0s`
    /// counts every admitted fan): a second's rounding is no error worth measuring on a
    /// two-second wait.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_min_wait)]
    pub eta_min_wait: Duration,

    /// Where to write one row per fan: first ETA told, real admission, error (CSV; default
    /// next to --csv, `load-eta.csv` for `load.csv`).
    #[arg(long, value_name = "PATH")]
    pub eta_csv: Option<PathBuf>,

    /// Where to draw first ETA against real wait (SVG; default next to --plot,
    /// `load-eta.svg` for `load.svg`).
    #[arg(long, value_name = "PATH")]
    pub eta_plot: Option<PathBuf>,

    /// Play a bot crowd instead (see `load::bots`): this many bot addresses, each joining
    /// again and again until --duration, posing as its address with `X-Forwarded-For` (for a
    /// server with `TRUSTED_PROXY_HOPS=1`); --fans honest fans join alongside, one address
    /// each, at --join-rate, and their time to join is measured.
    #[arg(long, value_name = "ADDRESSES", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub bots: Option<u32>,

    /// With --bots: the bots solve the show's join challenge (else they send no proof).
    #[arg(long, requires = "bots")]
    pub bots_solve: bool,

    /// With --bots: each bot sends the same `Idempotency-Key` on every join.
    #[arg(long, requires = "bots")]
    pub bots_idempotency_key: bool,

    /// With --bots: joins each bot address has in flight at once (0: the bots stay quiet,
    /// and only the honest fans join: their time to join with no crowd).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(0..=256))]
    pub bot_concurrency: u32,

    /// Share of fans who step away while waiting (0 to 1): each closes its stream (or stops
    /// polling) --away-after after its join, stays away --away-for, then follows its ticket
    /// again. The report counts who stepped away, came back, was admitted after coming back,
    /// and whose place was released (`EXPIRED`).
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub away: Option<f64>,

    /// With --away: how long after its join a fan steps away (seconds, or `30s`, `2m`).
    #[arg(long, value_name = "SECONDS", default_value = "30", requires = "away", value_parser = crate::seconds_or_duration)]
    pub away_after: Duration,

    /// With --away: how long a fan stays away (seconds, or `30s`, `2m`).
    #[arg(long, value_name = "SECONDS", default_value = "60", requires = "away", value_parser = crate::seconds_or_duration)]
    pub away_for: Duration,

    /// Set the show's `joinChallengeBits` on every --url before the run (operator token).
    #[arg(long, value_name = "BITS", value_parser = clap::value_parser!(u32).range(0..=32))]
    pub join_challenge_bits: Option<u32>,
}

impl LoadArgs {
    /// Where the per-fan ETA rows go.
    pub fn eta_csv_path(&self) -> PathBuf {
        self.eta_csv
            .clone()
            .unwrap_or_else(|| beside(&self.csv, "eta"))
    }

    /// Where the ETA plot goes.
    pub fn eta_plot_path(&self) -> PathBuf {
        self.eta_plot
            .clone()
            .unwrap_or_else(|| beside(&self.plot, "eta"))
    }

    /// Where the plot of the ETAs told after the rate change goes (with `--rate-change`):
    /// next to the ETA plot, `load-eta-after-change.svg` for `load-eta.svg`.
    pub fn eta_after_change_plot_path(&self) -> PathBuf {
        beside(&self.eta_plot_path(), "after-change")
    }

    /// What admitted fans do.
    pub(super) fn choices(&self) -> anyhow::Result<Choices> {
        Choices::new(self.buy, self.abandon, self.fans).map_err(anyhow::Error::msg)
    }

    /// Who steps away while waiting, when, and for how long (`--away`).
    pub(super) fn away(&self) -> Option<Away> {
        let share = self.away.filter(|share| *share > 0.0)?;
        Some(Away::new(share, self.fans, self.away_after, self.away_for))
    }
}

/// `dir/name.ext` → `dir/name-suffix.ext`.
fn beside(path: &Path, suffix: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "load".into());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{suffix}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{suffix}"),
    };
    path.with_file_name(name)
}

/// A run's bound: more than nothing, at most an hour (`30s`, `2m`).
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    parse_up_to(s, Duration::from_secs(3600), "1h")
}

/// A span of a sale (`simulate`, `rehearse`): more than nothing, at most a day (`30s`, `5m`).
pub(crate) fn parse_span(s: &str) -> Result<Duration, String> {
    parse_up_to(s, Duration::from_secs(86_400), "a day")
}

/// More than nothing and at most `most` (`most_words` in words).
fn parse_up_to(s: &str, most: Duration, most_words: &str) -> Result<Duration, String> {
    let d = waiting_room::words::parse_duration(s).map_err(|e| format!("{e} (try 30s or 2m)"))?;
    if d.is_zero() || d > most {
        return Err(format!("must be more than 0 and at most {most_words}"));
    }
    Ok(d)
}

/// How often a polling fan asks: from 100 ms to 60 s.
pub(crate) fn parse_poll_interval(s: &str) -> Result<Duration, String> {
    let d = waiting_room::words::parse_duration(s).map_err(|e| format!("{e} (try 1s or 500ms)"))?;
    if d < Duration::from_millis(100) || d > Duration::from_secs(60) {
        return Err("must be from 100ms to 60s".into());
    }
    Ok(d)
}

fn parse_min_wait(s: &str) -> Result<Duration, String> {
    let d = waiting_room::words::parse_duration(s).map_err(|e| format!("{e} (try 10s or 0s)"))?;
    if d > Duration::from_secs(3600) {
        return Err("must be at most 1h".into());
    }
    Ok(d)
}

/// A share of the fans: 0 to 1.
pub(crate) fn parse_fraction(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("'{s}' is not a fraction from 0 to 1 (try 0.25)")),
    }
}

/// A range of IPv4 loopback source addresses, `127.0.0.2-127.0.0.50` or a single one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceIps {
    first: Ipv4Addr,
    last: Ipv4Addr,
}

impl SourceIps {
    /// Every address in the range, in order.
    pub fn addrs(&self) -> Vec<IpAddr> {
        (u32::from(self.first)..=u32::from(self.last))
            .map(|a| IpAddr::V4(Ipv4Addr::from(a)))
            .collect()
    }
}

impl FromStr for SourceIps {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let (first, last) = s.split_once('-').unwrap_or((s, s));
        let parse = |a: &str| {
            a.trim()
                .parse::<Ipv4Addr>()
                .map_err(|_| format!("'{a}' is not an IPv4 address"))
        };
        let (first, last) = (parse(first)?, parse(last)?);
        if !first.is_loopback() || !last.is_loopback() {
            return Err("source addresses must be in 127.0.0.0/8".into());
        }
        if first > last {
            return Err(format!("{first} comes after {last}"));
        }
        if u32::from(last) - u32::from(first) >= 65_536 {
            return Err("at most 65,536 addresses".into());
        }
        Ok(SourceIps { first, last })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ip_ranges_parse_and_stay_on_loopback() {
        let r: SourceIps = "127.0.0.2-127.0.0.5".parse().unwrap();
        assert_eq!(r.addrs().len(), 4);
        assert_eq!(r.addrs()[0], "127.0.0.2".parse::<IpAddr>().unwrap());
        assert_eq!("127.0.0.9".parse::<SourceIps>().unwrap().addrs().len(), 1);
        assert_eq!(
            "127.0.0.255-127.0.1.1"
                .parse::<SourceIps>()
                .unwrap()
                .addrs()
                .len(),
            3
        );
        for bad in [
            "10.0.0.1-10.0.0.2",
            "127.0.0.5-127.0.0.2",
            "127.0.0.1-",
            "x",
            "127.0.0.1-192.168.0.1",
        ] {
            assert!(bad.parse::<SourceIps>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn durations_are_bounded() {
        assert!(parse_duration("30s").is_ok());
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("2h").is_err());
        assert_eq!(parse_span("5m"), Ok(Duration::from_secs(300)));
        assert!(parse_span("2h").is_ok());
        assert!(parse_span("0s").is_err());
        assert!(parse_span("2d").is_err());
        assert_eq!(parse_min_wait("0s"), Ok(Duration::ZERO));
        assert!(parse_min_wait("2h").is_err());
    }

    #[test]
    fn poll_intervals_are_bounded() {
        assert_eq!(parse_poll_interval("1s"), Ok(Duration::from_secs(1)));
        assert!(parse_poll_interval("500ms").is_ok());
        for bad in ["10ms", "0s", "2m", "often"] {
            assert!(parse_poll_interval(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn fractions_are_between_zero_and_one() {
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        assert!(parse_fraction("NaN").is_err());
        for bad in ["-0.1", "1.5", "half", "NaN"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn eta_outputs_go_next_to_the_timeline() {
        assert_eq!(
            beside(Path::new("out/load-1.csv"), "eta"),
            PathBuf::from("out/load-1-eta.csv")
        );
        assert_eq!(beside(Path::new("plot"), "eta"), PathBuf::from("plot-eta"));
    }
}

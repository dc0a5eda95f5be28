//! The command line of `swarm`: how many fans, how they follow, how they come and go, and
//! where the figures go.

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use reqwest::Url;
use waiting_room::model::ShowId;

use crate::follow::Transport;
use crate::load::{SourceIps, parse_duration, parse_fraction, parse_poll_interval};

/// The most fans one process holds: each holds a connection, and a process may open at most
/// 20,000 files. More fans take more processes (the scripts start several).
pub const MAX_FANS: u64 = 19_000;

/// `swarm`: many lean fans held against loopback servers, coming and going.
#[derive(Clone, Debug, clap::Args)]
pub struct SwarmArgs {
    /// A server to load (loopback only); repeat to spread fans over several, fan i going to
    /// the i-th modulo their number.
    #[arg(long = "url", value_name = "URL", required = true, value_parser = crate::server_url)]
    pub urls: Vec<Url>,

    /// The show the fans queue for (an operator made it before the run).
    #[arg(long)]
    pub show: ShowId,

    /// How many fans this process holds, at most 19,000 (one connection each, under the
    /// 20,000 open files a process may have): start several processes for more.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=MAX_FANS))]
    pub fans: u64,

    /// How the fans follow their tickets, as shares that add up to 1: `sse=0.6,ws=0.3,poll=0.1`.
    #[arg(long, default_value = "sse=1")]
    pub mix: Mix,

    /// With polling fans: how often each asks for its ticket (at least 100 ms).
    #[arg(long, default_value = "1s", value_parser = parse_poll_interval)]
    pub poll_interval: Duration,

    /// Joins started per second, across the process (returns come on top).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub join_rate: u32,

    /// Most joins awaiting an answer at once; the rest wait their turn.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=19_000))]
    pub max_pending: u32,

    /// The run stops after this long, whatever is left (`90s`, `10m`; at most 1 h).
    #[arg(long, default_value = "10m", value_parser = parse_duration)]
    pub duration: Duration,

    /// Loopback source addresses to spread connections over (`127.0.0.2-127.0.0.50`, or
    /// one), fan i connecting from the i-th modulo their number. Without it every fan
    /// connects from the system's choice (127.0.0.1): run the server without per-client
    /// limits (`MAX_STREAMS_PER_CLIENT=0`, `JOIN_RATE_LIMIT=0`, `MAX_CONNECTIONS_PER_CLIENT=0`).
    #[arg(long, value_name = "FIRST-LAST")]
    pub source_ips: Option<SourceIps>,

    /// Once the show opens: the share of this process's waiting fans who leave each minute
    /// (`DELETE` their ticket, then close), 0 to 1.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0, value_parser = parse_fraction)]
    pub leave_per_minute: f64,

    /// The share of the fans who left who join again each minute (a new place at the back,
    /// followed as before), 0 to 1. With 0, a fan who left is gone.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0, value_parser = parse_fraction)]
    pub return_per_minute: f64,

    /// Once the show opens: the share of stream fans (SSE, WebSocket) who drop their
    /// connection each minute and reconnect (SSE with `Last-Event-ID`), 0 to 1.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0, value_parser = parse_fraction)]
    pub reconnect_per_minute: f64,

    /// Seeds who leaves, returns and reconnects, and when: the same seed, the same choices.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,

    /// Print the report as JSON on stdout (for scripts that add up several processes).
    #[arg(long)]
    pub json: bool,

    /// Where to write the once-a-second timeline (CSV: t, held, pushes, joins, leaves,
    /// returns, reconnects, knowing p99).
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,

    /// No progress bar (it is also hidden when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
}

/// How the fans follow: each transport's share, in the order SSE, WebSocket, polling.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mix {
    shares: [f64; 3],
}

/// The transports in the order [`Mix`] keeps their shares, with their names in `--mix`.
const TRANSPORTS: [(Transport, &str); 3] = [
    (Transport::Sse, "sse"),
    (Transport::Ws, "ws"),
    (Transport::Poll, "poll"),
];

impl Mix {
    /// Fan `i`'s transport: the shares are spread evenly over the fans (by the golden ratio),
    /// so any stretch of fans has about the mix, and the same fan always follows the same way.
    pub fn of(&self, i: u64) -> Transport {
        let u = (i as f64 * 0.618_033_988_749_894_9).fract();
        let mut below = 0.0;
        for (k, (transport, _)) in TRANSPORTS.iter().enumerate() {
            below += self.shares[k];
            if u < below {
                return *transport;
            }
        }
        // Rounding: the last transport with a share.
        TRANSPORTS
            .iter()
            .zip(self.shares)
            .rev()
            .find(|(_, share)| *share > 0.0)
            .map_or(Transport::Sse, |((t, _), _)| *t)
    }

    /// The share of `transport`.
    pub fn share(&self, transport: Transport) -> f64 {
        TRANSPORTS
            .iter()
            .zip(self.shares)
            .find(|((t, _), _)| *t == transport)
            .map_or(0.0, |(_, share)| share)
    }
}

impl FromStr for Mix {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let mut shares = [None; 3];
        for part in s.split(',') {
            let (name, share) = part.split_once('=').ok_or_else(|| {
                format!("'{part}' is not NAME=SHARE (try sse=0.6,ws=0.3,poll=0.1)")
            })?;
            let k = TRANSPORTS
                .iter()
                .position(|(_, n)| *n == name.trim())
                .ok_or_else(|| format!("'{}' is none of sse, ws, poll", name.trim()))?;
            let share = parse_fraction(share)?;
            if shares[k].replace(share).is_some() {
                return Err(format!("{} is named twice", name.trim()));
            }
        }
        let shares = shares.map(|s| s.unwrap_or(0.0));
        let sum: f64 = shares.iter().sum();
        if (sum - 1.0).abs() > 1e-3 {
            return Err(format!("the shares add up to {sum}, not 1"));
        }
        Ok(Mix { shares })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mix_names_each_transport_once_and_adds_up_to_one() {
        let mix: Mix = "sse=0.6,ws=0.3,poll=0.1".parse().unwrap();
        assert_eq!(mix.share(Transport::Ws), 0.3);
        let n = 10_000;
        let ws = (0..n).filter(|&i| mix.of(i) == Transport::Ws).count();
        let poll = (0..n).filter(|&i| mix.of(i) == Transport::Poll).count();
        assert!((2_950..=3_050).contains(&ws), "{ws}");
        assert!((950..=1_050).contains(&poll), "{poll}");
        let only: Mix = "ws=1".parse().unwrap();
        assert!((0..100).all(|i| only.of(i) == Transport::Ws));
        for bad in [
            "sse=0.5",
            "sse=1,sse=0",
            "tcp=1",
            "sse",
            "sse=-1,ws=2",
            "sse=half",
            "",
        ] {
            assert!(bad.parse::<Mix>().is_err(), "{bad} should be refused");
        }
    }

    #[test]
    fn durations_and_shares_are_bounded() {
        assert!(parse_duration("10m").is_ok());
        assert!(parse_duration("2h").is_err());
        assert!(parse_poll_interval("10ms").is_err());
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert!(parse_fraction("1.5").is_err());
    }
}

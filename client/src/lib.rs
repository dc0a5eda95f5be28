//! The waiting room's command-line clients, a package of their own so that the server links
//! none of their crates. They share the server's wire contract ([`waiting_room::protocol`]),
//! its ticket JSON ([`waiting_room::model`]) and its words ([`waiting_room::words`]), and
//! nothing of its settings or environment.
//!
//! - [`fan`]: `waiting-room-client fan`, one fan who joins (or follows a ticket), prints every
//!   update for a person to read, reconnects across `--url`s and exits 0 once admitted.
//! - [`load`]: `waiting-room-client load`, many fans at a set join rate, with the figures
//!   BENCHMARKS.md quotes, a CSV and a plot.
//! - [`swarm`]: `waiting-room-client swarm`, hundreds of thousands of lean fans over several
//!   processes (under 2 KiB each): a mix of transports, fans leaving, returning and
//!   reconnecting, with the process's own memory and CPU a fan.
//! - [`shows`]: `waiting-room-client apply` and `export`, a server's shows and their settings
//!   as a file an operator keeps, applied idempotently.
//! - [`simulate`]: `waiting-room-client simulate`, an on-sale played out with no server: the
//!   server's own rules (the embedded store's scripts) on a paused clock, and the server's
//!   report of it.
//! - [`rehearse`]: `waiting-room-client rehearse`, the same curve played against a real
//!   server's staging show, its report printed beside the simulation's prediction.
//! - [`verify`]: `waiting-room-client verify`, which checks a show's draw and audit from what
//!   it published, and exits 0 when all holds.
//! - [`follow`]: the two transports (SSE and WebSocket), and polling, as one stream of
//!   [`follow::Push`]es, and joining; shared by both clients.
//! - [`backoff`]: the delays between attempts (exponential, capped, with jitter).
//! - [`staleness_plot`]: `waiting-room-client staleness-plot`, several load runs' staleness
//!   on one plot (push beside polling).
//! - [`knowledge_plot`]: `waiting-room-client knowledge-plot`, tick → knowledge over time, one
//!   line per instance.

pub mod backoff;
pub mod fan;
pub mod follow;
pub mod knowledge_plot;
pub mod load;
mod plot;
pub mod rehearse;
pub mod shows;
pub mod simulate;
pub mod staleness_plot;
pub mod swarm;
mod text;
pub mod verify;

/// A waiting-room server's address as `--url` takes it: `http://` is assumed when no scheme
/// is given (`localhost:8080`); anything but http or https with a host is refused at once.
pub fn server_url(s: &str) -> Result<reqwest::Url, String> {
    let s = s.trim();
    let with_scheme = if s.contains("://") {
        s.to_owned()
    } else {
        format!("http://{s}")
    };
    let url = reqwest::Url::parse(&with_scheme).map_err(|e| format!("{s}: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "{s}: give an http:// or https:// address with a host"
        ));
    }
    Ok(url)
}

/// A length of time as `--away-after` and `--away-for` take it: a number of seconds (`90`) or
/// a duration (`90s`, `2m`).
pub fn seconds_or_duration(s: &str) -> Result<std::time::Duration, String> {
    match s.trim().parse::<u64>() {
        Ok(seconds) => Ok(std::time::Duration::from_secs(seconds)),
        Err(_) => {
            waiting_room::words::parse_duration(s).map_err(|e| format!("{e} (try 90, 90s or 2m)"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{seconds_or_duration, server_url};
    use std::time::Duration;

    #[test]
    fn a_length_of_time_is_seconds_or_a_duration() {
        assert_eq!(seconds_or_duration("4"), Ok(Duration::from_secs(4)));
        assert_eq!(seconds_or_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(seconds_or_duration("500ms"), Ok(Duration::from_millis(500)));
        assert!(seconds_or_duration("soon").is_err());
        assert!(seconds_or_duration("-3s").is_err());
    }

    #[test]
    fn a_server_url_without_a_scheme_is_http_and_nonsense_is_refused() {
        assert_eq!(
            server_url("localhost:8080").unwrap().as_str(),
            "http://localhost:8080/"
        );
        assert_eq!(
            server_url("https://tickets.example").unwrap().as_str(),
            "https://tickets.example/"
        );
        for bad in ["ftp://x", "http://", "", "http://[::1"] {
            assert!(server_url(bad).is_err(), "{bad}");
        }
    }
}

//! What a run checks and prepares before its first join: loopback servers only, outputs it can
//! write, the operator token where needed, and a show that exists on every server.

use std::net::IpAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use reqwest::{Client, StatusCode, Url};
use uuid::Uuid;
use waiting_room::model::{TicketStatus, TicketView};
use waiting_room::protocol::{ErrorBody, routes};
use waiting_room::words::thousands;

use super::choices::Choices;
use super::{LoadArgs, outputs};
use crate::follow;

/// Everything that can be checked without a server: loopback URLs, the buyers' and
/// abandoners' shares (what admitted fans do), the rate changes, the outputs.
pub(super) fn check(args: &LoadArgs) -> anyhow::Result<Choices> {
    for url in &args.urls {
        check_loopback(url)?;
    }
    let choices = args.choices()?;
    check_rate_changes(args)?;
    outputs::check_writable(args)?;
    Ok(choices)
}

/// Loopback only: a load generator pointed at the wrong host is a denial of service.
pub(super) fn check_loopback(url: &Url) -> anyhow::Result<()> {
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host == "localhost" || bare.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if url.scheme() != "http" || !loopback {
        bail!(
            "{url}: the load generator only targets http:// servers on loopback (127.0.0.0/8, ::1, localhost)"
        );
    }
    Ok(())
}

/// `--rate-change` needs the token, and a change after the run would never happen: both are
/// said before anything is sent.
pub(super) fn check_rate_changes(args: &LoadArgs) -> anyhow::Result<()> {
    if args.rate_changes.is_empty() {
        return Ok(());
    }
    if args.admin_token.is_none() {
        bail!("--rate-change needs the operator token (--admin-token or ADMIN_TOKEN)");
    }
    if args.announce_rate_changes && args.rate_changes.len() > 1 {
        bail!("--announce-rate-changes announces one --rate-change (a show holds one at a time)");
    }
    if let Some(late) = args.rate_changes.iter().find(|c| c.after >= args.duration) {
        bail!(
            "--rate-change at {} comes after the run's --duration of {}",
            waiting_room::words::duration_text(late.after),
            waiting_room::words::duration_text(args.duration)
        );
    }
    Ok(())
}

/// `--open` and `--admit-per-second`, on every server (idempotent when they share Redis).
pub(super) async fn prepare_show(args: &LoadArgs, client: &Client) -> anyhow::Result<()> {
    if !args.open && args.admit_per_second.is_none() {
        return Ok(());
    }
    let Some(token) = &args.admin_token else {
        bail!(
            "--open and --admit-per-second need the operator token (--admin-token or ADMIN_TOKEN)"
        );
    };
    for base in &args.urls {
        let room = |route: &str| follow::show_url(base, route, &args.show);
        if let Some(rate) = args.admit_per_second {
            let response = client
                .put(room(routes::CONFIG))
                .bearer_auth(token)
                .json(&serde_json::json!({ "admitPerSecond": rate }))
                .send()
                .await
                .with_context(|| format!("cannot reach {base}"))?;
            if !response.status().is_success() {
                bail!("{base}: setting the rate answered {}", response.status());
            }
        }
        if args.open {
            let response = client
                .post(room(routes::OPEN))
                .bearer_auth(token)
                .send()
                .await
                .with_context(|| format!("cannot reach {base}"))?;
            if !response.status().is_success() {
                bail!("{base}: opening the show answered {}", response.status());
            }
        }
    }
    Ok(())
}

/// How many times the show's check is asked again while a server says it is busy.
const BUSY_TRIES: u32 = 10;

/// How long a busy server (429, or 503 with `Retry-After`) asks to wait, capped as a fan caps it.
fn busy_for(response: &reqwest::Response) -> Option<Duration> {
    let status = response.status();
    (status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS)
        .then(|| follow::retry_after(response.headers()))
        .flatten()
}

/// Every server must know the show before the first join: joins for a show nobody created
/// would all be refused (404), and the run would measure nothing. Asks for a ticket nobody
/// holds, which needs no token and writes nothing: a show that exists answers `UNKNOWN`.
pub(super) async fn check_show(args: &LoadArgs, client: &Client) -> anyhow::Result<()> {
    let show = &args.show;
    for base in &args.urls {
        let shown = base.as_str().trim_end_matches('/');
        let mut tries = 0;
        let response = loop {
            let response = client
                .get(follow::ticket_url(base, routes::TICKET, show, Uuid::nil()))
                .timeout(follow::CONNECT_TIMEOUT)
                .send()
                .await
                .with_context(|| format!("cannot reach {shown}"))?;
            // An overloaded server says when to come back: the run waits, as its fans do,
            // rather than stopping before it starts.
            match busy_for(&response) {
                Some(wait) if tries < BUSY_TRIES => {
                    tries += 1;
                    tracing::warn!(server = shown, ?wait, "the server is busy; asking again");
                    tokio::time::sleep(wait).await;
                }
                _ => break response,
            }
        };
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        let unknown = serde_json::from_slice::<TicketView>(&body)
            .is_ok_and(|ticket| ticket.status == TicketStatus::Unknown);
        if unknown || status == StatusCode::OK {
            continue;
        }
        if status == StatusCode::NOT_FOUND {
            let create = routes::show(routes::SHOW, show.as_str());
            bail!(
                "{shown}: show {show} does not exist. An operator creates it (PUT {create}), \
                 or run with --open or --admit-per-second and the operator token"
            );
        }
        let message = serde_json::from_slice::<ErrorBody>(&body)
            .map(|e| e.message)
            .unwrap_or_default();
        bail!("{shown}: asking about show {show} answered {status}: {message}");
    }
    Ok(())
}

/// Each open stream costs this process one file descriptor; say so before it runs out.
pub(super) fn warn_about_open_files(fans: u64) {
    let Some(limit) = open_file_limit() else {
        return;
    };
    if fans + 100 > limit {
        eprintln!(
            "note: this process may open at most {} files; {} fans held at once will not fit. \
             Split the run over several processes (and --source-ips).",
            thousands(limit),
            thousands(fans)
        );
    }
}

/// The soft open-file limit, from `/proc/self/limits` (Linux); `None` elsewhere.
fn open_file_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_servers_are_loaded() {
        for ok in [
            "http://127.0.0.1:8080",
            "http://127.9.8.7",
            "http://localhost:1",
            "http://[::1]:8080",
        ] {
            assert!(check_loopback(&ok.parse().unwrap()).is_ok(), "{ok}");
        }
        for bad in [
            "http://10.0.0.1:8080",
            "http://example.com",
            "https://127.0.0.1",
        ] {
            assert!(check_loopback(&bad.parse().unwrap()).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_open_file_limit_is_read() {
        if cfg!(target_os = "linux") {
            assert!(open_file_limit().is_some_and(|n| n > 0));
        }
    }
}

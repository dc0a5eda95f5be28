//! `waiting-room-client verify`: checks an on-sale from what it published, as any fan may.
//!
//! It reads `GET …/draw` and every page of `GET …/audit`, recomputes the draw from the
//! revealed seed (checking it against the commitment published before anyone joined), then
//! walks the audit: every tick at most its rate, at most one a second, admissions in queue
//! order (drawn order for the pre-queue, arrival order after), nobody twice; with presence, a
//! fan passed over while away let in only once back, and a released place never. With
//! `--arrival N` it tells where that arrival was drawn and when it was let in.

use std::time::Duration;

use clap::Args;
use reqwest::StatusCode;
use waiting_room::draw::{self, Verified};
use waiting_room::model::{AuditPage, AuditRecord, DrawView};
use waiting_room::protocol::routes;
use waiting_room::words::thousands;

/// `verify`'s flags.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The waiting room's base URL.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    pub url: String,
    /// The show to check.
    #[arg(long)]
    pub show: String,
    /// Also tell where this arrival number (your ticket's `arrival`) was drawn and admitted.
    #[arg(long)]
    pub arrival: Option<u64>,
}

/// How `verify` ended, as its exit code says.
pub enum Outcome {
    /// Everything held (exit 0).
    Fair,
    /// Something did not (exit 1): the first violation, named.
    Violated,
    /// The waiting room could not be read (exit 2).
    Unreadable,
}

impl Outcome {
    /// The process's exit code: 0 verified, 1 refuted, 2 unreadable.
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Fair => 0,
            Outcome::Violated => 1,
            Outcome::Unreadable => 2,
        }
    }
}

/// Runs `verify`, printing what held or the first violation.
pub async fn main(args: VerifyArgs) -> Outcome {
    let fetched = fetch(&args).await;
    let (draw, records) = match fetched {
        Ok(f) => f,
        Err(e) => {
            eprintln!("cannot read {}: {e:#}", args.url);
            return Outcome::Unreadable;
        }
    };
    match draw::verify(draw.as_ref(), &records, args.arrival) {
        Ok(verified) => {
            print!("{}", report(&args.show, draw.as_ref(), &verified));
            Outcome::Fair
        }
        Err(violation) => {
            println!("NOT FAIR: {violation}");
            Outcome::Violated
        }
    }
}

/// The draw (`None` for a show never scheduled) and the whole audit.
async fn fetch(args: &VerifyArgs) -> anyhow::Result<(Option<DrawView>, Vec<AuditRecord>)> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    let base = args.url.trim_end_matches('/');
    let draw_url = format!("{base}{}", routes::show(routes::DRAW, &args.show));
    let response = client.get(&draw_url).send().await?;
    let draw = match response.status() {
        StatusCode::OK => Some(response.json::<DrawView>().await?),
        StatusCode::NOT_FOUND if response.text().await?.contains("has no draw") => None,
        status => anyhow::bail!("{draw_url}: {status}"),
    };
    let audit_url = format!("{base}{}", routes::show(routes::AUDIT, &args.show));
    let mut records = Vec::new();
    let mut after: Option<String> = None;
    loop {
        // Record ids are digits and a dash: nothing to escape.
        let url = match &after {
            Some(after) => format!("{audit_url}?limit=1000&after={after}"),
            None => format!("{audit_url}?limit=1000"),
        };
        let response = client.get(&url).send().await?;
        if !response.status().is_success() {
            anyhow::bail!("{audit_url}: {}", response.status());
        }
        let page: AuditPage = response.json().await?;
        records.extend(page.records);
        // A server can say anything: an audit is at most AUDIT_MAX_RECORDS long (plus a page
        // while it grows), and every page must move on.
        if records.len() > MAX_RECORDS {
            anyhow::bail!("{audit_url}: more than {MAX_RECORDS} audit records");
        }
        match page.next {
            Some(next) if after.as_deref() == Some(next.as_str()) => {
                anyhow::bail!("{audit_url}: the page after {next} is {next} again")
            }
            Some(next) => after = Some(next),
            None => break,
        }
    }
    Ok((draw, records))
}

/// The most audit records `verify` reads: what a show keeps, and a page more.
const MAX_RECORDS: usize = waiting_room::store::AUDIT_MAX_RECORDS as usize + 1000;
/// What held, for a person to read.
fn report(show: &str, draw: Option<&DrawView>, v: &Verified) -> String {
    let mut out = format!("FAIR: {show}\n");
    match (draw, v.participants) {
        (Some(d), Some(n)) => {
            out += &format!(
                "  draw: the seed matches the commitment {}…; {} arrivals in the pre-queue, \
                 order recomputed ({})\n",
                &d.commitment[..16],
                thousands(n),
                d.algorithm
            );
            if let Some(beacon) = &d.beacon {
                out += &format!("  beacon: {beacon}\n");
            }
        }
        _ => out += "  no draw: first come, first served throughout\n",
    }
    out += &format!(
        "  audit: {} ticks, {} admitted, each tick within its rate, in queue order, nobody \
         twice\n",
        thousands(v.ticks as u64),
        thousands(v.admitted)
    );
    if v.passed > 0 || v.expired > 0 {
        out += &format!(
            "  presence: {} passed over while away, {} of them let in once back, {} places \
             released after the hold\n",
            thousands(v.passed),
            thousands(v.returned),
            thousands(v.expired)
        );
    }
    if v.bypassed > 0 {
        out += &format!(
            "  bypass: {} let through without queueing by the show's bypass rules, each \
             admitted once\n",
            thousands(v.bypassed)
        );
    }
    if v.coded > 0 {
        out += &format!(
            "  lanes: {} joined a lane with an access code; every lane first in, first out, \
             and given its share of every tick\n",
            thousands(v.coded)
        );
    }
    if let Some(a) = &v.arrival {
        match a.drawn_place {
            Some(p) => out += &format!("  arrival {}: drawn to place {}\n", a.arrival, p),
            None => {
                out += &format!(
                    "  arrival {}: after the pre-queue, place {}\n",
                    a.arrival, a.place
                )
            }
        }
        if let Some((id, at_ms)) = &a.passed {
            out += &format!(
                "  arrival {}: passed over while away by tick {id} (at {at_ms} ms)\n",
                a.arrival
            );
        }
        if let Some((id, at_ms)) = &a.expired {
            out += &format!(
                "  arrival {}: place released after the hold by tick {id} (at {at_ms} ms)\n",
                a.arrival
            );
        }
        match &a.admitted {
            Some((id, at_ms)) => {
                out += &format!(
                    "  arrival {}: admitted by tick {id} (at {at_ms} ms)\n",
                    a.arrival
                )
            }
            None => out += &format!("  arrival {}: not admitted (yet)\n", a.arrival),
        }
    }
    out
}

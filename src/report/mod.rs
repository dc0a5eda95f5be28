//! An on-sale's report (docs/report.md), built from what the store already keeps: the audit
//! (every tick's admissions, every order, bypass and phase) and one sample a tick (arrivals,
//! the queue, the buyers behind the gate, fans away, the pace every ETA came from). The server
//! answers it at `GET …/{showId}/report` as HTML (plots drawn as SVG on the server, and a
//! table: readable without JavaScript), JSON or CSV; `waiting-room-client simulate` builds the
//! same from a simulated sale, so a prediction reads like what a server did.

mod build;
mod render;

pub use build::{Parts, build};
pub use render::{Links, PLOTS, csv, html};

use crate::model::{AuditRecord, PushLatency, RecordId, Report, ShowId};
use crate::store::{AUDIT_MAX_RECORDS, QueueStore, Result, SAMPLES_MAX, Sample, StoreError};

/// The report page's stylesheet (`static/report.css`), for a report written to files.
pub const CSS: &str = include_str!("../../static/report.css");

/// Records or samples read from the store a call.
const PAGE: usize = 5_000;

/// The report of `show` as its store holds it now, with the answering instance's
/// `push_latency`.
pub async fn gather(
    store: &dyn QueueStore,
    show: &ShowId,
    push_latency: PushLatency,
    now_ms: u64,
) -> Result<Report> {
    let stats = store.stats(show).await?;
    let draw = store.draw(show).await?.map(|d| d.view(show.as_str()));
    let mut records: Vec<AuditRecord> = Vec::new();
    let mut after: Option<RecordId> = None;
    loop {
        let page = store.audit(show, after, PAGE).await?;
        let done = page.len() < PAGE;
        after = match page.last() {
            Some(r) => Some(
                r.id.parse()
                    .map_err(|_| StoreError::Protocol(format!("audit record id {}", r.id)))?,
            ),
            None => after,
        };
        records.extend(page);
        if done || records.len() as u64 >= AUDIT_MAX_RECORDS {
            break;
        }
    }
    let mut samples: Vec<Sample> = Vec::new();
    loop {
        let page = store
            .samples(show, samples.last().map(|s| s.id), PAGE)
            .await?;
        let done = page.len() < PAGE;
        samples.extend(page);
        if done || samples.len() as u64 >= SAMPLES_MAX {
            break;
        }
    }
    Ok(build(&Parts {
        stats: &stats,
        draw: draw.as_ref(),
        records: &records,
        samples: &samples,
        push_latency,
        now_ms,
    }))
}

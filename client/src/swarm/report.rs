//! What a swarm measured: the report (printed, or JSON for scripts), the once-a-second
//! timeline, and what the process itself cost (resident memory and CPU, from `/proc/self`).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use indicatif::ProgressBar;
use serde::Serialize;
use tokio_util::sync::CancellationToken;
use waiting_room::words::thousands;

use super::args::SwarmArgs;
use super::shared::{Swarm, get, histogram};
use crate::follow::Transport;
use crate::load::Percentiles;

/// One figure per transport.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct ByTransport<T> {
    /// Over SSE.
    pub sse: T,
    /// Over a WebSocket.
    pub ws: T,
    /// Polling.
    pub poll: T,
}

impl<T: Copy> ByTransport<T> {
    fn of(values: [T; 3]) -> Self {
        ByTransport {
            sse: values[0],
            ws: values[1],
            poll: values[2],
        }
    }
}

/// What a swarm measured. Every fan that joined ended admitted, lost, ended, left (and maybe
/// returned), or was still there when the run stopped.
#[derive(Clone, Debug, Serialize)]
pub struct SwarmReport {
    /// Fans this process was to hold (`--fans`).
    pub fans: u64,
    /// Servers the fans were spread over.
    pub servers: usize,
    /// Source addresses the fans were spread over (0: the system's choice).
    pub source_ips: usize,
    /// `--mix`: each transport's share.
    pub mix: ByTransport<f64>,
    /// From the start to the report.
    pub elapsed_seconds: f64,
    /// Whether a fan heard the show open (churn starts then).
    pub opened: bool,
    /// Fans whose first join was answered 2xx.
    pub joined: u64,
    /// Fans whose join failed every attempt (or was refused for good).
    pub join_failed: u64,
    /// Join answers other than 2xx, by status (`"429"`), `"error"` when none came; retried
    /// ones included.
    pub join_status: BTreeMap<String, u64>,
    /// Fans holding a live stream, or polling, when the run stopped (before it closed them).
    pub held: u64,
    /// The most fans held at once.
    pub held_peak: u64,
    /// `held`, by transport.
    pub held_by_transport: ByTransport<u64>,
    /// The most fans held at once, by transport (each its own moment).
    pub held_peak_by_transport: ByTransport<u64>,
    /// Events and frames pushed (SSE, WebSocket), first states included.
    pub pushes: u64,
    /// Poll answers.
    pub polls: u64,
    /// States that found the page's count wrong at their tick (`load::count`): leaves,
    /// rate changes and pauses, which the server pushes at once; none without them.
    pub count_wrong: u64,
    /// Fans whose ticket was gone: a `LOST`, `UNKNOWN` or released (`EXPIRED`) state, or a
    /// 404 or 410.
    pub lost: u64,
    /// Fans whose show closed or ended.
    pub ended: u64,
    /// Connections that failed: refused, malformed answers, events or frames, silence past
    /// the idle timeout (each fan reconnected).
    pub stream_errors: u64,
    /// Stream openings (or polls) answered 503 with `Retry-After`: the server shed them, and
    /// each fan came back when told. Not errors.
    pub streams_shed: u64,
    /// Connections the server closed (each fan reconnected).
    pub dropped: u64,
    /// Connections opened again for the same ticket: after an error, a close, or by churn.
    pub reconnects: u64,
    /// Fans who left (`DELETE` answered 2xx).
    pub left: u64,
    /// Leaves whose `DELETE` failed.
    pub leave_failed: u64,
    /// Fans who left and joined again (a new place at the back).
    pub returned: u64,
    /// Fans told `admitted`.
    pub admitted: u64,
    /// From each tick to a fan knowing it, pushed, polled or counted (`load::count`); one
    /// sample per tick per waiting fan.
    pub knowledge: Percentiles,
    /// The same per tick second: `[Unix second, samples, p50 ms, p99 ms]`, as `load` writes
    /// it (`knowledge-plot` reads both).
    pub knowledge_by_second: Vec<[f64; 4]>,
    /// Resident memory before the first fan.
    pub rss_start_bytes: u64,
    /// The most resident memory the process had (`VmHWM`).
    pub rss_peak_bytes: u64,
    /// `rss_peak_bytes / held_peak`: what a fan held costs, the process's own overhead
    /// included.
    pub bytes_per_fan: f64,
    /// `(rss_peak_bytes - rss_start_bytes) / held_peak`.
    pub bytes_per_fan_above_start: f64,
    /// CPU time the process used (user + system).
    pub cpu_seconds: f64,
    /// Fans held, integrated over the run: a fan held for a second is one.
    pub fan_seconds_held: f64,
    /// `cpu_seconds` per fan-second held, in microseconds.
    pub cpu_us_per_fan_second: f64,
}

impl fmt::Display for SwarmReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = thousands;
        writeln!(
            f,
            "{} fans to {} server(s), {:.1} s{}",
            n(self.fans),
            self.servers,
            self.elapsed_seconds,
            if self.opened { ", show open" } else { "" }
        )?;
        writeln!(
            f,
            "joins:     {} joined · {} failed · {} left · {} returned",
            n(self.joined),
            n(self.join_failed),
            n(self.left),
            n(self.returned)
        )?;
        let by = self.held_peak_by_transport;
        writeln!(
            f,
            "held:      {} at the end · peak {} (SSE {} · WebSocket {} · polling {})",
            n(self.held),
            n(self.held_peak),
            n(by.sse),
            n(by.ws),
            n(by.poll)
        )?;
        writeln!(
            f,
            "heard:     {} pushes · {} polls · {} counts wrong · {} reconnects · {} errors · {} shed · {} closed by the server",
            n(self.pushes),
            n(self.polls),
            n(self.count_wrong),
            n(self.reconnects),
            n(self.stream_errors),
            n(self.streams_shed),
            n(self.dropped)
        )?;
        writeln!(f, "tick → known: {}", self.knowledge)?;
        writeln!(
            f,
            "fans:      {} admitted · {} lost · {} ended",
            n(self.admitted),
            n(self.lost),
            n(self.ended)
        )?;
        write!(
            f,
            "cost:      {:.0} B a fan ({} MiB peak RSS) · {:.1} s CPU · {:.1} µs CPU a fan-second",
            self.bytes_per_fan,
            self.rss_peak_bytes / (1 << 20),
            self.cpu_seconds,
            self.cpu_us_per_fan_second
        )
    }
}

/// One second of the timeline: the fans held then, and what happened during it.
#[derive(Clone, Debug)]
pub(super) struct Row {
    seconds: f64,
    held: u64,
    pushes: u64,
    joins: u64,
    leaves: u64,
    returns: u64,
    reconnects: u64,
    knowing_p99_ms: f64,
}

/// What the once-a-second sampler gathered.
#[derive(Debug, Default)]
pub(super) struct Timeline {
    rows: Vec<Row>,
    fan_seconds: f64,
}

/// Samples the swarm each second until `stop`: the timeline, the progress bar, the fans
/// held over time.
pub(super) async fn sample(
    swarm: std::sync::Arc<Swarm>,
    bar: ProgressBar,
    stop: CancellationToken,
) -> Timeline {
    let c = &swarm.counts;
    let totals = || {
        [
            get(&c.pushes) + get(&c.polls),
            get(&c.joined) + get(&c.returned),
            get(&c.left),
            get(&c.returned),
            get(&c.reconnects),
        ]
    };
    let mut timeline = Timeline::default();
    let mut before = totals();
    let mut then = Instant::now();
    let mut every = tokio::time::interval(std::time::Duration::from_secs(1));
    every.tick().await;
    loop {
        let stopped = tokio::select! {
            _ = every.tick() => false,
            _ = stop.cancelled() => true,
        };
        let held = get(&c.held);
        timeline.fan_seconds += held as f64 * then.elapsed().as_secs_f64();
        then = Instant::now();
        let now = totals();
        let delta: Vec<u64> = now.iter().zip(before).map(|(a, b)| a - b).collect();
        before = now;
        let knowing_p99_ms = {
            let mut k = swarm.knowing.lock().unwrap_or_else(|e| e.into_inner());
            let p99 = k.window.value_at_quantile(0.99) as f64 / 1000.0;
            k.window = histogram(2);
            p99
        };
        timeline.rows.push(Row {
            seconds: swarm.start.elapsed().as_secs_f64(),
            held,
            pushes: delta[0],
            joins: delta[1],
            leaves: delta[2],
            returns: delta[3],
            reconnects: delta[4],
            knowing_p99_ms,
        });
        bar.set_position(get(&c.joined) + get(&c.join_failed));
        bar.set_message(format!(
            "{} held · {} pushes · {} admitted · {} left · {} returned",
            thousands(held),
            thousands(get(&c.pushes) + get(&c.polls)),
            thousands(get(&c.admitted)),
            thousands(get(&c.left)),
            thousands(get(&c.returned)),
        ));
        if stopped {
            return timeline;
        }
    }
}

/// Writes the timeline as CSV.
pub(super) fn write_csv(path: &Path, timeline: &Timeline) -> anyhow::Result<()> {
    let mut csv = String::from("t,held,pushes,joins,leaves,returns,reconnects,knowing_p99_ms\n");
    for r in &timeline.rows {
        csv.push_str(&format!(
            "{:.1},{},{},{},{},{},{},{}\n",
            r.seconds,
            r.held,
            r.pushes,
            r.joins,
            r.leaves,
            r.returns,
            r.reconnects,
            r.knowing_p99_ms
        ));
    }
    std::fs::write(path, csv).with_context(|| format!("cannot write {}", path.display()))
}

/// The report, once the fans are stopped: `held` is what was held just before.
pub(super) fn report(
    args: &SwarmArgs,
    swarm: &Swarm,
    held: [u64; 3],
    timeline: &Timeline,
    rss_start_bytes: u64,
) -> SwarmReport {
    let c = &swarm.counts;
    let (knowledge, knowledge_by_second) = {
        let k = swarm.knowing.lock().unwrap_or_else(|e| e.into_inner());
        let by_second = k
            .by_second
            .iter()
            .map(|(s, h)| {
                let ms = |q: f64| h.value_at_quantile(q) as f64 / 1000.0;
                [*s as f64, h.len() as f64, ms(0.5), ms(0.99)]
            })
            .collect();
        (Percentiles::of(&k.all), by_second)
    };
    let held_peak = get(&c.held_peak);
    let rss_peak_bytes = memory("VmHWM:").unwrap_or(0);
    let per_fan = |bytes: u64| {
        if held_peak == 0 {
            0.0
        } else {
            (bytes as f64 / held_peak as f64).round()
        }
    };
    let cpu_seconds = cpu_seconds().unwrap_or(0.0);
    SwarmReport {
        fans: args.fans,
        servers: swarm.servers.len(),
        source_ips: swarm.sources.len(),
        mix: ByTransport::of(
            [Transport::Sse, Transport::Ws, Transport::Poll].map(|t| args.mix.share(t)),
        ),
        elapsed_seconds: swarm.start.elapsed().as_secs_f64(),
        opened: swarm.opened.load(std::sync::atomic::Ordering::Relaxed),
        joined: get(&c.joined),
        join_failed: get(&c.join_failed),
        join_status: swarm
            .join_status
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
        held: held.iter().sum(),
        held_peak,
        held_by_transport: ByTransport::of(held),
        held_peak_by_transport: ByTransport::of(c.held_peak_by.each_ref().map(get)),
        pushes: get(&c.pushes),
        polls: get(&c.polls),
        count_wrong: get(&c.count_wrong),
        lost: get(&c.lost),
        ended: get(&c.ended),
        stream_errors: get(&c.stream_errors),
        streams_shed: get(&c.streams_shed),
        dropped: get(&c.dropped),
        reconnects: get(&c.reconnects),
        left: get(&c.left),
        leave_failed: get(&c.leave_failed),
        returned: get(&c.returned),
        admitted: get(&c.admitted),
        knowledge,
        knowledge_by_second,
        rss_start_bytes,
        rss_peak_bytes,
        bytes_per_fan: per_fan(rss_peak_bytes),
        bytes_per_fan_above_start: per_fan(rss_peak_bytes.saturating_sub(rss_start_bytes)),
        cpu_seconds,
        fan_seconds_held: timeline.fan_seconds,
        cpu_us_per_fan_second: if timeline.fan_seconds > 0.0 {
            cpu_seconds * 1e6 / timeline.fan_seconds
        } else {
            0.0
        },
    }
}

/// A memory figure of `/proc/self/status` (`VmRSS:`, `VmHWM:`), in bytes; `None` where there
/// is no `/proc`.
pub(super) fn memory(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kb: u64 = line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// User and system CPU time of the whole process so far, from `/proc/self/stat` (in clock
/// ticks of 1/100 s, Linux's `USER_HZ` everywhere it runs).
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The command name may hold spaces and parentheses: fields count from the last ')'.
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the file; `after` starts at field 3.
    let ticks = |k: usize| fields.get(k)?.parse::<u64>().ok();
    Some((ticks(11)? + ticks(12)?) as f64 / 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_process_reads_its_own_memory_and_cpu() {
        assert!(memory("VmRSS:").is_some_and(|b| b > 1 << 20));
        assert!(memory("VmHWM:").is_some());
        assert!(cpu_seconds().is_some());
    }
}

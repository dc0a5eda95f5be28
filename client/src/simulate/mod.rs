//! `waiting-room-client simulate`: an on-sale played out before it happens, with no server.
//!
//! The simulation is the server's own rules on a clock of its own: the embedded store (the
//! in-process Redis that runs the very Lua scripts a Redis runs: joins, the admission tick,
//! orders, presence) on tokio's paused clock, which jumps from one event to the next. Fans
//! arrive by the curve, spread over each second; the admitter's tick runs once a second; fans
//! buy, give up or close their page as `ModelArgs` says. The report is the server's report
//! (`waiting_room::report`), built from the simulated store's audit and samples, so a
//! prediction reads like what a server did (`rehearse` prints them side by side).

mod args;
pub mod curve;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::future::join_all;
use rand::rngs::Xoshiro128PlusPlus;
use rand::{RngExt, SeedableRng};
use rust_decimal::Decimal;
use uuid::Uuid;
use waiting_room::clock::Clock;
use waiting_room::model::{NewOrder, Phase, PushLatency, RecordId, Report, ShowId, ShowSettings};
use waiting_room::store::{
    AdmitOutcome, Attendance, Draws, MemoryStore, OrderBook, Presence, Queue, Shows, StoreSettings,
};
use waiting_room::words::countdown;

pub use self::args::{CurveArgs, ModelArgs, SimulateArgs};
use self::curve::Curve;

/// A sale to simulate.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Fans arriving each second.
    pub curve: Curve,
    /// The show's settings.
    pub settings: ShowSettings,
    /// How long an admission lasts.
    pub ttl: Duration,
    /// How fans behave.
    pub behaviour: Behaviour,
    /// The random choices' seed.
    pub seed: u64,
    /// Stop this long after the first arrival, however many still wait (as a recorded run
    /// stopped); `None`: once nobody waits, the sale ends, or a day passes.
    pub until: Option<Duration>,
}

impl Plan {
    /// The plan at `factor` of its size: its curve, and the show's rate, cap and stock (at
    /// least one of each set), so that its waits stay those of the whole sale.
    pub fn scaled(mut self, factor: f64) -> Plan {
        let scale = |n: u64| ((n as f64 * factor).round() as u64).max(1);
        let s = &mut self.settings;
        s.admit_per_second = Some(scale(u64::from(s.admit_per_second.unwrap_or(20))) as u32);
        s.max_active_buyers = s.max_active_buyers.map(|cap| {
            if cap == 0 {
                0
            } else {
                scale(u64::from(cap)) as u32
            }
        });
        s.stock = s.stock.map(scale);
        self.curve = self.curve.scaled(factor);
        self
    }
}

/// How fans behave.
#[derive(Clone, Copy, Debug)]
pub struct Behaviour {
    /// Of the admitted, the share who buy.
    pub buy: f64,
    /// A buyer's time from admission to order, on average (each ±50 %).
    pub buy_after: Duration,
    /// Of the waiting, the share who give up before their turn.
    pub leave: f64,
    /// How long one who gives up waits first, at most.
    pub patience: Duration,
    /// Of the fans, the share whose page is closed (no live stream).
    pub away: f64,
}

impl Behaviour {
    /// One fan's choices, drawn as it arrives, in the one order `simulate` and `rehearse`
    /// share (so a seed makes the same fans in both): whether and when it buys once let in
    /// (`buy_after` × 0.5 to 1.5), whether and when it gives up (`patience` × 0 to 1), and
    /// whether its page is closed.
    pub(crate) fn draw(&self, rng: &mut Xoshiro128PlusPlus) -> Choices {
        Choices {
            buys_after: rng
                .random_bool(self.buy)
                .then(|| self.buy_after.mul_f64(0.5 + rng.random::<f64>())),
            gives_up_after: rng
                .random_bool(self.leave)
                .then(|| self.patience.mul_f64(rng.random::<f64>())),
            away: rng.random_bool(self.away),
        }
    }
}

/// One fan's choices (see [`Behaviour::draw`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Choices {
    /// Buys once let in, this long after.
    pub buys_after: Option<Duration>,
    /// Gives up after waiting this long.
    pub gives_up_after: Option<Duration>,
    /// Its page is closed: it joins and holds no stream.
    pub away: bool,
}

/// The show a simulation plays.
const SHOW: &str = "simulated";
/// Slices of each second the arrivals are spread over.
const SLICES: u64 = 10;
/// The most a sale runs on after its last arrival: a day.
const LONGEST: u64 = 86_400;
/// How long the simulated instance's presence report holds (renewed every second).
const PRESENCE_TTL: Duration = Duration::from_secs(10);

/// `waiting-room-client simulate`: runs the plan, writes what `--out` asks and prints the
/// summary (or the report as JSON).
pub fn main(args: SimulateArgs) -> anyhow::Result<()> {
    let plan = Plan {
        until: args.until,
        ..args.model.plan(args.curve.read()?)?
    };
    let started = Instant::now();
    let report = run(plan.clone())?;
    let took = started.elapsed();
    if let Some(dir) = &args.out {
        write_outputs(dir, &report)?;
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", summary(&plan, &report, took));
    }
    Ok(())
}

/// Runs `plan` on a thread of its own (a paused clock needs a runtime of its own): the
/// simulated sale's report.
pub fn run(plan: Plan) -> anyhow::Result<Report> {
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()?;
        // Made inside the runtime: the sale's clock is the runtime's paused one.
        runtime.block_on(async { Sale::new(plan).play().await })
    })
    .join()
    .map_err(|_| anyhow::anyhow!("the simulation panicked"))?
}

/// One fan's choices, made as it arrives.
#[derive(Clone, Copy, Default)]
struct Fan {
    ticket: Uuid,
    /// Buys once let in, this long after.
    buys_after: Option<Duration>,
    /// Gives up at this ms of the sale, if still waiting.
    gives_up_ms: Option<u64>,
}

/// A simulated sale under way.
struct Sale {
    plan: Plan,
    store: MemoryStore,
    show: ShowId,
    clock: Clock,
    rng: Xoshiro128PlusPlus,
    /// Every fan of the general queue, by arrival number − 1.
    fans: Vec<Fan>,
    /// (when, arrival): fans who give up, and buyers' orders, soonest first.
    leaves: BinaryHeap<Reverse<(u64, u64)>>,
    orders: BinaryHeap<Reverse<(u64, u64)>>,
    /// The highest arrival let in so far: fans at or below it wait no more.
    head: u64,
    /// The last audit record read.
    audit_seen: Option<RecordId>,
    /// The sale's start on the store's clock (ms).
    start_ms: u64,
}

impl Sale {
    fn new(plan: Plan) -> Sale {
        let settings = StoreSettings {
            default_rate: plan.settings.admit_per_second.unwrap_or(20),
            admission_ttl: plan.ttl,
            max_active_buyers: 0,
            arrival_window: Duration::from_secs(60),
        };
        let clock = Clock::tokio();
        Sale {
            rng: Xoshiro128PlusPlus::seed_from_u64(plan.seed),
            fans: Vec::with_capacity(usize::try_from(plan.curve.fans()).unwrap_or(0)),
            store: MemoryStore::new(settings),
            show: SHOW.parse().expect("a valid show id"),
            start_ms: clock.now_ms(),
            clock,
            plan,
            leaves: BinaryHeap::new(),
            orders: BinaryHeap::new(),
            head: 0,
            audit_seen: None,
        }
    }

    /// ms of the sale so far.
    fn now(&self) -> u64 {
        self.clock.now_ms().saturating_sub(self.start_ms)
    }

    /// Plays the whole sale: the curve, then on until nobody waits (or the sale ends, or a
    /// day passes); its report.
    async fn play(mut self) -> anyhow::Result<Report> {
        self.store
            .configure(&self.show, self.plan.settings.clone())
            .await
            .context("the show's settings")?;
        self.store.open(&self.show).await?;
        let curve = self.plan.curve.seconds().to_vec();
        let last = self
            .plan
            .until
            .map_or(curve.len() as u64 + LONGEST, |u| u.as_secs().max(1));
        for second in 0..last {
            let arriving = curve.get(second as usize).copied().unwrap_or(0);
            for slice in 0..SLICES {
                let n = arriving * (slice + 1) / SLICES - arriving * slice / SLICES;
                self.arrive(n).await?;
                self.due(second * 1000 + (slice + 1) * 1000 / SLICES)
                    .await?;
            }
            self.tick().await?;
            if second + 1 >= curve.len() as u64 && self.over().await? {
                break;
            }
        }
        waiting_room::report::gather(
            &self.store,
            &self.show,
            PushLatency::default(),
            self.clock.now_ms(),
        )
        .await
        .context("the simulated sale's report")
    }

    /// `n` fans join now, together (as a crowd does: the store gathers their joins).
    async fn arrive(&mut self, n: u64) -> anyhow::Result<()> {
        if n == 0 {
            return Ok(());
        }
        let joins = join_all((0..n).map(|_| self.store.join(&self.show))).await;
        let now = self.now();
        let b = self.plan.behaviour;
        let mut present = Vec::with_capacity(joins.len());
        for joined in joins {
            let joined = joined?;
            let choices = b.draw(&mut self.rng);
            let fan = Fan {
                ticket: joined.ticket,
                buys_after: choices.buys_after,
                gives_up_ms: choices
                    .gives_up_after
                    .map(|after| now + after.as_millis() as u64),
            };
            if let Some(at) = fan.gives_up_ms {
                self.leaves.push(Reverse((at, joined.arrival)));
            }
            if !choices.away {
                present.push(joined.ticket);
            }
            let i = usize::try_from(joined.arrival - 1)?;
            if self.fans.len() <= i {
                self.fans.resize(i + 1, Fan::default());
            }
            self.fans[i] = fan;
        }
        self.attend(present).await
    }

    /// The simulated instance reports the fans whose pages hold a stream (and renews its
    /// report).
    async fn attend(&self, came: Vec<Uuid>) -> anyhow::Result<()> {
        let news = Attendance {
            came,
            streaming: true,
            ..Attendance::default()
        };
        self.store
            .attend(&self.show, "simulation", news, PRESENCE_TTL)
            .await?;
        Ok(())
    }

    /// Moves the clock to `until_ms` of the sale, giving up and ordering as fans are due to.
    async fn due(&mut self, until_ms: u64) -> anyhow::Result<()> {
        let now = self.now();
        let leaving = pop_due(&mut self.leaves, now);
        for arrival in leaving {
            if arrival > self.head {
                let ticket = self.fans[usize::try_from(arrival - 1)?].ticket;
                self.store.leave(&self.show, ticket).await?;
            }
        }
        let buying = pop_due(&mut self.orders, now);
        let (store, show, fans) = (&self.store, &self.show, &self.fans);
        let orders = buying.iter().map(|&arrival| {
            let ticket = fans[(arrival - 1) as usize].ticket;
            let order = NewOrder {
                show_id: show.clone(),
                hold_id: format!("simulated-{arrival}"),
                customer_email: "fan@example.com".into(),
                amount: Decimal::TEN,
            };
            async move { store.place_order(&order, Some(ticket)).await }
        });
        for placed in join_all(orders).await {
            // A buyer whose admission ran out, or who came after the last seat, buys nothing.
            placed?;
        }
        let at = until_ms.saturating_sub(self.now());
        tokio::time::advance(Duration::from_millis(at)).await;
        Ok(())
    }

    /// The admitter's tick, then the buyers it let in choose when to order.
    async fn tick(&mut self) -> anyhow::Result<()> {
        tokio::time::advance(Duration::from_millis(1)).await;
        match self.store.admit(&self.show, 1).await? {
            AdmitOutcome::Admitted { head, .. } => self.head = self.head.max(head),
            other => tracing::debug!(?other, "tick"),
        }
        self.attend(Vec::new()).await?;
        let records = self
            .store
            .audit(&self.show, self.audit_seen, 10_000)
            .await?;
        let now = self.now();
        for r in &records {
            for &[lo, hi] in &r.admitted {
                for arrival in lo..=hi {
                    let Some(fan) = self.fans.get((arrival - 1) as usize) else {
                        continue;
                    };
                    if let Some(after) = fan.buys_after {
                        let at = now + after.as_millis() as u64;
                        self.orders.push(Reverse((at, arrival)));
                    }
                }
            }
        }
        if let Some(r) = records.last() {
            self.audit_seen = r.id.parse().ok();
        }
        Ok(())
    }

    /// Whether nothing more can happen: nobody waits and nobody is about to buy, or the
    /// on-sale ended (sold out).
    async fn over(&self) -> anyhow::Result<bool> {
        let stats = self.store.stats(&self.show).await?;
        Ok(!matches!(stats.phase, Phase::Open)
            || (stats.queue_length == 0 && self.orders.is_empty()))
    }
}

/// The arrivals due at or before `now`, off the heap.
fn pop_due(heap: &mut BinaryHeap<Reverse<(u64, u64)>>, now: u64) -> Vec<u64> {
    let mut due = Vec::new();
    while let Some(&Reverse((at, arrival))) = heap.peek() {
        if at > now {
            break;
        }
        heap.pop();
        due.push(arrival);
    }
    due
}

/// The report's files in `dir`: JSON, CSV, and HTML with its stylesheet beside it.
pub fn write_outputs(dir: &Path, report: &Report) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("{}", dir.display()))?;
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text).with_context(|| format!("{}", dir.display()))
    };
    write("report.json", &serde_json::to_string_pretty(report)?)?;
    write("report.csv", &waiting_room::report::csv(report))?;
    let links = waiting_room::report::Links {
        css: "report.css",
        json: "report.json",
        csv: "report.csv",
    };
    write("report.html", &waiting_room::report::html(report, &links))?;
    write("report.css", waiting_room::report::CSS)?;
    Ok(())
}

/// The figures an operator reads first.
fn summary(plan: &Plan, report: &Report, took: Duration) -> String {
    let f = &report.figures;
    let by: Vec<String> = f
        .admitted_by
        .iter()
        .map(|s| format!("{} % by {}", s.percent, countdown(s.seconds)))
        .collect();
    format!(
        "simulated {fans} fans over {curve} s of arrivals in {took:.1?}\n\
         admitted {admitted} ({per:.1}/s) · orders {orders} · still waiting {queued}{stock}\n\
         wait p50 {p50} · p90 {p90} · p99 {p99} · longest {max}\n\
         {by}\n\
         most told they may not get a seat: {no_seat}\n\
         ETA told ÷ real wait, median {ratio:.2} ({within:.0} % within a fifth, {compared} ticks)\n\
         the audit: {fair}\n",
        fans = plan.curve.fans(),
        curve = plan.curve.seconds().len(),
        admitted = f.admitted,
        per = f.admitted_per_second,
        orders = f.orders,
        queued = f.queued,
        stock = f
            .stock_left
            .map(|s| format!(" · seats left {s}"))
            .unwrap_or_default(),
        p50 = countdown(f.wait.p50 as u64),
        p90 = countdown(f.wait.p90 as u64),
        p99 = countdown(f.wait.p99 as u64),
        max = countdown(f.wait.max as u64),
        by = by.join(" · "),
        no_seat = f.most_told_no_seat,
        ratio = f.eta.median_ratio,
        within = f.eta.within_a_fifth * 100.0,
        compared = f.eta.compared,
        fair = if report.fairness.verified {
            "verified, 0 inversions".to_owned()
        } else {
            format!(
                "NOT verified: {}",
                report.fairness.violation.as_deref().unwrap_or("")
            )
        },
    )
}

//! `simulate`'s flags, and `rehearse`'s share of them: the curve, the show's settings and how
//! fans behave.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;
use waiting_room::model::ShowSettings;

use super::curve::Curve;
use super::{Behaviour, Plan};
use crate::load::{parse_fraction, parse_span};

/// The arrival curve: a CSV or a named shape.
#[derive(Args, Clone, Debug)]
#[group(required = true, multiple = false)]
pub struct CurveArgs {
    /// Arrivals a second as CSV: `second,arrivals` a line, one count a line, or a report's
    /// CSV (`GET …/report?format=csv`: its sale replayed).
    #[arg(long, value_name = "FILE")]
    pub curve: Option<PathBuf>,
    /// A named shape instead: `spike:FANS:SECONDS` (most in the first moments, as at 10:00)
    /// or `flat:FANS:SECONDS`.
    #[arg(long, value_name = "SHAPE")]
    pub shape: Option<String>,
}

impl CurveArgs {
    /// The curve asked for.
    pub fn read(&self) -> anyhow::Result<Curve> {
        Ok(match (&self.curve, &self.shape) {
            (Some(path), _) => {
                let text = read_small(path, MOST_CURVE_BYTES, "a curve")?;
                Curve::from_csv(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
            }
            (None, Some(shape)) => Curve::shape(shape)?,
            (None, None) => anyhow::bail!("--curve FILE or --shape SHAPE"),
        })
    }
}

/// The show's settings and how its fans behave.
#[derive(Args, Clone, Debug)]
pub struct ModelArgs {
    /// The show's settings as `PUT /orders/waiting-room/{showId}` takes them (JSON); the
    /// flags below override theirs.
    #[arg(long, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Admissions a second (`admitPerSecond`).
    #[arg(long)]
    pub rate: Option<u32>,
    /// Most buyers behind the gate at once (`maxActiveBuyers`; 0: none).
    #[arg(long)]
    pub cap: Option<u32>,
    /// Seats for sale (`stock`).
    #[arg(long)]
    pub stock: Option<u64>,
    /// How long an admission lasts (the server's `ADMISSION_TTL`).
    #[arg(long, default_value = "5m", value_parser = parse_span)]
    pub ttl: Duration,
    /// Of the admitted fans, the share who buy (0 to 1).
    #[arg(long, default_value_t = 0.8, value_parser = parse_fraction)]
    pub buy: f64,
    /// How long a buyer takes from admission to order, on average (each one ±50 %).
    #[arg(long, default_value = "30s", value_parser = parse_span)]
    pub buy_after: Duration,
    /// Of the waiting fans, the share who give up before their turn (0 to 1).
    #[arg(long, default_value_t = 0.0, value_parser = parse_fraction)]
    pub leave: f64,
    /// How long a fan who gives up waits first, at most (each one evenly up to it).
    #[arg(long, default_value = "10m", value_parser = parse_span)]
    pub patience: Duration,
    /// Of the fans, the share whose page is closed (away: no live stream).
    #[arg(long, default_value_t = 0.0, value_parser = parse_fraction)]
    pub away: f64,
    /// The random choices' seed: the same seed, the same sale.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

impl ModelArgs {
    /// The plan for `curve`.
    pub fn plan(&self, curve: Curve) -> anyhow::Result<Plan> {
        let mut settings: ShowSettings = match &self.settings {
            Some(path) => {
                let text = read_small(path, MOST_SETTINGS_BYTES, "a show's settings")?;
                serde_json::from_str(&text)
                    .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
            }
            None => ShowSettings::default(),
        };
        if let Some(rate) = self.rate {
            settings.admit_per_second = Some(rate);
        }
        if let Some(cap) = self.cap {
            settings.max_active_buyers = Some(cap);
        }
        if let Some(stock) = self.stock {
            settings.stock = Some(stock);
        }
        settings
            .check(0)
            .map_err(|e| anyhow::anyhow!("settings: {e}"))?;
        let unplayable = [
            (
                settings.join_challenge_bits.is_some_and(|b| b > 0),
                "joinChallengeBits",
            ),
            (settings.codes_only == Some(true), "codesOnly"),
            (
                settings.max_queue_length.is_some_and(|n| n > 0),
                "maxQueueLength",
            ),
        ];
        if let Some((_, name)) = unplayable.iter().find(|(set, _)| *set) {
            anyhow::bail!(
                "simulate plays the general queue only: {name} is not played (leave it out of \
                 the settings)"
            );
        }
        Ok(Plan {
            curve,
            settings,
            ttl: self.ttl,
            behaviour: Behaviour {
                buy: self.buy,
                buy_after: self.buy_after,
                leave: self.leave,
                patience: self.patience,
                away: self.away,
            },
            seed: self.seed,
            until: None,
        })
    }
}

/// The longest curve file read: a day of `second,arrivals` lines, or a report's CSV of a
/// day, fits many times over.
const MOST_CURVE_BYTES: u64 = 16 << 20;
/// The longest settings file read.
const MOST_SETTINGS_BYTES: u64 = 1 << 20;

/// The text of the file at `path` (`what` it holds), refused past `limit` bytes: a path to
/// `/dev/zero` or an endless pipe is not read whole.
fn read_small(path: &Path, limit: u64, what: &str) -> anyhow::Result<String> {
    let fail = |e: std::io::Error| anyhow::anyhow!("{}: {e}", path.display());
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .map_err(fail)?
        .take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(fail)?;
    anyhow::ensure!(
        bytes.len() as u64 <= limit,
        "{}: longer than {what} may be ({} MiB at most)",
        path.display(),
        limit >> 20
    );
    String::from_utf8(bytes).map_err(|_| anyhow::anyhow!("{}: not UTF-8 text", path.display()))
}

/// `simulate`'s flags.
#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// The arrival curve.
    #[command(flatten)]
    pub curve: CurveArgs,
    /// The show and its fans.
    #[command(flatten)]
    pub model: ModelArgs,
    /// Where to write `report.json`, `report.csv` and `report.html` (with its stylesheet).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print the report as JSON on stdout instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// Stop this long after the first arrival, however many still wait (to compare with a
    /// recorded run that stopped then); by default the sale runs until nobody waits.
    #[arg(long, value_parser = parse_span)]
    pub until: Option<Duration>,
}

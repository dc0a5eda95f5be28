//! The `waiting-room-client` binary: `fan`, `load`, `swarm`, `verify`, `staleness-plot` and
//! `knowledge-plot`, each
//! handed over to the library.
//!
//! It reads only its own flags (and the operator token `load` may take from `ADMIN_TOKEN`):
//! none of the server's settings, so a shell set up to run a server runs the clients too.

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use waiting_room_client::fan::{self, FanArgs};
use waiting_room_client::knowledge_plot::{self, KnowledgePlotArgs};
use waiting_room_client::load::{self, LoadArgs};
use waiting_room_client::rehearse::{self, RehearseArgs};
use waiting_room_client::shows::{self, ApplyArgs, ExportArgs};
use waiting_room_client::simulate::{self, SimulateArgs};
use waiting_room_client::staleness_plot::{self, StalenessPlotArgs};
use waiting_room_client::swarm::{self, SwarmArgs};
use waiting_room_client::verify::{self, VerifyArgs};

/// Clients of the waiting room: one fan, or a bounded load run.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Join a show (or follow --ticket) and print each update until admitted.
    Fan(FanArgs),
    /// A bounded load run against loopback servers: many fans, a CSV and a plot.
    Load(Box<LoadArgs>),
    /// Many lean fans (at most 19,000 a process) held against loopback servers, a mix of
    /// transports, leaving, returning and reconnecting; memory and CPU a fan measured.
    Swarm(Box<SwarmArgs>),
    /// Check an on-sale from what it published: the draw against its commitment, and every
    /// tick of the audit. Exit 0 when all holds, 1 naming the first violation.
    Verify(VerifyArgs),
    /// Make the server's shows match a file (YAML): each show made or changed as it says,
    /// only where it differs; `--dry-run` says what would change.
    Apply(ApplyArgs),
    /// Write the server's shows and their settings as a file `apply` takes.
    Export(ExportArgs),
    /// Play an on-sale out before it happens, with no server: an arrival curve against the
    /// show's settings under the server's own rules, and the report it would make.
    Simulate(Box<SimulateArgs>),
    /// Play an arrival curve against a real server's staging show, at a scale the box holds,
    /// and print the server's report beside the simulation's prediction of it.
    Rehearse(Box<RehearseArgs>),
    /// Several `load --json` runs' staleness on one plot (SVG), push beside polling.
    StalenessPlot(StalenessPlotArgs),
    /// Several `load --json` runs' tick → knowledge latency over time (SVG), one line each.
    KnowledgePlot(KnowledgePlotArgs),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    // Logs go to stderr: stdout is the fan's lines and `load --json`'s report.
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        // The fan's exit code tells scripts how it ended (see `FanError::exit_code`).
        Command::Fan(args) => std::process::exit(fan::main(args).await),
        Command::Load(args) => load::main(*args).await,
        Command::Swarm(args) => swarm::main(*args).await,
        Command::Verify(args) => std::process::exit(verify::main(args).await.exit_code()),
        Command::Apply(args) => shows::apply_main(args).await,
        Command::Export(args) => shows::export_main(args).await,
        Command::Simulate(args) => simulate::main(*args),
        Command::Rehearse(args) => rehearse::main(*args).await,
        Command::StalenessPlot(args) => staleness_plot::main(args),
        Command::KnowledgePlot(args) => knowledge_plot::main(args),
    }
}

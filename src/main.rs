//! The `waiting-room` binary: parse the command line, set up logs, hand over to the library.

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
use waiting_room::client::fan::FanArgs;
use waiting_room::client::load::LoadArgs;
use waiting_room::config::Config;

/// A virtual waiting room for ticket on-sales.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    config: Config,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the waiting room (the default).
    Serve,
    /// Join a show (or follow --ticket) and print each update until admitted.
    Fan(FanArgs),
    /// A bounded load run against loopback servers: many fans, a CSV and a plot.
    Load(Box<LoadArgs>),
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,tower_http=warn")),
        )
        .init();
    let cli = Cli::parse();
    match cli.command {
        None | Some(Command::Serve) => waiting_room::server::run(cli.config).await,
        // The fan's exit code tells scripts how it ended (see `FanError::exit_code`).
        Some(Command::Fan(args)) => std::process::exit(waiting_room::client::fan::main(args).await),
        Some(Command::Load(args)) => waiting_room::client::load::main(*args).await,
    }
}

//! The `waiting-room` binary: parse the command line, set up logs, hand over to the library.

use clap::{Parser, Subcommand};
use tracing_subscriber::EnvFilter;
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
    }
}

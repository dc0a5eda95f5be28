//! The `waiting-room` binary: parse the command line, set up logs, hand over to the library.
//! The clients (`fan`, `load`) are another package and binary: `waiting-room-client`.

use clap::Parser;
use tracing_subscriber::EnvFilter;
use waiting_room::config::Config;

/// A virtual waiting room for ticket on-sales.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    config: Config,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    if let Some(client) = std::env::args()
        .nth(1)
        .filter(|a| a == "fan" || a == "load")
    {
        eprintln!("`{client}` moved to the client binary: waiting-room-client {client} …");
        std::process::exit(2);
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| EnvFilter::new("info,tower_http=warn")),
        )
        .init();
    waiting_room::server::run(Cli::parse().config).await
}

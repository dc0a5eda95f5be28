//! The `waiting-room` binary: parse the command line, set up logs, hand over to the library.
//! The clients (`fan`, `load`) are another package and binary: `waiting-room-client`.

use std::io::IsTerminal;

use clap::Parser;
use tracing_subscriber::EnvFilter;
use waiting_room::config::{Config, LogFormat};

/// A virtual waiting room for ticket on-sales.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    #[command(flatten)]
    config: Config,
}

#[tokio::main]
async fn main() {
    if let Some(client) = std::env::args()
        .nth(1)
        .filter(|a| a == "fan" || a == "load")
    {
        eprintln!("`{client}` moved to the client binary: waiting-room-client {client} …");
        std::process::exit(2);
    }
    let config = Cli::parse().config;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new("info,tower_http=warn"));
    let logs = tracing_subscriber::fmt().with_env_filter(filter);
    match config.log_format {
        LogFormat::Json => logs.json().init(),
        // Colours for a person at a terminal, never in a file or `docker logs`.
        LogFormat::Text => logs.with_ansi(std::io::stdout().is_terminal()).init(),
    }
    // A mistake of the operator's is one sentence (with its causes), never a backtrace, even
    // with RUST_BACKTRACE set.
    if let Err(e) = waiting_room::server::run(config).await {
        eprintln!("waiting-room: {e:#}");
        std::process::exit(1);
    }
}

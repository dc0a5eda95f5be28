//! The waiting room's command-line clients, a package of their own so that the server links
//! none of their crates. They share the server's wire contract ([`waiting_room::protocol`]),
//! its ticket JSON ([`waiting_room::model`]) and its words ([`waiting_room::words`]), and
//! nothing of its settings or environment.
//!
//! - [`fan`]: `waiting-room-client fan`, one fan who joins (or follows a ticket), prints every
//!   update for a person to read, reconnects across `--url`s and exits 0 once admitted.
//! - [`load`]: `waiting-room-client load`, many fans at a set join rate, with the figures
//!   BENCHMARKS.md quotes, a CSV and a plot.
//! - [`verify`]: `waiting-room-client verify`, which checks a show's draw and audit from what
//!   it published, and exits 0 when all holds.
//! - [`follow`]: the two transports (SSE and WebSocket), and polling, as one stream of
//!   [`follow::Push`]es, and joining; shared by both clients.
//! - [`backoff`]: the delays between attempts (exponential, capped, with jitter).
//! - [`staleness_plot`]: `waiting-room-client staleness-plot`, several load runs' staleness
//!   on one plot (push beside polling).
//! - [`knowledge_plot`]: `waiting-room-client knowledge-plot`, tick → knowledge over time, one
//!   line per instance.

pub mod backoff;
pub mod fan;
pub mod follow;
pub mod knowledge_plot;
pub mod load;
mod plot;
pub mod staleness_plot;
mod text;
pub mod verify;

//! Clients of the waiting room, run as subcommands of the same binary.
//!
//! - [`fan`]: `waiting-room fan`, one fan who joins (or follows a ticket), prints every
//!   update for a person to read, reconnects across `--url`s and exits 0 once admitted.
//! - [`load`]: `waiting-room load`, many fans at a set join rate, with the figures
//!   BENCHMARKS.md quotes, a CSV and a plot.
//! - [`follow`]: the two transports (SSE and WebSocket) as one stream of [`follow::Push`]es,
//!   and joining; shared by both clients.
//! - [`sse`]: a `text/event-stream` parser.
//! - [`backoff`]: exponential backoff with jitter.

pub mod backoff;
pub mod fan;
pub mod follow;
pub mod load;
mod plot;
pub mod sse;
mod text;

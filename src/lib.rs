//! A virtual waiting room for ticket on-sales.
//!
//! Fans join a per-show first-come-first-served queue; an admitter lets them through at the
//! rate the system behind can take; every fan is pushed an honest position and ETA over SSE
//! or a WebSocket; `POST /orders` is gated on an admitted ticket.
//!
//! "The original" in these docs is the Java/Spring lab project this one grew from (its HTTP
//! contract and Redis model are kept); "seed" means only the secret of a fair start's draw.
//!
//! # Glossary
//!
//! One word, one idea, everywhere in the code and the docs:
//!
//! - **show**: one on-sale (`ShowId`); its **epoch** changes whenever its state is made anew.
//! - **arrival**: a ticket's number in its show's line, 1, 2, 3… in join order (the Redis key
//!   keeps the original's name, `seq`); **position**: how many wait ahead, plus one.
//! - **phase**: where the on-sale stands (pending, open, paused, closed, ended); with the seats
//!   left and why it ended, the **sale** ([`model::Sale`]).
//! - **pace**: how fast a queue moves ([`model::Pace`]): the rate, the **flow** (the places a
//!   second really offered lately, which every ETA counts with), an announced change, why
//!   nothing moves. Read with every ticket beside its sale; neither carries the other.
//! - **throttle**: the rate in force lowered while the shop's checkout struggles, and raised
//!   again ([`throttle`]); the **rate** is what the operator set.
//! - **admission**: the right to buy, for a while; its **pass** is the signed token that
//!   proves it at any edge; **redemption** spends it once.
//! - **settings**: what an operator sets on a show ([`model::ShowSettings`]), kept whole.
//! - **the gate**: what lets only admitted fans order; **connection places**: how many
//!   connections the server holds, and each client's share (`http::serve::places`).
//! - **loss witness**: what notices that a Redis failover lost writes (`loss_witness.rs`).
//! - **fence**: the admitter's lease token, which a step of an older leader cannot pass.
//! - **the draw**: the fair start's random order of a pre-queue, published and verifiable.
//! - **call**: telling a fan who asked that its turn is near or come, by Web Push or the
//!   operator's webhook ([`notify`]).
//!
//! # The map of the crate
//!
//! - [`clock`]: the one clock the admitter, hub and console read, pausable in tests.
//! - [`config`]: every setting, as a flag with an environment variable.
//! - [`i18n`]: the fans' languages: one message catalog each (`locales/`), the language a
//!   page is answered in, numbers and waits worded for it.
//! - [`protocol`]: the wire contract, spelled once: routes, push event names, frames, errors.
//! - [`model`]: show ids, the ticket JSON, orders, a show's settings, with validation at the
//!   edge.
//! - [`store`]: the queue store, one folder per concern (its trait, its Lua scripts, their
//!   arguments and replies), run on Redis (shared) or embedded (one process, an in-process
//!   Redis running the same scripts); the one place that decides order, admission and the
//!   gate's data.
//! - [`draw`]: the fair start's draw: commitment, digests, the keyed permutation.
//! - [`pass`]: signed admission passes any edge can check (`PASS_KEYS`), the
//!   [`RequireAdmission`](pass::RequireAdmission) layer, and join challenges (proof of work).
//! - [`admitter`]: the once-a-second admission loop behind a fenced lease, one per cluster.
//! - [`watchdog`]: notices a show whose state the store lost, and keeps its gate shut; with
//!   the loss witness (`loss_witness.rs`), writes a failover lost.
//! - [`throttle`]: a show's rate in force following the health of its checkout (the
//!   measured flow an ETA uses is [`model::Pace`]).
//! - [`notify`]: the "your turn" call's senders: Web Push to a fan's browser (encrypted,
//!   VAPID-signed, only to allowed push services) and the operator's signed webhook.
//! - [`hub`]: per-instance fan-out from the store's events to every local connection, with no
//!   store call per fan; it hands each stream the ticket's state, which the HTTP face renders
//!   (`http/shown.rs`), and holds no keys.
//! - [`http`]: the HTTP faces (fan, operator, orders, SSE, WebSocket, health, metrics, the
//!   waiting page and the operator console).
//! - [`metrics`]: the Prometheus registry.
//! - [`report`]: an on-sale's report, from its audit and the samples its ticks leave: the
//!   server's `GET …/report`, and what `waiting-room-client simulate` predicts.
//! - [`server`]: wiring, start and graceful stop ([`server::Application`]).
//! - [`demo`]: a show full of simulated fans for `--demo`.
//! - [`error`]: the one error type and its HTTP answers.
//! - [`html`]: HTML escaping, the one every page uses.
//! - [`words`]: numbers and waits as a fan reads them (page and CLI alike).
//!
//! The clients (`fan`, `load`) are a package of their own, `client/` (`waiting-room-client`):
//! they use [`protocol`], [`model`] and [`words`], and the server links none of their crates.

pub mod admitter;
pub mod clock;
pub mod config;
mod demo;
pub mod draw;
pub mod error;
pub mod html;
pub mod http;
pub mod hub;
pub mod i18n;
mod loss_witness;
pub mod metrics;
pub mod model;
pub mod notify;
pub mod pass;
pub mod protocol;
pub mod report;
pub mod server;
pub mod store;
mod throttle;
mod watchdog;
pub mod words;

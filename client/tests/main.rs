//! The clients (`waiting-room-client fan`, `load` and `swarm`) against real servers, and the split
//! itself: the server links none of the clients' crates.

// Test support is shared by several test crates, each using part of it.
#![allow(unreachable_pub)]

// The server package's test support: the app in-process, a redis-server of the test's own.
#[path = "../../tests/support/mod.rs"]
mod support;

mod fan;
mod helpers;
mod hostile;
mod load;
mod shows;
mod simulate;
mod split;
mod swarm;
mod verify;

//! What every test binary needs, written once: a redis-server (or a three-node cluster) of the
//! test's own, the app in-process on port 0 or as a real server process, one method per
//! endpoint to call either, and an SSE reader.
//!
//! A binary takes it with `#[path = "../support/mod.rs"] mod support;` in its `main.rs`; this
//! folder has no `main.rs`, so cargo builds no test binary of its own from it.

// Each binary compiles this module anew and uses only part of it (the browser tests start no
// redis-server, say), so what one binary leaves unused is not dead code.
#![allow(dead_code)]

pub mod api;
pub mod app;
pub mod backend;
pub mod nginx;
pub mod notify;
pub mod origin;
pub mod process;
pub mod redis;
pub mod sentinel;
pub mod sse;

use std::net::TcpListener;

use serde_json::Value;
use uuid::Uuid;
use waiting_room::model::ShowId;

/// The operator token of `Config::for_tests()` and of every [`process::ServerProcess`].
pub const TOKEN: &str = "test-operator-token";

/// A free TCP port on loopback (released before use; the caller retries on a clash).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

pub fn show(name: &str) -> ShowId {
    name.parse().unwrap()
}

/// A show id nobody else uses, so tests on one server never see each other's queues.
pub fn unique_show(prefix: &str) -> String {
    format!("{prefix}-{}", &Uuid::new_v4().simple().to_string()[..8])
}

/// The `ticketId` of a ticket's JSON, checked to be a UUID.
pub fn ticket_id(v: &Value) -> String {
    let id = v["ticketId"].as_str().expect("ticketId").to_owned();
    Uuid::parse_str(&id).expect("ticketId is a UUID");
    id
}

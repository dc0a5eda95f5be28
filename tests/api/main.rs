//! Integration tests: one binary, real servers on 127.0.0.1:0, real redis-servers.

// A test binary is no library: its `pub` items serve its own modules.
#![allow(unreachable_pub)]

#[path = "../support/mod.rs"]
mod support;

/// Runs each named `async fn(Backend)` of the module once per store, as `memory::name`,
/// `redis::name` and so on.
macro_rules! on_stores {
    (@one $module:ident $backend:ident [$($name:ident),* $(,)?]) => {
        mod $module {
            $( #[tokio::test] async fn $name() { super::$name(crate::support::backend::Backend::$backend).await } )*
        }
    };
    ([$($module:ident: $backend:ident),*] $tests:tt) => {
        $( on_stores!(@one $module $backend $tests); )*
    };
}

/// The tests on the embedded store and on a real redis-server.
macro_rules! both_stores {
    ($($name:ident),* $(,)?) => {
        on_stores!([memory: Memory, redis: Redis] [$($name),*]);
    };
}

/// The tests on the embedded store, a real redis-server and a real Redis Cluster.
macro_rules! all_stores {
    ($($name:ident),* $(,)?) => {
        on_stores!([memory: Memory, redis: Redis, cluster: Cluster] [$($name),*]);
    };
}

mod abuse;
mod bots;
mod bypass;
mod cadence;
mod calls;
mod cli;
mod cluster;
mod cluster_failover;
mod console;
mod contract;
mod dashboard;
mod draw;
mod edge;
mod eta;
mod events;
mod failover;
mod failover_lost;
mod failover_retry;
mod gate;
mod http;
mod hub;
mod lanes;
mod notify;
mod openapi;
mod pages;
mod presence;
mod push;
mod rate_change;
mod report;
mod silence;
mod store;

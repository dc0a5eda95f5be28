//! Integration tests: one binary, real servers on 127.0.0.1:0, real redis-servers.

mod abuse;
mod cli;
mod cluster;
mod contract;
mod eta;
mod gate;
mod helpers;
mod http;
mod hub;
mod openapi;
mod push;
mod silence;
mod store;

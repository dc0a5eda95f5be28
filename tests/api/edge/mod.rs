//! A shop behind the waiting room, with real parts: `deploy/nginx.conf` in a real nginx in
//! front of real instances ([`nginx`]), gateway mode in front of a real origin process
//! ([`gateway`]): every spelling of a guarded path against nginx and an echo origin
//! ([`spellings`]), purchase paths and passes across instances ([`purchase`]), headers,
//! slow readers and a lost show ([`hygiene`]), the origin's answers framed every way the lean
//! origin leg reads ([`lean`]); nginx's `auth_request` guarding a real origin
//! with the pass check (`deploy/nginx-shop.conf`, [`auth_request`]), and the pass verified by
//! a CDN worker's WebCrypto in a real Node against the published keys ([`jwt`]).

mod auth_request;
mod gateway;
mod hygiene;
mod jwt;
mod lean;
mod nginx;
mod purchase;
mod spellings;

use std::time::Duration;

use crate::support::origin::Origin;
use crate::support::process::ServerProcess;
use crate::support::ticket_id;

/// A gateway on `redis_url` ("" for the embedded store) in front of `origin`, guarding as
/// `protect` says, with `extra` settings beside.
async fn gateway_to(
    redis_url: &str,
    origin: &Origin,
    protect: &str,
    extra: &[(&str, &str)],
) -> ServerProcess {
    let url = origin.url();
    let mut env = vec![("UPSTREAM_URL", url.as_str()), ("PROTECT", protect)];
    env.extend_from_slice(extra);
    ServerProcess::start(redis_url, 20, &env).await
}

/// A gateway guarding `/checkout` for the show `gw`, which is open.
async fn open_gateway(redis_url: &str, origin: &Origin, extra: &[(&str, &str)]) -> ServerProcess {
    let gw = gateway_to(redis_url, origin, "/checkout=gw", extra).await;
    gw.open("gw").await;
    gw
}

/// An admitted fan's pass for `show`.
async fn admitted_pass(server: &ServerProcess, show: &str) -> String {
    let fan = ticket_id(&server.join_ok(show).await);
    let t = server
        .wait_admitted(show, &fan, Duration::from_secs(10))
        .await;
    t["pass"].as_str().unwrap().to_owned()
}

/// `method` `path` through `server` with `pass` as the `wr_pass` cookie.
async fn with_cookie(
    server: &ServerProcess,
    method: reqwest::Method,
    path: &str,
    pass: &str,
) -> reqwest::Response {
    server
        .client
        .request(method, server.url(path))
        .header("cookie", format!("wr_pass={pass}"))
        .send()
        .await
        .unwrap()
}

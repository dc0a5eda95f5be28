//! A TCP connection to a server, from a chosen loopback source address if given: what the
//! WebSocket and the polling fan open themselves (SSE goes through reqwest's client).

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;
use tokio::net::{TcpSocket, TcpStream};

use super::FollowError;

/// A TCP connection to `base`'s host and port, bound to `local` if given.
pub(super) async fn connect_tcp(
    base: &Url,
    local: Option<IpAddr>,
) -> Result<TcpStream, FollowError> {
    // IPv6 hosts come bracketed, as in the URL; the resolver wants them bare.
    let Some(host) = base
        .host_str()
        .map(|h| h.trim_start_matches('[').trim_end_matches(']'))
    else {
        return Err(FollowError::Fatal(format!("{base} names no host")));
    };
    let port = base.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| FollowError::retry(format!("cannot resolve {host}: {e}")))?
        // A source address only works with a destination of its own family.
        .filter(|a| local.is_none_or(|l| l.is_ipv4() == a.is_ipv4()))
        .collect();
    let mut last = FollowError::retry(format!("{host} has no usable address"));
    for addr in addrs {
        let socket = if addr.is_ipv4() {
            TcpSocket::new_v4()
        } else {
            TcpSocket::new_v6()
        };
        let attempt = async {
            let socket = socket?;
            if let Some(ip) = local {
                socket.bind(SocketAddr::new(ip, 0))?;
            }
            let stream = socket.connect(addr).await?;
            stream.set_nodelay(true)?;
            Ok::<_, std::io::Error>(stream)
        };
        match attempt.await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = FollowError::retry(format!("{addr}: {e}")),
        }
    }
    Err(last)
}

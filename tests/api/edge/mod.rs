//! A shop behind the waiting room, with real parts: `deploy/nginx.conf` in a real nginx in
//! front of real instances ([`nginx`]), gateway mode in front of a real origin process
//! ([`gateway`]), and nginx's `auth_request` guarding a real origin with the pass check
//! (`deploy/nginx-shop.conf`, [`auth_request`]).

mod auth_request;
mod gateway;
mod nginx;

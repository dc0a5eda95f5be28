//! A shop behind the waiting room, with real parts: `deploy/nginx.conf` in a real nginx in
//! front of real instances ([`nginx`]), gateway mode in front of a real origin process
//! ([`gateway`]): every spelling of a guarded path against nginx and an echo origin
//! ([`spellings`]), purchase paths and passes across instances ([`purchase`]), headers,
//! slow readers and a lost show ([`hygiene`]); nginx's `auth_request` guarding a real origin
//! with the pass check (`deploy/nginx-shop.conf`, [`auth_request`]), and the pass verified by
//! a CDN worker's WebCrypto in a real Node against the published keys ([`jwt`]).

mod auth_request;
mod gateway;
mod hygiene;
mod jwt;
mod nginx;
mod purchase;
mod spellings;

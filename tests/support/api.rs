//! One running server's HTTP API, one method per endpoint: what a fan and an operator call.
//! Every path comes from the contract (`waiting_room::protocol::routes`).

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::redirect::Policy;
use reqwest::{Client, Method, RequestBuilder, Response, StatusCode};
use serde_json::{Value, json};
use waiting_room::protocol::{ADMISSION_HEADER, routes};

use super::sse::{SseEvent, SseReader};
use super::{ticket_id, unique_show};

/// A server at `addr`, called as a fan and, with `admin_token`, as its operator.
#[derive(Clone, Debug)]
pub struct Api {
    pub addr: SocketAddr,
    /// Follows no redirects: a test reads where the server sends it.
    pub client: Client,
    pub admin_token: String,
}

impl Api {
    pub fn new(addr: SocketAddr, admin_token: &str) -> Api {
        let client = Client::builder()
            .redirect(Policy::none())
            .build()
            .expect("a reqwest client");
        Api {
            addr,
            client,
            admin_token: admin_token.to_owned(),
        }
    }

    /// `http://host:port`.
    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The WebSocket URL that follows a ticket.
    pub fn ws_url(&self, show: &str, ticket: &str) -> String {
        let path = routes::ticket(routes::WS, show, ticket);
        format!("ws://{}{path}", self.addr)
    }

    /// `GET path`, as anyone.
    pub async fn get(&self, path: &str) -> Response {
        self.client.get(self.url(path)).send().await.unwrap()
    }

    /// The Prometheus text of the server's metrics.
    pub async fn metrics(&self) -> String {
        self.get(routes::METRICS).await.text().await.unwrap()
    }

    /// Whether this instance holds the admitter lease, as its metrics say.
    pub async fn leads(&self) -> bool {
        let metrics = self.metrics().await;
        metrics
            .lines()
            .any(|l| l == "waiting_room_admitter_leader 1")
    }

    /// A request to `path` with the operator's token.
    pub fn as_operator(&self, method: Method, path: &str) -> RequestBuilder {
        self.client
            .request(method, self.url(path))
            .bearer_auth(&self.admin_token)
    }

    /// `POST` to one of a show's operator routes (`routes::OPEN`, `routes::CLOSE`).
    pub async fn operator(&self, route: &str, show: &str) -> Response {
        let path = routes::show(route, show);
        self.as_operator(Method::POST, &path).send().await.unwrap()
    }

    /// `DELETE` the show, as its operator.
    pub async fn delete_show(&self, show: &str) -> Response {
        let path = routes::show(routes::SHOW, show);
        self.as_operator(Method::DELETE, &path)
            .send()
            .await
            .unwrap()
    }

    /// Creates a show with the server's default settings, closed: fans may join and wait.
    /// The show must be new.
    pub async fn create(&self, show: &str) {
        let path = routes::show(routes::SHOW, show);
        let r = self.as_operator(Method::PUT, &path).send().await.unwrap();
        assert_eq!(r.status(), StatusCode::CREATED, "create {show}");
    }

    /// Creates a show nobody else uses (`{prefix}-…`), closed, with `fans` fans queued; its id.
    pub async fn queued_show(&self, prefix: &str, fans: usize) -> String {
        let show = unique_show(prefix);
        self.create(&show).await;
        self.join_many(&show, fans).await;
        show
    }

    pub async fn open(&self, show: &str) {
        let r = self.operator(routes::OPEN, show).await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT, "open {show}");
    }

    pub async fn close(&self, show: &str) {
        let r = self.operator(routes::CLOSE, show).await;
        assert_eq!(r.status(), StatusCode::NO_CONTENT, "close {show}");
    }

    /// The operator's figures for a show.
    pub async fn stats(&self, show: &str) -> Value {
        let path = routes::show(routes::STATS, show);
        let r = self.as_operator(Method::GET, &path).send().await.unwrap();
        r.json().await.unwrap()
    }

    /// Polls the show's figures until `done` holds, or panics after `within`.
    pub async fn stats_until(
        &self,
        show: &str,
        within: Duration,
        done: impl Fn(&Value) -> bool,
    ) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let stats = self.stats(show).await;
            if done(&stats) {
                return stats;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{show}: not in {within:?}: {stats}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// `PUT …/config` with `body`, as it answers.
    pub async fn put_config(&self, show: &str, body: &Value) -> Response {
        let path = routes::show(routes::CONFIG, show);
        let r = self.as_operator(Method::PUT, &path).json(body);
        r.send().await.unwrap()
    }

    /// Changes a show's settings (asserting 200) and returns its figures.
    pub async fn configure(&self, show: &str, body: Value) -> Value {
        let r = self.put_config(show, &body).await;
        assert_eq!(r.status(), StatusCode::OK, "config of {show}: {body}");
        r.json().await.unwrap()
    }

    pub async fn set_rate(&self, show: &str, rate: u32) -> Response {
        self.put_config(show, &json!({ "admitPerSecond": rate }))
            .await
    }

    pub async fn join(&self, show: &str) -> Response {
        let path = routes::show(routes::JOIN, show);
        self.client.post(self.url(&path)).send().await.unwrap()
    }

    /// Joins and returns the ticket JSON (asserting 202).
    pub async fn join_ok(&self, show: &str) -> Value {
        let r = self.join(show).await;
        assert_eq!(r.status(), StatusCode::ACCEPTED, "join {show}");
        r.json().await.unwrap()
    }

    /// Posts the waiting page's join form, as a browser without JavaScript does.
    pub async fn join_form(&self, show: &str) -> Response {
        let path = routes::show(routes::WAIT_JOIN, show);
        self.client.post(self.url(&path)).send().await.unwrap()
    }

    /// Joins `n` fans and returns their tickets, in queue order.
    pub async fn join_many(&self, show: &str, n: usize) -> Vec<String> {
        let mut tickets = Vec::with_capacity(n);
        for _ in 0..n {
            tickets.push(ticket_id(&self.join_ok(show).await));
        }
        tickets
    }

    pub async fn ticket(&self, show: &str, ticket: &str) -> Response {
        self.get(&routes::ticket(routes::TICKET, show, ticket))
            .await
    }

    pub async fn ticket_json(&self, show: &str, ticket: &str) -> Value {
        self.ticket(show, ticket).await.json().await.unwrap()
    }

    pub async fn leave(&self, show: &str, ticket: &str) -> Response {
        let path = routes::ticket(routes::TICKET, show, ticket);
        self.client.delete(self.url(&path)).send().await.unwrap()
    }

    /// Reads `fan`'s pushes from `pushed` on until a poll of `ticket` says what was last
    /// pushed, and answers them (`pushed` first). A tick may come between a push and the poll
    /// that checks it: the poll is then a move ahead, and that move's push follows. Panics if
    /// no poll agrees within twenty tries.
    pub async fn agreed(
        &self,
        show: &str,
        ticket: &str,
        fan: &mut SseReader,
        pushed: SseEvent,
    ) -> Vec<SseEvent> {
        let mut read = vec![pushed];
        for _ in 0..20 {
            let polled = self.ticket_json(show, ticket).await;
            if read.last().is_some_and(|e| e.data == polled) {
                return read;
            }
            read.extend(fan.drain(Duration::from_millis(100)).await);
        }
        panic!("no poll said what was last pushed: {read:?}");
    }

    /// Follows a ticket over SSE.
    pub async fn events(&self, show: &str, ticket: &str) -> SseReader {
        let url = self.url(&routes::ticket(routes::EVENTS, show, ticket));
        SseReader::connect(&self.client, &url, None).await
    }

    /// An order of `hold` on `show` for caio@example.com, with `ticket` as the admission.
    pub async fn order(&self, show: &str, hold: &str, ticket: Option<&str>) -> Response {
        self.order_as(show, hold, "caio@example.com", ticket).await
    }

    /// An order of `hold` on `show` for `email`, with `ticket` as the admission.
    pub async fn order_as(
        &self,
        show: &str,
        hold: &str,
        email: &str,
        ticket: Option<&str>,
    ) -> Response {
        let mut req = self.client.post(self.url(routes::ORDERS)).json(&json!({
            "showId": show, "holdId": hold, "customerEmail": email, "amount": 350.00
        }));
        if let Some(t) = ticket {
            req = req.header(ADMISSION_HEADER, t);
        }
        req.send().await.unwrap()
    }

    /// `POST …/redeem` with `admission` (a pass or a ticket id) in `X-Admission-Ticket`.
    pub async fn redeem(&self, show: &str, admission: Option<&str>) -> Response {
        let mut req = self
            .client
            .post(self.url(&routes::show(routes::REDEEM, show)));
        if let Some(a) = admission {
            req = req.header(ADMISSION_HEADER, a);
        }
        req.send().await.unwrap()
    }

    /// `GET …/pass` with `pass` in `X-Admission-Ticket`.
    pub async fn check_pass(&self, show: &str, pass: &str) -> Response {
        self.client
            .get(self.url(&routes::show(routes::PASS_CHECK, show)))
            .header(ADMISSION_HEADER, pass)
            .send()
            .await
            .unwrap()
    }

    /// Polls until the ticket is admitted, or panics after `within`.
    pub async fn wait_admitted(&self, show: &str, ticket: &str, within: Duration) -> Value {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let t = self.ticket_json(show, ticket).await;
            if t["status"] == "ADMITTED" {
                return t;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "not admitted in {within:?}: {t}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

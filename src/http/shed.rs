//! Shedding: a bound on the fans' requests at work on this instance at once (`MAX_STORE_CALLS`).
//!
//! Each of the crowd's requests (a join, a poll, a stream opening, the waiting page) is one
//! or two store calls. When the store or this instance's CPU cannot keep up, queueing them
//! only makes every one of them late: they pile up until they time out, and the fans retry
//! into a deeper pile. Past the bound a request is answered at once, without touching the
//! store, with `503` and a `Retry-After` drawn between one and a few seconds, so the fans
//! told to come back do not all come back in the same second. The operator's routes, the
//! health checks and an admitted fan's order, pass check and redemption are never shed: the
//! first two must answer under load, the last are as few as the admission rate makes them.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tokio::sync::Semaphore;

use crate::error::AppError;
use crate::metrics::Metrics;

/// The shortest and longest `Retry-After` of a shed request, in seconds.
const RETRY_SECONDS: (u64, u64) = (1, 5);

/// The bound and what it counts. Cheap to clone; every clone is the same bound.
#[derive(Clone)]
pub struct Shed {
    /// `None`: no bound (`MAX_STORE_CALLS=0`).
    permits: Option<Arc<Semaphore>>,
    metrics: Arc<Metrics>,
}

impl Shed {
    /// At most `max` of the crowd's requests at work at once; 0: no bound.
    pub fn new(max: u32, metrics: Arc<Metrics>) -> Self {
        let permits = (max > 0).then(|| Arc::new(Semaphore::new(max as usize)));
        Shed { permits, metrics }
    }

    /// Runs `request` if a place is free, else answers 503 at once. The place is held until
    /// the handler has answered (a stream's head): what a stream does afterwards is the hub's.
    pub(crate) async fn run(self, request: Request, next: Next) -> Response {
        let Some(permits) = &self.permits else {
            return next.run(request).await;
        };
        let Ok(_place) = permits.clone().try_acquire_owned() else {
            self.metrics.shed();
            let wait = rand::random_range(RETRY_SECONDS.0..=RETRY_SECONDS.1);
            return AppError::Overloaded(Duration::from_secs(wait)).into_response();
        };
        let _counted = self.metrics.at_work();
        next.run(request).await
    }
}

//! hyper's timer for the request-head deadline (`HEADER_TIMEOUT`), moved lazily. hyper sets the
//! deadline again at every request of a kept-alive connection; tokio's timer, asked to move an
//! entry, takes it out of its wheel and puts it back, and wakes its driver when the new
//! deadline comes before the one it sleeps towards (a write to an eventfd, then one more turn
//! of the poll loop: seen on about one request in five of the gateway bench). A deadline that
//! only moves later is just noted here: the entry fires at the old one, finds it early and is
//! set to the real one then, so a busy connection touches tokio's wheel about once a
//! `HEADER_TIMEOUT` instead of at every request. It never fires before its deadline.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use hyper::rt::{Sleep, Timer};
use tokio::time::Instant;

/// hyper's [`Timer`] on tokio's, with deadlines moved lazily.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct LazyTimer;

impl Timer for LazyTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn Sleep>> {
        Box::pin(LazySleep::new(Instant::now() + duration))
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn Sleep>> {
        Box::pin(LazySleep::new(Instant::from_std(deadline)))
    }

    fn reset(&self, sleep: &mut Pin<Box<dyn Sleep>>, new_deadline: std::time::Instant) {
        match sleep.as_mut().downcast_mut_pin::<LazySleep>() {
            Some(lazy) => lazy.get_mut().reset(Instant::from_std(new_deadline)),
            None => *sleep = self.sleep_until(new_deadline),
        }
    }
}

/// A sleep until `deadline`, whose tokio entry may be set earlier than it.
struct LazySleep {
    entry: Pin<Box<tokio::time::Sleep>>,
    deadline: Instant,
}

impl LazySleep {
    fn new(deadline: Instant) -> Self {
        LazySleep {
            entry: Box::pin(tokio::time::sleep_until(deadline)),
            deadline,
        }
    }

    fn reset(&mut self, deadline: Instant) {
        // Earlier than the entry: it must fire sooner, so it is moved now.
        if deadline < self.entry.deadline() {
            self.entry.as_mut().reset(deadline);
        }
        self.deadline = deadline;
    }
}

impl Future for LazySleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            ready!(self.entry.as_mut().poll(cx));
            if Instant::now() >= self.deadline {
                return Poll::Ready(());
            }
            // Fired at a deadline since moved later: set to the real one, and wait again.
            let deadline = self.deadline;
            self.entry.as_mut().reset(deadline);
        }
    }
}

impl Sleep for LazySleep {}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_deadline_moved_later_fires_then_and_not_before() {
        let timer = LazyTimer;
        let start = Instant::now();
        let mut sleep = timer.sleep(Duration::from_secs(10));
        // Moved later twice, as a kept-alive connection's requests do.
        tokio::time::sleep(Duration::from_secs(4)).await;
        timer.reset(&mut sleep, (start + Duration::from_secs(14)).into_std());
        timer.reset(&mut sleep, (start + Duration::from_secs(20)).into_std());
        sleep.as_mut().await;
        let slept = Instant::now() - start;
        assert!(
            slept >= Duration::from_secs(20) && slept < Duration::from_millis(20_010),
            "{slept:?}"
        );
        // Moved earlier: fires at the earlier one.
        let start = Instant::now();
        let mut sleep = timer.sleep(Duration::from_secs(30));
        timer.reset(&mut sleep, (start + Duration::from_secs(3)).into_std());
        sleep.as_mut().await;
        let slept = Instant::now() - start;
        assert!(
            slept >= Duration::from_secs(3) && slept < Duration::from_millis(3_010),
            "{slept:?}"
        );
    }
}

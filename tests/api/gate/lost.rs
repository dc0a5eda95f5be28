//! What Redis forgets never opens the gate: a restart that lost every key, and a show fenced
//! above the admitter's counter.

use std::time::Duration;

use reqwest::StatusCode;
use waiting_room::protocol::routes;

use super::{admitted_fan, json_of};
use crate::support::app::{config, spawn_app_with};
use crate::support::backend::Backend;
use crate::support::ticket_id;

/// The admission time of `Config::for_tests()`.
const TTL: Duration = Duration::from_secs(300);

#[tokio::test]
async fn redis_forgetting_never_opens_the_gate() {
    let mut app = spawn_app_with(Backend::Redis, config(1, TTL)).await;
    app.open("show-42").await;
    let admitted = admitted_fan(&app, "show-42").await;
    app.set_rate("show-42", 1).await;
    let waiting = app.join_many("show-42", 3).await;
    // Hold the admitter back, so the fans stay queued: close the show, follow the last fan.
    app.close("show-42").await;
    app.open("show-42").await;
    let mut stream = app.events("show-42", waiting.last().unwrap()).await;
    assert_eq!(
        stream.next(Duration::from_secs(2)).await.unwrap().event,
        "waiting"
    );
    assert_eq!(app.get(routes::READYZ).await.status(), StatusCode::OK);

    // Redis restarts with nothing: wr:open is gone, the queue too.
    app.redis.as_mut().unwrap().server_mut().restart().await;
    // Within a few seconds every instance knows, and says so.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        // While the store reconnects it is unready; then ready again, naming the loss (an
        // instance that serves stays in its balancer: the operator must reach it to re-open).
        let ready = app.get(routes::READYZ).await;
        if ready.status() == StatusCode::OK {
            let text = ready.text().await.unwrap();
            if text.contains("show-42") {
                assert!(text.contains("lost"), "{text}");
                break;
            }
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "readyz never said the show was lost"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The gate stays shut: no ticket, the old admission, anything: 503 saying why.
    for ticket in [None, Some(admitted.as_str())] {
        let r = app.order("show-42", "hold-0100", ticket).await;
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE, "{ticket:?}");
        let msg = json_of(r).await["message"].as_str().unwrap().to_owned();
        assert!(msg.contains("lost") && msg.contains("re-open"), "{msg}");
    }
    assert_eq!(
        app.join("show-42").await.status(),
        StatusCode::SERVICE_UNAVAILABLE
    );
    let stats = app.stats("show-42").await;
    assert_eq!(
        (stats["lost"].as_bool(), stats["open"].as_bool()),
        (Some(true), Some(false))
    );
    let metrics = app.metrics().await;
    assert!(
        metrics.contains("waiting_room_show_lost{show=\"show-42\"} 1"),
        "{metrics}"
    );
    // The stream of a ticket the store no longer knows is told so, never admitted.
    let told = stream
        .next(Duration::from_secs(3))
        .await
        .expect("the follower is told");
    assert_eq!(told.event, "unknown", "{told:?}");
    // The admitter admits nothing from a queue that restarted from nothing.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert_eq!(app.stats("show-42").await["admittedValid"], 0);

    // The operator re-opens deliberately: a new queue, the gate shut again.
    app.open("show-42").await;
    let ready = app.get(routes::READYZ).await;
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(ready.text().await.unwrap(), "ready");
    let stats = app.stats("show-42").await;
    assert_eq!(
        (stats["lost"].as_bool(), stats["open"].as_bool()),
        (Some(false), Some(true))
    );
    let no_ticket = app.order("show-42", "hold-0100", None).await;
    assert_eq!(no_ticket.status(), StatusCode::FORBIDDEN);
    let old = app.order("show-42", "hold-0100", Some(&admitted)).await;
    assert_eq!(
        old.status(),
        StatusCode::FORBIDDEN,
        "an admission of the old epoch opens nothing"
    );
    // New joins reuse the old sequence numbers; the old tickets stay unknown when those are
    // admitted.
    let fresh = ticket_id(&app.join_ok("show-42").await);
    app.wait_admitted("show-42", &fresh, Duration::from_secs(3))
        .await;
    for old in &waiting {
        assert_eq!(app.ticket_json("show-42", old).await["status"], "UNKNOWN");
    }
    app.stop().await;
}

#[tokio::test]
async fn a_show_fenced_above_the_counter_heals_and_never_starves_the_others() {
    let app = spawn_app_with(Backend::Redis, config(2, TTL)).await;
    app.open("stuck").await;
    app.open("other").await;
    // Let the admitter lead, then lose the {admitter} slot's keys while the show keeps its
    // fence: the next leader's token is far below it.
    let first = admitted_fan(&app, "other").await;
    let mut conn = app.redis.as_ref().unwrap().server().conn().await;
    let _: () = ::redis::cmd("SET")
        .arg("wr:{stuck}:fence")
        .arg(1000)
        .query_async(&mut conn)
        .await
        .unwrap();
    let _: () = ::redis::cmd("DEL")
        .arg("wr:{admitter}:fence")
        .arg("wr:{admitter}:lease")
        .query_async(&mut conn)
        .await
        .unwrap();
    let stuck = app.join_many("stuck", 3).await;
    let other = app.join_many("other", 3).await;
    // The other show is served all along, and the stuck one heals within a few ticks.
    for t in &other {
        app.wait_admitted("other", t, Duration::from_secs(4)).await;
    }
    for t in &stuck {
        app.wait_admitted("stuck", t, Duration::from_secs(6)).await;
    }
    let token: u64 = ::redis::cmd("GET")
        .arg("wr:{admitter}:fence")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(token > 1000, "the healed token passed the fence: {token}");
    assert_ne!(first, stuck[0]);
    app.stop().await;
}

/// The list of open shows lost the show alone (on a cluster it lives on another node): the
/// watchdog puts it back from the show's own state, and the admitter serves it again.
#[tokio::test]
async fn an_open_show_the_open_list_forgot_is_served_again() {
    let app = spawn_app_with(Backend::Redis, config(1, TTL)).await;
    app.open("listed").await;
    let mut conn = app.redis.as_ref().unwrap().server().conn().await;
    let removed: i64 = ::redis::cmd("SREM")
        .arg("wr:open")
        .arg("listed")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert_eq!(removed, 1);
    let fan = ticket_id(&app.join_ok("listed").await);
    app.wait_admitted("listed", &fan, Duration::from_secs(4))
        .await;
    let open: bool = ::redis::cmd("SISMEMBER")
        .arg("wr:open")
        .arg("listed")
        .query_async(&mut conn)
        .await
        .unwrap();
    assert!(open, "the open list was mended");
    app.stop().await;
}

//! `load --bots` against a real server trusting one proxy hop: what a bot address gets under
//! each defence, and that honest fans still join; and `follow::join` solving a challenge.

use std::time::Duration;

use serde_json::json;
use tokio_util::sync::CancellationToken;
use waiting_room::config::Config;
use waiting_room_client::follow::{self, Joined, Transport};
use waiting_room_client::load::{LoadArgs, bots};

use super::args;
use crate::helpers::*;

async fn crowd(
    app: &TestApp,
    show: &str,
    bits: u32,
    tweak: impl FnOnce(&mut LoadArgs),
) -> bots::BotReport {
    let mut a = args(app, show, 4, Transport::Sse);
    a.bots = Some(2);
    a.join_challenge_bits = Some(bits);
    a.join_rate = 4;
    a.duration = Duration::from_secs(2);
    tweak(&mut a);
    bots::run(&a, CancellationToken::new()).await.unwrap()
}

#[tokio::test]
async fn a_bot_crowd_meets_each_defence() {
    let app = spawn_app_configured(Config {
        trusted_proxy_hops: 1,
        ..Config::for_tests()
    })
    .await;
    // No proof brought: every bot join is 428, no place; the honest fans solve and join.
    let r = crowd(&app, "b1", 8, |_| {}).await;
    assert_eq!(r.bot_places, 0, "{r}");
    assert!(r.bot_joins > 0);
    assert_eq!(
        r.bot_answers.keys().copied().collect::<Vec<_>>(),
        [428],
        "{r}"
    );
    assert_eq!((r.fans_joined, r.fans_refused), (4, 0), "{r}");
    // Solving: places, each paid for with a solved challenge.
    let r = crowd(&app, "b2", 8, |a| a.bots_solve = true).await;
    assert!(r.bot_places > 0 && r.bot_solve_ms > 0.0, "{r}");
    assert_eq!(r.bot_answers.get(&202), Some(&r.bot_places), "{r}");
    // One Idempotency-Key per bot: one place per bot address, whatever it sends.
    let r = crowd(&app, "b3", 0, |a| a.bots_idempotency_key = true).await;
    assert_eq!(r.bot_places, 2, "{r}");
    assert!(r.bot_answers.get(&200).copied().unwrap_or(0) > 0, "{r}");
    // The stats agree: 2 bot places and 4 honest fans.
    assert_eq!(app.stats("b3").await["joined"], 6);
}

#[tokio::test]
async fn a_fan_client_solves_the_challenge_when_asked() {
    let app = spawn_app().await;
    app.configure("pow", json!({"joinChallengeBits": 10})).await;
    let client = follow::http_client(None).unwrap();
    let joined = follow::join(&client, &base(&app), &show("pow"), None)
        .await
        .unwrap();
    assert!(matches!(joined, Joined::Ticket(_)), "{joined:?}");
    assert_eq!(app.stats("pow").await["joined"], 1);
}

/// A fan's join asked again under its `Idempotency-Key` (its answer lost, say) gets the same
/// ticket and takes no second place, the challenge solved again included; without a key,
/// a second join is a second place.
#[tokio::test]
async fn a_join_asked_again_under_its_key_keeps_one_place() {
    let app = spawn_app().await;
    app.configure("keyed", json!({"joinChallengeBits": 8}))
        .await;
    let client = follow::http_client(None).unwrap();
    let ticket = |joined: Joined| match joined {
        Joined::Ticket(t) => t.ticket_id,
        other => panic!("a ticket, not {other:?}"),
    };
    let (url, keyed) = (base(&app), show("keyed"));
    let join = |key| follow::join(&client, &url, &keyed, key);
    let first = ticket(join(Some("fan-1")).await.unwrap());
    let again = ticket(join(Some("fan-1")).await.unwrap());
    assert_eq!(first, again);
    assert_eq!(app.stats("keyed").await["queueLength"], 1);
    let other = ticket(join(None).await.unwrap());
    assert_ne!(other, first);
    assert_eq!(app.stats("keyed").await["queueLength"], 2);
}

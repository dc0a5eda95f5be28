//! A Redis Cluster with replicas keeps the sale going through a master's death: three
//! masters with a replica each (`--cluster-replicas 1`), real processes all, the server on the
//! cluster. The master owning the show's slot is SIGKILLed while fans join and the show
//! admits; its replica is promoted by the cluster itself.

use std::time::Duration;

use tokio::time::Instant;

use crate::failover::{FansDuring, admission_resumes, every_place_kept, join_until_placed};
use crate::support::process::ServerProcess;
use crate::support::redis::RedisCluster;

#[tokio::test]
async fn a_cluster_master_killed_mid_sale_loses_no_acknowledged_join() {
    let mut cluster = RedisCluster::start_with_replicas(1).await;
    let urls = cluster.urls();
    let server = ServerProcess::start(&urls, 3, &[("REDIS_CLUSTER", "true")]).await;
    server.open("cf").await;
    let mut placed = Vec::new();
    let mut statuses = Vec::new();
    for i in 0..30 {
        let (t, seen) = join_until_placed(&server, "cf", &format!("before-{i}")).await;
        placed.push(t);
        statuses.extend(seen);
    }
    let fans = FansDuring::start(&server, "cf");
    // Some joins before the death, then the master owning the show's slot dies.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let key = "wr:{cf}:meta";
    let (dead, held) = cluster.kill_owner(key).await;
    let killed = Instant::now();
    let promoted = cluster
        .wait_promoted(key, dead, Duration::from_secs(30))
        .await;
    let took_over = killed.elapsed();
    assert_ne!(promoted, dead);
    // Fans go on joining until the server places a fresh one again on the new master.
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let probe = server.join("cf").await;
        if probe.status().is_success() {
            placed.push(crate::support::ticket_id(&probe.json().await.unwrap()));
            break;
        }
        assert!(
            Instant::now() < deadline,
            "joins never came back: {probe:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let joins_back = killed.elapsed();
    let (more, seen) = fans.stop(&server, "cf").await;
    placed.extend(more);
    statuses.extend(seen);
    admission_resumes(&server, "cf", Duration::from_secs(10)).await;
    every_place_kept(&server, "cf", &placed, &statuses).await;
    eprintln!(
        "replica promoted after {took_over:?}, joins placed again after {joins_back:?}; \
         {} joins, {} answers 503",
        placed.len(),
        statuses.iter().filter(|&&s| s == 503).count()
    );
    drop(server);
    drop(cluster);
    drop(held);
}

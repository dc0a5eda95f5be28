//! What operators look at (deploy/): every metric the Grafana dashboard and the alert rules
//! read is one a real server exports, the files the compose topology mounts hang together,
//! and the store's outage is a figure of `/metrics`, not a failed scrape.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use waiting_room::protocol::routes;

use crate::support::app::spawn_app;
use crate::support::backend::Backend;
use crate::support::{ticket_id, unique_show};

both_stores!(every_metric_the_dashboard_and_the_alerts_read_is_exported);

/// Series Prometheus makes itself for every target.
const PROMETHEUS_OWN: &[&str] = &["up"];

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

fn read_json(path: &str) -> Value {
    let text = std::fs::read_to_string(deploy(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn read_yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(deploy(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every `expr` in the dashboard, wherever a panel (or a row's panel) holds it.
fn dashboard_queries() -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(expr)) = map.get("expr") {
                    out.push(expr.clone());
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(
        &read_json("deploy/grafana/dashboards/waiting-room.json"),
        &mut out,
    );
    out
}

/// Every alert rule's name and expression.
fn alert_rules() -> Vec<(String, String)> {
    let rules = read_yaml("deploy/prometheus/alerts.yml");
    let groups = rules["groups"].as_array().expect("alerts.yml: groups");
    groups
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("a group's rules").iter())
        .map(|r| {
            let name = r["alert"].as_str().expect("an alert's name").to_owned();
            let expr = r["expr"].as_str().expect("an alert's expr").to_owned();
            (name, expr)
        })
        .collect()
}

/// The metric names a PromQL expression reads: identifiers outside strings, label matchers
/// `{…}`, ranges `[…]` and the label lists of `by`, `without`, `on`, `ignoring`,
/// `group_left` and `group_right`, that are neither keywords (aggregations among them) nor
/// called (functions). Grafana's `$variables` and numbers (`0.99`, `5m`) are no names either.
fn metric_names(expr: &str) -> BTreeSet<String> {
    const LABEL_LISTS: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    // Aggregations may be followed by their label list (`sum by (show) (…)`), not `(`.
    const KEYWORDS: &[&str] = &[
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "atan2",
        "inf",
        "nan",
        "Inf",
        "NaN",
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    ];
    let c: Vec<char> = expr.chars().collect();
    let ident = |ch: char| ch.is_ascii_alphanumeric() || ch == '_' || ch == ':';
    // The index just past the `close` that ends what opens at `i`, strings skipped.
    let past = |mut i: usize, close: char| {
        i += 1;
        while i < c.len() && c[i] != close {
            if matches!(c[i], '"' | '\'' | '`') {
                let quote = c[i];
                i += 1;
                while i < c.len() && c[i] != quote {
                    i += if c[i] == '\\' { 2 } else { 1 };
                }
            }
            i += 1;
        }
        i + 1
    };
    let mut names = BTreeSet::new();
    let mut label_list_next = false;
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            '{' => i = past(i, '}'),
            '[' => i = past(i, ']'),
            '(' if label_list_next => {
                label_list_next = false;
                i = past(i, ')');
            }
            '"' | '\'' | '`' => i = past(i, c[i]),
            ch if ch == '$' || ch.is_ascii_digit() || ch == '.' => {
                i += 1;
                while i < c.len() && (ident(c[i]) || c[i] == '.') {
                    i += 1;
                }
            }
            ch if ident(ch) => {
                let start = i;
                while i < c.len() && ident(c[i]) {
                    i += 1;
                }
                let word: String = c[start..i].iter().collect();
                let next = c[i..].iter().find(|ch| !ch.is_whitespace());
                if LABEL_LISTS.contains(&word.as_str()) {
                    label_list_next = next == Some(&'(');
                } else if !KEYWORDS.contains(&word.as_str()) && next != Some(&'(') {
                    names.insert(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}

/// The sample names `/metrics` exports: from each family's `# TYPE` line (with the suffixes
/// its type gives its samples), and every sample line itself.
fn exported_names(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (Some(family), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total", "_created"],
                "histogram" => &["_bucket", "_sum", "_count", "_created"],
                "summary" => &["", "_sum", "_count", "_created"],
                _ => &[""],
            };
            names.extend(suffixes.iter().map(|s| format!("{family}{s}")));
        } else if !line.starts_with('#') && !line.is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            names.insert(line[..end].to_owned());
        }
    }
    names
}

#[test]
fn metric_names_come_out_of_promql() {
    let names = |e: &str| metric_names(e).into_iter().collect::<Vec<_>>();
    assert_eq!(
        names(
            r#"histogram_quantile(0.99, sum by (instance, le) (rate(a_bucket{job="x{y}"}[$__rate_interval])))"#
        ),
        ["a_bucket"]
    );
    assert_eq!(
        names(
            "max by (show) (q) > 0 unless on (show) sum by (show) (increase(adm_total[5m] offset 1m)) > 0"
        ),
        ["adm_total", "q"]
    );
    assert_eq!(
        names("(sum(leader) or vector(0)) == 0 and up == bool 1"),
        ["leader", "up"]
    );
    assert_eq!(
        names("sum(x) without (a, b) / ignoring(c) group_left y"),
        ["x", "y"]
    );
}

#[test]
fn exported_names_carry_their_type_suffixes() {
    let text = "# TYPE a counter\n# TYPE h histogram\nh_bucket{le=\"1\"} 0\ng{x=\"1\"} 2\n";
    let names = exported_names(text);
    for name in ["a_total", "h_bucket", "h_sum", "h_count", "g"] {
        assert!(names.contains(name), "{name} in {names:?}");
    }
    assert!(!names.contains("a"), "a counter's samples end in _total");
}

/// A real server with an open show, a fan waiting and one following over SSE: every family
/// has a series, and every name a dashboard panel or an alert rule reads is among them.
async fn every_metric_the_dashboard_and_the_alerts_read_is_exported(backend: Backend) {
    let app = spawn_app(backend).await;
    let show = unique_show("dash");
    app.create(&show).await;
    app.open(&show).await;
    let fan = ticket_id(&app.join_ok(&show).await);
    let mut events = app.events(&show, &fan).await;
    events
        .next(Duration::from_secs(5))
        .await
        .expect("the first event");
    app.wait_admitted(&show, &fan, Duration::from_secs(5)).await;
    let text = app.metrics().await;
    let exported = exported_names(&text);
    for line in ["waiting_room_store_up 1", "waiting_room_admitter_leader 1"] {
        assert!(text.lines().any(|l| l == line), "{line} in {text}");
    }

    let dashboard = dashboard_queries();
    assert!(
        dashboard.len() >= 9,
        "the dashboard's queries: {dashboard:?}"
    );
    let alerts = alert_rules();
    let named: BTreeSet<&str> = alerts.iter().map(|(n, _)| n.as_str()).collect();
    for alert in [
        "WaitingRoomNoLeader",
        "WaitingRoomQueueNotDraining",
        "WaitingRoomStoreUnreachable",
    ] {
        assert!(named.contains(alert), "{alert} among {named:?}");
    }
    let queries = dashboard
        .iter()
        .map(|q| ("dashboard".to_owned(), q.clone()))
        .chain(alerts);
    let mut read = BTreeSet::new();
    for (whose, expr) in queries {
        let names = metric_names(&expr);
        assert!(!names.is_empty(), "{whose}: `{expr}` reads no metric");
        for name in names {
            assert!(
                exported.contains(&name) || PROMETHEUS_OWN.contains(&name.as_str()),
                "{whose}: `{expr}` reads {name}, which the server does not export:\n{text}"
            );
            read.insert(name);
        }
    }
    // What the issue asks the operators to see is among what they read.
    for name in [
        "waiting_room_queue_length",
        "waiting_room_admissions_total",
        "waiting_room_connected_fans",
        "waiting_room_hub_lag_milliseconds_bucket",
        "waiting_room_admitter_leader",
        "waiting_room_store_up",
        "waiting_room_store_errors_total",
    ] {
        assert!(read.contains(name), "nothing reads {name}: {read:?}");
    }
    drop(events);
    app.stop().await;
}

/// Redis gone: `/metrics` still answers, saying so (and counting the failed calls), rather
/// than failing the scrape and leaving the dashboard blank.
#[tokio::test]
async fn metrics_say_when_the_store_is_down() {
    let mut app = spawn_app(Backend::Redis).await;
    let show = unique_show("down");
    app.create(&show).await;
    app.open(&show).await;
    app.join_ok(&show).await;
    let before = app.metrics().await;
    assert!(
        before.contains(&format!("waiting_room_queue_length{{show=\"{show}\"}}")),
        "{before}"
    );

    drop(app.redis.take());
    let r = app.get(routes::METRICS).await;
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(
        text.lines().any(|l| l == "waiting_room_store_up 0"),
        "{text}"
    );
    assert!(
        !text.contains("waiting_room_queue_length{"),
        "no per-show figures without the store: {text}"
    );
    let errors = |text: &str, source: &str| -> u64 {
        let prefix = format!("waiting_room_store_errors_total{{source=\"{source}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .map_or(0, |n| n.trim().parse().unwrap())
    };
    assert!(errors(&text, "metrics") >= 1, "{text}");
    // The watchdog checks every second on its own, scraped or not.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let text = app.metrics().await;
    assert!(errors(&text, "watchdog") >= 1, "{text}");
    app.stop().await;
}

/// The files docker-compose.yaml mounts exist, Prometheus finds its rules and scrapes the
/// service compose runs, and Grafana's dashboard names the datasource it is given.
#[test]
fn the_deploy_files_hang_together() {
    let compose = read_yaml("docker-compose.yaml");
    let services = &compose["services"];
    for service in ["app", "prometheus", "grafana"] {
        assert!(services[service].is_object(), "compose runs {service}");
    }
    for (name, service) in services.as_object().unwrap() {
        for volume in service["volumes"].as_array().into_iter().flatten() {
            let source = volume.as_str().unwrap().split(':').next().unwrap();
            if let Some(path) = source.strip_prefix("./") {
                assert!(
                    deploy(path).exists(),
                    "{name} mounts {source}, which is missing"
                );
            }
        }
    }

    let prometheus = read_yaml("deploy/prometheus/prometheus.yml");
    for file in prometheus["rule_files"].as_array().expect("rule_files") {
        let file = file.as_str().unwrap();
        assert!(deploy("deploy/prometheus").join(file).exists(), "{file}");
    }
    let jobs = prometheus["scrape_configs"]
        .as_array()
        .expect("scrape_configs");
    let sd = &jobs[0]["dns_sd_configs"][0];
    assert_eq!(sd["names"][0], "app", "scrapes every replica of app");
    assert_eq!(sd["port"], 8080, "on the port the app listens on");
    assert_eq!(jobs[0]["metrics_path"], routes::METRICS);

    let datasources = read_yaml("deploy/grafana/provisioning/datasources/prometheus.yml");
    let uid = datasources["datasources"][0]["uid"]
        .as_str()
        .expect("a uid");
    let dashboard = read_json("deploy/grafana/dashboards/waiting-room.json");
    for panel in dashboard["panels"].as_array().unwrap() {
        assert_eq!(panel["datasource"]["uid"], uid, "{}", panel["title"]);
    }
}

/// What compose asks of an operator: `.env.example` names every variable the compose file
/// reads, none of them stops `docker compose down` when missing (`${VAR:?}` would), every
/// service comes back by itself, and the edge's image is an nginx that re-resolves `app`.
#[test]
fn compose_runs_from_an_env_file_and_restarts_by_itself() {
    // What compose interpolates: comments aside.
    let text: String = std::fs::read_to_string(deploy("docker-compose.yaml"))
        .unwrap()
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let example = std::fs::read_to_string(deploy(".env.example")).unwrap();
    let set: BTreeSet<&str> = example
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(name, _)| name.trim()))
        .collect();
    // `${NAME…}`, skipping `$${…}`, which compose leaves to the container's shell.
    let mut read = BTreeSet::new();
    let mut rest = text.as_str();
    while let Some(at) = rest.find("${") {
        let escaped = rest[..at].ends_with('$');
        let after = &rest[at + 2..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap();
        if !escaped {
            read.insert(after[..end].to_owned());
            assert!(
                !after[end..].starts_with(":?") && !after[end..].starts_with('?'),
                "${{{}:?}} would stop `docker compose down` without it",
                &after[..end]
            );
        }
        rest = &after[end..];
    }
    assert!(read.contains("ADMIN_TOKEN"), "{read:?}");
    for name in &read {
        assert!(set.contains(name.as_str()), ".env.example lacks {name}");
    }

    let compose = read_yaml("docker-compose.yaml");
    for (name, service) in compose["services"].as_object().unwrap() {
        assert_eq!(service["restart"], "unless-stopped", "{name} restarts");
    }
    let nginx = std::fs::read_to_string(deploy("deploy/nginx.conf")).unwrap();
    if nginx.contains(" resolve;") {
        // `resolve` in an upstream came to open-source nginx in 1.27.3.
        let image = compose["services"]["lb"]["image"].as_str().unwrap();
        let version = image
            .strip_prefix("nginx:")
            .and_then(|v| v.split('-').next())
            .unwrap();
        let parts: Vec<u32> = version.split('.').map(|p| p.parse().unwrap()).collect();
        assert!(
            parts.as_slice() >= [1, 27, 3].as_slice(),
            "{image} cannot re-resolve app"
        );
    }
    let ignored = std::fs::read_to_string(deploy(".dockerignore")).unwrap();
    assert!(
        ignored.lines().any(|l| l.trim() == ".env"),
        "the operator token stays out of the image"
    );
}

/// The alert rules pass their own unit tests (`deploy/prometheus/alerts.test.yml`) and the
/// scrape config is one Prometheus takes, by Prometheus's own `promtool` (scripts/test.sh
/// installs it with Debian's `prometheus`).
#[test]
fn the_alert_rules_pass_their_unit_tests_in_promtool() {
    let promtool = std::env::var("PROMTOOL").unwrap_or_else(|_| "promtool".into());
    for args in [
        vec!["test", "rules", "alerts.test.yml"],
        vec!["check", "rules", "alerts.yml"],
    ] {
        let out = std::process::Command::new(&promtool)
            .args(&args)
            .current_dir(deploy("deploy/prometheus"))
            .output()
            .expect("promtool runs (scripts/test.sh installs Debian's prometheus)");
        assert!(
            out.status.success(),
            "promtool {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

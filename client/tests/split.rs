//! The server and the clients apart: the server package's normal dependencies (what its
//! binary links) include none of the crates only the clients need.

use std::path::Path;
use std::process::Command;

/// Crates the clients bring that the server must not link. (Not `backon`: the server has it
/// through `redis`.)
const CLIENT_ONLY: [&str; 5] = [
    "reqwest",
    "plotters",
    "indicatif",
    "hdrhistogram",
    "eventsource-stream",
];

/// `cargo tree -p waiting-room -e normal`, one crate name a line.
fn server_tree() -> Vec<String> {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&workspace)
        .args(["tree", "--offline", "-p", "waiting-room", "-e", "normal"])
        .args(["--prefix", "none", "--format", "{p}"])
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
        .collect()
}

#[test]
fn the_server_links_none_of_the_clients_crates() {
    let tree = server_tree();
    // Not an empty answer: the server's own crates are there.
    for server in ["waiting-room", "axum", "redis", "askama"] {
        assert!(
            tree.iter().any(|c| c == server),
            "{server} missing: {tree:?}"
        );
    }
    for client in CLIENT_ONLY {
        assert!(
            !tree.iter().any(|c| c == client),
            "the server links {client}"
        );
    }
}

//! The per-show scripts as one library of Redis Functions (Redis ≥ 7): loaded with `FUNCTION
//! LOAD REPLACE` when the store connects (on every primary of a cluster), and again when Redis
//! answers that a function is missing (it restarted empty, or a failover promoted a node that
//! never had it); each call is an `FCALL` by name. The prelude is run once a load rather than
//! once a call, and the store's settings are decoded once (`bind` in `prelude.lua`). On an older
//! Redis every script runs by SHA with the prelude in front (`show_script!` in `mod.rs`).
//!
//! The library's name and its functions' carry a hash of its text, so instances of two versions
//! of this program sharing one Redis (a rolling deploy) each call their own.

use std::sync::{Arc, LazyLock};

use futures::future::BoxFuture;
use redis::aio::ConnectionLike;
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{MultipleNodeRoutingInfo, ResponsePolicy, RoutingInfo};
use redis::{Cmd, RedisError, Script, ServerError};

use crate::store::Result;

/// Every per-show script: its name (its file, `<name>.lua`, in the folder of its concern) and
/// its body.
pub(super) const SCRIPTS: [(&str, &str); 32] = [
    ("add_codes", include_str!("../codes/add_codes.lua")),
    ("admit", include_str!("../queue/admit.lua")),
    ("bypass", include_str!("../queue/bypass.lua")),
    ("challenge", include_str!("../shows/challenge.lua")),
    ("check", include_str!("../shows/check.lua")),
    ("close", include_str!("../shows/close.lua")),
    ("code_counts", include_str!("../codes/code_counts.lua")),
    (
        "close_pre_queue",
        include_str!("../draw/close_pre_queue.lua"),
    ),
    ("configure", include_str!("../shows/configure.lua")),
    ("delete", include_str!("../shows/delete.lua")),
    ("draw", include_str!("../draw/draw.lua")),
    ("due_events", include_str!("../shows/due_events.lua")),
    ("end", include_str!("../shows/end.lua")),
    ("is_admitted", include_str!("../queue/is_admitted.lua")),
    ("join", include_str!("../queue/join.lua")),
    ("leave", include_str!("../queue/leave.lua")),
    ("mend", include_str!("../lineage/mend.lua")),
    ("meta", include_str!("../shows/meta.lua")),
    ("notify", include_str!("../queue/notify.lua")),
    ("open", include_str!("../shows/open.lua")),
    ("order", include_str!("../orders/order.lua")),
    ("pace", include_str!("../shows/pace.lua")),
    ("page", include_str!("../pages/page.lua")),
    ("pause", include_str!("../shows/pause.lua")),
    ("presence", include_str!("../presence/presence.lua")),
    ("redeem", include_str!("../orders/redeem.lua")),
    ("schedule", include_str!("../draw/schedule.lua")),
    ("set_page", include_str!("../pages/set_page.lua")),
    ("snapshot", include_str!("../feed/snapshot.lua")),
    ("stats", include_str!("../shows/stats.lua")),
    ("status", include_str!("../queue/status.lua")),
    ("touch", include_str!("../queue/touch.lua")),
];

/// The per-show scripts that write nothing, registered `no-writes`: like a script run by SHA,
/// which Redis refuses only at its first write, they still answer when Redis is out of memory.
const READ_ONLY: [&str; 7] = [
    "challenge",
    "code_counts",
    "is_admitted",
    "meta",
    "page",
    "snapshot",
    "stats",
];

/// The helpers every per-show script runs with, and `bind`, which names its keys and arguments.
pub(super) const PRELUDE: &str = include_str!("prelude.lua");

/// The library: its text, and the prefix of its functions' names.
pub(super) struct Library {
    text: String,
    prefix: String,
}

/// This program's library.
pub(super) static LIBRARY: LazyLock<Library> = LazyLock::new(|| {
    let mut code = String::from(PRELUDE);
    for (name, body) in SCRIPTS {
        let flags = if READ_ONLY.contains(&name) {
            "{'no-writes'}"
        } else {
            "{}"
        };
        code.push_str(&format!(
            "do\n  local body = function()\n{body}\nend\n  \
             redis.register_function{{function_name = '{{prefix}}{name}', flags = {flags},\n    \
             callback = function(keys, argv)\n      bind(keys, argv)\n      \
             return cjson.encode(body())\n    end}}\nend\n"
        ));
    }
    // A SHA-1 of the code, as `redis::Script` works it out.
    let version = Script::new(&code).get_hash()[..12].to_owned();
    let prefix = format!("wr_{version}_");
    Library {
        text: format!(
            "#!lua name=waiting_room_{version}\n{}",
            code.replace("{prefix}", &prefix)
        ),
        prefix,
    }
});

impl Library {
    /// `FCALL` of the script `name` with the shared key and argument layout of `prelude.lua`.
    pub(super) fn call(&self, name: &str, keys: &[String], shared: &str, own: &str) -> Cmd {
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(format!("{}{name}", self.prefix)).arg(keys.len());
        for key in keys {
            cmd.arg(key);
        }
        cmd.arg(shared).arg(own);
        cmd
    }

    pub(super) fn load(&self) -> Cmd {
        let mut cmd = redis::cmd("FUNCTION");
        cmd.arg("LOAD").arg("REPLACE").arg(&self.text);
        cmd
    }
}

/// Loads the library where the store's scripts run.
pub(super) type Loader = Arc<dyn Fn() -> BoxFuture<'static, Result<()>> + Send + Sync>;

/// Loads the library on the one server (or the primary) `conn` reaches.
pub(super) fn loader<C: ConnectionLike + Clone + Send + Sync + 'static>(conn: C) -> Loader {
    Arc::new(move || {
        let mut conn = conn.clone();
        Box::pin(async move {
            let _: String = LIBRARY.load().query_async(&mut conn).await?;
            Ok(())
        })
    })
}

/// Loads the library on every primary of a cluster: a show's calls go to the node of its slot.
pub(super) fn cluster_loader(conn: ClusterConnection) -> Loader {
    Arc::new(move || {
        let mut conn = conn.clone();
        Box::pin(async move {
            let every_primary = RoutingInfo::MultiNode((
                MultipleNodeRoutingInfo::AllMasters,
                Some(ResponsePolicy::AllSucceeded),
            ));
            conn.route_command(LIBRARY.load(), every_primary).await?;
            Ok(())
        })
    })
}

/// The text of the per-show script `name`.
pub(super) fn body(name: &str) -> Option<&'static str> {
    SCRIPTS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, body)| *body)
}

/// Whether Redis answered that it holds no such function (the library must be loaded).
pub(super) fn is_missing(e: &RedisError) -> bool {
    e.to_string().contains("Function not found")
}

/// The same, for an error in a pipeline's replies.
pub(super) fn is_missing_reply(e: &ServerError) -> bool {
    e.details()
        .is_some_and(|d| d.starts_with("Function not found"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.lua` file under `src/store/`, by name, with its text.
    fn lua_files(dir: &std::path::Path, into: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                lua_files(&path, into);
            } else if let Some(name) = path
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .strip_suffix(".lua")
            {
                into.push((name.to_owned(), std::fs::read_to_string(&path).unwrap()));
            }
        }
    }

    /// Every per-show script of the store's folders is in the library, under its file's
    /// name and with its text, and nothing else is.
    #[test]
    fn the_library_holds_every_per_show_script() {
        let mut files = Vec::new();
        lua_files(
            std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/store")),
            &mut files,
        );
        // The prelude, and the scripts that serve no show (run by SHA, keys of their own).
        files.retain(|(f, _)| {
            !["prelude", "lease", "release", "limit", "pass_keys"].contains(&f.as_str())
        });
        files.sort();
        let mut scripts: Vec<(String, String)> = SCRIPTS
            .iter()
            .map(|(n, body)| (n.to_string(), body.to_string()))
            .collect();
        scripts.sort();
        assert_eq!(files, scripts);
    }

    #[test]
    fn every_function_is_named_with_the_librarys_version() {
        let header = LIBRARY.text.lines().next().unwrap();
        let version = &LIBRARY.prefix["wr_".len()..LIBRARY.prefix.len() - 1];
        assert_eq!(header, format!("#!lua name=waiting_room_{version}"));
        assert!(!LIBRARY.text.contains("{prefix}"));
        let cmd = LIBRARY.call("join", &["k".into()], "{}", "{}");
        let args: Vec<_> = cmd.args_iter().collect();
        assert_eq!(args.len(), 6);
    }
}

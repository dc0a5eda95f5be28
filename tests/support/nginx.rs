//! The project's own `deploy/nginx.conf` in a real nginx, in front of test servers: the
//! upstream and the port are the only lines changed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::free_port;

/// A real nginx on a free port, killed when dropped.
pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    /// The internal port (`listen 8081;` in `deploy/nginx.conf`: the console and metrics),
    /// when the file has one.
    pub internal: Option<SocketAddr>,
    dir: PathBuf,
}

impl Nginx {
    /// `deploy/nginx.conf` with `app:8080` replaced by `upstreams` (`127.0.0.1:port` each)
    /// and its ports by free ones.
    pub async fn start(upstreams: &[SocketAddr]) -> Nginx {
        Nginx::start_file("nginx.conf", upstreams, &[]).await
    }

    /// `deploy/{file}` with `app:8080` replaced by `upstreams` and each `(from, to)` of
    /// `also` replaced.
    pub async fn start_file(
        file: &str,
        upstreams: &[SocketAddr],
        also: &[(&str, String)],
    ) -> Nginx {
        let mut conf = std::fs::read_to_string(
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("deploy")
                .join(file),
        )
        .expect("a file of deploy/");
        for (from, to) in also {
            assert!(conf.contains(from), "{from} is not in deploy/{file}");
            conf = conf.replace(from, to);
        }
        let servers: String = upstreams
            .iter()
            .map(|a| format!("server {a};\n        "))
            .collect();
        let port = free_port();
        // `resolve` asks Docker's DNS again and again (nginx 1.27.3 or later); the test's
        // upstreams are addresses, which need no resolving (and the nginx here may be older).
        let internal = conf
            .contains("listen 8081;")
            .then(|| SocketAddr::from(([127, 0, 0, 1], free_port())));
        let mut conf = conf
            .replace("server app:8080 resolve;\n        ", &servers)
            .replace("server app:8080;\n        ", &servers)
            .replace("listen 8080;", &format!("listen 127.0.0.1:{port};"));
        if let Some(internal) = internal {
            conf = conf.replace("listen 8081;", &format!("listen {internal};"));
        }
        assert!(!conf.contains("app:8080"), "the upstream line moved");
        assert!(
            conf.contains(&format!("127.0.0.1:{port}")),
            "the listen line moved"
        );
        Nginx::run(&conf, port, internal).await
    }

    /// An nginx of `conf` (a whole `nginx.conf` but its globals) whose one server listens on
    /// `LISTEN` (replaced by a free loopback address): a shop's own origin, say.
    pub async fn start_config(conf: &str) -> Nginx {
        let port = free_port();
        let conf = conf.replace("LISTEN", &format!("127.0.0.1:{port}"));
        Nginx::run(&conf, port, None).await
    }

    async fn run(conf: &str, port: u16, internal: Option<SocketAddr>) -> Nginx {
        let dir = std::env::temp_dir().join(format!("wr-nginx-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(dir.join("logs")).unwrap();
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let prefix = dir.to_str().unwrap().to_owned();
        let globals = format!(
            "daemon off; master_process off; pid {prefix}/nginx.pid; \
             error_log {prefix}/logs/error.log;"
        );
        let child = Command::new(nginx_binary())
            .args(["-p", &prefix, "-c", path.to_str().unwrap(), "-g", &globals])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("nginx starts (scripts/test.sh installs it)");
        // Owned at once: a panic below still ends it (Drop).
        let nginx = Nginx {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
            internal,
            dir,
        };
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(nginx.addr).await.is_ok() {
                return nginx;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("nginx did not listen on {}", nginx.addr);
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// `path` on the internal port.
    pub fn internal_url(&self, path: &str) -> String {
        let internal = self.internal.expect("this nginx file has an internal port");
        format!("http://{internal}{path}")
    }
}

fn nginx_binary() -> String {
    std::env::var("NGINX").unwrap_or_else(|_| {
        ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| std::path::Path::new(p).exists())
            .unwrap_or("nginx")
            .to_owned()
    })
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

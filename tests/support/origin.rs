//! A shop's origin as a real process (`origin.py` or `wsgi_origin.py` beside this file, on
//! Python 3's standard library): what gateway mode and the edge pass requests on to.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

/// The origin process on a free loopback port, killed when dropped.
pub struct Origin {
    child: Child,
    pub addr: SocketAddr,
}

impl Origin {
    /// `origin.py`: echoes, streams, revokes, a WebSocket.
    pub fn start() -> Origin {
        Origin::start_script("origin.py")
    }

    /// `wsgi_origin.py`: a stdlib wsgiref application, which reads `X_A` as `X-A`.
    pub fn start_wsgi() -> Origin {
        Origin::start_script("wsgi_origin.py")
    }

    fn start_script(name: &str) -> Origin {
        let script = format!("{}/tests/support/{name}", env!("CARGO_MANIFEST_DIR"));
        let mut child = Command::new("python3")
            .arg(script)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the test origin");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .expect("the origin prints its port");
        let port: u16 = line.trim().parse().expect("a port");
        Origin {
            child,
            addr: SocketAddr::from(([127, 0, 0, 1], port)),
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The paths the origin was asked for, in order.
    pub async fn seen(&self) -> Vec<String> {
        reqwest::get(format!("{}/seen", self.url()))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    }

    /// Stops it (an origin that went away).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Origin {
    fn drop(&mut self) {
        self.stop();
    }
}

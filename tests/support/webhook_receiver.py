"""The operator's webhook as a stand-in, checked against an independent JOSE library: each
call's bearer token is verified (PyJWT, EdDSA) with the JWK Set given as the first argument,
the key its `kid` names, and `aud` its own URL.

Prints its port on start. POST /<scenario> is the hook; what it answers depends on how many
calls that path has had:
  /ok        201
  /flaky     503, 503, then 200
  /limited   429 with Retry-After: 0, then 200
  /bad       400, always
  /down      500, always
GET /received answers the records, in order."""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt

JWKS = json.loads(sys.argv[1])
RECEIVED = []
LOCK = threading.Lock()

SCRIPTS = {
    "/ok": [(201, {})],
    "/flaky": [(503, {}), (503, {}), (200, {})],
    "/limited": [(429, {"Retry-After": "0"}), (200, {})],
    "/bad": [(400, {})],
    "/down": [(500, {})],
}


def verify(authorization: str, audience: str):
    scheme, _, token = authorization.partition(" ")
    if scheme != "Bearer":
        raise ValueError("not a bearer token")
    kid = jwt.get_unverified_header(token)["kid"]
    jwk = next(k for k in JWKS["keys"] if k["kid"] == kid)
    key = jwt.PyJWK(jwk)
    claims = jwt.decode(
        token,
        key=key,
        algorithms=["EdDSA"],
        audience=audience,
        options={"require": ["aud", "exp", "iat", "iss"]},
    )
    return kid, claims


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, headers=None, body=b""):
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/received":
            with LOCK:
                body = json.dumps(RECEIVED).encode()
            self.answer(200, {"Content-Type": "application/json"}, body)
        else:
            self.answer(404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        port = self.server.server_address[1]
        record = {"path": self.path, "body": json.loads(body or b"null")}
        try:
            url = f"http://127.0.0.1:{port}{self.path}"
            record["kid"], record["claims"] = verify(
                self.headers.get("Authorization", ""), url
            )
        except Exception as e:
            record["error"] = f"{type(e).__name__}: {e}"
        with LOCK:
            seen = sum(1 for r in RECEIVED if r["path"] == self.path)
            RECEIVED.append(record)
        script = SCRIPTS.get(self.path, [(404, {})])
        status, headers = script[min(seen, len(script) - 1)]
        self.answer(status, headers)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

"""A push service stand-in, checked against independent implementations: it makes a
subscription of its own (a P-256 key pair and an auth secret, as a browser would), and for
each push it is sent verifies the VAPID token (PyJWT, ES256, with the key of the `k=`
parameter), decrypts the body (http-ece, aes128gcm) and records what it found.

Prints one line of JSON on start: {"port": …, "subscription": <PushSubscription JSON>}.
GET /received answers the list of records; POST /push/<id> is the endpoint (201 when the
push verified and decrypted, 400 otherwise)."""

import base64
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unb64u(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


KEY = ec.generate_private_key(ec.SECP256R1())
AUTH = os.urandom(16)
RECEIVED = []
LOCK = threading.Lock()


def vapid(header: str):
    """The claims of `vapid t=<jwt>, k=<key>`, verified with that key, and the key."""
    scheme, _, params = header.partition(" ")
    if scheme.lower() != "vapid":
        raise ValueError(f"not a vapid authorization: {scheme}")
    fields = dict(p.strip().split("=", 1) for p in params.split(","))
    raw = unb64u(fields["k"])
    public = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), raw)
    header = jwt.get_unverified_header(fields["t"])
    claims = jwt.decode(
        fields["t"],
        key=public,
        algorithms=["ES256"],
        options={"verify_aud": False, "require": ["aud", "exp", "sub"]},
    )
    return header, claims, fields["k"]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", kind="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        if self.path == "/received":
            with LOCK:
                self.answer(200, json.dumps(RECEIVED).encode())
        else:
            self.answer(404)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        record = {
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
        }
        try:
            header, claims, k = vapid(self.headers.get("Authorization", ""))
            record.update(jwtHeader=header, claims=claims, k=k)
            plain = http_ece.decrypt(
                body, private_key=KEY, auth_secret=AUTH, version="aes128gcm"
            )
            record["payload"] = json.loads(plain)
            status = 201
        except Exception as e:  # a record of what failed is what the test reads
            record["error"] = f"{type(e).__name__}: {e}"
            status = 400
        with LOCK:
            RECEIVED.append(record)
        self.answer(status)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    port = server.server_address[1]
    public = KEY.public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
    )
    subscription = {
        "endpoint": f"http://127.0.0.1:{port}/push/{b64u(os.urandom(12))}",
        "expirationTime": None,
        "keys": {"p256dh": b64u(public), "auth": b64u(AUTH)},
    }
    print(json.dumps({"port": port, "subscription": subscription}), flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())

"""A shop's origin for the gateway tests: a real process on a free loopback port.

GET/POST /echo...   JSON of what arrived: method, path, headers, body length and digest.
GET /stream         three chunks, the last only once /release was asked for (streaming).
GET .../done        200 with X-Waiting-Room-Command: revoke (the purchase is done).
GET /status/<n>     answers status n.
GET /slow           answers after 5 s.
GET /big            streams 64 KiB chunks (at most 4 GiB) until done or the connection breaks.
GET /big-outcome    how each /big ended (JSON: "finished" or "aborted"), itself not counted.
GET /ws             a WebSocket that echoes each text frame.
GET /seen           the paths of every request before (JSON), itself not counted.
GET .../raw/<name>  one of RAW's answers, written byte for byte (framing the gateway must read
                    as RFC 9112 says); the connection is closed after those that say so.
HEAD <any>          the head /echo would have, with a Content-Length and no body (.../smuggle:
                    and then a body, itself an answer).
Prints its port on the first line of stdout, then serves until killed.
"""

import base64
import hashlib
import json
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

# name: (the bytes written, whether the connection is closed after them)
RAW = {
    "early-hints": (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"
                    b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhints", False),
    "chunked": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Kind: chunked\r\n\r\n"
                b"5;ext=1\r\nhello\r\n7 \r\n, chunk\r\n0\r\nX-Trailer: t\r\n\r\n", False),
    "until-close": (b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end", True),
    "no-length": (b"HTTP/1.1 200 OK\r\n\r\nread to the close", True),
    "te-and-length": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 99\r\n\r\n"
                      b"5\r\nfirst\r\n0\r\n\r\n", False),
    "two-lengths": (b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", True),
    "bad-length": (b"HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", True),
    "not-http": (b"SSH-2.0-OpenSSH_9.6\r\n\r\n", True),
    "switch": (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n", True),
    "short": (b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort", True),
    "bad-chunk": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n", True),
    "no-content": (b"HTTP/1.1 204 No Content\r\nX-Kind: empty\r\n\r\n", False),
    "not-modified": (b"HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 42\r\n\r\n", False),
    # Kept alive as far as the head says, then closed: as an origin's keep-alive timeout does.
    "then-close": (b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nbye.", True),
    "revoke-chunked": (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nX-Waiting-Room-Command: Revoke\r\n"
                       b"Connection: x-hop\r\nX-Hop: 1\r\nKeep-Alive: timeout=5\r\n\r\n4\r\npaid\r\n0\r\n\r\n", False),
}

released = threading.Event()
seen = []
big = []


class Origin(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length", "0")))

    def echo(self):
        data = self.body()
        report = {
            "method": self.command,
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "length": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        self.reply(200, json.dumps(report).encode(), [("Content-Type", "application/json"),
                                                      ("Connection", "x-origin-hop"),
                                                      ("X-Origin-Hop", "1"),
                                                      ("Keep-Alive", "timeout=5")])

    def do_POST(self):
        seen.append(self.path)
        self.echo()

    def do_HEAD(self):
        seen.append("HEAD " + self.path)
        if self.path.endswith("/smuggle"):
            # A body after a HEAD's head, which is an answer itself: never another fan's.
            forged = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged"
            self.send_response(200)
            self.send_header("Content-Length", str(len(forged)))
            self.end_headers()
            self.wfile.flush()
            time.sleep(0.05)
            self.wfile.write(forged)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "1234")
        self.end_headers()

    def do_PUT(self):
        seen.append(self.path)
        self.echo()

    def do_GET(self):
        path = self.path.split("?")[0]
        if path == "/seen":
            self.reply(200, json.dumps(seen).encode(), [("Content-Type", "application/json")])
            return
        if path == "/big-outcome":
            self.reply(200, json.dumps(big).encode(), [("Content-Type", "application/json")])
            return
        seen.append(self.path)
        if "/raw/" in path:
            answer, close = RAW[path.rsplit("/raw/", 1)[1]]
            self.wfile.write(answer)
            self.wfile.flush()
            if close:
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_WR)
            return
        if path.startswith("/status/"):
            self.reply(int(path.rsplit("/", 1)[1]), b'{"from":"origin"}', [("Content-Type", "application/json")])
        elif path.endswith("/done"):
            self.reply(200, b"thanks", [("X-Waiting-Room-Command", "revoke")])
        elif path == "/release":
            released.set()
            self.reply(204)
        elif path == "/stream":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for part in [b"first\n", b"second\n"]:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
                self.wfile.flush()
            released.wait(30)
            released.clear()
            self.wfile.write(b"5\r\nlast\n\r\n0\r\n\r\n")
        elif path == "/big":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"x" * 65536
            try:
                for _ in range(65536):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                big.append("finished")
            except OSError:
                big.append("aborted")
                self.close_connection = True
        elif path == "/slow":
            time.sleep(5)
            self.reply(200, b"late")
        elif path == "/ws":
            self.websocket()
        else:
            self.echo()

    def websocket(self):
        key = self.headers.get("Sec-WebSocket-Key", "")
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.send_response(101)
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept.decode())
        self.end_headers()
        self.wfile.flush()
        while True:
            head = self.rfile.read(2)
            if len(head) < 2:
                return
            opcode, length = head[0] & 0x0F, head[1] & 0x7F
            if length == 126:
                length = struct.unpack(">H", self.rfile.read(2))[0]
            elif length == 127:
                length = struct.unpack(">Q", self.rfile.read(8))[0]
            mask = self.rfile.read(4) if head[1] & 0x80 else b"\0\0\0\0"
            data = bytes(b ^ mask[i % 4] for i, b in enumerate(self.rfile.read(length)))
            if opcode == 8:
                self.wfile.write(b"\x88\x00")
                return
            reply = b"echo:" + data
            self.wfile.write(bytes([0x81, len(reply)]) + reply if len(reply) < 126 else
                             bytes([0x81, 126]) + struct.pack(">H", len(reply)) + reply)
            self.wfile.flush()


server = ThreadingHTTPServer(("127.0.0.1", 0), Origin)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()

"""A shop's origin on Python's stdlib wsgiref, which folds `_` into `-` in header names (as
CGI does): `X_Admission_Ticket` reaches the application as HTTP_X_ADMISSION_TICKET, the very
variable `X-Admission-Ticket` becomes. Answers every request with the JSON of its HTTP_*
variables and its PATH_INFO. Prints its port on the first line of stdout, then serves until
killed.
"""

import json
import sys
from wsgiref.simple_server import WSGIRequestHandler, make_server


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


def app(environ, start_response):
    seen = {k: v for k, v in environ.items() if k.startswith("HTTP_")}
    seen["PATH_INFO"] = environ.get("PATH_INFO", "")
    body = json.dumps(seen).encode()
    start_response("200 OK", [("Content-Type", "application/json"),
                              ("Content-Length", str(len(body)))])
    return [body]


server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
print(server.server_port, flush=True)
server.serve_forever()

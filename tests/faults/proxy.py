"""A process's request to a server on its own machine sent through HTTP(S)_PROXY.

A server's warm-up or health check calls its own port (sglang's start-up does); with
HTTP_PROXY set and NO_PROXY not naming the local host, requests hands that call to the
proxy. Here the proxy is a closed local port, so requests raises its own ProxyError
(what a proxy that is down, or not reachable from this node, gives).
"""

from __future__ import annotations

import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "proxy"
SERVER_PORT = 29541
PROXY = "http://127.0.0.1:9"  # the discard port: nothing listens there
CASES = (
    FaultCase(
        FAMILY,
        "health_check_through_proxy",
        ("LOCAL_REQUEST_VIA_PROXY",),
        "a local HTTP server's health check with requests under HTTP_PROXY (a closed port)"
        " and NO_PROXY empty",
        env={"HTTP_PROXY": PROXY, "http_proxy": PROXY, "NO_PROXY": "", "no_proxy": ""},
    ),
)


class _Ok(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # http.server's name for the GET handler
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")


def health_check_through_proxy(work: Path) -> None:
    import requests

    server = HTTPServer(("127.0.0.1", SERVER_PORT), _Ok)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    res = requests.get(f"http://127.0.0.1:{SERVER_PORT}/health", timeout=10)
    assert res.status_code == 200, f"{res=}, {res.text=}"


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)

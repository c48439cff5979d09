"""The Hub's client meets a TLS certificate it does not trust (a TLS-inspecting proxy).

A corporate proxy that inspects HTTPS presents its own certificate, signed by a CA the
machine's trust store lacks. Here the driver makes a self-signed certificate for
localhost (`openssl req -x509`), serves HTTPS with it (http.server + ssl) and points
HF_ENDPOINT there; the real huggingface_hub client, under transformers and datasets,
does the handshake and refuses the certificate. Timeouts are short (HF_HUB_ETAG_TIMEOUT,
HF_HUB_DOWNLOAD_TIMEOUT); the client still retries each file 5 times with back-off
(1+2+4+8+8 s), so one file takes about 24 s.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from .case import FaultCase, drive

FAMILY = "hub_tls"
PORT = 29543
MODEL = "Qwen/Qwen2.5-0.5B-Instruct"
_ENV = {
    "HF_ENDPOINT": f"https://localhost:{PORT}",
    "HF_HUB_ETAG_TIMEOUT": "3",
    "HF_HUB_DOWNLOAD_TIMEOUT": "3",
}
_TLS = ("HF_HUB_UNREACHABLE", "HF_HUB_TLS_UNTRUSTED")
CASES = (
    FaultCase(
        FAMILY,
        "tokenizer_untrusted_cert",
        _TLS,
        f"AutoTokenizer.from_pretrained('{MODEL}') with HF_ENDPOINT an HTTPS server whose"
        " certificate is self-signed (as a TLS-inspecting proxy's); not re-caused by the suite:"
        " the client's back-off retries for two files take about 50 s",
        env=_ENV,
        timeout=120,
        live=False,
    ),
    FaultCase(
        FAMILY,
        "hf_hub_download_untrusted_cert",
        _TLS,
        f"hf_hub_download('{MODEL}', 'config.json') with HF_ENDPOINT an HTTPS server whose"
        " certificate is self-signed",
        env=_ENV,
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "load_dataset_untrusted_cert",
        _TLS,
        "datasets.load_dataset('trl-lib/Capybara') with HF_ENDPOINT an HTTPS server whose"
        " certificate is self-signed",
        env=_ENV,
        timeout=90,
    ),
    FaultCase(
        FAMILY,
        "local_tokenizer_ragged_batch",
        (),
        "same endpoint, but the tokenizer is loaded from a local directory; the script asks"
        " for return_tensors='pt' on texts of unequal length without padding (the user's"
        " own bug)",
        env=_ENV,
    ),
)


class _NotFound(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # http.server's name for the GET handler
        self.send_response(404)
        self.end_headers()

    do_HEAD = do_GET

    def log_message(self, format: str, *args: object) -> None:
        pass


def _serve_self_signed(work: Path) -> None:
    import ssl

    cert, key = work / "proxy-cert.pem", work / "proxy-key.pem"
    argv = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1"]
    argv += ["-keyout", str(key), "-out", str(cert), "-subj", "/CN=localhost"]
    subprocess.run(argv, check=True, capture_output=True)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server = ThreadingHTTPServer(("127.0.0.1", PORT), _NotFound)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    # a refused handshake is the client's error to report, not the server's
    server.handle_error = lambda request, client_address: None  # type: ignore[method-assign]
    threading.Thread(target=server.serve_forever, daemon=True).start()


def tokenizer_untrusted_cert(work: Path) -> None:
    from transformers import AutoTokenizer

    _serve_self_signed(work)
    AutoTokenizer.from_pretrained(MODEL)


def hf_hub_download_untrusted_cert(work: Path) -> None:
    from huggingface_hub import hf_hub_download

    _serve_self_signed(work)
    hf_hub_download(MODEL, "config.json")


def load_dataset_untrusted_cert(work: Path) -> None:
    from datasets import load_dataset

    _serve_self_signed(work)
    load_dataset("trl-lib/Capybara", split="train")


def local_tokenizer_ragged_batch(work: Path) -> None:
    from transformers import AutoTokenizer

    from shop_r1.tiny import train_tokenizer

    _serve_self_signed(work)
    train_tokenizer(["click buy now", "search for a red lamp"] * 8).save_pretrained(work / "tok")
    tokenizer = AutoTokenizer.from_pretrained(str(work / "tok"))
    batch = tokenizer(["click buy", "search for a red lamp now"], return_tensors="pt")
    print(batch["input_ids"].shape)


if __name__ == "__main__":
    drive({c.name: globals()[c.name] for c in CASES}, sys.argv)

"""Predictions from an OpenAI-compatible chat endpoint (a vLLM server, or any clone).

Standard library only (urllib + a thread pool): the eval must run where httpx is absent.
Transient failures (timeouts, connection errors, 429, 5xx) are retried with exponential
backoff; a 4xx other than 429 (bad key, unknown model, bad request) is the same for every
request, so it stops the run at once instead of burning retries on thousands of rows.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass

from shop_r1_doctor.api import redact_text
from shop_r1_doctor.errors import ToolError

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class EndpointConfig:
    """Where and how to ask. `api_key` is never printed or written anywhere."""

    url: str  # base URL, e.g. http://127.0.0.1:8000 or http://host:8000/v1
    model: str  # the served model name (vLLM `--served-model-name`)
    api_key: str | None = None
    timeout: float = 60.0  # seconds per request
    retries: int = 3  # extra attempts after the first
    backoff: float = 0.5  # first wait in seconds; doubles each retry
    max_tokens: int = 256
    temperature: float = 0.0  # greedy: evaluation must be reproducible

    def __repr__(self) -> str:  # keep the key out of tracebacks and logs
        return f"EndpointConfig(url={self.url!r}, model={self.model!r}, api_key=<hidden>)"


@dataclass(frozen=True)
class Completion:
    text: str
    error: str | None = None  # set when every attempt failed
    attempts: int = 1


class _Retryable(Exception):
    """A failure worth another attempt."""


def chat_url(base: str) -> str:
    """`http://h:8000`, `http://h:8000/v1` and the full path all mean the same endpoint."""
    base = base.rstrip("/")
    if base.endswith("/chat/completions"):
        return base
    if not base.endswith("/v1"):
        base += "/v1"
    return base + "/chat/completions"


def _post(cfg: EndpointConfig, messages: Sequence[dict]) -> str:
    body = json.dumps(
        {
            "model": cfg.model,
            "messages": list(messages),
            "max_tokens": cfg.max_tokens,
            "temperature": cfg.temperature,
        }
    ).encode()
    headers = {"Content-Type": "application/json"}
    if cfg.api_key:
        headers["Authorization"] = f"Bearer {cfg.api_key}"
    request = urllib.request.Request(chat_url(cfg.url), data=body, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=cfg.timeout) as response:
            payload = json.loads(response.read().decode("utf-8", errors="replace"))
    except urllib.error.HTTPError as exc:
        detail = exc.read()[:300].decode("utf-8", errors="replace")
        message = f"HTTP {exc.code} from {redact_text(chat_url(cfg.url))}: {redact_text(detail)}"
        if exc.code in RETRYABLE_STATUS:
            raise _Retryable(message) from None
        hint = {
            401: "check the API key (--api-key-env names the variable holding it)",
            403: "check the API key (--api-key-env names the variable holding it)",
            404: "check --endpoint and --served-model (GET /v1/models lists the names)",
        }.get(exc.code, "check --endpoint, --served-model and --max-new-tokens")
        raise ToolError(f"{message}; {hint}") from None
    except TimeoutError as exc:  # socket.timeout is an alias since 3.10
        raise _Retryable(f"timed out after {cfg.timeout:g} s") from exc
    except urllib.error.URLError as exc:
        raise _Retryable(f"cannot reach {redact_text(cfg.url)}: {exc.reason}") from exc
    except (ConnectionError, json.JSONDecodeError) as exc:
        raise _Retryable(f"{type(exc).__name__}: {exc}") from exc
    try:
        content = payload["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError) as exc:
        raise _Retryable(f"response without choices[0].message.content: {exc!r}") from exc
    return content if isinstance(content, str) else ""


class _Stopped(Exception):
    """Raised inside a worker's backoff wait once the whole run has been stopped."""


def complete(
    cfg: EndpointConfig, messages: Sequence[dict], *, sleep: Callable[[float], None] = time.sleep
) -> Completion:
    """One chat completion with retries; a request that never succeeds returns its last error."""
    last_error = ""
    for attempt in range(cfg.retries + 1):
        if attempt:
            sleep(cfg.backoff * 2 ** (attempt - 1))
        try:
            return Completion(_post(cfg, messages), attempts=attempt + 1)
        except _Retryable as exc:
            last_error = str(exc)
    return Completion("", error=last_error, attempts=cfg.retries + 1)


def complete_all(
    cfg: EndpointConfig,
    prompts: Sequence[Sequence[dict]],
    *,
    concurrency: int = 8,
    on_done: Callable[[int], None] | None = None,
) -> list[Completion]:
    """All prompts through a thread pool (I/O bound), results in input order."""
    if concurrency < 1:
        raise ToolError(f"--concurrency: {concurrency} must be >= 1")
    results: list[Completion | None] = [None] * len(prompts)
    pool = ThreadPoolExecutor(max_workers=concurrency)
    # Set by the first non-retryable error (and by Ctrl-C): queued prompts then send
    # nothing, so at most one request per worker follows it, however the threads are
    # scheduled; workers waiting out a retry backoff wake at once.
    stop = threading.Event()

    def backoff(seconds: float) -> None:
        if stop.wait(seconds):
            raise _Stopped

    def one(messages: Sequence[dict]) -> Completion | None:
        if stop.is_set():
            return None
        try:
            return complete(cfg, messages, sleep=backoff)
        except _Stopped:
            return Completion("", error="stopped", attempts=0)
        except ToolError:
            stop.set()
            raise

    try:
        futures = {pool.submit(one, p): i for i, p in enumerate(prompts)}
        for future in as_completed(futures):
            # .result() re-raises a ToolError (non-retryable HTTP status): stop everything.
            results[futures[future]] = future.result()
            if on_done is not None:
                on_done(1)
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return [r for r in results if r is not None]

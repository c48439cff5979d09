"""`shop-r1 eval --endpoint` against a local HTTP server speaking the OpenAI chat API.

The server is real (http.server on 127.0.0.1, ephemeral port, in a thread); it answers
with scripted completions and injects 500s and stalled responses to exercise retries.
No assertion depends on how fast a loaded machine is: a stalled response waits for an
event that is only set when the server stops (the client always times out first), and
request counts are bounded by the client's own logic, not by thread scheduling.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_errors import error_line
from typer.testing import CliRunner

from shop_r1.actions import Action
from shop_r1.cli import app
from shop_r1.data.io import write_sessions
from shop_r1.data.synth import generate_sessions
from shop_r1.endpoint import EndpointConfig, chat_url, complete

FAKE_KEY = "sk-" + "test" * 6  # fake; built so no token-shaped literal sits here


class FakeOpenAI:
    """Answers each chat request with the gold action of the step it was asked about.

    `fail_first[key]` = how many times to answer 500 before succeeding; `slow_first[key]`
    = how many times to stall until the server stops (past any client timeout). Keys are
    the last user message.
    """

    def __init__(self, answer, *, status=200, fail_first=0, slow_first=0):
        self.answer, self.status = answer, status
        self.fail_first, self.slow_first = fail_first, slow_first
        self.release = threading.Event()
        self.seen: dict[str, int] = {}
        self.requests: list[dict] = []
        self.auth: list[str | None] = []
        self.lock = threading.Lock()

    def __enter__(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = body["messages"][-1]["content"]
                with fake.lock:
                    fake.requests.append(body)
                    fake.auth.append(self.headers.get("Authorization"))
                    n = fake.seen[key] = fake.seen.get(key, 0) + 1
                if self.path != "/v1/chat/completions" or fake.status != 200:
                    self._reply(fake.status if fake.status != 200 else 404, {"error": "nope"})
                elif n <= fake.fail_first:
                    self._reply(500, {"error": "overloaded"})
                elif n <= fake.fail_first + fake.slow_first:
                    fake.release.wait(60)  # stalled until the server stops
                    self._reply(500, {"error": "too late"})
                else:
                    text = fake.answer(body)
                    self._reply(
                        200, {"choices": [{"message": {"role": "assistant", "content": text}}]}
                    )

            def _reply(self, code, obj):
                data = json.dumps(obj).encode()
                try:
                    self.send_response(code)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client timed out and went away

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def sessions_file(tmp_path: Path) -> Path:
    path = tmp_path / "sessions.jsonl"
    write_sessions(generate_sessions(12, seed=3), path)
    return path


def _oracle(golds: dict[str, Action], wrong_every: int = 0):
    """Answer with the gold action for the prompt; every `wrong_every`-th answer terminates."""
    counter = {"n": 0}
    lock = threading.Lock()

    def answer(body):
        key = body["messages"][-1]["content"]
        gold = golds[key]
        with lock:
            counter["n"] += 1
            n = counter["n"]
        if wrong_every and n % wrong_every == 0 and gold.type != "terminate":
            gold = Action("terminate")
        return json.dumps({"rationale": "I want this.", "action": gold.to_json()})

    return answer


def _golds(path: Path, split: str = "all") -> dict[str, Action]:
    from shop_r1.eval import load_rows

    return {r.messages[-1]["content"]: r.gold for r in load_rows(path, split=split)}


def _best_possible(path: Path) -> float:
    """Exact match of the oracle: first steps of one site look alike but differ in gold
    (the search query is not in the context), so no model can get all of them."""
    from shop_r1.eval import load_rows

    rows = load_rows(path, split="all")
    golds = _golds(path)
    return sum(golds[r.messages[-1]["content"]] == r.gold for r in rows) / len(rows)


def _eval(args: list[str], env: dict | None = None):
    return CliRunner().invoke(app, ["eval", *args], env=env, catch_exceptions=False)


def test_perfect_endpoint_scores_one_and_writes_all_outputs(sessions_file, tmp_path):
    out = tmp_path / "out"
    with FakeOpenAI(_oracle(_golds(sessions_file))) as server:
        result = _eval(
            [
                "--data",
                str(sessions_file),
                "--endpoint",
                server.url + "/v1",
                "--served-model",
                "shop",
                "--output-dir",
                str(out),
                "--split",
                "all",
                "--concurrency",
                "4",
            ],
            env={"OPENAI_API_KEY": FAKE_KEY},
        )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["schema"] == "shop-r1.score/1"
    assert metrics["exact_match"] == pytest.approx(_best_possible(sessions_file))
    assert metrics["exact_match"] > 0.8 and metrics["parse_failure_rate"] == 0.0
    preds = [json.loads(line) for line in (out / "predictions.jsonl").read_text().splitlines()]
    assert len(preds) == metrics["n"] == len(server.requests)
    assert all(r["model"] == "shop" and r["temperature"] == 0.0 for r in server.requests)
    assert set(server.auth) == {f"Bearer {FAKE_KEY}"}
    # The key is sent, never written or printed.
    for name in ("metrics.json", "report.md", "predictions.jsonl"):
        assert "sk-test" not in (out / name).read_text()
    assert "sk-test" not in result.output
    report = (out / "report.md").read_text()
    assert "| exact match |" in report and f"{metrics['exact_match']:.2%}" in report


def test_wrong_answers_lower_exact_match_and_show_in_report(sessions_file, tmp_path):
    out = tmp_path / "out"
    with FakeOpenAI(_oracle(_golds(sessions_file), wrong_every=3)) as server:
        result = _eval(
            [
                "--data",
                str(sessions_file),
                "--endpoint",
                server.url,
                "--served-model",
                "m",
                "--output-dir",
                str(out),
                "--split",
                "all",
                "--concurrency",
                "1",
            ]
        )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0.4 < metrics["exact_match"] < 0.9
    assert metrics["prediction_mix"]["terminate"] > metrics["gold_mix"]["terminate"]
    assert metrics["per_type"]["terminate"]["recall"] == 1.0


def test_500s_and_timeouts_are_retried(sessions_file, tmp_path):
    out = tmp_path / "out"
    with FakeOpenAI(_oracle(_golds(sessions_file)), fail_first=1, slow_first=1) as server:
        result = _eval(
            [
                "--data",
                str(sessions_file),
                "--endpoint",
                server.url,
                "--served-model",
                "m",
                "--output-dir",
                str(out),
                "--split",
                "all",
                "--limit",
                "6",
                "--retries",
                "2",
                "--timeout",
                "2",  # a stalled answer never comes; a local answer takes milliseconds
                "--concurrency",
                "6",
            ]
        )
    assert result.exit_code == 0, result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["n"] == 6 and metrics["parse_failure_rate"] == 0.0
    assert metrics["eval"]["retried_requests"] == 6
    assert metrics["eval"]["request_failures"] == 0
    assert len(server.requests) == 18  # 500, timeout, success for each of 6 prompts


def test_every_request_failing_is_an_error_not_a_score_of_zero(sessions_file, tmp_path):
    out = tmp_path / "out"
    with FakeOpenAI(_oracle(_golds(sessions_file)), fail_first=99) as server:
        result = _eval(
            [
                "--data",
                str(sessions_file),
                "--endpoint",
                server.url,
                "--served-model",
                "m",
                "--output-dir",
                str(out),
                "--split",
                "all",
                "--limit",
                "3",
                "--retries",
                "1",
            ]
        )
    line = error_line(result)
    assert "all 3 request(s) failed" in line and "HTTP 500" in line
    assert not (out / "metrics.json").exists()  # no exact-match 0.0 to be read later


def test_unknown_model_404_stops_at_once_with_one_line(sessions_file, tmp_path):
    with FakeOpenAI(_oracle({}), status=404) as server:
        result = CliRunner().invoke(
            app,
            [
                "eval",
                "--data",
                str(sessions_file),
                "--endpoint",
                server.url,
                "--served-model",
                "nope",
                "--output-dir",
                str(tmp_path / "o"),
                "--split",
                "all",
                "--retries",
                "3",
                "--concurrency",
                "4",
            ],
        )
        line = error_line(result)
        assert "HTTP 404" in line and "--served-model" in line
        # no retries, and after the first 404 no worker starts another request: at most
        # one request per worker (4), whatever the scheduling; 12 sessions have far more
        assert set(server.seen.values()) == {1}
        assert 1 <= len(server.requests) <= 4


def test_needs_exactly_one_source(sessions_file, tmp_path):
    result = CliRunner().invoke(
        app, ["eval", "--data", str(sessions_file), "--output-dir", str(tmp_path)]
    )
    assert "exactly one of --model" in error_line(result)


def test_chat_url_accepts_base_v1_and_full_path():
    full = "http://h:8000/v1/chat/completions"
    assert chat_url("http://h:8000") == chat_url("http://h:8000/v1/") == chat_url(full) == full


def test_unreachable_endpoint_returns_error_after_backoff():
    waits: list[float] = []
    cfg = EndpointConfig(url="http://127.0.0.1:9", model="m", retries=2, backoff=0.5, timeout=1)
    done = complete(cfg, [{"role": "user", "content": "hi"}], sleep=waits.append)
    assert done.text == "" and "cannot reach" in done.error
    assert waits == [0.5, 1.0] and done.attempts == 3
    assert "api_key=<hidden>" in repr(EndpointConfig(url="u", model="m", api_key="sk-secret"))


def test_bad_split_settings_are_one_line_errors(sessions_file, tmp_path):
    for args, needle in (
        (["--split", "dev"], "--split"),
        (["--test-fraction", "1.5"], "--test-fraction"),
        (["--context", "page"], "--context"),
    ):
        result = CliRunner().invoke(
            app,
            [
                "eval",
                "--data",
                str(sessions_file),
                "--endpoint",
                "http://127.0.0.1:9",
                "--served-model",
                "m",
                "--output-dir",
                str(tmp_path),
                *args,
            ],
        )
        assert needle in error_line(result), args

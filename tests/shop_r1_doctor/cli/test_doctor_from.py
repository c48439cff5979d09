"""`shop-r1 doctor --from FILE|-` through the real entry point."""

from __future__ import annotations

import json

from repo_paths import FIXTURES
from typer.testing import CliRunner

from shop_r1_doctor.cli.main import app

REAL = FIXTURES / "real_dumps"


def invoke(*args: str, stdin: str | None = None):
    return CliRunner().invoke(app, ["doctor", *args], input=stdin)


def test_dump_with_an_environment_cause_exits_1_and_names_it():
    result = invoke("--from", str(REAL / "pytorch-30071-titanxp-driver410.txt"))
    assert result.exit_code == 1, result.output
    assert "[DRIVER_TOO_OLD_FOR_TORCH_CUDA]" in result.stdout
    assert "Checked only what" in result.stdout


def test_stdin_and_json():
    text = (REAL / "pytorch-122924-windows-cpu-wheel.txt").read_text(encoding="utf-8")
    result = invoke("--from", "-", "--json", stdin=text)
    assert result.exit_code == 1, result.output
    report = json.loads(result.stdout)
    assert report["snapshot"]["source"]["file"] == "<stdin>"
    assert [f["code"] for f in report["findings"] if f["severity"] == "error"] == [
        "TORCH_CPU_ONLY_BUILD"
    ]


def test_healthy_dump_exits_0():
    result = invoke("--from", str(REAL / "vllm-11959-8x-h100.txt"))
    assert result.exit_code == 0, result.output


def test_not_a_dump_is_one_line_exit_2():
    result = invoke("--from", str(REAL / "vllm-12661-script-source-not-output.txt"))
    assert result.exit_code == 2
    assert result.stdout == ""
    [line] = result.stderr.strip().splitlines()
    assert "vllm-12661-script-source-not-output.txt: no environment dump recognised" in line


def test_malformed_line_names_file_and_line(tmp_path):
    bad = tmp_path / "env.txt"
    bad.write_text(
        "Collecting environment information...\nPyTorch version: two\nIs debug build: False\n"
    )
    result = invoke("--from", str(bad))
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == f"shop-r1: error: {bad}:2: PyTorch version 'two' is not a version"
    )


def test_from_and_snapshot_together_is_refused(tmp_path):
    result = invoke("--from", "-", "--snapshot", str(tmp_path / "x.json"), stdin="")
    assert result.exit_code == 2
    assert "give one" in result.stderr


def test_save_writes_the_partial_snapshot(tmp_path):
    out = tmp_path / "snap.json"
    result = invoke("--from", str(REAL / "trl-2104-trl-env.txt"), "--save", str(out))
    assert result.exit_code == 0, result.output
    snap = json.loads(out.read_text())
    assert snap["source"]["kind"] == "dump" and "driver" not in snap
    # The saved snapshot checks the same way again.
    again = invoke("--snapshot", str(out), "--json")
    assert json.loads(again.stdout)["summary"]["errors"] == 0


def test_secret_in_a_pasted_environment_block_is_redacted(tmp_path):
    dump = tmp_path / "env.txt"
    fake = "hf_" + "Zz9" * 12
    dump.write_text(
        "vLLM Version: 0.10.1\nIs debug build: False\nEnvironment Variables:\n"
        f"HF_TOKEN={fake}\nCUDA_VISIBLE_DEVICES=0\n"
    )
    result = invoke("--from", str(dump), "--json")
    assert fake not in result.stdout
    env = json.loads(result.stdout)["snapshot"]["env"]
    assert env == {"HF_TOKEN": "<redacted>", "CUDA_VISIBLE_DEVICES": "0"}

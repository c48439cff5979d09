"""`shop-r1 report --log LOG --from ENV`: a pasted log joined with the pasted environment
of the machine that wrote it, through the real entry point."""

from __future__ import annotations

import json

from repo_paths import FIXTURES
from typer.testing import CliRunner

from shop_r1_doctor.cli.main import app

# A real collect_env paste (pytorch/pytorch#28321: a T4 on driver 410, torch 1.3.0+cu101)
# and the line torch prints when it sees no usable driver.
T4_ENV = FIXTURES / "real_dumps" / "pytorch-28321-t4-driver410.txt"
NO_DRIVER_LOG = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 3, in <module>\n'
    "    model.cuda()\n"
    "RuntimeError: Found no NVIDIA driver on your system. Please check that you have an"
    " NVIDIA GPU and installed a driver from http://www.nvidia.com/Download/index.aspx\n"
)


def report(*args: str):
    return CliRunner().invoke(app, ["report", *args])


def diagnosis(tmp_path, *extra: str) -> dict:
    log = tmp_path / "issue.log"
    log.write_text(NO_DRIVER_LOG, encoding="utf-8")
    result = report("--log", str(log), "--json", *extra)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_pasted_environment_explains_the_log_as_one_cause(tmp_path):
    doc = diagnosis(tmp_path, "--from", str(T4_ENV))
    lead = doc["causes"][0]
    assert (lead["code"], lead["severity"]) == ("DRIVER_TOO_OLD_FOR_TORCH_CUDA", "error")
    assert {e["source"] for e in lead["evidence"]} == {"log", "doctor"}
    assert doc["log_from_this_machine"] is True
    assert doc["doctor"]["facts_from"] == "the log's machine (pytorch-28321-t4-driver410.txt)"


def test_without_the_environment_the_log_alone_names_no_driver_cause(tmp_path):
    doc = diagnosis(tmp_path, "--fast")
    assert "DRIVER_TOO_OLD_FOR_TORCH_CUDA" not in [c["code"] for c in doc["causes"]]
    assert doc["log_from_this_machine"] is False
    assert doc["doctor"]["facts_from"] == "this machine"


def test_a_profile_deviation_of_a_pasted_environment_is_listed_but_never_a_cause(tmp_path):
    doc = diagnosis(tmp_path, "--from", str(T4_ENV))
    assert "PROFILE_DEVIATION" in [f["code"] for f in doc["doctor"]["findings"]]
    assert "PROFILE_DEVIATION" not in [c["code"] for c in doc["causes"]]


def test_the_markdown_report_names_whose_facts_it_checked(tmp_path):
    log = tmp_path / "issue.log"
    log.write_text(NO_DRIVER_LOG, encoding="utf-8")
    result = report("--log", str(log), "--from", str(T4_ENV))
    assert result.exit_code == 0, result.output
    assert "## The log's machine (pytorch-28321-t4-driver410.txt): doctor findings" in result.stdout
    assert "## This machine" not in result.stdout


def test_from_and_snapshot_together_is_refused(tmp_path):
    log = tmp_path / "issue.log"
    log.write_text(NO_DRIVER_LOG, encoding="utf-8")
    result = report("--log", str(log), "--from", str(T4_ENV), "--snapshot", str(T4_ENV))
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "shop-r1: error: --snapshot and --from both name the machine's facts: give one"
    )


def test_a_paste_no_parser_reads_is_one_line_exit_2(tmp_path):
    log = tmp_path / "issue.log"
    log.write_text(NO_DRIVER_LOG, encoding="utf-8")
    result = report("--log", str(log), "--from", str(log))
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith(f"shop-r1: error: {log}: no environment dump recognised")

"""scripts/resolve_profiles.py --libraries, without the network: what it asks pip to
resolve, the stand-in torch pip really reads, and the one-line skip when no index answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from repo_paths import ROOT, load_script

SCRIPT = ROOT / "scripts" / "resolve_profiles.py"


def _module():
    return load_script("scripts/resolve_profiles.py")


def _names(path) -> set[str]:
    rp = _module()
    return {rp._name(ln) for ln in path.read_text().splitlines() if ln}


def test_libraries_are_everything_but_torch_vllm_and_flash_attn(tmp_path):
    rp = _module()
    req, con, notes, python = rp.library_files("hopper", tmp_path)
    wanted = _names(req)
    assert {"transformers", "trl", "liger-kernel", "accelerate", "datasets"} <= wanted
    assert not wanted & {"torch", "vllm", "flash-attn"}
    pins = con.read_text().splitlines()
    assert "torch==2.11.0+resolvecheck" in pins  # the profile's torch version, as a stand-in
    assert not [p for p in pins if p.startswith(("vllm", "flash-attn"))]
    assert python == "3.12" and any(n.startswith("vLLM 0.26.0: left out") for n in notes)


def test_pip_reads_the_stand_in_torch_without_dependencies(tmp_path):
    rp = _module()
    pin = rp.stub_torch("2.11.0", tmp_path / "wheels")
    out = subprocess.run(
        [
            *(sys.executable, "-m", "pip", "install", "--dry-run", "--report", "-", "--quiet"),
            *("--ignore-installed", "--no-index", "--find-links", str(tmp_path / "wheels"), pin),
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PIP_CONFIG_FILE": os.devnull, "PIP_CONSTRAINT": ""},
    )
    [item] = json.loads(out.stdout)["install"]
    assert item["metadata"]["version"] == "2.11.0+resolvecheck"
    assert not item["metadata"].get("requires_dist")


def test_an_unreachable_index_is_a_one_line_skip(tmp_path):
    env = {
        **os.environ,
        "PIP_CONFIG_FILE": os.devnull,
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",  # nothing listens on port 9
        "PIP_EXTRA_INDEX_URL": "",
        "PIP_FIND_LINKS": "",
    }
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--libraries", "--profile", "cpu", "--timeout", "60"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 3
    assert out.stdout.splitlines() == [
        "skip: the package index is not reachable; no profile was resolved"
    ]

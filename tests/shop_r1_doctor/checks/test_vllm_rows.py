"""Decision rows for the vLLM checks (shop_r1_doctor/checks/vllm.py): each row's codes,
severities and the facts its findings must name; the wording is in
tests/fixtures/golden/checks/vllm.txt.

Worked out by hand from knowledge/compat.yaml as it stands:
- vLLM's torch pin by release (when its Requires-Dist is not in the snapshot): 0.9.x
  torch 2.7.0, 0.10.0-0.10.1 2.7.1, 0.10.2-0.11.0 2.8.0, 0.11.1-0.13 2.9.0; no row past 0.33;
  the range that keeps a torch: 2.8.0 -> >=0.10.2,<0.11.1; 2.9.0 -> >=0.11.1,<0.14 (a
  SpecifierSet prints its clauses sorted: `<0.14,>=0.11.1`); none for torch 2.12;
- expandable segments break vLLM's pool from 0.8 to before 0.21, which handles
  PYTORCH_CUDA_ALLOC_CONF (not PYTORCH_ALLOC_CONF) itself;
- VLLM_ATTENTION_BACKEND: XFORMERS removed after 0.11.1; deprecated from 0.14; ignored
  from 0.26;
- trl < 0.17 reaches into V0 internals that vLLM >= 0.8 no longer runs by default;
- vLLM has no FlashAttention backend for cc 7.0 up to (not including) 8.0."""

from __future__ import annotations

from typing import Any

import pytest
from check_wording import assert_row
from torch_build_facts import A100, H100, NO_CC, P100, T4, V100

from shop_r1_doctor.checks.vllm import (
    attention_backend_env,
    expandable_segments,
    forked_cuda,
    turing_backend,
    v1_engine_vs_trl,
    vllm_import,
    vllm_requested,
    vllm_torch_pin,
    vllm_windows,
    xformers_pin,
)


def dist(version: str | None, *requires: str) -> dict | None:
    return None if version is None else {"version": version, "requires": list(requires)}


def snap(
    torch: str | None = "2.8.0+cu128", vllm: Any = "absent", plan: dict | None = None, **more: Any
) -> dict:
    s: dict = {"host": {"os": "linux"}, "packages": {}, **more}
    if torch is not None:
        s["torch"] = {"version": torch, "cuda": "12.8"}
    if vllm != "absent":
        s["packages"] = {**s["packages"], "vllm": vllm}
    if plan is not None:
        s["plan"] = plan
    return s


USE = {"use_vllm": True}


# ----------------------------------------------------------------- asked for, not installed
def _requested(keep: str | None, spec: str) -> list[tuple]:
    kept = (f"keeps torch {keep}",) if keep else ()
    return [("VLLM_REQUESTED_NOT_INSTALLED", "error", "use_vllm", *kept, spec)]


REQUESTED_ROWS = [
    (
        "torch 2.9.0",
        snap("2.9.0+cu128", None, USE),
        _requested("2.9.0", '"vllm<0.14,>=0.11.1"'),
    ),
    (
        "torch 2.8.0",
        snap("2.8.0+cu128", None, USE),
        _requested("2.8.0", '"vllm<0.11.1,>=0.10.2"'),
    ),
    (
        "torch 2.5.1",
        snap("2.5.1+cu121", None, USE),
        _requested("2.5.1", '"vllm<0.8,>=0.6.4"'),
    ),
    (
        "torch 2.12: no vLLM pins it",
        snap("2.12.0+cu130", None, USE),
        _requested(None, "pip install vllm "),
    ),
    (
        "torch unknown",
        snap(None, None, USE),
        _requested(None, "pip install vllm "),
    ),
    ("installed", snap("2.9.0+cu128", dist("0.11.2"), USE), []),
    ("package list unknown", snap("2.9.0+cu128", plan=USE), []),
    ("the plan does not use vLLM", snap("2.9.0+cu128", None, {"use_vllm": False}), []),
    ("no plan", snap("2.9.0+cu128", None), []),
    # Windows has its own finding
    ("Windows", {**snap("2.9.0+cu128", None, USE), "host": {"os": "windows"}}, []),
]


@pytest.mark.parametrize(("case", "s", "want"), REQUESTED_ROWS, ids=[r[0] for r in REQUESTED_ROWS])
def test_vllm_requested_row(case, s, want):
    assert_row(vllm_requested, s, want)


# ----------------------------------------------------------------- vLLM's torch pin
def _pin(vv: str, spec: str, tv: str, source: str, *fix: str) -> list[tuple]:
    return [("VLLM_INSTALL_SWAPS_TORCH", "error", f"vLLM {vv}", f"torch{spec}", tv, source, *fix)]


TABLE = "compat table: vllm requirements/cuda.txt history"
PIN_ROWS = [
    (
        "Requires-Dist torch==2.7.1, torch 2.8.0",
        snap("2.8.0+cu128", dist("0.10.1", "torch==2.7.1")),
        _pin(
            "0.10.1",
            "==2.7.1",
            "2.8.0+cu128",
            "vllm 0.10.1's Requires-Dist",
            '"torch==2.7.1"',
            '"vllm<0.11.1,>=0.10.2" to keep torch 2.8.0',
        ),
    ),
    ("the pinned torch with a CUDA tag", snap("2.7.1+cu128", dist("0.10.1", "torch==2.7.1")), []),
    (
        "no Requires-Dist: the table (0.9.2 -> 2.7.0)",
        snap("2.7.1+cu128", dist("0.9.2")),
        _pin(
            "0.9.2",
            "==2.7.0",
            "2.7.1+cu128",
            TABLE,
            '"torch==2.7.0"',
            '"vllm<0.10.2,>=0.10.0" to keep torch 2.7.1',
        ),
    ),
    ("the table agrees", snap("2.7.0+cu128", dist("0.9.2")), []),
    ("a release the table does not know", snap("2.7.0+cu128", dist("0.40.0")), []),
    # a requirement for an extra only, or without a version, is not the pin
    (
        "an extra's requirement is skipped",
        snap("2.7.1+cu128", dist("0.9.2", 'torch==2.7.1; extra == "tpu"')),
        _pin(
            "0.9.2",
            "==2.7.0",
            "2.7.1+cu128",
            TABLE,
            '"torch==2.7.0"',
            '"vllm<0.10.2,>=0.10.0" to keep torch 2.7.1',
        ),
    ),
    ("a bare `torch` is skipped", snap("2.7.0+cu128", dist("0.9.2", "torch")), []),
    # the probe drops markers it evaluated; one kept (an older snapshot) that is no extra counts
    (
        "a platform marker is still the pin",
        snap("2.8.0+cu128", dist("0.10.1", 'torch==2.7.1; platform_system == "Linux"')),
        _pin(
            "0.10.1",
            "==2.7.1",
            "2.8.0+cu128",
            "vllm 0.10.1's Requires-Dist",
            '"torch==2.7.1"',
            '"vllm<0.11.1,>=0.10.2" to keep torch 2.8.0',
        ),
    ),
    (
        "an unparseable requirement is skipped, the next one read",
        snap("2.12.0+cu130", dist("0.20.1", "torch ==", "Torch==2.11.0")),
        _pin(
            "0.20.1",
            "==2.11.0",
            "2.12.0+cu130",
            "vllm 0.20.1's Requires-Dist",
            '"torch==2.11.0"',
        ),
    ),
    ("torch unknown", snap(None, dist("0.10.1", "torch==2.7.1")), []),
    ("vLLM not installed", snap("2.8.0+cu128", None), []),
]


@pytest.mark.parametrize(("case", "s", "want"), PIN_ROWS, ids=[r[0] for r in PIN_ROWS])
def test_vllm_torch_pin_row(case, s, want):
    assert_row(vllm_torch_pin, s, want)


# ----------------------------------------------------------------- Windows
WIN = ("VLLM_NATIVE_WINDOWS", "error", "Windows")
WINDOWS_ROWS = [
    (
        "asked for, not installed",
        {"host": {"os": "windows"}, "packages": {"vllm": None}, "plan": USE},
        [WIN],
    ),
    (
        "installed, no plan",
        {"host": {"os": "windows"}, "packages": {"vllm": dist("0.11.2")}},
        [WIN],
    ),
    (
        "neither",
        {"host": {"os": "windows"}, "packages": {"vllm": None}, "plan": {"use_vllm": False}},
        [],
    ),
    ("package list unknown", {"host": {"os": "windows"}}, []),
    ("Linux", {"host": {"os": "linux"}, "packages": {"vllm": dist("0.11.2")}, "plan": USE}, []),
]


@pytest.mark.parametrize(("case", "s", "want"), WINDOWS_ROWS, ids=[r[0] for r in WINDOWS_ROWS])
def test_vllm_windows_row(case, s, want):
    assert_row(vllm_windows, s, want)


# ----------------------------------------------------------------- import
E_TORCH = "ImportError: vllm/_C.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEi"
E_NUMPY = "ImportError: numpy.core.multiarray failed to import"


def _imports(**mods: Any) -> dict:
    return {
        m.replace("__", "."): ({"ok": True} if v is True else {"ok": False, "error": v})
        for m, v in mods.items()
    }


def _import(vllm: str, error: str, severity: str = "warning") -> list[tuple]:
    return [("VLLM_IMPORT_FAILED", severity, vllm, error, "--force-reinstall vllm")]


IMPORT_ROWS = [
    (
        "the kernels fail",
        snap(vllm=dist("0.11.2"), imports=_imports(vllm=True, vllm___custom_ops=E_TORCH)),
        _import("vllm 0.11.2", E_TORCH),
    ),
    (
        "the plan uses vLLM: an error",
        snap(vllm=dist("0.11.2"), plan=USE, imports=_imports(vllm=True, vllm___custom_ops=E_TORCH)),
        _import("vllm 0.11.2", E_TORCH, "error"),
    ),
    (
        "the package fails first: its error",
        snap(
            vllm=dist("0.11.2"),
            imports=_imports(vllm=E_NUMPY, vllm___custom_ops=E_TORCH, vllm___C=E_TORCH),
        ),
        _import("vllm 0.11.2", E_NUMPY),
    ),
    (
        "an older snapshot: vllm._C",
        snap(vllm=dist("0.8.5"), imports=_imports(vllm=True, vllm___C=E_TORCH)),
        _import("vllm 0.8.5", E_TORCH),
    ),
    (
        "version unknown",
        snap(imports=_imports(vllm=E_NUMPY)),
        _import("vllm", E_NUMPY),
    ),
    (
        "all import",
        snap(vllm=dist("0.11.2"), imports=_imports(vllm=True, vllm___custom_ops=True)),
        [],
    ),
    ("not probed", snap(vllm=dist("0.11.2")), []),
    (
        "Windows",
        {**snap(vllm=dist("0.11.2"), imports=_imports(vllm=E_NUMPY)), "host": {"os": "windows"}},
        [],
    ),
]


@pytest.mark.parametrize(("case", "s", "want"), IMPORT_ROWS, ids=[r[0] for r in IMPORT_ROWS])
def test_vllm_import_row(case, s, want):
    assert_row(vllm_import, s, want)


# ----------------------------------------------------------------- expandable segments
RULE = ("<0.21,>=0.8.0", "PR #40812")
ON = "expandable_segments:True"


def _cuda_conf(value: str, name: str, severity: str = "warning", rule: tuple = RULE) -> tuple:
    return ("VLLM_EXPANDABLE_SEGMENTS", severity, f"PYTORCH_CUDA_ALLOC_CONF={value}", name, *rule)


def _alloc_conf(value: str, name: str, severity: str = "warning") -> tuple:
    return ("VLLM_EXPANDABLE_SEGMENTS", severity, f"PYTORCH_ALLOC_CONF={value}", name)


def _seg(vllm: Any, env: dict, plan: dict | None = None) -> dict:
    return snap(vllm=dist(vllm) if isinstance(vllm, str) else vllm, plan=plan, env=env)


SEG_ROWS = [
    (
        "0.10.1, CUDA conf",
        _seg("0.10.1", {"PYTORCH_CUDA_ALLOC_CONF": ON}),
        [_cuda_conf(ON, "vLLM 0.10.1")],
    ),
    (
        "spaces and case",
        _seg(
            "0.10.1",
            {"PYTORCH_CUDA_ALLOC_CONF": "max_split_size_mb:128, Expandable_Segments : TRUE"},
        ),
        [_cuda_conf("max_split_size_mb:128, Expandable_Segments : TRUE", "vLLM 0.10.1")],
    ),
    ("set to False", _seg("0.10.1", {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False"}), []),
    (
        "0.8.0: the first",
        _seg("0.8.0", {"PYTORCH_CUDA_ALLOC_CONF": ON}),
        [_cuda_conf(ON, "vLLM 0.8.0")],
    ),
    ("0.21.0 handles it", _seg("0.21.0", {"PYTORCH_CUDA_ALLOC_CONF": ON}), []),
    (
        "0.20.2: the last",
        _seg("0.20.2", {"PYTORCH_CUDA_ALLOC_CONF": ON}),
        [_cuda_conf(ON, "vLLM 0.20.2")],
    ),
    # before 0.8 no rule: the catalog's general range is named
    (
        "0.7.3: no rule",
        _seg("0.7.3", {"PYTORCH_CUDA_ALLOC_CONF": ON}),
        [_cuda_conf(ON, "vLLM 0.7.3", rule=("0.8-0.20", "vllm PR #14189"))],
    ),
    (
        "not installed, the plan uses it",
        _seg(None, {"PYTORCH_CUDA_ALLOC_CONF": ON}, USE),
        [_cuda_conf(ON, "vLLM", rule=("0.8-0.20", "vllm PR #14189"))],
    ),
    ("neither installed nor planned", _seg(None, {"PYTORCH_CUDA_ALLOC_CONF": ON}), []),
    # PYTORCH_ALLOC_CONF slips past every vLLM
    (
        "0.21.0, the other name",
        _seg("0.21.0", {"PYTORCH_ALLOC_CONF": ON}),
        [_alloc_conf(ON, "vLLM 0.21.0")],
    ),
    (
        "both names",
        _seg("0.10.1", {"PYTORCH_ALLOC_CONF": ON, "PYTORCH_CUDA_ALLOC_CONF": ON}),
        [_alloc_conf(ON, "vLLM 0.10.1"), _cuda_conf(ON, "vLLM 0.10.1")],
    ),
    # a pool (sleep mode, colocate) or custom all-reduce (TP > 1) makes it certain
    (
        "sleep mode",
        _seg("0.10.1", {"PYTORCH_CUDA_ALLOC_CONF": ON}, {"vllm_enable_sleep_mode": True}),
        [_cuda_conf(ON, "vLLM 0.10.1", "error")],
    ),
    (
        "colocate",
        _seg("0.10.1", {"PYTORCH_ALLOC_CONF": ON}, {"vllm_mode": "colocate"}),
        [_alloc_conf(ON, "vLLM 0.10.1", "error")],
    ),
    (
        "TP 2",
        _seg("0.10.1", {"PYTORCH_CUDA_ALLOC_CONF": ON}, {"vllm_tensor_parallel_size": 2}),
        [_cuda_conf(ON, "vLLM 0.10.1", "error")],
    ),
    (
        "server, TP 1, sleep off",
        _seg(
            "0.10.1",
            {"PYTORCH_CUDA_ALLOC_CONF": ON},
            {
                "vllm_mode": "server",
                "vllm_tensor_parallel_size": 1,
                "vllm_enable_sleep_mode": False,
            },
        ),
        [_cuda_conf(ON, "vLLM 0.10.1")],
    ),
    ("nothing set", _seg("0.10.1", {}), []),
    ("empty", _seg("0.10.1", {"PYTORCH_CUDA_ALLOC_CONF": "", "PYTORCH_ALLOC_CONF": ""}), []),
]


@pytest.mark.parametrize(("case", "s", "want"), SEG_ROWS, ids=[r[0] for r in SEG_ROWS])
def test_expandable_segments_row(case, s, want):
    assert_row(expandable_segments, s, want)


# ----------------------------------------------------------------- VLLM_ATTENTION_BACKEND
def _backend(value: str, vv: str, why: str) -> list[tuple]:
    return [("VLLM_ATTENTION_BACKEND_IGNORED", "warning", f"={value} ", f"vLLM {vv}", why)]


REMOVED = "removed after vLLM 0.11.1"
IGNORED = ">= 0.26 ignores"
DEPRECATED = "deprecated since vLLM 0.14"
BACKEND_ROWS = [
    ("XFORMERS", "0.11.1", []),
    ("XFORMERS", "0.11.2", _backend("XFORMERS", "0.11.2", REMOVED)),
    ("xformers", "0.12.0", _backend("xformers", "0.12.0", REMOVED)),
    ("XFORMERS", "0.30.0", _backend("XFORMERS", "0.30.0", REMOVED)),
    ("FLASH_ATTN", "0.13.9", []),
    ("FLASH_ATTN", "0.14.0", _backend("FLASH_ATTN", "0.14.0", DEPRECATED)),
    ("FLASH_ATTN", "0.25.9", _backend("FLASH_ATTN", "0.25.9", DEPRECATED)),
    ("FLASH_ATTN", "0.26.0", _backend("FLASH_ATTN", "0.26.0", IGNORED)),
    ("XFORMERS", "0.11.0", []),
    ("", "0.30.0", []),
]


def _backend_snap(value: str, vv: str) -> dict:
    return snap(vllm=dist(vv), env={"VLLM_ATTENTION_BACKEND": value})


@pytest.mark.parametrize(
    ("value", "vv", "want"), BACKEND_ROWS, ids=[f"{r[0]}-{r[1]}" for r in BACKEND_ROWS]
)
def test_attention_backend_env_row(value, vv, want):
    assert_row(attention_backend_env, _backend_snap(value, vv), want)


def test_attention_backend_env_needs_vllm():
    env = {"VLLM_ATTENTION_BACKEND": "XFORMERS"}
    assert_row(attention_backend_env, snap(vllm=None, env=env, plan=USE), [])
    assert_row(attention_backend_env, snap(vllm=dist("0.30.0"), env={}), [])


# ----------------------------------------------------------------- Volta / Turing
def _turing(name: str, cc: str) -> list[tuple]:
    return [("VLLM_TURING_ATTENTION_BACKEND", "warning", name, f"cc {cc}")]


TURING_ROWS = [
    ("T4", [T4], _turing("Tesla T4", "7.5")),
    ("V100: at the bottom", [V100], _turing("Tesla V100-SXM2-32GB", "7.0")),
    ("A100: not", [A100], []),
    ("P100: below (another finding)", [P100], []),
    ("no cc", [NO_CC], []),
    ("the first one named", [NO_CC, H100, V100, T4], _turing("Tesla V100-SXM2-32GB", "7.0")),
]


@pytest.mark.parametrize(("case", "gpus", "want"), TURING_ROWS, ids=[r[0] for r in TURING_ROWS])
def test_turing_backend_row(case, gpus, want):
    assert_row(turing_backend, snap(vllm=dist("0.10.1"), gpus=gpus), want)
    assert_row(turing_backend, snap(vllm=None, gpus=gpus, plan=USE), want)


def test_turing_backend_needs_vllm():
    assert_row(turing_backend, snap(vllm=None, gpus=[T4]), [])
    assert_row(turing_backend, snap(vllm=None, gpus=[T4], plan={"use_vllm": False}), [])


# ----------------------------------------------------------------- forked workers
FORK = [("VLLM_FORKED_CUDA_REINIT", "warning", "tensor_parallel_size=2", "METHOD=spawn")]
FORK_ROWS = [
    ("TP 2", {"vllm_tensor_parallel_size": 2}, {}, FORK),
    (
        "TP 2, fork asked",
        {"vllm_tensor_parallel_size": 2},
        {"VLLM_WORKER_MULTIPROC_METHOD": "fork"},
        FORK,
    ),
    (
        "TP 2, spawn",
        {"vllm_tensor_parallel_size": 2},
        {"VLLM_WORKER_MULTIPROC_METHOD": "spawn"},
        [],
    ),
    ("TP 1", {"vllm_tensor_parallel_size": 1}, {}, []),
    ("TP unset", {"use_vllm": True}, {}, []),
]


@pytest.mark.parametrize(("case", "plan", "env", "want"), FORK_ROWS, ids=[r[0] for r in FORK_ROWS])
def test_forked_cuda_row(case, plan, env, want):
    assert_row(forked_cuda, snap(plan=plan, env=env), want)


# ----------------------------------------------------------------- trl vs vLLM's V1 engine
def _v1(trl: str, vv: str, severity: str = "warning") -> list[tuple]:
    return [("VLLM_V1_DEFAULT_BREAKS_RL_INTEGRATION", severity, f"trl {trl}", f"vLLM {vv}")]


V1_ROWS = [
    ("trl 0.16.1, vLLM 0.8.0", "0.16.1", "0.8.0", None, _v1("0.16.1", "0.8.0")),
    ("the plan uses vLLM", "0.16.1", "0.10.1", USE, _v1("0.16.1", "0.10.1", "error")),
    ("vLLM 0.7.3: still V0", "0.16.1", "0.7.3", None, []),
    ("trl 0.17.0", "0.17.0", "0.8.0", None, []),
    ("trl 1.16.0", "1.16.0", "0.22.0", USE, []),
    ("no trl", None, "0.8.0", None, []),
    ("no vLLM", "0.16.1", None, USE, []),
]


@pytest.mark.parametrize(
    ("case", "trl", "vv", "plan", "want"), V1_ROWS, ids=[r[0] for r in V1_ROWS]
)
def test_v1_engine_vs_trl_row(case, trl, vv, plan, want):
    assert_row(v1_engine_vs_trl, _v1_snap(trl, vv, plan), want)


def _v1_snap(trl: str | None, vv: str | None, plan: dict | None) -> dict:
    s = snap(vllm=dist(vv), plan=plan)
    s["packages"]["trl"] = dist(trl)
    return s


# ----------------------------------------------------------------- xformers
XF_ROWS = [
    (
        "xformers for torch 2.7.1 on 2.8.0",
        "2.8.0+cu128",
        dist("0.0.31", "numpy", "torch==2.7.1"),
        [("XFORMERS_WHEEL_MISMATCH", "error", "xformers 0.0.31", "torch==2.7.1", "2.8.0+cu128")],
    ),
    ("the torch it wants", "2.7.1+cu128", dist("0.0.31", "torch==2.7.1"), []),
    ("a range that holds", "2.8.0+cu128", dist("0.0.32", "torch>=2.8"), []),
    ("no requirement on torch", "2.8.0+cu128", dist("0.0.31", "numpy"), []),
    (
        "an extra's requirement only",
        "2.8.0+cu128",
        dist("0.0.31", 'torch==2.7.1; extra == "dev"'),
        [],
    ),
    ("torch unknown", None, dist("0.0.31", "torch==2.7.1"), []),
    ("xformers absent", "2.8.0+cu128", None, []),
]


@pytest.mark.parametrize(("case", "torch", "xf", "want"), XF_ROWS, ids=[r[0] for r in XF_ROWS])
def test_xformers_pin_row(case, torch, xf, want):
    assert_row(xformers_pin, _xf_snap(torch, xf), want)


def _xf_snap(torch: str | None, xf: dict | None) -> dict:
    s = snap(torch)
    s["packages"]["xformers"] = xf
    return s


# every row's snapshot, for the wording golden (tests/check_wording.py)
SNAPSHOTS = [
    *[(r[0], r[1]) for r in REQUESTED_ROWS + PIN_ROWS + WINDOWS_ROWS + IMPORT_ROWS + SEG_ROWS],
    *[(f"backend {v} {vv}", _backend_snap(v, vv)) for v, vv, _ in BACKEND_ROWS],
    *[(c, snap(vllm=dist("0.10.1"), gpus=gpus)) for c, gpus, _ in TURING_ROWS],
    *[(c, snap(plan=plan, env=env)) for c, plan, env, _ in FORK_ROWS],
    *[(c, _v1_snap(trl, vv, plan)) for c, trl, vv, plan, _ in V1_ROWS],
    *[(c, _xf_snap(t, xf)) for c, t, xf, _ in XF_ROWS],
]

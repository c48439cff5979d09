"""Decision rows for GRPO with a separate `trl vllm-serve` (TRL_SERVER_MODE_SAME_GPU,
TRL_VLLM_SERVER_UNREACHABLE, the weight-sync port) and
for vLLM engines seen on GPUs (VLLM_ORPHAN_WORKERS_HOLD_GPU), from the generated 2-GPU
launch script run on the 2x H200 (2026-11-23): the server on GPU 0, the trainer started
with CUDA_VISIBLE_DEVICES=1. Its own preflight refused to train ("would share NVIDIA H200
(1 GPU visible)") and told it to kill its own server's engine (pid 1642); see
tests/fixtures/device_logs/h200x2_launch_grpo_server_refused.log."""

from __future__ import annotations

import msgspec
import pytest
from check_wording import facts_in
from snapshots import GIB, NOT_PROBED, gpu, proc
from snapshots import facts as snapshot_facts
from snapshots import plan as run_plan

from shop_r1_doctor.checks.gpu_driver import gpu_processes
from shop_r1_doctor.checks.plan import server_ports_clash, server_same_gpu, server_unreachable
from shop_r1_doctor.facts import Facts, GpuFacts, GpuProcess

H200 = "NVIDIA H200"
ENGINE = proc(1642, "VLLM::EngineCore", 127 * GIB)
OTHER = proc(900, "python", 60 * GIB)  # another user's job
SMALL = proc(901, "python", 2 * GIB)  # under a tenth of the GPU


def _gpu(index: int, *processes: GpuProcess) -> GpuFacts:
    used = sum(p.used_bytes for p in processes if isinstance(p.used_bytes, int))
    return gpu(H200, "9.0", index, 141 * GIB, used, procs=list(processes))


def _facts(gpus: list[GpuFacts], cvd: str | None, procs: int = 1, mode: str = "server") -> Facts:
    env = {} if cvd is None else {"CUDA_VISIBLE_DEVICES": cvd}
    return snapshot_facts(
        gpus=gpus,
        env=env,
        plan=run_plan(task="grpo", use_vllm=True, vllm_mode=mode, num_processes=procs),
    )


def _codes(check, facts: Facts) -> list[str]:
    return [f.code for f in check(facts)]


# (case, gpus, CUDA_VISIBLE_DEVICES, training processes, TRL_SERVER_MODE_SAME_GPU expected)
SERVER_ROWS = [
    ("launch script's trainer: GPU 1 visible, server on hidden GPU 0",
     [_gpu(0, ENGINE), _gpu(1)], "1", 1, False),
    ("trainer on GPU 1 before the server started: GPU 0 hidden and free",
     [_gpu(0), _gpu(1)], "1", 1, False),
    ("one GPU on the machine, nothing hidden", [_gpu(0)], None, 1, True),
    ("two GPUs, both visible, one trainer: one spare", [_gpu(0), _gpu(1)], None, 1, False),
    ("two GPUs, both visible, two trainers: none spare", [_gpu(0), _gpu(1)], None, 2, True),
    ("two GPUs, CUDA_VISIBLE_DEVICES=0,1, two trainers", [_gpu(0), _gpu(1)], "0,1", 2, True),
    ("server started on GPU 0, trainer sees both and takes GPU 0",
     [_gpu(0, ENGINE), _gpu(1)], None, 1, True),
    ("server started on GPU 1, trainer takes GPU 0", [_gpu(0), _gpu(1, ENGINE)], None, 1, False),
    ("server and trainer both pinned to GPU 1", [_gpu(0), _gpu(1, ENGINE)], "1", 1, True),
    # a GPU CUDA_VISIBLE_DEVICES hides is the server's only if no other program holds it
    ("trainer on GPU 1, hidden GPU 0 held by another job", [_gpu(0, OTHER), _gpu(1)], "1", 1,
     True),
    ("hidden GPU 0 holds a small process", [_gpu(0, SMALL), _gpu(1)], "1", 1, False),
    ("hidden GPU 0 held by another job and by the server's engine",
     [_gpu(0, ENGINE, OTHER), _gpu(1)], "1", 1, False),
    ("two hidden GPUs, one held, one free", [_gpu(0, OTHER), _gpu(1), _gpu(2)], "2", 1, False),
    ("4 GPUs, two trainers on 2,3, hidden 0 and 1 both held",
     [_gpu(0, OTHER), _gpu(1, OTHER), _gpu(2), _gpu(3)], "2,3", 2, True),
    ("hidden GPU 0's memory in use, no process listed (the server in another container?)",
     [gpu(H200, "9.0", 0, 141 * GIB, 100 * GIB, procs=[]), _gpu(1)], "1", 1, False),
]  # fmt: skip


@pytest.mark.parametrize(
    ("gpus", "cvd", "procs", "expected"),
    [row[1:] for row in SERVER_ROWS],
    ids=[row[0] for row in SERVER_ROWS],
)
def test_server_mode_same_gpu_rows(gpus, cvd, procs, expected):
    found = list(server_same_gpu(_facts(gpus, cvd, procs)))
    assert [f.code for f in found] == (["TRL_SERVER_MODE_SAME_GPU"] if expected else [])
    assert all(f.severity == "error" and f.fix for f in found)


def test_the_held_hidden_gpu_is_named_with_its_process():
    (f,) = server_same_gpu(_facts([_gpu(0, OTHER), _gpu(1)], "1"))
    assert facts_in(f, "GPU 0 (python pid 900)", "CUDA_VISIBLE_DEVICES") == []


def test_a_server_on_another_machine_takes_no_gpu_here():
    def on(host: str | None = None, url: str | None = None) -> list[str]:
        plan = run_plan(
            task="grpo",
            use_vllm=True,
            vllm_mode="server",
            num_processes=1,
            vllm_server_host=host,
            vllm_server_base_url=url,
        )
        return _codes(server_same_gpu, snapshot_facts(gpus=[_gpu(0)], plan=plan))

    assert on("10.0.0.5") == [] and on(url="http://gpu-node-2:8000") == []
    same = ["TRL_SERVER_MODE_SAME_GPU"]
    assert on("127.0.0.1") == on("localhost") == on(url="http://127.0.0.1:8000") == same
    assert on() == on("0.0.0.0") == same  # TRL's default host is this machine


def test_an_engine_on_the_trainers_gpu_is_named_by_pid():
    (f,) = server_same_gpu(_facts([_gpu(0), _gpu(1, ENGINE)], "1"))
    assert "pid 1642" in f.title and "(GPU 1)" in f.title


def test_colocate_and_no_vllm_never_ask_for_a_second_gpu():
    assert _codes(server_same_gpu, _facts([_gpu(0)], None, mode="colocate")) == []
    no_vllm = snapshot_facts(gpus=[_gpu(0)], plan=run_plan(task="grpo", use_vllm=False))
    assert _codes(server_same_gpu, no_vllm) == []


# (case, gpus, CUDA_VISIBLE_DEVICES, expected codes)
ENGINE_ROWS = [
    ("the trainer's shell hides GPU 0, where its server's engine runs",
     [_gpu(0, ENGINE), _gpu(1)], "1", []),
    ("no CUDA_VISIBLE_DEVICES: an engine on GPU 0 is this run's business",
     [_gpu(0, ENGINE), _gpu(1)], None, ["VLLM_ORPHAN_WORKERS_HOLD_GPU"]),
    ("the engine is on the visible GPU", [_gpu(0), _gpu(1, ENGINE)], "1",
     ["VLLM_ORPHAN_WORKERS_HOLD_GPU"]),
]  # fmt: skip


@pytest.mark.parametrize(
    ("gpus", "cvd", "expected"),
    [row[1:] for row in ENGINE_ROWS],
    ids=[row[0] for row in ENGINE_ROWS],
)
def test_engines_count_only_on_gpus_this_run_can_see(gpus, cvd, expected):
    found = list(gpu_processes(_facts(gpus, cvd)))
    assert [f.code for f in found] == expected
    if expected:
        assert found[0].fix == "kill 1642"


def test_engine_on_the_trainers_gpu_finding_in_full():
    second = proc(1700, "VLLM::Worker", GIB)
    unindexed = msgspec.structs.replace(_gpu(0, ENGINE, second), index=NOT_PROBED)
    (f,) = server_same_gpu(_facts([unindexed], None))
    assert (f.code, f.severity) == ("TRL_SERVER_MODE_SAME_GPU", "error")
    assert f.title == (
        "a vLLM engine (pid 1642, 1700) already runs on NVIDIA H200 (GPU ?), which the "
        "trainer would use"
    )
    assert f.detail == (
        "Weight sync builds an NCCL group across server and trainer: 'Duplicate GPU detected : "
        "rank 1 and rank 0 both on CUDA device' -> NCCL error: invalid usage."
    )
    assert f.fix == (
        "start `trl vllm-serve` with CUDA_VISIBLE_DEVICES on another GPU than the trainer's "
        "(a launch script does: shop-r1 launch grpo --gpus 2)"
    )


# ----------------------------------------------------------------- the server rows by plan and env
ABSENT = object()
H100_GPU = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
H200_GPU = {"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"}


def _found(check, snap: dict) -> list[tuple[str, str, str, str, str | None]]:
    return [(f.code, f.severity, f.title, f.detail, f.fix) for f in check(Facts(snap))]


# ----------------------------------------------------------------- vLLM server mode on the training GPUs
SAME_DETAIL = (
    "Weight sync builds an NCCL group across server and trainer: 'Duplicate GPU detected : rank 1 "
    "and rank 0 both on CUDA device' -> NCCL error: invalid usage."
)
SAME_FIX = (
    'vllm_mode: "colocate" (one GPU), or CUDA_VISIBLE_DEVICES=0 trl vllm-serve ... and '
    "CUDA_VISIBLE_DEVICES=1 for the trainer"
)
SERVER = {"use_vllm": True, "vllm_mode": "server"}
H200S = [H200_GPU, {**H200_GPU, "index": 1}]

# (case, plan, gpus (ABSENT: no gpus section), env, expected title or None)
SAME_GPU_ROWS = [
    (
        "one H100, one process by default",
        SERVER,
        [H100_GPU],
        {},
        "`trl vllm-serve` and 1 training process(es) would share NVIDIA H100 80GB HBM3 (1 GPU visible)",
    ),
    ("two H200s, one process", {**SERVER, "num_processes": 1}, H200S, {}, None),
    (
        "two H200s, two processes",
        {**SERVER, "num_processes": 2},
        H200S,
        {},
        "`trl vllm-serve` and 2 training process(es) would share 2x NVIDIA H200 (2 GPU visible)",
    ),
    # the hidden GPU 0 is the server's: how the 2-GPU launch script runs its trainer (the
    # 2x H200_GPU run, tests/shop_r1_doctor/checks/test_plan_rows_server.py)
    (
        "two H200s, CUDA_VISIBLE_DEVICES=1 hides GPU 0 for the server",
        {**SERVER, "num_processes": 1},
        H200S,
        {"CUDA_VISIBLE_DEVICES": "1"},
        None,
    ),
    ("no GPU visible", SERVER, H200S, {"CUDA_VISIBLE_DEVICES": ""}, None),
    ("GPUs not probed", SERVER, ABSENT, {}, None),
    ("colocate mode", {**SERVER, "vllm_mode": "colocate"}, [H100_GPU], {}, None),
    ("no vLLM", {**SERVER, "use_vllm": False}, [H100_GPU], {}, None),
]


@pytest.mark.parametrize(
    ("plan", "gpus", "env", "title"),
    [r[1:] for r in SAME_GPU_ROWS],
    ids=[r[0] for r in SAME_GPU_ROWS],
)
def test_server_same_gpu_rows(plan, gpus, env, title) -> None:
    snap: dict = {"plan": plan, "env": env}
    if gpus is not ABSENT:
        snap["gpus"] = gpus
    rows = _found(server_same_gpu, snap)
    expected = ("TRL_SERVER_MODE_SAME_GPU", "error", title, SAME_DETAIL, SAME_FIX)
    assert rows == ([expected] if title else [])


# ----------------------------------------------------------------- vLLM server unreachable
BIND_DETAIL = (
    "'Server is not up yet. Retrying...' forever; the weight-sync TCP store on 0.0.0.0 times out."
)
BIND_FIX = 'vllm_server_host: "127.0.0.1" (or the server machine\'s address)'
PROXY_FIX = "export NO_PROXY=localhost,127.0.0.1 no_proxy=localhost,127.0.0.1"
PROXY_HEAD = (
    "HTTP(S)_PROXY is set without NO_PROXY for localhost: requests to the vLLM server go to "
)


def _bind(target: str) -> tuple:
    return (
        "error",
        f"the trainer would connect to {target}, a bind address, not a server address",
        BIND_DETAIL,
        BIND_FIX,
    )


def _proxy(host: str | None) -> tuple:
    if host is None:
        return ("warning", PROXY_HEAD + "the proxy", "", PROXY_FIX)
    return (
        "error",
        PROXY_HEAD + f"the proxy at {host}, which cannot reach this machine's 127.0.0.1",
        "",
        PROXY_FIX,
    )


CORP = "http://proxy.corp.example:3128"

# (case, plan extra, env, expected [(severity, title, detail, fix)])
UNREACHABLE_ROWS = [
    ("localhost, no proxy", {"vllm_server_host": "127.0.0.1"}, {}, []),
    ("host 0.0.0.0", {"vllm_server_host": "0.0.0.0"}, {}, [_bind("0.0.0.0")]),
    ("host ::", {"vllm_server_host": "::"}, {}, [_bind("::")]),
    (
        "base URL on 0.0.0.0",
        {"vllm_server_base_url": "http://0.0.0.0:8000"},
        {},
        [_bind("http://0.0.0.0:8000")],
    ),
    (
        "base URL on [::]",
        {"vllm_server_base_url": "http://[::]:8000"},
        {},
        [_bind("http://[::]:8000")],
    ),
    ("a remote proxy, host not said", {}, {"HTTP_PROXY": CORP}, [_proxy("proxy.corp.example")]),
    (
        "a remote proxy without a scheme, lower-case https_proxy",
        {"vllm_server_host": "localhost"},
        {"https_proxy": "proxy.corp.example:3128"},
        [_proxy("proxy.corp.example")],
    ),
    (
        "a proxy without a host name: remote",
        {},
        {"HTTP_PROXY": "http://:3128"},
        [
            (
                "error",
                PROXY_HEAD + "the proxy, which cannot reach this machine's 127.0.0.1",
                "",
                PROXY_FIX,
            )
        ],
    ),
    (
        "a proxy URL with a password: only its host is named",
        {},
        {"HTTP_PROXY": "http://me:s3cret@proxy.corp.example:3128"},
        [_proxy("proxy.corp.example")],
    ),
    (
        "a local proxy (a desktop VPN client)",
        {"vllm_server_host": "127.0.0.1"},
        {"HTTPS_PROXY": "http://127.0.0.1:7890"},
        [_proxy(None)],
    ),
    (
        "the first proxy variable set wins",
        {"vllm_server_host": "::1"},
        {"HTTP_PROXY": "", "http_proxy": "http://localhost:7890", "HTTPS_PROXY": CORP},
        [_proxy(None)],
    ),
    ("a proxy with NO_PROXY=localhost", {}, {"HTTP_PROXY": CORP, "NO_PROXY": "localhost"}, []),
    (
        "a proxy with NO_PROXY naming every loopback name",
        {},
        {"HTTP_PROXY": CORP, "NO_PROXY": "localhost,127.0.0.1,::1"},
        [],
    ),
    (
        "a proxy with no_proxy naming 127.0.0.1",
        {},
        {"http_proxy": CORP, "no_proxy": "10.0.0.0/8,127.0.0.1"},
        [],
    ),
    ("a proxy, a remote server", {"vllm_server_host": "10.0.0.5"}, {"HTTP_PROXY": CORP}, []),
    (
        "a proxy, a remote host but a localhost URL",
        {"vllm_server_host": "10.0.0.5", "vllm_server_base_url": "http://localhost:8000"},
        {"HTTP_PROXY": CORP},
        [_proxy("proxy.corp.example")],
    ),
    (
        "a bind address and a proxy: both",
        {"vllm_server_host": "0.0.0.0"},
        {"HTTP_PROXY": CORP},
        [_bind("0.0.0.0"), _proxy("proxy.corp.example")],
    ),
    ("colocate mode, 0.0.0.0", {"vllm_mode": "colocate", "vllm_server_host": "0.0.0.0"}, {}, []),
    ("no vLLM, 0.0.0.0", {"use_vllm": False, "vllm_server_host": "0.0.0.0"}, {}, []),
]


@pytest.mark.parametrize(
    ("extra", "env", "expected"),
    [r[1:] for r in UNREACHABLE_ROWS],
    ids=[r[0] for r in UNREACHABLE_ROWS],
)
def test_server_unreachable_rows(extra, env, expected) -> None:
    rows = _found(server_unreachable, {"plan": {**SERVER, **extra}, "env": env})
    assert rows == [("TRL_VLLM_SERVER_UNREACHABLE", *e) for e in expected]


# ----------------------------------------------------------------- the weight-sync port
GROUP_DETAIL = (
    "`trl vllm-serve` listens on vllm_server_port; the NCCL weight-sync store then fails with "
    "EADDRINUSE or hangs at the first sync."
)

# (case, plan extra, expected (port, fix port) or None)
PORT_ROWS = [
    ("both 8000", {"vllm_server_port": 8000, "vllm_group_port": 8000}, (8000, 51216)),
    ("both 51216", {"vllm_server_port": 51216, "vllm_group_port": 51216}, (51216, 51217)),
    ("8000 and 51216 (TRL's defaults)", {"vllm_server_port": 8000, "vllm_group_port": 51216}, None),
    ("ports not said", {}, None),
    ("only the group port", {"vllm_group_port": 8000}, None),
    (
        "colocate mode",
        {"vllm_mode": "colocate", "vllm_server_port": 8000, "vllm_group_port": 8000},
        None,
    ),
    ("no vLLM", {"use_vllm": False, "vllm_server_port": 8000, "vllm_group_port": 8000}, None),
]


@pytest.mark.parametrize(
    ("extra", "expected"), [r[1:] for r in PORT_ROWS], ids=[r[0] for r in PORT_ROWS]
)
def test_server_ports_rows(extra, expected) -> None:
    rows = _found(server_ports_clash, {"plan": {**SERVER, **extra}})
    if expected is None:
        assert rows == []
    else:
        port, other = expected
        assert rows == [
            (
                "TRL_VLLM_GROUP_PORT_IN_USE",
                "error",
                f"vllm_group_port {port} is the server's HTTP port: the weight-sync group cannot bind it",
                GROUP_DETAIL,
                f"vllm_group_port: {other} (any other free port)",
            )
        ]

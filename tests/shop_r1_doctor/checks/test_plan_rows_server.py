"""Decision rows for GRPO with a separate `trl vllm-serve` (TRL_SERVER_MODE_SAME_GPU,
TRL_VLLM_SERVER_UNREACHABLE, the weight-sync port) and
for vLLM engines seen on GPUs (VLLM_ORPHAN_WORKERS_HOLD_GPU), from the generated 2-GPU
launch script run on the 2x H200 (2026-11-23): the server on GPU 0, the trainer started
with CUDA_VISIBLE_DEVICES=1. Its own preflight refused to train ("would share NVIDIA H200
(1 GPU visible)") and told it to kill its own server's engine (pid 1642); see
tests/fixtures/device_logs/h200x2_launch_grpo_server_refused.log.

Each row asserts codes, severities and the facts its findings must name; the wording is in
tests/fixtures/golden/checks/plan.txt (and gpu_driver.txt for the engines seen on GPUs)."""

from __future__ import annotations

import msgspec
import pytest
from check_wording import assert_row, found, rows
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
SAME = ("TRL_SERVER_MODE_SAME_GPU", "error")


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
    ("case", "gpus", "cvd", "procs", "expected"), SERVER_ROWS, ids=[row[0] for row in SERVER_ROWS]
)
def test_server_mode_same_gpu_rows(case, gpus, cvd, procs, expected):
    assert_row(server_same_gpu, _facts(gpus, cvd, procs), [SAME] if expected else [])


HELD_HIDDEN = _facts([_gpu(0, OTHER), _gpu(1)], "1")


def test_the_held_hidden_gpu_is_named_with_its_process():
    assert_row(
        server_same_gpu, HELD_HIDDEN, [(*SAME, "GPU 0 (python pid 900)", "CUDA_VISIBLE_DEVICES")]
    )


def _elsewhere(host: str | None = None, url: str | None = None) -> Facts:
    plan = run_plan(
        task="grpo",
        use_vllm=True,
        vllm_mode="server",
        num_processes=1,
        vllm_server_host=host,
        vllm_server_base_url=url,
    )
    return snapshot_facts(gpus=[_gpu(0)], plan=plan)


def test_a_server_on_another_machine_takes_no_gpu_here():
    def on(host: str | None = None, url: str | None = None) -> list[tuple[str, str]]:
        return rows(server_same_gpu, _elsewhere(host, url))

    assert on("10.0.0.5") == [] and on(url="http://gpu-node-2:8000") == []
    assert on("127.0.0.1") == on("localhost") == on(url="http://127.0.0.1:8000") == [SAME]
    assert on() == on("0.0.0.0") == [SAME]  # TRL's default host is this machine


ENGINE_ON_1 = _facts([_gpu(0), _gpu(1, ENGINE)], "1")


def test_an_engine_on_the_trainers_gpu_is_named_by_pid():
    assert_row(server_same_gpu, ENGINE_ON_1, [(*SAME, "pid 1642", "(GPU 1)")])


NO_VLLM = snapshot_facts(gpus=[_gpu(0)], plan=run_plan(task="grpo", use_vllm=False))


def test_colocate_and_no_vllm_never_ask_for_a_second_gpu():
    assert rows(server_same_gpu, _facts([_gpu(0)], None, mode="colocate")) == []
    assert rows(server_same_gpu, NO_VLLM) == []


# (case, gpus, CUDA_VISIBLE_DEVICES, expected rows)
ORPHAN = [("VLLM_ORPHAN_WORKERS_HOLD_GPU", "warning", "pid 1642", "kill 1642")]
ENGINE_ROWS = [
    ("the trainer's shell hides GPU 0, where its server's engine runs",
     [_gpu(0, ENGINE), _gpu(1)], "1", []),
    ("no CUDA_VISIBLE_DEVICES: an engine on GPU 0 is this run's business",
     [_gpu(0, ENGINE), _gpu(1)], None, ORPHAN),
    ("the engine is on the visible GPU", [_gpu(0), _gpu(1, ENGINE)], "1", ORPHAN),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "gpus", "cvd", "expected"), ENGINE_ROWS, ids=[row[0] for row in ENGINE_ROWS]
)
def test_engines_count_only_on_gpus_this_run_can_see(case, gpus, cvd, expected):
    assert_row(gpu_processes, _facts(gpus, cvd), expected)


UNINDEXED = _facts(
    [msgspec.structs.replace(_gpu(0, ENGINE, proc(1700, "VLLM::Worker", GIB)), index=NOT_PROBED)],
    None,
)


def test_engine_on_the_trainers_gpu_finding_in_full():
    assert_row(
        server_same_gpu,
        UNINDEXED,
        [
            (
                *SAME,
                "pid 1642, 1700",
                f"{H200} (GPU ?)",
                "trl vllm-serve",
                "shop-r1 launch grpo --gpus 2",
            )
        ],
    )


# ----------------------------------------------------------------- the server rows by plan and env
ABSENT = object()
H100_GPU = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0"}
H200_GPU = {"index": 0, "name": "NVIDIA H200", "compute_capability": "9.0"}


# ----------------------------------------------------------------- vLLM server mode on the training GPUs
SERVER = {"use_vllm": True, "vllm_mode": "server"}
H200S = [H200_GPU, {**H200_GPU, "index": 1}]


def _same(procs: int, gpus: str, visible: int) -> list[tuple]:
    fix = ('vllm_mode: "colocate"', "CUDA_VISIBLE_DEVICES=1 for the trainer")
    return [(*SAME, f"{procs} training process(es)", gpus, f"({visible} GPU visible)", *fix)]


def _same_snap(plan: dict, gpus, env: dict) -> dict:
    snap: dict = {"plan": plan, "env": env}
    if gpus is not ABSENT:
        snap["gpus"] = gpus
    return snap


# (case, snapshot, expected rows)
SAME_GPU_ROWS = [
    ("one H100, one process by default", _same_snap(SERVER, [H100_GPU], {}),
     _same(1, "NVIDIA H100 80GB HBM3", 1)),
    ("two H200s, one process", _same_snap({**SERVER, "num_processes": 1}, H200S, {}), []),
    ("two H200s, two processes", _same_snap({**SERVER, "num_processes": 2}, H200S, {}),
     _same(2, "2x NVIDIA H200", 2)),
    # the hidden GPU 0 is the server's: how the 2-GPU launch script runs its trainer
    ("two H200s, CUDA_VISIBLE_DEVICES=1 hides GPU 0 for the server",
     _same_snap({**SERVER, "num_processes": 1}, H200S, {"CUDA_VISIBLE_DEVICES": "1"}), []),
    ("no GPU visible", _same_snap(SERVER, H200S, {"CUDA_VISIBLE_DEVICES": ""}), []),
    ("GPUs not probed", _same_snap(SERVER, ABSENT, {}), []),
    ("colocate mode", _same_snap({**SERVER, "vllm_mode": "colocate"}, [H100_GPU], {}), []),
    ("no vLLM", _same_snap({**SERVER, "use_vllm": False}, [H100_GPU], {}), []),
]  # fmt: skip


@pytest.mark.parametrize(("case", "s", "want"), SAME_GPU_ROWS, ids=[r[0] for r in SAME_GPU_ROWS])
def test_server_same_gpu_rows(case, s, want) -> None:
    assert_row(server_same_gpu, s, want)


# ----------------------------------------------------------------- vLLM server unreachable
UNREACHABLE = "TRL_VLLM_SERVER_UNREACHABLE"
NO_PROXY = "export NO_PROXY=localhost,127.0.0.1 no_proxy=localhost,127.0.0.1"


def _bind(target: str) -> tuple:
    return (
        UNREACHABLE,
        "error",
        f"connect to {target}, a bind address",
        'vllm_server_host: "127.0.0.1"',
    )


def _proxy(host: str | None) -> tuple:
    """A local proxy (host None) is a warning; a remote one cannot reach 127.0.0.1."""
    if host is None:
        return (UNREACHABLE, "warning", "HTTP(S)_PROXY", "NO_PROXY for localhost", NO_PROXY)
    return (UNREACHABLE, "error", "HTTP(S)_PROXY", host, "this machine's 127.0.0.1", NO_PROXY)


CORP = "http://proxy.corp.example:3128"
SECRET_PROXY = {"HTTP_PROXY": "http://me:s3cret@proxy.corp.example:3128"}

# (case, plan extra, env, expected rows)
UNREACHABLE_ROWS: list[tuple[str, dict, dict, list]] = [
    ("localhost, no proxy", {"vllm_server_host": "127.0.0.1"}, {}, []),
    ("host 0.0.0.0", {"vllm_server_host": "0.0.0.0"}, {}, [_bind("0.0.0.0")]),
    ("host ::", {"vllm_server_host": "::"}, {}, [_bind("::")]),
    ("base URL on 0.0.0.0", {"vllm_server_base_url": "http://0.0.0.0:8000"}, {},
     [_bind("http://0.0.0.0:8000")]),
    ("base URL on [::]", {"vllm_server_base_url": "http://[::]:8000"}, {},
     [_bind("http://[::]:8000")]),
    ("a remote proxy, host not said", {}, {"HTTP_PROXY": CORP}, [_proxy("proxy.corp.example")]),
    ("a remote proxy without a scheme, lower-case https_proxy", {"vllm_server_host": "localhost"},
     {"https_proxy": "proxy.corp.example:3128"}, [_proxy("proxy.corp.example")]),
    ("a proxy without a host name: remote", {}, {"HTTP_PROXY": "http://:3128"},
     [_proxy("the proxy, which")]),
    ("a proxy URL with a password: only its host is named", {}, SECRET_PROXY,
     [_proxy("proxy.corp.example")]),
    ("a local proxy (a desktop VPN client)", {"vllm_server_host": "127.0.0.1"},
     {"HTTPS_PROXY": "http://127.0.0.1:7890"}, [_proxy(None)]),
    ("the first proxy variable set wins", {"vllm_server_host": "::1"},
     {"HTTP_PROXY": "", "http_proxy": "http://localhost:7890", "HTTPS_PROXY": CORP}, [_proxy(None)]),
    ("a proxy with NO_PROXY=localhost", {}, {"HTTP_PROXY": CORP, "NO_PROXY": "localhost"}, []),
    ("a proxy with NO_PROXY naming every loopback name", {},
     {"HTTP_PROXY": CORP, "NO_PROXY": "localhost,127.0.0.1,::1"}, []),
    ("a proxy with no_proxy naming 127.0.0.1", {},
     {"http_proxy": CORP, "no_proxy": "10.0.0.0/8,127.0.0.1"}, []),
    ("a proxy, a remote server", {"vllm_server_host": "10.0.0.5"}, {"HTTP_PROXY": CORP}, []),
    ("a proxy, a remote host but a localhost URL",
     {"vllm_server_host": "10.0.0.5", "vllm_server_base_url": "http://localhost:8000"},
     {"HTTP_PROXY": CORP}, [_proxy("proxy.corp.example")]),
    ("a bind address and a proxy: both", {"vllm_server_host": "0.0.0.0"}, {"HTTP_PROXY": CORP},
     [_bind("0.0.0.0"), _proxy("proxy.corp.example")]),
    ("colocate mode, 0.0.0.0", {"vllm_mode": "colocate", "vllm_server_host": "0.0.0.0"}, {}, []),
    ("no vLLM, 0.0.0.0", {"use_vllm": False, "vllm_server_host": "0.0.0.0"}, {}, []),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "extra", "env", "want"), UNREACHABLE_ROWS, ids=[r[0] for r in UNREACHABLE_ROWS]
)
def test_server_unreachable_rows(case, extra, env, want) -> None:
    assert_row(server_unreachable, {"plan": {**SERVER, **extra}, "env": env}, want)


def test_a_proxy_password_is_never_printed() -> None:
    (f,) = found(server_unreachable, {"plan": SERVER, "env": SECRET_PROXY})
    assert "s3cret" not in f.title + f.detail + f.fix and "me:" not in f.title


# ----------------------------------------------------------------- the weight-sync port
def _port(port: int, other: int) -> list[tuple]:
    return [
        (
            "TRL_VLLM_GROUP_PORT_IN_USE",
            "error",
            f"vllm_group_port {port} ",
            f"vllm_group_port: {other} ",
        )
    ]


# (case, plan extra, expected rows)
PORT_ROWS: list[tuple[str, dict, list]] = [
    ("both 8000", {"vllm_server_port": 8000, "vllm_group_port": 8000}, _port(8000, 51216)),
    ("both 51216", {"vllm_server_port": 51216, "vllm_group_port": 51216}, _port(51216, 51217)),
    ("8000 and 51216 (TRL's defaults)", {"vllm_server_port": 8000, "vllm_group_port": 51216}, []),
    ("ports not said", {}, []),
    ("only the group port", {"vllm_group_port": 8000}, []),
    ("colocate mode", {"vllm_mode": "colocate", "vllm_server_port": 8000, "vllm_group_port": 8000},
     []),
    ("no vLLM", {"use_vllm": False, "vllm_server_port": 8000, "vllm_group_port": 8000}, []),
]  # fmt: skip


@pytest.mark.parametrize(("case", "extra", "want"), PORT_ROWS, ids=[r[0] for r in PORT_ROWS])
def test_server_ports_rows(case, extra, want) -> None:
    assert_row(server_ports_clash, {"plan": {**SERVER, **extra}}, want)


SNAPSHOTS = [
    *[(r[0], _facts(*r[1:4])) for r in SERVER_ROWS],
    ("held hidden GPU", HELD_HIDDEN),
    *[(f"server host {h}", _elsewhere(h)) for h in ("10.0.0.5", "127.0.0.1", None)],
    ("engine on the trainer's GPU", ENGINE_ON_1),
    ("engine on an unindexed GPU", UNINDEXED),
    ("no vLLM", NO_VLLM),
    *[(r[0], _facts(r[1], r[2])) for r in ENGINE_ROWS],
    *[(r[0], r[1]) for r in SAME_GPU_ROWS],
    *[(r[0], {"plan": {**SERVER, **r[1]}, "env": r[2]}) for r in UNREACHABLE_ROWS],
    *[(r[0], {"plan": {**SERVER, **r[1]}}) for r in PORT_ROWS],
]

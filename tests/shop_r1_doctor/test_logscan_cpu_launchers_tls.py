"""Readings learned from the CPU fault batch 2b (a CPU torch asked for a GPU, launchers,
c10d networking, SIGTERM from outside, an untrusted TLS certificate, old releases on the
path), on text shapes beyond its recordings: other torch releases' wordings, other
platforms' paths, launcher prefixes, lower-cased and localised pastes. Codes and
severities only (wording: codes.yaml)."""

from __future__ import annotations

import pytest
from logscan_readings import readings

NO_NCCL = "RuntimeError: Distributed package doesn't have NCCL built in"

# --- a torch without NCCL: the platform or the build decides -------------------------


@pytest.mark.parametrize(
    "log",
    [
        # a Linux venv's frame, then the error
        '  File "/home/ci/venv/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py",'
        f" line 1465, in _new_process_group_helper\n{NO_NCCL}",
        # Debian's dist-packages, torchrun's rank prefix
        '[rank0]:   File "/usr/local/lib/python3.8/dist-packages/torch/distributed/'
        f'distributed_c10d.py", line 602, in init_process_group\n[rank0]: {NO_NCCL}',
        # the build shown, no path (pip's line, collect_env's)
        f"Successfully installed torch-2.1.0+cpu\n{NO_NCCL}",
        f"CUDA used to build PyTorch: None\n{NO_NCCL.lower()}",
    ],
)
def test_no_nccl_on_linux_or_a_cpu_build_is_the_cpu_build(log):
    got = readings(log)
    assert got[0] == ("TORCH_CPU_ONLY_BUILD", "error")
    assert "NCCL_MISSING_ON_WINDOWS" not in [c for c, _ in got]


@pytest.mark.parametrize(
    "log",
    [
        "ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0"
        f" of binary: C:\\Users\\me\\envs\\sd\\python.exe\n{NO_NCCL}",
        # a Windows +cpu wheel: no build of torch has NCCL there, so Windows is the cause
        f"torch 2.3.1+cpu win_amd64\n{NO_NCCL}",
    ],
)
def test_no_nccl_with_windows_evidence_is_windows(log):
    got = readings(log)
    assert got[0] == ("NCCL_MISSING_ON_WINDOWS", "error")
    assert "TORCH_CPU_ONLY_BUILD" not in [c for c, _ in got]


def test_the_bare_line_is_only_a_hint_of_windows():
    assert readings(NO_NCCL) == [("NCCL_MISSING_ON_WINDOWS", "info")]


def test_a_jetson_is_not_read_as_a_cpu_build():
    log = f"jetson orin nano, L4T 36.2\n/usr/lib/python3.10/dist-packages/torch\n{NO_NCCL}"
    assert "TORCH_CPU_ONLY_BUILD" not in [c for c, _ in readings(log)]


# --- torch._C without CUDA bindings ------------------------------------------------------


@pytest.mark.parametrize(
    "log",
    [
        "AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'",
        "[rank1]: AttributeError: module 'torch._C' has no attribute '_cuda_getDeviceCount'",
        '  File "E:\\Anaconda\\lib\\site-packages\\torch\\cuda\\__init__.py", line 293, in set_device\n'
        "    torch._C._cuda_setDevice(-1)\n"
        "AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'",
        "attributeerror: module 'torch._c' has no attribute '_cuda_setdevice'",
    ],
)
def test_torch_without_cuda_bindings_is_a_cpu_build(log):
    assert readings(log)[0] == ("TORCH_CPU_ONLY_BUILD", "error")


def test_missing_cuda_bindings_on_a_mac_claim_no_cpu_build():
    log = (
        '  File "/Users/me/miniconda3/lib/python3.11/site-packages/torch/cuda/__init__.py"\n'
        "AttributeError: module 'torch._C' has no attribute '_cuda_setDevice'"
    )
    assert "TORCH_CPU_ONLY_BUILD" not in [c for c, _ in readings(log)]


# --- no accelerator: a CPU build only when the log shows one ---------------------------

NO_ACCELERATOR = [
    "[rank1]: RuntimeError: Cannot access accelerator device when none is available.",
    "ValueError: Cuda is not available.",
    "torch.distributed.DistBackendError: ProcessGroupNCCL is only supported with GPUs, no GPUs found!",
]


@pytest.mark.parametrize("line", NO_ACCELERATOR)
def test_no_accelerator_alone_is_a_gpu_the_process_cannot_see(line):
    got = readings(line)
    assert got[0] == ("TORCH_CUDA_UNAVAILABLE", "warning")
    assert "TORCH_CPU_ONLY_BUILD" not in [c for c, _ in got]


@pytest.mark.parametrize("line", NO_ACCELERATOR)
def test_no_accelerator_with_a_cpu_build_shown_is_the_cpu_build(line):
    assert readings(f"torch==2.5.1+cpu\n{line}")[0] == ("TORCH_CPU_ONLY_BUILD", "error")


# --- c10d: the rendezvous host unreachable, unresolvable, or silent ---------------------


@pytest.mark.parametrize(
    "log",
    [
        "torch.distributed.DistNetworkError: The client socket has failed to connect to any"
        " network address of (10.1.2.3, 29500). The client socket has failed to connect to"
        " 10.1.2.3:29500 (errno: 113 - No route to host).",
        # a Windows node in a Chinese locale (the OS's text is localised), a rank prefix
        "[rank1]: torch.distributed.DistNetworkError: The client socket has failed to connect"
        " to any network address of (192.168.1.5, 29500). The client socket has failed to"
        " connect to 192.168.1.5:29500 (system error: 10065 - 套接字操作尝试一个无法连接的主机。).",
        # a lower-cased paste
        "torch.distributed.distnetworkerror: the client socket has failed to connect to any"
        " network address of (10.1.2.3, 29500).",
        # the name does not resolve (not only its IPv6 lookup), then the timeout to it
        "[W socket.cpp:663] [c10d] The network addresses of (gpu-node-1, 29500) cannot be"
        " retrieved (gai error: -3 - Temporary failure in name resolution).\n"
        "torch.distributed.DistNetworkError: The client socket has timed out after 1800000ms"
        " while trying to connect to (gpu-node-1, 29500).",
    ],
)
def test_an_unreachable_or_unresolvable_rendezvous_is_the_network(log):
    assert readings(log)[0] == ("NODE_NETWORK_UNREACHABLE", "error")


@pytest.mark.parametrize(
    "log",
    [
        # only the IPv6 lookup failed (IPv4-only hosts print it in runs that work)
        "[W socket.cpp:697] [c10d] The IPv6 network addresses of (master, 29500) cannot be"
        " retrieved (gai error: 8 - nodename nor servname provided, or not known).\n"
        "[E TCPStore.cpp:328] [c10d] TCP client failed to connect/validate to host master:29500"
        " - timed out (try=2, timeout=600000ms): The client socket has timed out after 600000ms"
        " while trying to connect to (master, 29500).",
        # a timeout alone: the master may still be preparing data
        "torch.distributed.DistNetworkError: The client socket has timed out after 10000ms"
        " while trying to connect to (127.0.0.1, 29525).",
    ],
)
def test_a_rendezvous_timeout_is_only_a_hint(log):
    assert readings(log) == [("NODE_NETWORK_UNREACHABLE", "info")]


def test_a_retry_warning_in_a_run_that_went_on_claims_nothing():
    log = (
        "[W socket.cpp:558] [c10d] The client socket has failed to connect to [node1]:29500"
        " (errno: 111 - Connection refused).\n"
        "[W socket.cpp:663] [c10d] The IPv6 network addresses of (node1, 29500) cannot be"
        " retrieved (gai error: -2 - Name or service not known).\n"
        "[E socket.cpp:818] [c10d] The client socket has failed to connect to any network address"
        " of (node1, 29500).\n"
        "[W TCPStore.cpp:340] [c10d] TCP client failed to connect/validate to host node1:29500 -"
        " retrying (try=0, timeout=1800000ms, delay=499ms)\n"
        "{'loss': 1.23, 'epoch': 0.1}\n"
    )
    assert readings(log) == []


# --- SIGTERM from outside -----------------------------------------------------------------

STEPS = "[rank 0] step 10 loss 0.31\n[rank 1] step 10 loss 0.29\n"


@pytest.mark.parametrize(
    "tail",
    [
        # torch 1.x logs the enum, through the stdlib logger's format
        "WARNING:torch.distributed.elastic.agent.server.api:Received Signals.SIGTERM death"
        " signal, shutting down workers\n",
        "W0312 04:01:17.123000 140 site-packages/torch/distributed/elastic/agent/server/api.py:704]"
        " Received 15 death signal, shutting down workers\n",
        # only the launcher's own exception kept
        "torch.distributed.elastic.multiprocessing.api.SignalException: Process 2211 got signal: 15\n",
    ],
)
def test_the_launcher_sent_sigterm_mid_run_is_a_time_limit_or_preemption(tail):
    assert readings(STEPS + tail)[0] == ("JOB_TIME_LIMIT_OR_PREEMPTION", "warning")


@pytest.mark.parametrize(
    "log",
    [
        # a rank's own error first: torchrun then SIGTERMs the others itself
        STEPS + "[rank1]: Traceback (most recent call last):\n"
        '[rank1]:   File "train.py", line 40, in <module>\n'
        "[rank1]: ValueError: loss is nan\n"
        "W1126 19:35:22.2 5211 torch/distributed/elastic/multiprocessing/api.py:1028] Sending"
        " process 5214 closing signal SIGTERM\n"
        "  exitcode  : -15 (pid: 5214)  (SIGTERM)\n  traceback : Signal 15 (SIGTERM) received by PID 5214\n",
        # the job's error came before the signal: that error is the cause
        "RuntimeError: CUDA error: device-side assert triggered\n"
        "Received 15 death signal, shutting down workers\n",
        # Ctrl-C
        STEPS + "Received 2 death signal, shutting down workers\n"
        "SignalException: Process 9 got signal: 2\n",
    ],
)
def test_sigterm_after_the_jobs_own_error_or_a_ctrl_c_is_not_preemption(log):
    assert "JOB_TIME_LIMIT_OR_PREEMPTION" not in [c for c, _ in readings(log)]


# --- an untrusted TLS certificate ----------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        # requests on OpenSSL 1.1 (no hyphen), then OpenSSL 3 through httpx
        "requests.exceptions.SSLError: HTTPSConnectionPool(host='huggingface.co', port=443): Max"
        " retries exceeded with url: /api/models/gpt2 (Caused by SSLError(SSLCertVerificationError"
        "(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self signed certificate"
        " in certificate chain (_ssl.c:1091)')))",
        "httpx.ConnectError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to"
        " get local issuer certificate (_ssl.c:1000)",
        "aiohttp.client_exceptions.ClientConnectorCertificateError: Cannot connect to host"
        " huggingface.co:443 ssl:True [SSLCertVerificationError: (1, '[SSL: CERTIFICATE_VERIFY_FAILED]"
        " certificate verify failed: self-signed certificate in certificate chain (_ssl.c:1006)')]",
        # git/curl, Windows schannel in a Chinese locale, hf_xet's rustls
        "fatal: unable to access 'https://huggingface.co/gpt2/': SSL certificate problem: unable to"
        " get local issuer certificate",
        "fatal: unable to access 'https://hf-mirror.com/x/': schannel: SEC_E_UNTRUSTED_ROOT"
        " (0x80090325) - 证书链是由不受信任的颁发机构颁发的。",
        "RuntimeError: Data processing error: File reconstruction error: invalid peer certificate:"
        " UnknownIssuer",
        "[ssl: certificate_verify_failed] certificate verify failed: self-signed certificate",
    ],
)
def test_a_refused_certificate_is_an_untrusted_ca(line):
    assert readings(line)[0] == ("HF_HUB_TLS_UNTRUSTED", "error")


def test_the_untrusted_certificate_leads_over_the_hub_being_unreachable():
    # the consequence printed first (a wrapper's summary), the refused certificate after
    log = (
        "OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't"
        " find them in the cached files.\n"
        "'[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate"
        " (_ssl.c:1006)' thrown while requesting HEAD https://huggingface.co/gpt2/resolve/main/config.json\n"
    )
    got = readings(log)
    assert got[0] == ("HF_HUB_TLS_UNTRUSTED", "error")
    assert "HF_HUB_UNREACHABLE" in [c for c, _ in got]


@pytest.mark.parametrize(
    "line",
    [
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired (_ssl.c:1006)",
        "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: Hostname mismatch, certificate"
        " is not valid for 'huggingface.co'. (_ssl.c:1006)",
        "INFO: dashboard served with a self-signed certificate on https://0.0.0.0:8443",
    ],
)
def test_an_expired_or_misnamed_certificate_is_not_an_untrusted_ca(line):
    assert "HF_HUB_TLS_UNTRUSTED" not in [c for c, _ in readings(line)]


# --- old releases on the path -----------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "ValueError: The version of PEFT you are using is not compatible, please use a version >= 0.5.0",
        "[rank0]: valueerror: the version of peft you are using is not compatible, please use a version >= 0.13.0",
    ],
)
def test_transformers_peft_floor_is_a_requirement_conflict(line):
    assert readings(line)[0] == ("REQUIREMENT_CONFLICT", "warning")


def test_the_trainers_accelerate_floor_leads_as_a_hint_of_an_old_accelerate():
    # transformers 4.3x's wording (`-U`); absent and too old read alike
    line = (
        "ImportError: Using the `Trainer` with `PyTorch` requires `accelerate>=0.20.1`: Please run"
        " `pip install transformers[torch]` or `pip install accelerate -U`"
    )
    got = readings(line)
    assert got[0] == ("REQUIREMENT_CONFLICT", "info")
    assert "PACKAGE_REQUESTED_NOT_INSTALLED" in [c for c, _ in got]


SKEW_TAIL = "    super().__init__(\nTypeError: Trainer.__init__() got an unexpected keyword argument 'tokenizer'"


@pytest.mark.parametrize(
    "frame",
    [
        '  File "/opt/pythonpath/trl-0.9.6/trl/trainer/sft_trainer.py", line 413, in __init__',
        '  File "C:\\Users\\me\\venv\\Lib\\site-packages\\trl\\trainer\\sft_trainer.py", line 413, in __init__',
        '  File "/home/me/src/trl/trl/trainer/sft_trainer.py", line 413, in __init__',
    ],
)
def test_a_packages_frame_outside_site_packages_calling_another_api_is_skew(frame):
    assert readings(f"{frame}\n{SKEW_TAIL}")[0] == ("PACKAGE_VERSION_SKEW", "info")
    shown = f"trl==0.9.6\ntransformers==5.24.0\n{frame}\n{SKEW_TAIL}"
    assert readings(shown)[0] == ("PACKAGE_VERSION_SKEW", "warning")


def test_the_users_own_frame_is_not_skew():
    log = f'  File "C:\\work\\myproj\\train.py", line 12, in main\n{SKEW_TAIL}'
    assert "PACKAGE_VERSION_SKEW" not in [c for c, _ in readings(log)]

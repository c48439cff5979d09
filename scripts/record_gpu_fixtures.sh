#!/usr/bin/env bash
# Record the raw outputs the doctor's probes parse, on a real GPU machine, so tests can
# replay them (tests/fixtures/machines/<machine>/). Usage: scripts/record_gpu_fixtures.sh DIR
set -uo pipefail
out=${1:?usage: record_gpu_fixtures.sh DIR}
mkdir -p "$out"
py=${PYTHON:-python3}
smi() { nvidia-smi "$@" 2>&1; }
smi > "$out/nvidia-smi.txt"
smi --query-gpu=index,name,compute_cap,memory.total,memory.used,driver_version --format=csv,noheader,nounits > "$out/query-gpu.csv"
smi --query-gpu=index,name,uuid,pci.bus_id,compute_cap,memory.total,memory.used,driver_version --format=csv > "$out/query-gpu-header.csv"
smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits > "$out/query-compute-apps.csv"
smi --query-gpu=index,name,bogus_field --format=csv,noheader > "$out/query-invalid-field.txt"
smi topo -m > "$out/topo-m.txt"
{ which -a nvcc; nvcc --version; } > "$out/nvcc.txt" 2>&1
cat /proc/driver/nvidia/version > "$out/proc-driver-nvidia-version.txt" 2>&1
uname -a > "$out/uname.txt"; cat /proc/version > "$out/proc-version.txt"
cat /etc/os-release > "$out/os-release.txt" 2>/dev/null
cat /proc/1/cgroup > "$out/proc1-cgroup.txt" 2>/dev/null
ls -la /.dockerenv /run/.containerenv > "$out/container-markers.txt" 2>&1
df -B1 /dev/shm . /tmp > "$out/df.txt" 2>&1
"$py" - "$out/nvml.json" <<'PY'
import json, sys
import pynvml as n
n.nvmlInit()
def s(x): return x.decode() if isinstance(x, bytes) else x
d = {"driver_version": s(n.nvmlSystemGetDriverVersion()),
     "cuda_driver_version": n.nvmlSystemGetCudaDriverVersion_v2(), "devices": [], "p2p": {}}
count = n.nvmlDeviceGetCount()
handles = [n.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
for i, h in enumerate(handles):
    mem = n.nvmlDeviceGetMemoryInfo(h)
    procs = []
    for p in n.nvmlDeviceGetComputeRunningProcesses(h):
        procs.append({"pid": p.pid, "used_bytes": p.usedGpuMemory})
    d["devices"].append({"index": i, "name": s(n.nvmlDeviceGetName(h)),
        "cc": list(n.nvmlDeviceGetCudaComputeCapability(h)), "memory_total": mem.total,
        "memory_used": mem.used, "uuid": s(n.nvmlDeviceGetUUID(h)), "processes": procs})
for i in range(count):
    for j in range(count):
        if i != j:
            # nvidia-ml-py 13.x defines some caps constants as 1-tuples: unwrap them.
            caps = {}
            for cap in ("READ", "WRITE", "NVLINK", "ATOMICS"):
                idx = getattr(n, f"NVML_P2P_CAPS_INDEX_{cap}", None)
                idx = idx[0] if isinstance(idx, tuple) else idx
                if idx is not None:
                    caps[cap.lower()] = int(n.nvmlDeviceGetP2PStatus(handles[i], handles[j], idx))
            d["p2p"][f"{i}-{j}"] = caps
json.dump(d, open(sys.argv[1], "w"), indent=2)
PY
"$py" - "$out/torch.json" <<'PY'
import json, sys, time
t = time.perf_counter(); import torch; t_import = time.perf_counter() - t
d = {"version": torch.__version__, "cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available(),
     "device_count": torch.cuda.device_count(), "arch_list": torch.cuda.get_arch_list(),
     "nccl": ".".join(map(str, torch.cuda.nccl.version())), "cxx11_abi": bool(torch._C._GLIBCXX_USE_CXX11_ABI),
     "bf16_supported": torch.cuda.is_bf16_supported(), "import_seconds": round(t_import, 2)}
json.dump(d, open(sys.argv[1], "w"), indent=2)
PY
"$py" - "$out/packages.json" <<'PY'
import json, sys, importlib.metadata as md
out = {}
for dist in md.distributions():
    name = dist.metadata["Name"]
    if name: out[name.lower()] = {"version": dist.version, "requires": dist.requires or []}
json.dump(dict(sorted(out.items())), open(sys.argv[1], "w"), indent=1)
PY
env | grep -E '^(CUDA|NCCL|TORCH|PYTORCH|NVIDIA|LD_LIBRARY|HF_|OMP_|PATH=|VIRTUAL_ENV|CONDA)' > "$out/env.txt"
# Hold the GPU from a second process to record what a busy GPU looks like.
"$py" -c "import torch,time; x=torch.empty(2**30, dtype=torch.uint8, device='cuda'); open('$out/.holder-ready','w').close(); time.sleep(30)" &
holder=$!
for _ in $(seq 60); do [ -f "$out/.holder-ready" ] && break; sleep 0.5; done
smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits > "$out/query-compute-apps-busy.csv"
smi > "$out/nvidia-smi-busy.txt"
kill $holder 2>/dev/null; rm -f "$out/.holder-ready"
echo recorded: "$(ls "$out" | wc -l)" files in "$out"

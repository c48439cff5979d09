# the address space a CUDA process needs: smallest `ulimit -v` (GiB) under which each step works
set -uo pipefail
. .device/setup.sh
probe() { # $1 GiB, $2 python code
  (ulimit -v $(( $1 * 1048576 )); timeout 20 python3 -c "$2" >/dev/null 2>&1) && echo ok || echo fail; }
INIT='import torch; torch.ones(1, device="cuda"); torch.cuda.synchronize()'
MM='import torch; a=torch.randn(4096,4096,device="cuda"); (a@a).sum().item()'
EXP='import os; os.environ["PYTORCH_CUDA_ALLOC_CONF"]="expandable_segments:True"; import torch; a=torch.empty(8*2**30,dtype=torch.uint8,device="cuda"); a.fill_(1); torch.cuda.synchronize()'
BIG='import torch; a=torch.empty(40*2**30,dtype=torch.uint8,device="cuda"); a.fill_(1); torch.cuda.synchronize()'
for name in INIT MM EXP BIG; do
  line="$name:"; for g in 2 4 8 12 16 24 32 48 64 96 128 192 256; do r=$(probe $g "${!name}"); line="$line $g=$r"; [ $r = ok ] && break; done; echo "$line"
done | tee $OUT/vmem_thresholds.txt
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | tee -a $OUT/vmem_thresholds.txt
timeout 100 python3 -m tests.faults.gpu_record --out /root/rec7 cuda_under_vmem_limit 2>&1 | tail -3
tar -czf $OUT/rec7.tgz -C /root rec7

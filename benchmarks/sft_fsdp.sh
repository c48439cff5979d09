#!/usr/bin/env bash
# SFT scaling with FSDP through `accelerate launch`: 1 GPU vs N GPUs, same per-GPU batch.
# Usage: benchmarks/sft_fsdp.sh [N_GPUS=2] [MODEL_SHAPE=1.5b] [STEPS=12]
# Writes the generated accelerate config and both results under runs/bench_fsdp/.
set -euo pipefail
N="${1:-2}"; SHAPE="${2:-1.5b}"; STEPS="${3:-12}"
OUT="runs/bench_fsdp"; mkdir -p "$OUT"
cat > "$OUT/fsdp.yaml" <<YAML
compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_machines: 1
num_processes: ${N}
mixed_precision: bf16
fsdp_config:
  fsdp_version: 2
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: Qwen2DecoderLayer
  fsdp_state_dict_type: SHARDED_STATE_DICT
  fsdp_reshard_after_forward: true
  fsdp_cpu_ram_efficient_loading: false
YAML
# 1 GPU reference (auto mode only), then N GPUs with N x the global batch (same per-GPU work)
CUDA_VISIBLE_DEVICES=0 python benchmarks/sft_speed.py --model-shape "$SHAPE" --steps "$STEPS" \
  --modes auto --global-batch 8 --json-out "$OUT/one_gpu.json"
accelerate launch --config_file "$OUT/fsdp.yaml" benchmarks/sft_speed.py --one auto \
  --model-shape "$SHAPE" --steps "$STEPS" --global-batch $((8 * N)) | tee "$OUT/n_gpu.log"
python - "$OUT" "$N" <<'PY'
import json, sys
out, n = sys.argv[1], int(sys.argv[2])
one = json.load(open(f"{out}/one_gpu.json"))[0]
line = [l for l in open(f"{out}/n_gpu.log") if l.startswith("@@result@@")][0]
many = json.loads(line[len("@@result@@"):])
print(f"1 GPU: {one['tokens_per_s']:,.0f} tok/s; {n} GPUs: {many['tokens_per_s']:,.0f} tok/s "
      f"-> scaling {many['tokens_per_s'] / one['tokens_per_s']:.2f}x ({many['tokens_per_s'] / one['tokens_per_s'] / n:.0%} efficiency)")
PY

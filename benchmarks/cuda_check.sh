#!/usr/bin/env bash
# The CUDA path, by hand on a GPU machine, on the embedded corpus (prepared into OUT/data unless
# DATA names a prepared directory):
#   1. training throughput and MFU (benchmarks/gpu_train.py): `base` and `big`, bf16 (under
#      autocast as it was, and on weight copies as trained) and fp16, eager and compiled,
#      25,000-token batches (the paper's step on one GPU);
#   2. a torchrun training over NCCL, one process per GPU, `base` bf16 as `aiayn train` runs it
#      by default (its gradients averaged in one all-reduce a step), its training log's
#      tokens/s and MFU;
#   3. decoding on the GPU (benchmarks/decode_speed.py --device cuda): aiayn against Hugging
#      Face, and CTranslate2 where its wheel loads on this machine's CUDA;
#   4. the compiled `base` step on weight copies beside `aiayn train --compile`'s (autocast),
#      one after the other on the same card (each compiles for 2-3 minutes).
# Usage: PY=python3 benchmarks/cuda_check.sh [OUT]; PARTS="1 2" (the default) picks parts.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${1:-runs/cuda-check}
DATA=${DATA:-$OUT/data}
PARTS=${PARTS:-1 2}
CORPUS=src/aiayn/data/demo
mkdir -p "$OUT"
lscpu | grep -E "^(Model name|CPU\(s\)|Flags)" || true
$PY -c "import torch; torch.cuda.is_available() or exit('cuda_check.sh: no CUDA device here; \
run it on a GPU machine'); print('torch', torch.__version__, torch.cuda.get_device_name(0))"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
if [ ! -d "$DATA" ]; then
    $PY -m aiayn prepare --train-src $CORPUS/train.en.gz --train-tgt $CORPUS/train.es.gz \
        --valid-src $CORPUS/dev.en.gz --valid-tgt $CORPUS/dev.es.gz --vocab-size 8000 \
        --out "$DATA"
fi
if [[ " $PARTS " == *" 1 "* ]]; then
    $PY benchmarks/gpu_train.py --data "$DATA" --sizes base big --precisions bf16 \
        --compile no --max-tokens 25000 --variants autocast now
    $PY benchmarks/gpu_train.py --data "$DATA" --sizes base big --precisions fp16 \
        --compile no --max-tokens 25000 | tail -n +3
    $PY benchmarks/gpu_train.py --data "$DATA" --sizes base big --precisions bf16 \
        --compile yes --max-tokens 25000 | tail -n +3
fi
if [[ " $PARTS " == *" 2 "* ]]; then
    gpus=$(nvidia-smi -L | wc -l)
    rm -rf "$OUT/ddp"
    $PY -m torch.distributed.run --nproc-per-node "$gpus" -m aiayn train --data "$DATA" \
        --out "$OUT/ddp" --preset base --max-steps 60 --max-tokens $((25000 / gpus)) \
        --valid-every 60 --valid-bleu-sentences 0 --log-every 10 --no-progress \
        2>&1 | grep -E "^(model|precision|schedule)"
    $PY - "$OUT/ddp/metrics.jsonl" <<'EOF'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "tokens_per_s" in r:
        print(f"step {r['step']}: {r['tokens_per_s']:,.0f} target tokens/s, MFU {r['mfu']:.1%}")
EOF
fi
if [[ " $PARTS " == *" 3 "* ]]; then
    systems=(aiayn "Hugging Face")
    # (CTranslate2 4.8's wheel needs CUDA 12's cuBLAS; the lent machines have had CUDA 13's)
    if $PY -c "import ctypes, sys, ctranslate2; ctypes.CDLL('libcublas.so.12'); \
sys.exit(ctranslate2.get_cuda_device_count() < 1)" 2>/dev/null; then
        systems+=("CTranslate2 float32" "CTranslate2 float16")
    fi
    $PY benchmarks/decode_speed.py --device cuda --sizes base --systems "${systems[@]}" \
        --rounds 2 --repeats 3
fi
if [[ " $PARTS " == *" 4 "* ]]; then
    $PY benchmarks/gpu_train.py --data "$DATA" --sizes base --precisions bf16 --compile yes \
        --max-tokens 25000 --variants copies now
fi

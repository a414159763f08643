#!/usr/bin/env bash
# The CUDA path, by hand on a GPU machine: training steps in fp32, bf16 and fp16 (loss scaling)
# at the base preset on the embedded corpus, then beam-4 evaluation on the GPU. Prints each
# run's last tokens/s line and the BLEU lines. Usage: PY=python3 benchmarks/cuda_check.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
OUT=${1:-runs/cuda-check}
CORPUS=src/aiayn/data/demo
mkdir -p "$OUT"
$PY benchmarks/machine.py
$PY -c "import torch; print('torch', torch.__version__, torch.cuda.get_device_name(0))"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
$PY -m aiayn prepare --train-src $CORPUS/train.en.gz --train-tgt $CORPUS/train.es.gz \
    --valid-src $CORPUS/dev.en.gz --valid-tgt $CORPUS/dev.es.gz --vocab-size 8000 \
    --out "$OUT/data" --overwrite
zcat $CORPUS/dev.en.gz > "$OUT/dev.en"
zcat $CORPUS/dev.es.gz > "$OUT/dev.es"
for precision in fp32 bf16 fp16; do
    rm -rf "$OUT/$precision"
    start=$(date +%s.%N)
    $PY -m aiayn train --data "$OUT/data" --out "$OUT/$precision" --preset base \
        --precision "$precision" --device cuda --max-steps 600 --max-tokens 8000 \
        --warmup 300 --valid-every 600 --valid-bleu-sentences 0 --log-every 50 \
        --no-progress > /dev/null
    end=$(date +%s.%N)
    echo "$precision: $(python3 -c "import json,statistics as s; r=[json.loads(l) for l in open('$OUT/$precision/metrics.jsonl')]; t=[x['tokens_per_s'] for x in r if 'tokens_per_s' in x][2:]; v=[x for x in r if 'valid_loss' in x][-1]; print(f'median {s.median(t):,.0f} target tokens/s, valid loss {v[\"valid_loss\"]:.3f}')"), wall $(python3 -c "print(round($end - $start))") s"
done
for precision in fp32 bf16; do
    start=$(date +%s.%N)
    $PY -m aiayn evaluate --checkpoint "$OUT/$precision" --src "$OUT/dev.en" --ref "$OUT/dev.es" \
        --device cuda | head -1
    end=$(date +%s.%N)
    echo "evaluate ($precision-trained, beam 4, 500 sentences, cuda): $(python3 -c "print(round($end - $start, 1))") s"
done

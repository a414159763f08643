#!/usr/bin/env bash
# Quality run: `small` for 30 minutes on bible-en-es (EN->ES), then dev BLEU with beam 4.
# Run by hand from the repository root; results are recorded in docs/quality.md.
set -euo pipefail
DATA=${DATA:-../shared/data/bible-en-es}
OUT=${OUT:-runs/quality}
PY=${PY:-.venv/bin/python}
MINUTES=${MINUTES:-30}
mkdir -p "$OUT"
[ -d "$OUT/data" ] || $PY -m aiayn prepare --train-src "$DATA/train.en.gz" --train-tgt "$DATA/train.es.gz" \
    --valid-src "$DATA/dev.en.gz" --valid-tgt "$DATA/dev.es.gz" --vocab-size 8000 --out "$OUT/data"
$PY -m aiayn train --data "$OUT/data" --out "$OUT/run" --preset small --precision bf16 \
    --max-minutes "$MINUTES" --max-tokens 4000 --warmup 500 --lr-scale 0.5 \
    --valid-every 200 --valid-bleu-sentences 100 --keep-last 5 --no-progress "$@"
zcat "$DATA/dev.en.gz" > "$OUT/dev.en"; zcat "$DATA/dev.es.gz" > "$OUT/dev.es"
echo "== last checkpoint, beam 4"
$PY -m aiayn evaluate --checkpoint "$OUT/run/checkpoints/last" --src "$OUT/dev.en" --ref "$OUT/dev.es"
for k in 3 5; do
  $PY -m aiayn average "$OUT/run" --last $k --out "$OUT/avg$k"
  echo "== average of the last $k checkpoints, beam 4"
  $PY -m aiayn evaluate --checkpoint "$OUT/avg$k" --src "$OUT/dev.en" --ref "$OUT/dev.es"
done

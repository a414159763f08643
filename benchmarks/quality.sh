#!/usr/bin/env bash
# Quality run: `small` for 30 minutes on an English-Spanish corpus, then dev BLEU with beam 4.
#
#   bash benchmarks/quality.sh [CORPUS_DIR] [extra `aiayn train` flags]
#
# CORPUS_DIR holds train.en.gz, train.es.gz, dev.en.gz, dev.es.gz (default: the embedded demo
# corpus, src/aiayn/data/demo; docs/quality.md used the bible-en-es corpus of the same layout).
# Run by hand from the repository root; results are recorded in docs/quality.md.
set -euo pipefail
DATA=${1:-src/aiayn/data/demo}
[ $# -gt 0 ] && shift
OUT=${OUT:-runs/quality}
PY=${PY:-.venv/bin/python}
MINUTES=${MINUTES:-30}
for f in train.en.gz train.es.gz dev.en.gz dev.es.gz; do
  [ -f "$DATA/$f" ] || { echo "quality.sh: $DATA/$f is missing; give a corpus directory" >&2; exit 2; }
done
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

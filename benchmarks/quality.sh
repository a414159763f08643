#!/usr/bin/env bash
# Quality run: the README's command (`small`, the precision the machine chooses, 30 minutes, no tuning flag: the schedule is
# fitted to the budget and the run ends with its average), then dev BLEU and chrF with beam 4.
#
#   bash benchmarks/quality.sh [CORPUS_DIR [SRC TGT]] [extra `aiayn train` flags]
#
# CORPUS_DIR holds train.SRC.gz, train.TGT.gz, dev.SRC.gz, dev.TGT.gz (default: the embedded
# demo corpus, src/aiayn/data/demo, en es). PREPARE_FLAGS adds `aiayn prepare` flags (for
# software strings: --placeholders). Run by hand from the repository root; results are
# recorded in docs/quality.md.
set -euo pipefail
DATA=${1:-src/aiayn/data/demo}
SRC=${2:-en}
TGT=${3:-es}
[ $# -gt 0 ] && shift
[ $# -gt 1 ] && shift 2
OUT=${OUT:-runs/quality}
PY=${PY:-.venv/bin/python}
MINUTES=${MINUTES:-30}
for f in train.$SRC.gz train.$TGT.gz dev.$SRC.gz dev.$TGT.gz; do
  [ -f "$DATA/$f" ] || { echo "quality.sh: $DATA/$f is missing; give a corpus directory" >&2; exit 2; }
done
mkdir -p "$OUT"
$PY benchmarks/machine.py
[ -d "$OUT/data" ] || $PY -m aiayn prepare --train-src "$DATA/train.$SRC.gz" \
    --train-tgt "$DATA/train.$TGT.gz" --valid-src "$DATA/dev.$SRC.gz" \
    --valid-tgt "$DATA/dev.$TGT.gz" --vocab-size 8000 ${PREPARE_FLAGS:-} --out "$OUT/data"
$PY -m aiayn train --data "$OUT/data" --out "$OUT/run" --preset small \
    --max-minutes "$MINUTES" --no-progress "$@"
zcat "$DATA/dev.$SRC.gz" > "$OUT/dev.$SRC"; zcat "$DATA/dev.$TGT.gz" > "$OUT/dev.$TGT"
echo "== last checkpoint, beam 4"
$PY -m aiayn evaluate --checkpoint "$OUT/run/checkpoints/last" --src "$OUT/dev.$SRC" \
    --ref "$OUT/dev.$TGT"
echo "== the run's own average (what aiayn.load picks), beam 4"
$PY -m aiayn evaluate --checkpoint "$OUT/run" --src "$OUT/dev.$SRC" --ref "$OUT/dev.$TGT"
$PY -m aiayn plot "$OUT/run"

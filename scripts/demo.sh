#!/usr/bin/env bash
# `make demo`: the main job on the embedded corpus, start to finish, in about 10 minutes on
# 2 CPU cores: prepare a shared BPE vocabulary, train the `small` preset, report validation
# BLEU with beam search, translate a few sentences.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
CORPUS=src/aiayn/data/demo
OUT=${OUT:-runs/demo}
STEPS=${STEPS:-900}
MINUTES=${MINUTES:-8}

$PY benchmarks/machine.py  # the CPU this run is measured on, at the head of its log

echo "== 1/4 prepare: shared BPE vocabulary and encoded corpus ($CORPUS)"
[ -f "$OUT/data/stats.json" ] || $PY -m aiayn prepare \
    --train-src $CORPUS/train.en.gz --train-tgt $CORPUS/train.es.gz \
    --valid-src $CORPUS/dev.en.gz --valid-tgt $CORPUS/dev.es.gz \
    --src-lang en --tgt-lang es --vocab-size 8000 --out "$OUT/data"

echo "== 2/4 train: small preset, $STEPS steps or $MINUTES minutes, whichever comes first, with a"
echo "   schedule fitted to that budget, in the precision this machine trains fastest in"
echo "   (chosen and printed at start); a CPU that trains fast does all $STEPS steps, a slower"
echo "   one fewer in the same time"
rm -rf "$OUT/run" "$OUT/averaged"  # the demo's own previous run
$PY -m aiayn train --data "$OUT/data" --out "$OUT/run" --preset small \
    --max-steps "$STEPS" --max-minutes "$MINUTES" --max-tokens 4000 --valid-every 100 --valid-bleu-sentences 50 \
    --keep-last 3 > "$OUT/train-summary.json"
ln -s run/checkpoints/averaged "$OUT/averaged"  # the average of its last 3 checkpoints
$PY -m aiayn plot "$OUT/run"

echo "== 3/4 evaluate: 500 dev sentences, beam 4, length penalty 0.6 (averaged checkpoints)"
zcat $CORPUS/dev.en.gz > "$OUT/dev.en"
zcat $CORPUS/dev.es.gz > "$OUT/dev.es"
$PY -m aiayn evaluate --checkpoint "$OUT/averaged" --src "$OUT/dev.en" --ref "$OUT/dev.es"

echo "== 4/4 translate"
printf '%s\n' "In the beginning God created the heavens and the earth." \
    "The Lord is my shepherd; I shall lack nothing." \
    "Jesus said to them, \"Follow me.\"" > "$OUT/examples.en"
$PY -m aiayn translate --checkpoint "$OUT/averaged" -i "$OUT/examples.en" -o "$OUT/examples.es"
paste -d '\n' "$OUT/examples.en" "$OUT/examples.es" | sed 'n; s/^/  -> /'
echo "run directory: $OUT/run (curves: $OUT/run/curves.png)"
echo "serve it: $PY -m aiayn serve --checkpoint $OUT/averaged  (then open http://127.0.0.1:5000/)"

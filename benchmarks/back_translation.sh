#!/usr/bin/env bash
# Back-translation (Edunov et al., 2018) on bible-en-es, by hand: does sampled synthetic
# source text for monolingual Spanish help an en->es model trained for the same steps?
#   real parallel: the embedded demo corpus (bible-en-es train lines i mod 10 < 7, 19,698)
#   monolingual:   the Spanish side of the held-back train verses (i mod 10 >= 7)
#   dev:           the bible-en-es dev split (1,000 verses)
# 1. a reverse es->en model on the real pairs; 2. it samples an English source for every
# monolingual verse (--sample --top-k 10); 3. en->es on real pairs alone, and on real +
# synthetic pairs (synthetic sources tagged "<bt>"), the same steps and settings; 4. dev BLEU.
# Usage: benchmarks/back_translation.sh [BIBLE_DIR] [STEPS] [OUT]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
BIBLE=${1:-../shared/data/bible-en-es}
STEPS=${2:-500}
OUT=${3:-runs/back-translation}
DEMO=src/aiayn/data/demo
mkdir -p "$OUT"
$PY benchmarks/machine.py
zcat $DEMO/train.en.gz > "$OUT/real.en"
zcat $DEMO/train.es.gz > "$OUT/real.es"
zcat "$BIBLE/train.es.gz" | awk 'NR % 10 >= 8 || NR % 10 == 0' > "$OUT/mono.es"
zcat "$BIBLE/dev.en.gz" > "$OUT/dev.en"
zcat "$BIBLE/dev.es.gz" > "$OUT/dev.es"
echo "real pairs $(wc -l < "$OUT/real.en"), monolingual Spanish $(wc -l < "$OUT/mono.es")"
TRAIN=(--preset small --max-steps "$STEPS" --max-tokens 4000 --warmup 250
       --lr-scale 0.5 --valid-every "$STEPS" --valid-bleu-sentences 0 --no-progress)

run() {  # name src tgt: prepare and train
    $PY -m aiayn prepare --train-src "$2" --train-tgt "$3" --valid-src "$OUT/dev.${2##*.}" \
        --valid-tgt "$OUT/dev.${3##*.}" --vocab-size 8000 --out "$OUT/$1-data" --overwrite
    rm -rf "$OUT/$1"
    $PY -m aiayn train --data "$OUT/$1-data" --out "$OUT/$1" "${TRAIN[@]}" > "$OUT/$1.json"
}

run reverse "$OUT/real.es" "$OUT/real.en"
start=$(date +%s)
$PY -m aiayn translate --checkpoint "$OUT/reverse" -i "$OUT/mono.es" -o "$OUT/mono.synth.en" \
    --sample --top-k 10 --seed 1
echo "sampled $(wc -l < "$OUT/mono.synth.en") synthetic sources in $(( $(date +%s) - start )) s"
cat "$OUT/real.en" <(sed 's/^/<bt> /' "$OUT/mono.synth.en") > "$OUT/bt.en"
cat "$OUT/real.es" "$OUT/mono.es" > "$OUT/bt.es"
run baseline "$OUT/real.en" "$OUT/real.es"
run backtranslated "$OUT/bt.en" "$OUT/bt.es"
for name in baseline backtranslated; do
    echo "== $name ($STEPS steps), dev beam 4:"
    $PY -m aiayn evaluate --checkpoint "$OUT/$name" --src "$OUT/dev.en" --ref "$OUT/dev.es"
done

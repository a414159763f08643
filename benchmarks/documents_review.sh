#!/usr/bin/env bash
# A document under review, as LibreOffice writes it: benchmarks/documents/review.fodt (a
# comment on three words, an insertion and a deletion under tracked changes) converted by
# LibreOffice to .odt and .docx, each translated by `aiayn translate --file`, and each
# translation read back by LibreOffice as text and converted to the other format, where its
# comments are looked for.
#
#     benchmarks/documents_review.sh RUN [WORK]      (LibreOffice: apt-get install libreoffice-writer-nogui)
set -euo pipefail
run=$(realpath "$1")
work=${2:-$(mktemp -d)}
here=$(cd "$(dirname "$0")" && pwd)
aiayn=${AIAYN:-$here/../.venv/bin/aiayn}
lscpu
date -u
soffice --version
mkdir -p "$work" && cd "$work"
cp "$here/documents/review.fodt" .
for kind in odt docx; do
    soffice --headless --convert-to "$kind" review.fodt >/dev/null 2>&1
    echo "== review.$kind, translated"
    "$aiayn" translate --checkpoint "$run" --no-compile --file "review.$kind" \
        -o "translated.$kind" 2>&1
    soffice --headless --convert-to txt:Text "translated.$kind" >/dev/null 2>&1
    mv translated.txt "translated-$kind.txt"
    cat "translated-$kind.txt"; echo
    other=$([ "$kind" = odt ] && echo docx || echo odt)
    mkdir -p "back-$kind"
    soffice --headless --convert-to "$other" --outdir "back-$kind" "translated.$kind" \
        >/dev/null 2>&1
    if [ "$other" = odt ]; then
        unzip -p "back-$kind/translated.odt" content.xml | grep -o "<office:annotation .*</office:annotation>" \
            | sed 's/<[^>]*>/ /g; s/  */ /g'
    else
        unzip -p "back-$kind/translated.docx" word/comments.xml | grep -o "<w:t[^>]*>[^<]*" \
            | sed 's/<[^>]*>//'
    fi
    echo "(comments as LibreOffice reads them back from its .$other of the translation)"
done

"""A real gettext catalog translated as `aiayn translate --file` translates it: placeholders
kept, plural forms filled, entries already translated untouched.

    python benchmarks/gettext_catalog.py --checkpoint RUN \
        [--mo /usr/share/locale/de/LC_MESSAGES/apt.mo]

The compiled catalog (a .mo a Debian package installed, read with polib) is turned back into
a .po whose translations are cleared, except every fourth entry's, which stays as the
packagers wrote it and must come back untouched. The cleared entries are translated; for
those whose msgid holds placeholders (``aiayn.placeholders``: %s, %1$d, {0}, ...) the share
whose translation holds exactly the same ones is reported, and the BLEU of the translations
against the packagers' (the shared l10n corpus was drawn from Debian's catalogs, so this
catalog's strings may be among the training data: a check of the path, not of quality).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import polib
import sacrebleu
from machine import header

from aiayn import placeholders
from aiayn.documents import translate_document


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--mo", default="/usr/share/locale/de/LC_MESSAGES/apt.mo", type=Path)
    args = p.parse_args()
    import aiayn
    print(header(), flush=True)
    translator = aiayn.load(args.checkpoint)
    original = polib.mofile(str(args.mo))
    catalog = polib.POFile()
    catalog.metadata = dict(original.metadata)
    kept, cleared = {}, {}
    for k, entry in enumerate(e for e in original if e.msgid):
        copy = polib.POEntry(msgid=entry.msgid, msgid_plural=entry.msgid_plural,
                             msgctxt=entry.msgctxt, msgstr=entry.msgstr,
                             msgstr_plural=dict(entry.msgstr_plural))
        key = (entry.msgctxt, entry.msgid)
        if k % 4 == 3:
            kept[key] = (entry.msgstr, dict(entry.msgstr_plural))
        else:
            cleared[key] = entry
            copy.msgstr = ""
            copy.msgstr_plural = {i: "" for i in entry.msgstr_plural}
        catalog.append(copy)
    t0 = time.perf_counter()
    out = polib.pofile(translate_document(translator, str(catalog).encode("utf-8"), ".po")
                       .decode("utf-8"))
    seconds = time.perf_counter() - t0
    by_key = {(e.msgctxt, e.msgid): e for e in out}
    untouched = sum((by_key[k].msgstr, dict(by_key[k].msgstr_plural)) == v
                    for k, v in kept.items())
    with_ph = [k for k in cleared if placeholders.find(k[1])]
    held = sum(placeholders.kept(k[1], by_key[k].msgstr or by_key[k].msgstr_plural.get(0, ""))
               for k in with_ph)
    plural = [k for k in cleared if cleared[k].msgid_plural]
    filled = sum(all(v.strip() for v in by_key[k].msgstr_plural.values()) for k in plural)
    singular = [k for k in cleared if not cleared[k].msgid_plural]
    bleu = sacrebleu.corpus_bleu([by_key[k].msgstr for k in singular],
                                 [[cleared[k].msgstr for k in singular]]).score
    print(f"{args.mo}: {len(kept) + len(cleared)} entries, {len(cleared)} translated in "
          f"{seconds:.1f} s, {len(kept)} kept as written")
    print("| measure | result |\n|---|---:|")
    print(f"| entries with placeholders whose translation holds the same ones | {held}/"
          f"{len(with_ph)} = {100 * held / max(1, len(with_ph)):.1f}% |")
    print(f"| plural entries with every form filled | {filled}/{len(plural)} |")
    print(f"| entries already translated, untouched | {untouched}/{len(kept)} |")
    print(f"| BLEU of the singular translations against the packagers' | {bleu:.2f} |")


if __name__ == "__main__":
    main()

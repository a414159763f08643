"""A real gettext catalog translated as `aiayn translate --file` translates it: placeholders
kept, plural forms filled, entries already translated untouched.

    python benchmarks/gettext_catalog.py --checkpoint RUN \
        [--mo /usr/share/locale/de/LC_MESSAGES/apt.mo] [--via-xliff]

The compiled catalog (a .mo a Debian package installed, read with polib) is turned back into
a .po whose translations are cleared, except every fourth entry's, which stays as the
packagers wrote it and must come back untouched. The cleared entries are translated; for
those whose msgid holds placeholders (``aiayn.placeholders``: %s, %1$d, {0}, ...) the share
whose translation holds exactly the same ones is reported, and the BLEU of the translations
against the packagers' (the shared l10n corpus was drawn from Debian's catalogs, so this
catalog's strings may be among the training data: a check of the path, not of quality).
Also counted: translations whose lines (their count, and a newline at the start and at the
end) are the msgid's, which msgfmt --check and the program printing them rely on.
``--via-xliff`` takes the catalog through XLIFF as translate-toolkit converts it (po2xliff,
then xliff2po): the path of a catalog handed over as XLIFF.
"""

from __future__ import annotations

import argparse
import io
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
    p.add_argument("--via-xliff", action="store_true",
                   help="translate the catalog as translate-toolkit's po2xliff writes it")
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
    data = str(catalog).encode("utf-8")
    if args.via_xliff:
        from translate.convert import po2xliff, xliff2po
        xlf = io.BytesIO()
        po2xliff.convertpo(io.BytesIO(data), xlf, None)
        data = xlf.getvalue()
    t0 = time.perf_counter()
    data = translate_document(translator, data, ".xlf" if args.via_xliff else ".po")
    seconds = time.perf_counter() - t0
    if args.via_xliff:
        back = io.BytesIO()
        xliff2po.convertxliff(io.BytesIO(data), back, None)
        data = back.getvalue()
    out = polib.pofile(data.decode("utf-8"))
    # (xliff2po writes a context back in its own way: through XLIFF, entries go by msgid)
    by_key = {(e.msgctxt, e.msgid): e for e in out}
    if args.via_xliff:
        by_msgid = {e.msgid: e for e in out}
        by_key = {k: by_msgid[k[1]] for k in [*kept, *cleared] if k[1] in by_msgid}
        missing = len(kept) + len(cleared) - len(by_key)
        print(f"entries xliff2po gave back under another msgid: {missing}")
        kept = {k: v for k, v in kept.items() if k in by_key}
        cleared = {k: v for k, v in cleared.items() if k in by_key}
    untouched = sum((by_key[k].msgstr, dict(by_key[k].msgstr_plural)) == v
                    for k, v in kept.items())
    with_ph = [k for k in cleared if placeholders.find(k[1])]
    held = sum(placeholders.kept(k[1], by_key[k].msgstr or by_key[k].msgstr_plural.get(0, ""))
               for k in with_ph)
    plural = [k for k in cleared if cleared[k].msgid_plural]
    filled = sum(all(v.strip() for v in by_key[k].msgstr_plural.values()) for k in plural)
    singular = [k for k in cleared if not cleared[k].msgid_plural]

    def lines(text: str) -> tuple[int, bool, bool]:
        return text.count("\n"), text.startswith("\n"), text.endswith("\n")
    same_lines = sum(lines(k[1]) == lines(by_key[k].msgstr) for k in singular)
    bleu = sacrebleu.corpus_bleu([by_key[k].msgstr for k in singular],
                                 [[cleared[k].msgstr for k in singular]]).score
    print(f"{args.mo}{' through XLIFF (po2xliff, xliff2po)' if args.via_xliff else ''}: "
          f"{len(kept) + len(cleared)} entries, {len(cleared)} translated in "
          f"{seconds:.1f} s, {len(kept)} kept as written")
    print("| measure | result |\n|---|---:|")
    print(f"| entries with placeholders whose translation holds the same ones | {held}/"
          f"{len(with_ph)} = {100 * held / max(1, len(with_ph)):.1f}% |")
    print(f"| plural entries with every form filled | {filled}/{len(plural)} |")
    print(f"| singular translations with the msgid's lines and edge newlines | "
          f"{same_lines}/{len(singular)} |")
    print(f"| entries already translated, untouched | {untouched}/{len(kept)} |")
    print(f"| BLEU of the singular translations against the packagers' | {bleu:.2f} |")


if __name__ == "__main__":
    main()

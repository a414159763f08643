"""A real Qt Linguist .ts file, most of its translations cleared, filled by aiayn and compiled by
Qt's own lrelease: are the new translations there and marked for review, the others untouched,
placeholders and keyboard accelerators kept?

    python benchmarks/qt_ts.py --checkpoint RUN --ts retext_de.ts [--keep-every 4]

ReText's source distribution carries its German .ts (``pip download ReText==8.1.0
--no-binary :all:``, ``ReText/locale/retext_de.ts``). Every message's translation but every
``--keep-every``-th is cleared and marked unfinished, as lupdate leaves a new message; aiayn
(`aiayn.documents.translate_document`, what ``translate --file`` runs) fills the file;
lxml reads it and Qt's lrelease (Debian's qttools5-dev-tools) compiles it. BLEU compares the
filled translations with the ones cleared (accelerators taken out of both).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
import time
from pathlib import Path

from machine import header

_ACCELERATOR = re.compile(r"&(?=[^\W_])")


def plain(text: str) -> str:
    return _ACCELERATOR.sub("", text or "")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--ts", required=True, type=Path)
    p.add_argument("--keep-every", type=int, default=4)
    args = p.parse_args()

    import sacrebleu
    from lxml import etree

    import aiayn
    from aiayn.documents import translate_document
    from aiayn.placeholders import find, kept
    print(header(), flush=True)
    print(subprocess.run(["lrelease", "-version"], capture_output=True, text=True).stdout.strip())
    tree = etree.parse(str(args.ts))
    messages = [m for m in tree.iter("message") if m.find("translation") is not None
                and m.find("translation").get("type") is None and m.get("numerus") != "yes"]
    cleared = {}
    for k, message in enumerate(messages):
        if k % args.keep_every:
            translation = message.find("translation")
            cleared[k] = translation.text or ""
            translation.text, translation.attrib["type"] = None, "unfinished"
    data = etree.tostring(tree, xml_declaration=True, encoding="utf-8")
    translator = aiayn.load(args.checkpoint)
    t0 = time.perf_counter()
    out = translate_document(translator, data, ".ts")
    seconds = time.perf_counter() - t0
    filled = etree.fromstring(out)
    # the same messages in the same order (translate-toolkit keeps them)
    every = list(tree.iter("message"))
    after = dict(zip(map(id, every), filled.iter("message")))
    new, kept_as_was, marked, placeholders, accelerators = [], 0, 0, [0, 0], [0, 0]
    for k, message in enumerate(messages):
        source = message.findtext("source")
        now = after[id(message)].find("translation")
        assert after[id(message)].findtext("source") == source
        if k not in cleared:
            kept_as_was += now.text == message.find("translation").text \
                and now.get("type") is None
            continue
        new.append((source, now.text or "", cleared[k]))
        marked += now.get("type") == "unfinished"
        if find(source):
            placeholders[0] += 1
            placeholders[1] += kept(source, now.text or "")
        if _ACCELERATOR.search(source) and "&&" not in source:
            accelerators[0] += 1
            accelerators[1] += len(_ACCELERATOR.findall(now.text or "")) == 1
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "filled.ts"
        path.write_bytes(out)
        compiled = subprocess.run(["lrelease", str(path), "-qm", str(path.with_suffix(".qm"))],
                                  capture_output=True, text=True)
    bleu = sacrebleu.corpus_bleu([plain(t) for _, t, _ in new], [[plain(r) for _, _, r in new]])
    print(f"\nfile: {args.ts} ({len(messages)} translated messages, {len(cleared)} cleared)")
    print("| check | result |\n|---|---:|")
    print(f"| cleared messages filled | {sum(bool(t.strip()) for _, t, _ in new)}/{len(new)} |")
    print(f"| filled ones marked unfinished (for review) | {marked}/{len(new)} |")
    print(f"| messages left translated, untouched | {kept_as_was}/{len(messages) - len(new)} |")
    print(f"| placeholders and markup kept | {placeholders[1]}/{placeholders[0]} |")
    print(f"| keyboard accelerators kept (one \"&\") | {accelerators[1]}/{accelerators[0]} |")
    print(f"| lrelease | {' '.join(compiled.stdout.split()) or compiled.stderr.strip()} |")
    print(f"| BLEU against the cleared translations | {bleu.score:.2f} |")
    print(f"| seconds | {seconds:.1f} |")


if __name__ == "__main__":
    main()

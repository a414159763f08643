"""The package's import graph runs one way, down the layers written in docs/design.md: no
module imports one above it (imports inside functions count too)."""

import ast
from pathlib import Path

import aiayn

# bottom to top; a unit may import units of lower rank only
LAYERS = [
    {"placeholders"},
    {"config", "detect", "errors", "files", "glossary", "integrity", "markup", "outputs"},
    {"model"},
    {"runtime"},
    {"data"},
    {"checkpoint"},
    {"decode"},
    {"codec", "inspect"},
    {"translate", "generate", "classify"},
    {"evaluate", "documents"},
    {"train", "interop"},
    {"serve"},
    {"cli"},
    {"__main__"},
]
RANK = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}
ROOT = Path(aiayn.__file__).parent


def unit(module: str) -> str:
    """aiayn.train.trainer -> train; aiayn.codec -> codec."""
    return module.split(".")[1]


def imports() -> list[tuple[str, str, str]]:
    """(importing file, its unit, imported unit) for every import of another aiayn unit."""
    found = []
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        if package == "aiayn" and path.name != "__init__.py":
            continue  # aiayn/__init__.py's lazy names are checked below
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                targets = ([".".join(base + [node.module])] if node.module else
                           [".".join(base + [a.name]) for a in node.names])
            elif node.module and node.module.startswith("aiayn."):
                targets = [node.module]
            else:
                continue
            for target in targets:
                if target != "aiayn" and unit(target) != unit(module):
                    found.append((str(path.relative_to(ROOT)), unit(module), unit(target)))
    return found


def test_every_unit_has_a_layer():
    units = {p.stem if p.is_file() else p.name for p in ROOT.iterdir()
             if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    assert units == set(RANK)


def test_no_module_imports_one_above_it():
    upward = [(path, frm, to) for path, frm, to in imports() if RANK[to] >= RANK[frm]]
    assert not upward, upward
    assert len(imports()) > 50  # the walk found the package's imports


def test_inference_and_data_import_nothing_of_training():
    for path, frm, to in imports():
        if frm in ("translate", "generate", "classify", "codec", "decode", "data",
                   "checkpoint", "runtime", "model"):
            assert to != "train", path

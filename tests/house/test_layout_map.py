"""The layout map (the ```text block of ``docs/architecture.md``) gives every folder of ``encoder/`` and
``vocab/`` its line, and every top-level module its job, so a newcomer finds a thing in one guess;
a new folder or module without a line fails here, and so does a line for a folder that is gone."""

from __future__ import annotations

import re
from pathlib import Path

from support.paths import ROOT

TOPS = ("encoder", "vocab")
MAP = Path("docs") / "architecture.md"


def layout_map(root: Path) -> str:
    """The first ```text block of the architecture page (the map); empty when there is none."""
    found = re.search(r"```text\n(.*?)```", (root / MAP).read_text("utf-8"), flags=re.S)
    return found.group(1) if found else ""


def folders(root: Path) -> list[str]:
    """Every folder under ``encoder/`` and ``vocab/`` (packages and data alike), as ``vocab/data/``."""
    out = []
    for top in TOPS:
        out.append(f"{top}/")
        for d in sorted((root / top).rglob("*")):
            rel = d.relative_to(root)
            if d.is_dir() and not any(p.startswith((".", "__")) for p in rel.parts):
                out.append(rel.as_posix() + "/")
    return out


def unmapped(root: Path) -> list[str]:
    """Folders and top-level modules the map does not name, and folders it names that are gone."""
    doc = layout_map(root)
    missing = [f for f in folders(root) if not re.search(rf"(?<![\w/]){re.escape(f)}", doc)]
    for top in TOPS:
        for path in sorted((root / top).glob("*.py")):
            if path.stem != "__init__" and not re.search(rf"(?<![\w.]){re.escape(path.stem)}(?!\w)", doc):
                missing.append(path.relative_to(root).as_posix())
    named = set(re.findall(r"(?<![\w/])((?:encoder|vocab)/(?:[\w.-]+/)*)", doc))
    missing += [f"{f} (named, but not a folder)" for f in sorted(named - set(folders(root)))]
    return missing


def test_every_folder_and_top_level_module_has_its_line():
    assert unmapped(ROOT) == [], f"give each its line in the layout map ({MAP}, its ```text block)"


def test_the_map_says_where_harmony_headers_are_built():
    doc = layout_map(ROOT)
    line = next(block for block in re.split(r"\n(?=  \S)", doc) if block.lstrip().startswith("encoder/formats/"))
    assert "headers" in line and "harmony" in line


# -- the checker itself ---------------------------------------------------------------------------

def _tree(root: Path, doc: str, folders: tuple[str, ...], modules: tuple[str, ...] = ()) -> None:
    for top in TOPS:
        (root / top).mkdir(parents=True, exist_ok=True)
    (root / MAP).parent.mkdir(parents=True, exist_ok=True)
    (root / MAP).write_text(f"# Architecture\n\n```text\n{doc}\n```\n", encoding="utf-8")
    for f in folders:
        (root / f).mkdir(parents=True, exist_ok=True)
        (root / f / "__init__.py").write_text("", encoding="utf-8")
    for m in modules:
        (root / m).write_text("", encoding="utf-8")


def test_checker_flags_a_folder_without_a_line(tmp_path):
    doc = "encoder/ vocab/\n  encoder/formats/  formats\n  vocab/data/  data\n  encoder/x (not a folder line)"
    _tree(tmp_path, doc, ("encoder/formats", "encoder/newjob", "encoder/formats/deep", "vocab/data", "vocab/data/tokens"))
    (tmp_path / "encoder" / "__pycache__").mkdir()
    assert unmapped(tmp_path) == ["encoder/formats/deep/", "encoder/newjob/", "vocab/data/tokens/"]


def test_checker_flags_a_top_level_module_without_a_line(tmp_path):
    doc = "encoder/ vocab/\n  render (pieces -> ids), vocab.codec (not this one)\n  tables"
    _tree(tmp_path, doc, (), ("encoder/render.py", "encoder/render_batch.py", "encoder/codec.py", "vocab/tables.py"))
    assert unmapped(tmp_path) == ["encoder/codec.py", "encoder/render_batch.py"]


def test_checker_flags_a_line_for_a_folder_that_is_gone(tmp_path):
    _tree(tmp_path, "encoder/ vocab/\n  encoder/formats/  formats\n  encoder/decode/  gone", ("encoder/formats",))
    assert unmapped(tmp_path) == ["encoder/decode/ (named, but not a folder)"]

"""No import circles in ocml's packages (issue 21), counting every import statement: module
level, function-local and under ``TYPE_CHECKING`` alike.  The graph code is
``scripts/import_cycles.py``'s (one home); these tests load it from the repository."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

import pytest

from support.paths import ROOT


def _walker():
    spec = importlib.util.spec_from_file_location("ocml_import_cycles", ROOT / "scripts" / "import_cycles.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


walker = _walker()

#: the modules that may import the facade ``encoder.facade``: the package's public entry and the
#: entry points that build an ``Encoder`` from a name (never a feature: features take a ``Codec``)
FACADE_IMPORTERS = {
    "encoder",                            # ocml.encoder.Encoder
    "encoder.cli", "encoder.cli_view", "encoder.template.cli",
    "encoder.pipeline.pack_encoder",      # pipeline workers build theirs
    "encoder.model.detect",               # probes render with candidate encoders
    "encoder.integrations.render_stage", "encoder.integrations.pack_stage",  # Ray stages from a format name
}


def test_no_import_circles():
    circles = walker.components(walker.edges(walker.modules()))
    assert not circles, "import circles (strongly connected modules):\n" + "\n".join(
        f"  {len(c)} modules: {', '.join(c)}" for c in circles)


def test_only_entry_points_import_the_facade():
    graph = walker.edges(walker.modules())
    importers = {m for m, deps in graph.items() if "encoder.facade" in deps}
    assert importers <= FACADE_IMPORTERS, (
        f"{sorted(importers - FACADE_IMPORTERS)} import encoder.facade: take a Codec "
        "(ocml.encoder.codec) and import the feature modules you call instead")


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), "utf-8")


def test_the_walker_finds_circles_through_every_kind_of_import(tmp_path):
    """A synthetic package: a type-only back-import and a function-local one are circles too;
    a one-way chain is not."""
    _package(tmp_path, {
        "pkg/__init__.py": "",
        "pkg/a.py": "from .b import f\n",
        "pkg/b.py": """
            from typing import TYPE_CHECKING
            if TYPE_CHECKING:
                from .a import A
            def f(): ...
        """,
        "pkg/sub/__init__.py": "",
        "pkg/sub/c.py": """
            def g():
                from ..d import h
                return h
        """,
        "pkg/d.py": "import ocml.pkg.sub.c\n",          # the ocml. prefix is the installed name
        "pkg/leaf.py": "from . import a\nfrom .sub import c\n",
    })
    graph = walker.edges(walker.modules(tmp_path, ("pkg",)))
    assert graph["pkg.sub.c"] == {"pkg.d"}
    assert "pkg.sub.c" in graph["pkg.d"]
    circles = walker.components(graph)
    assert sorted(circles) == [["pkg.a", "pkg.b"], ["pkg.d", "pkg.sub.c"]]


def test_the_walker_passes_a_one_way_package(tmp_path):
    _package(tmp_path, {
        "pkg/__init__.py": "from .a import x\n",
        "pkg/a.py": "from .b import y\nx = y\n",
        "pkg/b.py": "y = 1\n",
    })
    assert walker.components(walker.edges(walker.modules(tmp_path, ("pkg",)))) == []


@pytest.mark.parametrize("fmt", ["harmony", "openchatml-2.2", "chatml"])
def test_features_keep_their_tables_in_the_codec_not_on_the_encoder(fmt):
    """No feature stashes attributes on the encoder: parse, transcripts and stream decoding
    build their tables in the codec's memo (``Codec.table``) and its ``lexicon``."""
    from ocml.encoder import Encoder

    enc = Encoder(fmt)
    before = set(vars(enc))
    conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    ids = enc.render(conv).ids
    enc.parse(ids)
    enc.parse_text(enc.to_text(conv))
    dec = enc.decoder()
    dec.feed(ids.tolist())
    dec.finish()
    assert set(vars(enc)) - before == {"lexicon"}  # the one cached property
    assert len(enc._tables) == 4  # id parser, transcript format and reader, scanner tables

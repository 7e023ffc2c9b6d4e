"""A format is one folder (issue 29): ``encoder/formats/<pkg>/`` declares everything about it, the
registries are built by discovering the folders, and no module outside a format's folder names a
format.  Checked here: (1) no string literal outside the format folders spells a format name or
alias (docstrings aside; the few generic strings that coincide with one are listed with their
reason); (2) a throwaway folder dropped into a copy of the package is found - names, aliases,
token table, class, chat template, response template, detection candidates - with no other edit;
(3) the discovery's own checks (a name declared twice, no default) fail typed.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from ocml import vocab
from ocml.encoder import formats as formats_pkg
from ocml.encoder.formats import RENDERABLE, declarations
from ocml.vocab.discovery import catalog, read_catalog
from ocml.vocab.errors import VocabError

from support.paths import ROOT

FORMATS = ROOT / "encoder" / "formats"
NAMES = set(vocab.FORMAT_NAMES) | set(vocab.tables.ALIASES)

#: (module, literal) -> why a string that spells a format name is not naming the format
GENERIC = {
    ("encoder/messages.py", "harmony"): "CotPolicy.HARMONY / CotName: a CoT policy named after openai-harmony's "
                                        "drop rule, which any format may use",
}


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def format_literals(path: Path) -> list[tuple[int, str]]:
    """(line, literal) for each string constant in ``path`` that is a format name or alias."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    docs = _docstrings(tree)
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in NAMES and id(n) not in docs]


def _outside_the_folders() -> list[Path]:
    folders = {p.parent for p in FORMATS.glob("*/format.json")}
    return [p for top in ("encoder", "vocab") for p in sorted((ROOT / top).rglob("*.py"))
            if not any(f in p.parents for f in folders)]


def test_the_scan_finds_a_named_format(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text('"""harmony in a docstring is prose."""\nX = {"harmony": 1}\ndef f(e="gpt-oss"):\n    return e\n')
    assert format_literals(probe) == [(2, "harmony"), (3, "gpt-oss")]


def test_no_module_outside_a_format_folder_names_a_format():
    files = _outside_the_folders()
    assert len(files) > 50 and not any("formats/harmony/" in p.as_posix() for p in files)
    found = {(p.relative_to(ROOT).as_posix(), lit): line for p in files for line, lit in format_literals(p)}
    named = sorted(f"{path}:{line}: {lit!r}" for (path, lit), line in found.items() if (path, lit) not in GENERIC)
    assert named == [], "a format is declared in its folder (encoder/formats/<pkg>/), not named elsewhere"
    assert set(GENERIC) <= set(found), f"stale exceptions: {sorted(set(GENERIC) - set(found))}"


def test_every_folder_declares_what_the_registries_hold():
    cat = catalog()
    assert cat.names == vocab.FORMAT_NAMES and cat.default == vocab.DEFAULT_FORMAT
    assert tuple(declarations()) == RENDERABLE and set(RENDERABLE) <= set(vocab.FORMAT_NAMES)
    for d in cat.formats:
        # the installed package's folder (editable: the checkout's), as discovery reads it
        assert d.tokens.parent == Path(formats_pkg.__file__).parent / d.package and d.tokens.is_file()
        assert vocab.control_table(d.name).format == d.name
    assert not list((ROOT / "vocab" / "data").glob("tokens/*.json")), "token tables live in the format folders"


def _manifest(folder: Path, **raw) -> None:
    folder.mkdir(parents=True)
    shutil.copy(FORMATS / "chatml" / "chatml.tokens.json", folder / "x.tokens.json")
    (folder / "format.json").write_text(json.dumps(raw), "utf-8")


def test_the_discovery_checks_the_manifests(tmp_path):
    _manifest(tmp_path / "a", default="x", formats=[{"name": "x", "order": 1, "tokens": "x.tokens.json"}])
    _manifest(tmp_path / "b", formats=[{"name": "y", "order": 2, "aliases": ["x"], "tokens": "x.tokens.json"}])
    with pytest.raises(VocabError) as info:
        read_catalog(tmp_path)
    assert info.value.code == "E-FORMAT-DECLARATION" and "x" in info.value.message
    shutil.rmtree(tmp_path / "b")
    assert read_catalog(tmp_path).names == ("x",)
    (tmp_path / "a" / "format.json").write_text(json.dumps(
        {"formats": [{"name": "x", "order": 1, "tokens": "x.tokens.json"}]}), "utf-8")
    with pytest.raises(VocabError) as info:
        read_catalog(tmp_path)
    assert info.value.code == "E-FORMAT-DECLARATION" and info.value.field == "default"


#: a format folder as a newcomer writes it: ChatML's class under a new name, its own alias,
#: template profile, response template and detection candidate
ECHO = {
    "format.json": json.dumps({"formats": [{"name": "echo-test", "order": 99, "aliases": ["echo"],
                                            "tokens": "echo-test.tokens.json"}]}),
    "__init__.py": '''
        from ..declare import Candidate, Declaration, TemplateProfile

        FORMATS = (Declaration("echo-test", "format:Echo",
                               template=TemplateProfile(header="chatml", sources=("messages.jinja", "cot.jinja",
                                                                                  "echo.jinja"),
                                                        tool_name_required=False),
                               response_fields="response:fields",
                               candidates=(Candidate("echo-test"),), detect_order=99),)
        ''',
    "format.py": '''
        from ..chatml.format import ChatML


        class Echo(ChatML):
            name = "echo-test"
        ''',
    "response.py": "from ..chatml.response import fields  # noqa: F401\n",
}

PROBE = '''
import json, sys
import ocml
from ocml import vocab
from ocml.encoder.formats import RENDERABLE
from ocml.encoder.model.detect import _candidates
from ocml.encoder.template import chat_template
from ocml.encoder.template.response import response_template

conv = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
echo, chatml = ocml.Encoder("echo"), ocml.Encoder("chatml")
print(json.dumps({
    "file": ocml.__file__,
    "names": list(vocab.FORMAT_NAMES), "renderable": list(RENDERABLE),
    "canonical": vocab.canonical_format("ECHO"), "name": echo.format_name,
    "same_ids": echo.render(conv).ids.tolist() == chatml.render(conv).ids.tolist(),
    "template": chat_template(echo).replace("echo-test", "chatml") == chat_template(chatml),
    "response": response_template(echo) == response_template(chatml),
    "detect": [c.format for c in _candidates()][-1],
}))
'''


def test_a_new_folder_is_discovered_with_no_other_edit(tmp_path):
    pkg = tmp_path / "ocml"
    shutil.copytree(ROOT / "ocml", pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for top in ("encoder", "vocab"):
        shutil.copytree(ROOT / top, pkg / top, ignore=shutil.ignore_patterns("__pycache__"))
    folder = pkg / "encoder" / "formats" / "echo"
    folder.mkdir()
    for name, text in ECHO.items():
        (folder / name).write_text(textwrap.dedent(text), "utf-8")
    shutil.copy(FORMATS / "chatml" / "chatml.tokens.json", folder / "echo-test.tokens.json")
    shutil.copy(FORMATS / "chatml" / "chatml.jinja", folder / "echo.jinja")
    out = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert Path(got.pop("file")).parent == pkg, "the copy, not the installed package, was imported"
    assert got == {"names": [*vocab.FORMAT_NAMES, "echo-test"], "renderable": [*RENDERABLE, "echo-test"],
                   "canonical": "echo-test", "name": "echo-test", "same_ids": True, "template": True,
                   "response": True, "detect": "echo-test"}

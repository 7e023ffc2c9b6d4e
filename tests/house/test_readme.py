"""The Python examples of the README and of every docs page run as written: each file's ```python
blocks in one namespace, in order (a page may build on its own earlier blocks, never on another page's)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from support.paths import ROOT

README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").rglob("*.md"))


def blocks(path: Path = README) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text("utf-8"), flags=re.S)


def test_readme_has_an_api_tour():
    assert len(blocks()) >= 1 and any("render" in b for b in blocks())


def test_the_docs_have_examples():
    assert len(PAGES) >= 10 and sum(len(blocks(p)) for p in PAGES) >= 10


@pytest.mark.parametrize("path", [README, *PAGES], ids=lambda p: p.relative_to(ROOT).as_posix())
def test_python_blocks_run(path, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    # ... and read the bundled samples as a reader in a checkout does (examples/sample): the checkout's,
    # never a path beside the installed package (a non-editable install has none)
    (tmp_path / "examples").symlink_to(ROOT / "examples", target_is_directory=True)
    ns: dict[str, object] = {"__name__": "docs"}
    for k, code in enumerate(blocks(path)):
        try:
            exec(compile(code, f"{path.name} python block {k}", "exec"), ns)  # noqa: S102 - our own docs
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"{path.relative_to(ROOT)} python block {k} failed: {exc!r}\n{code}") from exc

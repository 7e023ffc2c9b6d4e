"""The README's Python examples run as written (one namespace, in order)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text("utf-8"), flags=re.S)


def test_readme_has_an_api_tour():
    assert len(blocks()) >= 1 and any("render" in b for b in blocks())


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    ns: dict[str, object] = {"__name__": "readme"}
    for k, code in enumerate(blocks()):
        try:
            exec(compile(code, f"README.md python block {k}", "exec"), ns)  # noqa: S102 - our own README
        except Exception as exc:  # noqa: BLE001
            raise AssertionError(f"README python block {k} failed: {exc!r}\n{code}") from exc

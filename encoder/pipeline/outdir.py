"""The output folder and what ocml may do in it.

ocml writes only into ``--out`` and deletes only what it wrote there: every file or folder
it creates is *claimed* first, by path, in its marker ``.ocml/owned.json``.  A claim on a
path that already exists and is not in the marker is refused (``E-OUT-CONFLICT``): ocml
never replaces or deletes a file it did not create, whatever its name.  ``--overwrite``
removes the claimed files (and claimed folders once empty), nothing else.  An ``--out``
that contains one of the inputs is refused before anything is written (``E-OUT-INPUT``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from ..errors import InputError
from .readers import Source
from .resume import PROGRESS, STATE_DIR, read_progress

MARKER = "owned.json"
# What ocml wrote before it kept a marker (a folder with ``.ocml/progress.json`` but no
# marker): only these names, the ones that ocml version wrote itself, are adopted.
LEGACY_FILES = ("manifest.json", "report.json", "errors.jsonl", "overlong.jsonl", "lengths.png",
                f"{STATE_DIR}/{PROGRESS}")


class OutDir:
    """``--out`` with its ownership marker (relative POSIX paths; folders end in ``/``)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.marker = out / STATE_DIR / MARKER
        self.owned: set[str] = {f"{STATE_DIR}/{MARKER}", f"{STATE_DIR}/.{MARKER}.tmp"}  # the marker itself
        if self.marker.is_file():
            try:
                self.owned |= set(json.loads(self.marker.read_text("utf-8"))["owned"])
            except (ValueError, KeyError, TypeError):
                raise InputError(f"{self.marker} is damaged", code="E-OUT", field="--out",
                                 hint="use a new --out (ocml cannot tell which files there are its own)") from None

    def adopt_legacy(self) -> bool:
        """Claim the files of a pack run written before markers existed (``LEGACY_FILES`` and
        ``train-NNNNN`` shards); False when ``out`` is not such a run."""
        if self.marker.exists() or not (self.out / STATE_DIR / PROGRESS).is_file():
            return False
        try:
            if "fingerprint" not in json.loads((self.out / STATE_DIR / PROGRESS).read_text("utf-8")):
                return False
        except ValueError:
            return False
        keys = {name for name in LEGACY_FILES if (self.out / name).is_file()} | {f"{STATE_DIR}/"}
        for sub in ("data", "npy"):
            for p in sorted((self.out / sub).glob("*")) if (self.out / sub).is_dir() else []:
                if _legacy_shard(p.name):
                    keys.add(self.rel(p) + ("/" if p.is_dir() else ""))
                    if p.is_dir():
                        keys |= {self.rel(f) for f in p.iterdir() if f.is_file()}
        self.owned |= keys
        self._save()
        return True

    def rel(self, path: Path) -> str:
        return path.relative_to(self.out).as_posix()

    def _key(self, path: Path, folder: bool) -> str:
        return self.rel(path) + ("/" if folder else "")

    def owns(self, path: Path, folder: bool = False) -> bool:
        return self._key(path, folder) in self.owned

    def claim(self, paths: Iterable[Path], folders: Iterable[Path] = ()) -> None:
        """Record ``paths`` (files) and ``folders`` as ocml's before creating them; refuse
        any that exists already and is not ocml's."""
        new: list[str] = []
        for p, folder in [(p, False) for p in paths] + [(f, True) for f in folders]:
            key = self._key(p, folder)
            if key in self.owned:
                continue
            if folder and p.is_dir() and not p.is_symlink():
                continue  # an existing folder (the user's data/): ocml adds files, never removes it
            if p.exists() or p.is_symlink():
                raise InputError(f"{p} exists and was not written by ocml", code="E-OUT-CONFLICT", field="--out",
                                 hint="ocml never replaces a file it did not create: move it, or use another --out")
            new.append(key)
        if new:
            self.owned.update(new)
            self._save()

    def _save(self) -> None:
        self.marker.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.marker.with_name("." + MARKER + ".tmp")
        tmp.write_text(json.dumps({"owned": sorted(self.owned)}, indent=0) + "\n", encoding="utf-8")
        os.replace(tmp, self.marker)

    def remove(self, which: Callable[[str], bool] = lambda key: True) -> None:
        """Delete the claimed files ``which`` selects, then claimed folders that are left empty."""
        keep = {f"{STATE_DIR}/", f"{STATE_DIR}/{MARKER}", f"{STATE_DIR}/.{MARKER}.tmp"}  # the bookkeeping itself
        keys = sorted(k for k in self.owned if which(k) and k not in keep)
        for k in keys:
            if not k.endswith("/"):
                p = self.out / k
                if p.is_file() or p.is_symlink():
                    p.unlink()
                self.owned.discard(k)
        for k in sorted((k for k in keys if k.endswith("/")), key=lambda k: -k.count("/")):
            p = self.out / k
            try:
                p.rmdir()
            except FileNotFoundError:
                pass
            except OSError:
                continue  # not empty: it holds files ocml did not write; keep the folder and the claim
            self.owned.discard(k)
        self._save()

    def write_json(self, name: str, obj: Any) -> None:
        """Write ``out/name`` atomically (temp file + rename), both claimed."""
        from .report import write_json

        path = self.out / name
        self.claim([path, path.with_name("." + path.name + ".tmp")])
        write_json(path, obj)


def _legacy_shard(name: str) -> bool:
    stem = name.lstrip(".").split(".")[0]
    return stem.startswith("train-") and stem[6:].isdigit()


def is_shard(key: str, first: int) -> bool:
    """A claimed shard path (``data/train-00003.parquet``, ``npy/train-00003/x.npy``, temporary
    ``.train-...``) that a run resumed at shard ``first`` must rewrite."""
    parts = key.rstrip("/").split("/")
    if len(parts) < 2 or parts[0] not in ("data", "npy", "megatron"):
        return False
    name = parts[1]
    if name.startswith("."):
        return True
    stem = name.split(".")[0].split("_")[0]  # train-00003[_text_document]
    head, _, num = stem.rpartition("-")
    return bool(head) and num.isdigit() and int(num) >= first


def check_inputs_outside(out: Path, sources: list[Source]) -> None:
    """Refuse an ``--out`` that holds one of the inputs (the run would write beside / over it)."""
    root = out.resolve()
    for s in sources:
        p = s.path.resolve()
        if p == root or root in p.parents:
            raise InputError(f"--out {out} contains the input {s.display}", code="E-OUT-INPUT", field="--out",
                             hint="write the output to a folder that holds none of the inputs")


def prepare(out: Path, fp: str, overwrite: bool, sources: list[Source]) -> tuple[OutDir, dict[str, Any] | None]:
    """Create / check the output folder; returns it and the saved progress when resuming."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a directory", code="E-OUT", field="--out")
    check_inputs_outside(out, sources)
    od = OutDir(out)
    if overwrite and out.exists():
        od.adopt_legacy()
        od.remove()
    progress = read_progress(out) if od.owns(out / STATE_DIR / PROGRESS) else None
    if progress is not None:
        if progress.get("fingerprint") != fp:
            raise InputError(f"{out} holds the output of a different input or options", code="E-OUT-MISMATCH",
                             field="--out", hint="use a new --out, or --overwrite to replace it")
        return od, progress
    if out.exists() and not overwrite and any(out.iterdir()):
        raise InputError(f"{out} is not empty and holds no ocml pack run", code="E-OUT", field="--out",
                         hint="use a new or empty --out, or --overwrite (writes beside your files; removes only "
                              "files ocml wrote)")
    out.mkdir(parents=True, exist_ok=True)
    od.claim([], [out / STATE_DIR])
    (out / STATE_DIR).mkdir(exist_ok=True)
    # Claim the folder for this fingerprint at once: a run killed before its first shard resumes too.
    od.write_json(f"{STATE_DIR}/{PROGRESS}", {"fingerprint": fp, "status": "running", "shards": 0, "rows": 0,
                                              "checkpoint": None})
    return od, None

"""The output folder and what ocml may do in it.

ocml writes only into ``--out`` and deletes only what it wrote there: every file or folder
it creates is *claimed* first, by path, in its marker ``.ocml/owned.json``.  A claim on a
path that already exists and is not in the marker is refused (``E-OUT-CONFLICT``): ocml
never replaces or deletes a file it did not create, whatever its name.  ``--overwrite``
removes the claimed files (and claimed folders once empty), nothing else.  An ``--out``
that contains one of the inputs is refused before anything is written (``E-OUT-INPUT``).

Every path ocml writes, replaces or deletes stays inside ``--out``: a marker key that is
absolute or climbs out (``../x``), and a symbolic link on the way to a path (a linked
``data/``, a linked ``errors.jsonl``; ocml never creates one) are refused (``E-OUT-ESCAPE``).
A file ocml did not write under a shard name in the shard folders (``data/``, ``npy/``,
``megatron/``: ``train-00003-of-00004.parquet``, ``train-notes.txt``) would be read by a
trainer as ocml's output: it stops the run before anything is removed (``E-OUT-CONFLICT``,
naming it).  ``prepare`` takes the folder's lock
(``outlock``) before it reads or removes anything, and removes the recipe spool of a run that
is complete (a kill after "done") or overwritten.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable
from pathlib import Path, PurePosixPath
from typing import IO, Any

from ..errors import InputError
from .faults import fault
from .outlock import LOCK, OutLock, acquire
from .readers import Source
from .resume import PROGRESS, SPOOL_DIR, STATE_DIR, read_progress
from .shards import MEGATRON_DIR, NPY_DIR, PARQUET_DIR, SPLITS

MARKER = "owned.json"
# What ocml wrote before it kept a marker (a folder with ``.ocml/progress.json`` but no
# marker): only these names, the ones that ocml version wrote itself, are adopted.
LEGACY_FILES = ("manifest.json", "report.json", "errors.jsonl", "overlong.jsonl", "lengths.png",
                f"{STATE_DIR}/{PROGRESS}")
SHARD_DIRS = (PARQUET_DIR, NPY_DIR, MEGATRON_DIR)
# The bookkeeping itself: always ocml's, never removed by ``remove``.
BOOKKEEPING = (f"{STATE_DIR}/", f"{STATE_DIR}/{MARKER}", f"{STATE_DIR}/.{MARKER}.tmp", f"{STATE_DIR}/{LOCK}")


def _escape(path: Path, why: str) -> InputError:
    return InputError(f"{path} {why}", code="E-OUT-ESCAPE", field="--out",
                      hint="ocml writes and deletes only inside --out, never through a link (it creates none): "
                           "remove the link or the entry, or use another --out")


def _safe_key(key: Any) -> bool:
    """A marker key ocml could have written: a relative path below ``--out``, no ``..``."""
    if not isinstance(key, str) or not key or key.startswith("/") or "\0" in key:
        return False
    parts = PurePosixPath(key.rstrip("/")).parts
    return bool(parts) and all(p not in ("..", ".", "") for p in parts)


class OutDir:
    """``--out`` with its ownership marker (relative POSIX paths; folders end in ``/``)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.marker = out / STATE_DIR / MARKER
        self.lock: OutLock | None = None
        self.owned: set[str] = set(BOOKKEEPING)
        if self.marker.is_file() and not self.marker.is_symlink():
            try:
                keys = list(json.loads(self.marker.read_text("utf-8"))["owned"])
            except (ValueError, KeyError, TypeError):
                raise InputError(f"{self.marker} is damaged", code="E-OUT", field="--out",
                                 hint="use a new --out (ocml cannot tell which files there are its own)") from None
            bad = [k for k in keys if not _safe_key(k)]
            if bad:
                raise _escape(self.marker, f"names {str(bad[0])[:200]!r}, a path outside --out: ocml never wrote "
                                           "this marker (copied or edited)")
            self.owned |= set(keys)
        elif self.marker.is_symlink():
            raise _escape(self.marker, "is a symbolic link")

    def close(self) -> None:
        """Release the folder's lock (the end of the run)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self) -> OutDir:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def confine(self, path: Path) -> None:
        """Refuse ``path`` (below ``out``) when a symbolic link lies on the way to it or is it:
        whatever ocml writes or deletes there stays inside ``--out``."""
        cur = self.out
        for part in path.relative_to(self.out).parts:
            cur = cur / part
            if cur.is_symlink():
                raise _escape(cur, "is a symbolic link")

    def check_foreign(self) -> None:
        """Refuse, before anything is removed, a file ocml did not write under a shard name in
        its shard folders (``SHARD_DIRS``: ``train-*``, ``validation-*``, their hidden
        temporaries; anything inside a shard folder of its own): a trainer reading
        ``DIR/data/train-*.parquet`` would read it as ocml's output.  Other files there
        (``data/mydata.jsonl``) are the user's, left beside."""
        todo = [self.out / d for d in SHARD_DIRS]
        while todo:
            folder = todo.pop()
            self.confine(folder)
            if not folder.is_dir():
                continue
            top = folder.parent == self.out
            for p in sorted(folder.iterdir()):
                if top and not p.name.lstrip(".").startswith(tuple(f"{s}-" for s in SPLITS)):
                    continue  # the user's, beside: never written, never removed
                self.confine(p)
                is_dir = p.is_dir()
                if not self.owns(p, folder=is_dir):
                    raise InputError(
                        f"{p} was not written by ocml", code="E-OUT-CONFLICT", field="--out",
                        hint=f"in {folder.relative_to(self.out)}/ a trainer would read it as ocml's output (a "
                             "shard name, or inside an ocml shard), and --overwrite removes only ocml's files: "
                             "move it out of --out (or rename it), or use another --out")
                if is_dir:
                    todo.append(p)

    def remove_spool(self) -> None:
        """Remove the recipe spool (``.ocml/spool/``: only ocml writes there) and its claim."""
        folder = self.out / STATE_DIR / SPOOL_DIR
        self.confine(folder)
        if folder.is_dir():
            shutil.rmtree(folder)  # does not follow links inside
        key = self._key(folder, True)
        if key in self.owned:
            self.owned.discard(key)
            self._save()

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
            self.confine(p)
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
        keys = sorted(k for k in self.owned if which(k) and k not in BOOKKEEPING)
        for k in keys:
            self.confine(self.out / k.rstrip("/"))
        for k in keys:
            if not k.endswith("/"):
                p = self.out / k
                if p.is_file():
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


def is_shard(key: str, first: int, split: str | None = None) -> bool:
    """A claimed shard path (``data/train-00003.parquet``, ``npy/train-00003/x.npy``, temporary
    ``.train-...``) that a run resumed at shard ``first`` must rewrite (``split``: of that split
    only, ``train-`` / ``validation-``)."""
    parts = key.rstrip("/").split("/")
    if len(parts) < 2 or parts[0] not in SHARD_DIRS:
        return False
    name = parts[1]
    stem = name.lstrip(".").split(".")[0].split("_")[0]  # train-00003[_text_document]
    head, _, num = stem.rpartition("-")
    if split is not None and head != split:
        return False
    return name.startswith(".") or (bool(head) and num.isdigit() and int(num) >= first)


def check_inputs_outside(out: Path, sources: list[Source]) -> None:
    """Refuse an ``--out`` that holds one of the inputs (the run would write beside / over it)."""
    root = out.resolve()
    for s in sources:
        p = s.path.resolve()
        if p == root or root in p.parents:
            raise InputError(f"--out {out} contains the input {s.display}", code="E-OUT-INPUT", field="--out",
                             hint="write the output to a folder that holds none of the inputs")


def _fresh(od: OutDir) -> bool:
    """Nothing in ``--out`` (and its state folder) but what ocml claimed: a run killed before
    its first progress record, or a new folder."""
    state = od.out / STATE_DIR
    entries = [*od.out.iterdir(), *(state.iterdir() if state.is_dir() else ())]
    return all(p == state or od.owns(p, folder=p.is_dir() and not p.is_symlink()) for p in entries)


def _check_state(out: Path) -> None:
    """ocml's state folder holds no link (its spool files are opened for writing)."""
    for root, dirs, files in os.walk(out / STATE_DIR):
        for name in dirs + files:
            if os.path.islink(os.path.join(root, name)):
                raise _escape(Path(root) / name, "is a symbolic link")


def prepare(out: Path, fp: str, overwrite: bool, sources: list[Source], wait: float = 0.0,
            log: IO[str] | None = None) -> tuple[OutDir, dict[str, Any] | None]:
    """Lock, create / check the output folder; returns it (holding the lock: ``OutDir.close``
    releases it) and the saved progress when resuming."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--out {out} exists and is not a directory", code="E-OUT", field="--out")
    check_inputs_outside(out, sources)
    if not overwrite and out.is_dir() and not (out / STATE_DIR).exists() and any(out.iterdir()):
        _not_ocml(out)  # refused before the lock writes anything there
    lock = acquire(out, wait, log)
    try:
        fault("locked", 1)
        _check_state(out)
        od = OutDir(out)
        od.lock = lock
        return od, _prepare_locked(od, fp, overwrite)
    except BaseException:
        lock.release()
        raise


def _not_ocml(out: Path) -> None:
    raise InputError(f"{out} is not empty and holds no ocml pack run", code="E-OUT", field="--out",
                     hint="use a new or empty --out, or --overwrite (writes beside your files; removes only "
                          "files ocml wrote)")


def _prepare_locked(od: OutDir, fp: str, overwrite: bool) -> dict[str, Any] | None:
    out = od.out
    if overwrite:
        od.adopt_legacy()
    od.check_foreign()  # before anything is removed
    if overwrite:
        od.remove()
        od.remove_spool()
    progress = read_progress(out) if od.owns(out / STATE_DIR / PROGRESS) else None
    if progress is not None:
        if progress.get("status") == "done":
            od.remove_spool()  # left by a run killed after it recorded "done": garbage for any run
        if progress.get("fingerprint") != fp:
            raise InputError(f"{out} holds the output of a different input or options", code="E-OUT-MISMATCH",
                             field="--out", hint="use a new --out, or --overwrite to replace it")
        return progress
    if not overwrite and not _fresh(od):
        _not_ocml(out)
    od.claim([], [out / STATE_DIR])
    # Claim the folder for this fingerprint at once: a run killed before its first shard resumes too.
    od.write_json(f"{STATE_DIR}/{PROGRESS}", {"fingerprint": fp, "status": "running", "shards": 0, "rows": 0,
                                              "checkpoint": None})
    return None

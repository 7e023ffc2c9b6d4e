"""One writer per ``--out``: an exclusive ``flock`` on ``--out/.ocml/lock``, held for the whole run.

Taken before ocml reads the folder's progress or removes anything (``--overwrite`` too), released
when the run ends however it ends.  A second run into the same folder is refused at once
(``E-OUT-LOCKED``, naming the holder: pid, host, start time and command, which the holder writes
into the lock file) or, with ``wait`` seconds (``--wait-lock``), waits for it first.  The
kernel releases a ``flock`` when its holder dies, so the lock of a killed run is free: the next
run takes it over and says so (the file still names the dead holder; a clean release empties
it).  Forked children (the render workers) close their copy at once, so a lingering child never
keeps a dead run's lock.  A filesystem without ``flock`` is refused (``E-OUT-LOCK``): ocml
cannot promise one writer there.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from ..errors import InputError
from .resume import STATE_DIR

LOCK = "lock"
_HELD: set[int] = set()  # lock fds of this process (closed in forked children)


def _close_in_child() -> None:
    for fd in list(_HELD):
        try:
            os.close(fd)  # the parent's lock stays: it goes only when every copy is closed
        except OSError:
            pass
    _HELD.clear()


os.register_at_fork(after_in_child=_close_in_child)


def _describe(holder: dict[str, Any]) -> str:
    if not holder:
        return "another ocml run (it has not written its details yet)"
    return (f"ocml pid {holder.get('pid')} on host {holder.get('host')}, started {holder.get('started')} "
            f"({holder.get('command')})")


def _read(fd: int) -> dict[str, Any]:
    try:
        data = os.pread(fd, 1 << 16, 0)
        return dict(json.loads(data)) if data.strip() else {}
    except (OSError, ValueError, TypeError):
        return {}


class OutLock:
    """The held lock of one ``--out`` (``release`` is idempotent)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    def release(self) -> None:
        if self.fd < 0:
            return
        try:
            os.ftruncate(self.fd, 0)  # a clean release: no holder named (a dead run's lock keeps its name)
        except OSError:
            pass
        _HELD.discard(self.fd)
        os.close(self.fd)  # closing the only copy releases the flock
        self.fd = -1

    def __enter__(self) -> OutLock:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def acquire(out: Path, wait: float = 0.0, log: IO[str] | None = None) -> OutLock:
    """Lock ``out`` for this run (creating ``out/.ocml/``); ``E-OUT-LOCKED`` if another run
    holds it after ``wait`` seconds."""
    state = out / STATE_DIR
    if state.is_symlink() or (state.exists() and not state.is_dir()):
        raise InputError(f"{state} is not ocml's state folder (a link or a file)", code="E-OUT-ESCAPE",
                         field="--out", hint="ocml keeps its state in a real folder inside --out: remove it, "
                                             "or use another --out")
    state.mkdir(parents=True, exist_ok=True)
    path = state / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{path} is a symbolic link", code="E-OUT-ESCAPE", field="--out",
                             hint="ocml never creates links: remove it, or use another --out") from None
        raise
    deadline = time.monotonic() + max(0.0, wait)
    said = False
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _read(fd)
                left = deadline - time.monotonic()
                if left <= 0:
                    raise InputError(f"{out} is being written by {_describe(holder)}", code="E-OUT-LOCKED",
                                     field="--out",
                                     hint="one run per --out: wait for it to end (or --wait-lock SECONDS), "
                                          "or write to another --out") from None
                if not said and log is not None:
                    print(f"ocml: {out} is being written by {_describe(holder)}; waiting up to {wait:g} s",
                          file=log)
                    said = True
                time.sleep(min(0.2, left))
            except OSError as exc:  # ENOLCK, EOPNOTSUPP: no flock on this filesystem
                raise InputError(f"cannot lock {path}: {exc.strerror}", code="E-OUT-LOCK", field="--out",
                                 hint="ocml needs flock() on --out to guarantee one writer: use a folder on "
                                      "a local disk (or a filesystem with locks)") from None
        previous = _read(fd)
        if previous and log is not None:
            print(f"ocml: taking over the lock of {out} left by {_describe(previous)}, which is no longer "
                  f"running", file=log)
        me = json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                         "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                         "command": " ".join(sys.argv)[:500]})
        os.ftruncate(fd, 0)
        os.pwrite(fd, me.encode() + b"\n", 0)
    except BaseException:
        os.close(fd)
        raise
    _HELD.add(fd)
    return OutLock(path, fd)


__all__ = ["LOCK", "OutLock", "acquire"]

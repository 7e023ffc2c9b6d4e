"""A test-only hook: fail the pack run at a named point, to test resume, the lock and a full disk.

``OCML_PACK_FAULT`` holds one or more comma-separated ``point:N[:action]``.  Points:
``locked:1`` (the ``--out`` lock just taken, nothing written), ``shard:N`` (shard N renamed
into place, progress not yet saved), ``progress:N`` (saved), ``epoch:N`` (a plain run's epoch N
handed to the writer: mid-shard, temporary files open), ``scan:N`` / ``pack:1`` /
``validation-shard:N`` (a recipe run's phases), ``done:1`` (the run recorded as done, its
spool not yet removed).  Actions: ``kill`` (the default: SIGKILL), ``stop`` (SIGSTOP: the run
pauses there, holding its lock, until the test sends SIGCONT or SIGKILL) and ``enospc`` (an
``OSError`` "No space left on device", as a full disk raises it).  Unset in normal use: one
environment lookup per shard / epoch.
"""

from __future__ import annotations

import errno
import os
import signal

FAULT_ENV = "OCML_PACK_FAULT"
_SIGNALS = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}


def fault(point: str, n: int) -> None:
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    for item in spec.split(","):
        name, _, rest = item.strip().partition(":")
        count, _, action = rest.partition(":")
        if name != point or count != str(n):
            continue
        if action == "enospc":
            raise OSError(errno.ENOSPC, f"{os.strerror(errno.ENOSPC)} (injected at {point}:{n})")
        os.kill(os.getpid(), _SIGNALS[action or "kill"])

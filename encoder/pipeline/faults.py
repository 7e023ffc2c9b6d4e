"""A test-only hook: kill the pack run with SIGKILL at a named point, to test resume.

``OCML_PACK_FAULT=shard:N`` (shard N renamed into place, progress not yet saved),
``progress:N`` (saved), ``epoch:N`` (epoch N's rows handed to the writer: mid-shard,
temporary files open).  Unset in normal use: one environment lookup per shard / epoch.
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "OCML_PACK_FAULT"


def fault(point: str, n: int) -> None:
    if os.environ.get(FAULT_ENV) == f"{point}:{n}":
        os.kill(os.getpid(), signal.SIGKILL)

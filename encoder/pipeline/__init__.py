"""The data pipeline behind ``ocml pack``: records in, packed token shards out.

``records`` finds the conversation in a dataset record; ``readers`` streams records from
files; ``workers`` renders them in processes; ``shards`` writes output atomically;
``report`` summarises; ``run`` ties them together.
"""

from __future__ import annotations

from .records import conversation_from_record
from .run import PackOptions, RunResult, run

__all__ = ["PackOptions", "RunResult", "conversation_from_record", "run"]

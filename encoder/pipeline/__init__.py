"""The data pipeline behind ``ocml pack``: records in, packed token shards out.

``records`` finds the conversation in a dataset record; ``readers`` streams records from
files; ``workers`` renders them in processes; ``shards`` writes output atomically;
``report`` summarises; ``run`` ties them together.
"""

from __future__ import annotations

from .records import conversation_from_record

__all__ = ["conversation_from_record"]

"""``--max-bad-fraction``: a run that rejects most of its input fails instead of exiting 0.

Checked once early, after ``BAD_SAMPLE`` records (so a bad run fails in seconds, not after
hours of rendering), and again at the end over every record.  Records with nothing to train
(``untrained``) are not bad: they are counted apart.  Whatever the limit (``1`` included),
a run that renders no document fails (``E-NOTHING-RENDERED``): it would exit 0 with no data.
"""

from __future__ import annotations

from collections import Counter

from ..errors import OcmlError
from .options import BAD_SAMPLE


class TooManyBadRecords(OcmlError):
    """More than ``--max-bad-fraction`` of the records were rejected."""

    code = "E-BAD-FRACTION"


class NothingRendered(TooManyBadRecords):
    """Every record was rejected or had nothing to train: the run would write no data."""

    code = "E-NOTHING-RENDERED"


class BadFractionGate:
    def __init__(self, limit: float, sample: int = BAD_SAMPLE, checked_early: bool = False) -> None:
        self.limit, self.sample = limit, sample
        self.checked_early = checked_early

    def early(self, records: int, bad: int, by_code: Counter[str]) -> None:
        """Once, as soon as ``sample`` records have been read."""
        if not self.checked_early and records >= self.sample:
            self.checked_early = True
            self._check(records, bad, by_code, f"in the first {records:,} records")

    def final(self, records: int, bad: int, by_code: Counter[str], documents: int | None = None) -> None:
        self._check(records, bad, by_code, f"in {records:,} records")
        if documents == 0:
            top = ", ".join(f"{code} x{n:,}" for code, n in by_code.most_common(3))
            raise NothingRendered(f"no document rendered from {records:,} record(s)"
                                  + (f" ({bad:,} bad: {top})" if bad else ""),
                                  hint="see errors.jsonl / untrained.jsonl in --out for each record and its fix; "
                                       "an empty input packs nothing" if records else "the input holds no record")

    def _check(self, records: int, bad: int, by_code: Counter[str], where: str) -> None:
        if not records or bad / records <= self.limit:
            return
        top = ", ".join(f"{code} x{n:,}" for code, n in by_code.most_common(3))
        raise TooManyBadRecords(
            f"{bad:,} bad records {where} ({bad / records:.1%}, over --max-bad-fraction {self.limit:g}); "
            f"top error codes: {top}",
            hint="see errors.jsonl in --out for each record and its fix (wrong --format, --messages-field "
                 "or --reasoning?); raise --max-bad-fraction to pack the good records anyway")

"""Which ocml format does a model's own chat template speak?  Decided by ids, not by names.

A model folder's template is run the way transformers runs it (``apply_chat_template``, then
the folder's tokenizer on the text) on a fixed set of probe conversations (``probes.json``:
system, multi-turn, tools, tool calls and results, reasoning), and each candidate ocml format
renders the same probes with the same tokenizer.  A candidate matches when every *core* probe
gives identical ids; the other probes are compared and reported, since formats document where
they part from a deployed template (Harmony's tool schemas, Apertus' closing token...).

Dates: deployed templates write today's date with ``strftime_now``; ocml has no hidden clock,
so the probes pass today's date (the clock read when detection starts) to ocml explicitly and
the detected options leave it out.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InputError, OcmlError
from ..formats.declare import Candidate
from .folder import ModelFolder

if TYPE_CHECKING:
    from ..facade import Encoder

PROBES_FILE = Path(__file__).with_name("probes.json")


def _candidates() -> tuple[Candidate, ...]:
    """Every format folder's declared candidates, in detection order (``ocml.encoder.formats``)."""
    from ..formats import detect_candidates

    return detect_candidates()


@dataclass
class ProbeResult:
    probe: str
    core: bool
    status: str                      # "match" | "differs" | "template-error" | "ocml-error"
    common_prefix: int = 0           # tokens equal from the start
    detail: str = ""                 # first difference, decoded, or the error

    @property
    def matched(self) -> bool:
        return self.status == "match"


@dataclass
class CandidateResult:
    candidate: Candidate
    probes: list[ProbeResult]

    @property
    def core_ok(self) -> bool:
        return all(p.matched for p in self.probes if p.core)

    def score(self) -> tuple[int, int, int]:
        core = [p for p in self.probes if p.core]
        return (sum(p.matched for p in core), sum(p.matched for p in self.probes),
                sum(p.common_prefix for p in core))

    def first_core_failure(self) -> ProbeResult | None:
        return next((p for p in self.probes if p.core and not p.matched), None)


@dataclass
class Detection:
    """The outcome: the format and ``Encoder`` options to use, and the evidence."""

    folder: ModelFolder
    format: str
    options: dict[str, Any]
    result: CandidateResult
    compared: list[CandidateResult]
    forced: bool = False
    warnings: list[str] = field(default_factory=list)

    @property
    def matched(self) -> bool:
        return self.result.core_ok

    def encoder(self, **overrides: Any) -> Encoder:
        """An ``Encoder`` for the detected format with the model's own tokenizer."""
        from ..facade import Encoder

        return Encoder(self.format, self.folder.tokenizer(), **{**self.options, **overrides})

    def summary(self) -> str:
        ok = sum(p.matched for p in self.result.probes)
        head = (f"model {self.folder.path}: format {self.result.candidate.label} "
                f"({'given' if self.forced else 'detected'}; {ok}/{len(self.result.probes)} probes give identical ids)")
        lines = [head]
        for p in self.result.probes:
            if not p.matched:
                lines.append(f"  probe {p.probe!r}: {p.status}{': ' + p.detail if p.detail else ''}")
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "folder": str(self.folder.path), "format": self.format, "options": self.options,
            "candidate": self.result.candidate.label, "forced": self.forced, "matched": self.matched,
            "probes": [{"probe": p.probe, "core": p.core, "status": p.status, "detail": p.detail}
                       for p in self.result.probes],
            "warnings": list(self.warnings),
        }


class FormatDetectionError(InputError):
    """No ocml format renders the model's chat template's ids."""

    code = "E-MODEL-FORMAT"


def load_probes() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    data = json.loads(PROBES_FILE.read_text("utf-8"))
    return data["probes"], data["tools"]


def _first_difference(folder: ModelFolder, want: Sequence[int], got: Sequence[int]) -> tuple[int, str]:
    n = 0
    for a, b in zip(want, got):
        if a != b:
            break
        n += 1
    if n == len(want) == len(got):
        return n, ""
    decode = folder.decode_token
    context = "".join(decode(i) for i in want[max(0, n - 8):n])
    theirs = decode(want[n]) if n < len(want) else "<end>"
    ours = decode(got[n]) if n < len(got) else "<end>"
    return n, f"token {n} after {context!r}: template {theirs!r}, ocml {ours!r}"


def _compare(folder: ModelFolder, cand: Candidate, probes: list[dict[str, Any]], tools: list[dict[str, Any]],
             template_ids: dict[str, list[int] | OcmlError | Exception], today: str) -> CandidateResult:
    from ..facade import Encoder

    results: list[ProbeResult] = []
    try:
        enc = Encoder(cand.format, folder.tokenizer(), **cand.encoder_options(today))
    except OcmlError as exc:
        return CandidateResult(cand, [ProbeResult(p["name"], p["core"], "ocml-error", detail=str(exc)) for p in probes])
    for probe in probes:
        name, core = probe["name"], probe["core"]
        want = template_ids[name]
        if not isinstance(want, list):
            results.append(ProbeResult(name, core, "template-error", detail=f"{type(want).__name__}: {want}"))
            continue
        conv: dict[str, Any] = {"messages": probe["messages"]}
        if probe.get("tools"):
            conv["tools"] = tools
        if cand.dated == "conversation":
            conv["date"] = cand.date_text(today)
        try:
            got = enc.render(conv, mode="prompt" if probe["generation_prompt"] else "train").ids.tolist()
        except OcmlError as exc:
            results.append(ProbeResult(name, core, "ocml-error", detail=f"[{exc.code}] {exc.message}"))
            continue
        n, detail = _first_difference(folder, want, got)
        results.append(ProbeResult(name, core, "differs" if detail else "match", n, detail))
    return CandidateResult(cand, results)


def detect_format(model: str | Path | ModelFolder, format: str | None = None, *,
                  today: str | None = None) -> Detection:
    """Detect the ocml format of a local HF model folder (or check a given one).

    ``format=None``: every candidate is compared; the first whose core probes all match wins
    (more matching probes first), else ``FormatDetectionError`` names the closest candidate and
    its first differing token.  ``format="..."``: only that format's candidates are compared;
    a mismatch is a warning in the result, not an error (the user asked for it).
    """
    from ocml.vocab import canonical_format

    folder = model if isinstance(model, ModelFolder) else ModelFolder.open(model)
    today = today or datetime.date.today().isoformat()
    probes, tools = load_probes()
    template_ids = {p["name"]: folder.template_ids(p["messages"], tools if p.get("tools") else None,
                                                   add_generation_prompt=p["generation_prompt"])
                    for p in probes}
    cands = _candidates()
    if format is not None:
        want = canonical_format(format)
        cands = tuple(c for c in cands if c.format == want) or (Candidate(want),)
    compared = [_compare(folder, c, probes, tools, template_ids, today) for c in cands]
    ranked = sorted(compared, key=lambda r: (r.core_ok, *r.score()), reverse=True)  # stable: table order breaks ties
    best = ranked[0]
    warnings = folder.stop_warnings(best.candidate.format)
    if best.candidate.dated:
        warnings.append("the template writes today's date (strftime_now); ocml writes a date only when given "
                        "(date=...), so training ids do not change from day to day")
    if not best.core_ok:
        bad = best.first_core_failure()
        assert bad is not None
        msg = (f"{folder.path}: the chat template matches no ocml format; closest is {best.candidate.label} "
               f"(probe {bad.probe!r}: {bad.detail or bad.status})")
        if format is None:
            raise FormatDetectionError(msg, field="chat_template",
                                       hint="pass --format F to use a format anyway (ocml warns and renders its own layout), "
                                            "or train with a template ocml supports")
        warnings.insert(0, msg)
    return Detection(folder, best.candidate.format, dict(best.candidate.options), best, compared,
                     forced=format is not None, warnings=warnings)

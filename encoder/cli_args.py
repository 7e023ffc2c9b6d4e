"""Command-line arguments several ``ocml`` commands share (``cli``, ``template.cli``): one home
for each flag's choices and help."""

from __future__ import annotations

import argparse
from typing import Any


def format_options(args: argparse.Namespace) -> dict[str, Any]:
    """Format options given on the command line (a format that has no such option refuses it: exit 2)."""
    return {"reasoning": args.reasoning} if getattr(args, "reasoning", None) else {}


def add_reasoning(p: argparse.ArgumentParser) -> None:
    from .reasoning import CHOICES

    p.add_argument("--reasoning", default=None, choices=list(CHOICES),
                   help="chatml only (it has no reasoning channel): what reasoning_content / thinking becomes. "
                        "error (default) = a bad record; drop = left out; think = <think>...</think> before the "
                        "answer (Qwen3 layout). Other formats render reasoning natively and refuse this option")


def add_mask(p: argparse.ArgumentParser) -> None:
    from .masks import NAMED_MASKS

    p.add_argument("--mask", default="default", choices=list(NAMED_MASKS),
                   help="loss-mask policy (default: what the model generates: every assistant message after its "
                        "generation prompt, terminator included). last = last assistant turn only; final = final "
                        "channel only; no-analysis = final + commentary; no-tool-bodies = tool-call arguments "
                        "untrained; none = nothing trained")

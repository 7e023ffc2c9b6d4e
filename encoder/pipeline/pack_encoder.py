"""The encoders a pack run uses: ``--format`` / ``--tokenizer``, or ``--model DIR``, whose
tokenizer is the model's own and whose format is detected from its chat template
(``ocml.encoder.model.detect_format``) and recorded in the manifest.  Plain runs and recipe runs
(several sources, each with its own mask / cot / reasoning) build theirs here."""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

from ocml.vocab import DEFAULT_FORMAT

from ..errors import InputError


def encoder_factory(format: str | None, tokenizer: str | None, model: str | None,
                    log: IO[str]) -> tuple[Callable[..., Any], dict[str, Any] | None]:
    """``(make, detection)``: ``make(**encoder_kwargs)`` builds an ``Encoder`` for the run's
    format and tokenizer; ``detection`` is the manifest's ``model`` entry (format, options,
    each probe's outcome, warnings), or None without a model folder."""
    from ..facade import Encoder

    if model is None:
        fmt = format or DEFAULT_FORMAT
        return (lambda **kw: Encoder(fmt, tokenizer, **kw)), None
    if tokenizer is not None:
        raise InputError("--model and --tokenizer both name a tokenizer", code="E-INPUT-ARGUMENT", field="--tokenizer",
                         hint="--model DIR uses the model's own tokenizer; drop --tokenizer")
    from ..model import detect_format

    det = detect_format(str(model), format)
    print(det.summary(), file=log)
    return det.encoder, det.to_dict()


def pack_encoder(opts: Any, log: IO[str]) -> tuple[Any, dict[str, Any] | None]:
    """``(Encoder, detection or None)`` for ``PackOptions``."""
    make, detection = encoder_factory(opts.format, opts.tokenizer, opts.model, log)
    reasoning = {"reasoning": opts.reasoning} if opts.reasoning else {}  # a format without the option refuses it
    return make(mask=opts.mask, cot=opts.cot, shape=opts.shape, shape_options=opts.shape_options(), **reasoning), \
        detection

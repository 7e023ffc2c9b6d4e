"""The encoder a pack run uses: ``--format`` / ``--tokenizer``, or ``--model DIR``, whose
tokenizer is the model's own and whose format is detected from its chat template
(``encoder.model.detect_format``) and recorded in the manifest."""

from __future__ import annotations

from typing import IO, Any

from ..errors import InputError

DEFAULT_FORMAT = "openchatml-2.2"


def pack_encoder(opts: Any, log: IO[str]) -> tuple[Any, dict[str, Any] | None]:
    """``(Encoder, detection or None)`` for ``PackOptions``; the detection is the manifest's
    ``model`` entry (format, options, each probe's outcome, warnings)."""
    from ..encoder import Encoder

    model = getattr(opts, "model", None)
    if model is None:
        return Encoder(opts.format or DEFAULT_FORMAT, opts.tokenizer, mask=opts.mask, cot=opts.cot), None
    if opts.tokenizer is not None:
        raise InputError("--model and --tokenizer both name a tokenizer", code="E-INPUT-ARGUMENT", field="--tokenizer",
                         hint="--model DIR uses the model's own tokenizer; drop --tokenizer")
    from ..model import detect_format

    det = detect_format(str(model), opts.format)
    print(det.summary(), file=log)
    return det.encoder(mask=opts.mask, cot=opts.cot), det.to_dict()

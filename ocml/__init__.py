"""ocml: chat formats -> token ids + loss masks, packed training data, HF templates, and back.

The documented entry point::

    import ocml
    enc = ocml.Encoder("harmony")
    r = enc.render(conversation)      # r.ids, r.mask, r.labels
    tok = ocml.load("o200k_base")

The code lives in the sibling packages ``encoder`` and ``vocab``.  Those generic names can
be shadowed by a ``vocab.py`` / ``encoder.py`` in the working directory (Python puts the
script's folder first on ``sys.path``), so ``import ocml`` loads the two packages from its
own installation before anything else can import them.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent


def _pin(name: str) -> None:
    """Import ``name`` from ocml's own installation, not from whatever shadows it on sys.path."""
    init = _ROOT / name / "__init__.py"
    loaded = sys.modules.get(name)
    if loaded is not None:
        where = Path(getattr(loaded, "__file__", "") or "").resolve()
        if where != init.resolve():
            raise ImportError(
                f"a module named {name!r} from {where} was imported before ocml; ocml needs its own "
                f"{name!r} package ({init.parent}). Rename the local {name}.py (or import ocml first).")
        return
    spec = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(init.parent)])
    if spec is None or spec.loader is None:  # pragma: no cover - a broken installation
        raise ImportError(f"ocml's {name!r} package is missing from {_ROOT}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


_pin("vocab")
_pin("encoder")

import encoder  # noqa: E402
import vocab  # noqa: E402
from encoder import *  # noqa: E402,F401,F403
from encoder import __all__ as _encoder_all  # noqa: E402
from vocab import Tokenizer, from_hf, load  # noqa: E402


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("ocml")
    except Exception:  # not installed (a source checkout on sys.path)
        return "0+unknown"


__version__ = _version()

__all__ = [*_encoder_all, "Tokenizer", "__version__", "encoder", "from_hf", "load", "vocab"]


def __getattr__(name: str) -> Any:
    # ocml.stops, ocml.stream, ... : the encoder's submodules under the one import name
    return getattr(encoder, name)

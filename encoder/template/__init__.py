"""HF chat templates that agree with ocml token for token, and ``save_pretrained``.

``chat_template(enc, training=False)`` (``export``) builds the Jinja template of an
``Encoder``; ``save_pretrained(enc, dir)`` (``save``) writes a folder transformers loads;
``cli.add_parser`` is ``ocml template``.
"""

from __future__ import annotations

from .export import chat_template
from .save import save_pretrained

__all__ = ["chat_template", "save_pretrained"]

"""``save_pretrained``: a folder ``AutoTokenizer.from_pretrained`` loads offline.

Written: the tokenizer (``Tokenizer.to_hf``, same ids; ``tokenizer_class``
``PreTrainedTokenizerFast``, which transformers 4.x and 5.x both load), ``chat_template.jinja`` (the
inference template) and ``additional_chat_templates/training.jinja`` (transformers 5's
files for named templates; ``apply_chat_template(..., chat_template="training")`` picks
it), ``eos_token`` = the format's first stop token (the answer's end, ``<|return|>``),
``pad_token`` = ``<|endoftext|>`` where the vocabulary has it, ``chat_control_tokens`` (so
``sanitize_control_tokens=True`` knows them), ``response_template`` (``encoder.template.response``:
``tokenizer.parse_response(ids, prefix=prompt)`` gives ``to_openai``'s message, transformers
>= 5.13), and ``generation_config.json`` whose
``eos_token_id`` lists every stop id, so ``generate`` stops at the end of an answer *and*
at a tool call.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from vocab.errors import DependencyError

from ..errors import UnrepresentableError
from ..stops import stop_tokens
from .export import chat_template
from .response import response_template

if TYPE_CHECKING:
    from ..encoder import Encoder

TRAINING_TEMPLATE_NAME = "training"
#: pad candidates, in order; without one the tokenizer keeps its own pad, else pads with eos
PAD_CANDIDATES = ("<|endoftext|>", "<|pad|>", "</s>")


def special_roles(enc: Encoder) -> dict[str, str]:
    """``eos_token`` (the format's first stop token: the answer's end) and, where the
    vocabulary has one of ``PAD_CANDIDATES``, ``pad_token``; all registered specials."""
    specials = enc.tokenizer.specials
    stops = [t for t in stop_tokens(enc) if t in specials]
    if not stops:
        raise UnrepresentableError(f"{enc.tokenizer.name} has none of {enc.format_name}'s stop tokens registered",
                                   field="tokenizer",
                                   hint="register the format's controls (vocab.load(NAME, register=FORMAT))")
    roles = {"eos_token": stops[0]}
    pad = next((t for t in PAD_CANDIDATES if t in specials), None)
    if pad is not None:
        roles["pad_token"] = pad
    return roles


def hf_tokenizer(enc: Encoder) -> Any:
    """``enc``'s tokenizer as a ``PreTrainedTokenizerFast``: both templates, eos, pad, controls."""
    templates = {"default": chat_template(enc, training=False),  # first: refuses fallback mode
                 TRAINING_TEMPLATE_NAME: chat_template(enc, training=True)}
    hf = enc.tokenizer.to_hf(**special_roles(enc))
    if hf.pad_token is None:
        hf.pad_token = hf.eos_token  # already a special token: no id is added
    hf.chat_template = templates
    hf.response_template = response_template(enc)  # transformers >= 5.13: tokenizer.parse_response
    hf.chat_control_tokens = [t for t in enc.format.table.all_tokens if enc.tokenizer.control_id(t) is not None]
    return hf


def generation_config(enc: Encoder, hf: Any) -> dict[str, Any]:
    """``generate`` stops on every stop id (answer end and tool call), pads with the pad id."""
    return {"eos_token_id": enc.stop_ids(), "pad_token_id": hf.pad_token_id}


#: the class name every transformers version since 4.x resolves (5.x names its fast tokenizer
#: ``TokenizersBackend``, a name 4.x does not know: "TokenizersBackend does not exist")
PORTABLE_TOKENIZER_CLASS = "PreTrainedTokenizerFast"


def portable_class(config: Path) -> None:
    """Name the tokenizer class the way transformers 4.x and 5.x both load it."""
    import json

    data = json.loads(config.read_text("utf-8"))
    if data.get("tokenizer_class") != PORTABLE_TOKENIZER_CLASS:
        data["tokenizer_class"] = PORTABLE_TOKENIZER_CLASS
        config.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")


def save_pretrained(enc: Encoder, directory: str | Path) -> Path:
    """Write ``enc``'s tokenizer, chat templates and generation config to ``directory``."""
    try:
        from transformers import GenerationConfig
    except ImportError as exc:
        raise DependencyError("save_pretrained needs transformers", hint="pip install 'transformers>=5'") from exc
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    hf = hf_tokenizer(enc)
    hf.save_pretrained(str(out))
    portable_class(out / "tokenizer_config.json")
    GenerationConfig(**generation_config(enc, hf)).save_pretrained(str(out))
    return out

"""``save_pretrained``: a folder ``AutoTokenizer.from_pretrained`` loads offline.

Written: the tokenizer (``Tokenizer.to_hf``, same ids; ``tokenizer_class``
``PreTrainedTokenizerFast``, which transformers 4.x and 5.x both load), both templates as
named templates in ``tokenizer_config.json`` (``default``: the inference template;
``training``: ``apply_chat_template(..., chat_template="training")`` picks it; see
``portable_config`` for why not transformers 5's ``chat_template.jinja`` files), ``eos_token`` = the format's first stop token (the answer's end, ``<|return|>``),
``pad_token`` = ``<|endoftext|>`` where the vocabulary has it, ``chat_control_tokens`` (so
``sanitize_control_tokens=True`` knows them), ``response_template`` (``ocml.encoder.template.response``:
``tokenizer.parse_response(ids, prefix=prompt)`` gives ``to_openai``'s message, transformers
>= 5.13), and ``generation_config.json`` whose
``eos_token_id`` lists every stop id, so ``generate`` stops at the end of an answer *and*
at a tool call.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ocml.vocab.errors import DependencyError

from ..errors import UnrepresentableError
from ..stops import stop_ids, stop_tokens
from .export import chat_template
from .response import response_template

if TYPE_CHECKING:
    from ..codec import Renders

TRAINING_TEMPLATE_NAME = "training"
#: pad candidates, in order; without one the tokenizer keeps its own pad, else pads with eos
PAD_CANDIDATES = ("<|endoftext|>", "<|pad|>", "</s>")


def special_roles(enc: Renders) -> dict[str, str]:
    """``eos_token`` (the format's first stop token: the answer's end) and, where the
    vocabulary has one of ``PAD_CANDIDATES``, ``pad_token``; all registered specials."""
    specials = enc.tokenizer.specials
    stops = [t for t in stop_tokens(enc.format_name) if t in specials]
    if not stops:
        raise UnrepresentableError(f"{enc.tokenizer.name} has none of {enc.format_name}'s stop tokens registered",
                                   field="tokenizer",
                                   hint="register the format's controls (vocab.load(NAME, register=FORMAT))")
    roles = {"eos_token": stops[0]}
    pad = next((t for t in PAD_CANDIDATES if t in specials), None)
    if pad is not None:
        roles["pad_token"] = pad
    return roles


def hf_tokenizer(enc: Renders) -> Any:
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


def generation_config(enc: Renders, hf: Any) -> dict[str, Any]:
    """``generate`` stops on every stop id (answer end and tool call), pads with the pad id."""
    return {"eos_token_id": stop_ids(enc.format_name, tokenizer=enc.tokenizer), "pad_token_id": hf.pad_token_id}


#: the class name every transformers version since 4.x resolves (5.x names its fast tokenizer
#: ``TokenizersBackend``, a name 4.x does not know: "TokenizersBackend does not exist")
PORTABLE_TOKENIZER_CLASS = "PreTrainedTokenizerFast"


def portable_config(out: Path, templates: dict[str, str]) -> None:
    """Make the folder load the same way in transformers 4.x and 5.x.

    ``tokenizer_class``: the name both know.  Templates: in ``tokenizer_config.json``'s
    ``chat_template`` list of named templates, which every version reads, instead of the
    files transformers 5 writes (``chat_template.jinja``, ``additional_chat_templates/``):
    4.x before ~4.49 reads neither file, and 4.49 - 4.5x read ``chat_template.jinja`` but
    not the folder - then ``chat_template="training"`` is taken as the template text itself.
    """
    import json
    import shutil

    config = out / "tokenizer_config.json"
    data = json.loads(config.read_text("utf-8"))
    data["tokenizer_class"] = PORTABLE_TOKENIZER_CLASS
    data["chat_template"] = [{"name": name, "template": text} for name, text in templates.items()]
    config.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", "utf-8")
    (out / "chat_template.jinja").unlink(missing_ok=True)
    shutil.rmtree(out / "additional_chat_templates", ignore_errors=True)


def save_pretrained(enc: Renders, directory: str | Path) -> Path:
    """Write ``enc``'s tokenizer, chat templates and generation config to ``directory``."""
    try:
        from transformers import GenerationConfig
    except ImportError as exc:
        raise DependencyError("save_pretrained needs transformers", hint="pip install 'transformers>=5'") from exc
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    hf = hf_tokenizer(enc)
    hf.save_pretrained(str(out))
    portable_config(out, hf.chat_template)
    GenerationConfig(**generation_config(enc, hf)).save_pretrained(str(out))
    return out

"""``save_pretrained``: a folder ``AutoTokenizer.from_pretrained`` loads offline.

Written: the tokenizer (``Tokenizer.to_hf``, same ids; ``tokenizer_class``
``PreTrainedTokenizerFast``, which transformers 4.x and 5.x both load), the templates as
named templates in ``tokenizer_config.json`` (see ``portable_config`` for why not
transformers 5's ``chat_template.jinja`` files): ``default`` is the training template, the
one with ``{% generation %}`` blocks, because TRL's ``SFTTrainer(assistant_only_loss=True)``
reads only ``default`` and refuses a template without the blocks; it renders the same text as
the plain one (transformers' Jinja environment defines the ``generation`` tag, a no-op unless
masks are asked for).  ``training`` is the same template under its old name
(``apply_chat_template(..., chat_template="training")``), and ``inference`` the one without
``generation`` tags, for engines whose Jinja has no such tag (plain jinja2, MiniJinja: they
refuse the template at parse time; vLLM's and SGLang's Python servers render through
transformers and take ``default``).  ``eos_token`` = the format's first stop token (the
answer's end, ``<|return|>``), ``bos_token`` = the control a render starts with where the
format has one (Apertus ``<s>``, as the reference template's ``{{ bos_token }}``),
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
from ..messages import Conversation
from ..pieces import CTL
from ..stops.ids import stop_ids, stop_tokens
from .export import chat_template
from .response import response_template

if TYPE_CHECKING:
    from ..codec import Renders

TRAINING_TEMPLATE_NAME = "training"
#: the template without ``generation`` tags, for Jinja engines that do not know the tag
INFERENCE_TEMPLATE_NAME = "inference"
#: pad candidates, in order; without one the tokenizer keeps its own pad, else pads with eos
PAD_CANDIDATES = ("<|endoftext|>", "<|pad|>", "</s>")


def special_roles(enc: Renders) -> dict[str, str]:
    """``eos_token`` (the format's first stop token: the answer's end), ``bos_token`` where a
    render starts with a control (``bos_token``) and, where the vocabulary has one of
    ``PAD_CANDIDATES``, ``pad_token``; all registered specials."""
    specials = enc.tokenizer.specials
    stops = [t for t in stop_tokens(enc.format_name) if t in specials]
    if not stops:
        raise UnrepresentableError(f"{enc.tokenizer.name} has none of {enc.format_name}'s stop tokens registered",
                                   field="tokenizer",
                                   hint="register the format's controls (vocab.load(NAME, register=FORMAT))")
    roles = {"eos_token": stops[0]}
    bos = bos_token(enc)
    if bos is not None:
        roles["bos_token"] = bos
    pad = next((t for t in PAD_CANDIDATES if t in specials), None)
    if pad is not None:
        roles["pad_token"] = pad
    return roles


def bos_token(enc: Renders) -> str | None:
    """The control every render of ``enc`` starts with, before the first message (the format's
    framing: Apertus ``<s>``, ChatML's with ``bos_eos=True``), or None."""
    head, _ = enc.format.frame_pieces(Conversation(()))
    return head[0][1] if head and head[0][0] == CTL else None


def hf_tokenizer(enc: Renders) -> Any:
    """``enc``'s tokenizer as a ``PreTrainedTokenizerFast``: the templates, eos, bos, pad, controls."""
    inference = chat_template(enc, training=False)  # first: refuses fallback mode
    training = chat_template(enc, training=True)
    templates = {"default": training, TRAINING_TEMPLATE_NAME: training, INFERENCE_TEMPLATE_NAME: inference}
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

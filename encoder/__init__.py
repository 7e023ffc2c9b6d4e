"""ocml encoder: conversations -> token ids + loss masks, and ids -> messages.

    import ocml
    enc = ocml.Encoder("harmony")
    r = enc.render(conversation, mode="train")   # r.ids, r.mask, r.message_index

Layout: every folder has one job (the repository's ``encoder/`` and ``vocab/`` install as
``ocml.encoder`` and ``ocml.vocab``; ``ocml/__init__.py`` is the public face)::

  vocab/                   tokenizers: the one ``Tokenizer`` interface (tokenizer), the tiktoken and
                           HF backends (tiktoken_backend, hf_backend), offline base vocabularies
                           (base), control-token tables and where they land (tables, registry),
                           tiktoken -> HF conversion (hf_convert; its regex translation onig_regex,
                           its disk cache hf_cache; GPT-2's byte alphabet bytelevel), the one
                           exception hierarchy (errors)
  vocab/data/              encodings.json: the base vocabularies (pattern, rank file, sha256, specials)
  vocab/data/tokens/       one JSON per format: its control tokens, their fixed ids, its stops
  encoder/formats/         one module per format: what a message is made of (pieces) and how it reads
                           back.  Harmony: harmony (HarmonyFormat.plan builds the headers),
                           harmony_content (system/developer content model), harmony_sections (their
                           text), harmony_schema (tool JSON Schema -> TypeScript), rust_text (text as
                           openai-harmony's Rust writes it), json_fields (typed JSON fields);
                           openchatml (2.2, 2.0); chatml, chatml_frames (reading back), chatml_fim;
                           apertus, apertus_blocks, apertus_frames, apertus_tools; base (what every
                           format shares) and the registry (``__init__``)
  encoder/grammar/         the lexical rules render, parse and the stream share: escape (escapes and
                           literal blocks), headers (reading a header), roles, text (valid Unicode),
                           terminators (stop and end tables, derived from vocab/data/tokens/)
  encoder/adapters/        input messages (OpenAI / HF chat, openai-harmony JSON, the 2.2 interchange,
                           canonical dicts) -> ``Conversation`` (``to_conversation``)
  encoder/inputs/          record shapes besides conversations: prompt/completion, Alpaca, plain
                           text, preference pairs and KTO examples; shape detection
  encoder/model/           a local HF model folder as input: its tokenizer, its stop ids, and the
                           format its chat template speaks (detect)
  encoder/packing/         rendered documents -> fixed-length rows: BFD, windows, overlong documents,
                           pad-to-multiple, the ``Packed`` result (behind ``ocml.pack``)
  encoder/pipeline/        ``ocml pack``: readers, workers, records, options, shards (Parquet, .npy,
                           megatron), resume, report, provenance; recipes (recipe, recipe_run and its
                           recipe_plan, recipe_spools, recipe_report: a plain run is a one-source
                           recipe); run (the one-pass streaming driver: ``--no-shuffle``, preference /
                           KTO rows); readback for ``ocml inspect``
  encoder/integrations/    stages for the data engines people run: HF ``datasets``, Ray Data (render,
                           pack, a recipe's rules on rendered rows)
  encoder/stream/          sampled ids -> typed events, incrementally: decoder (one stream), batch
                           (B streams in lock step), transport (2.2 section 9 wire events), lexicon
                           and route (what each id is and means, shared with ``parse``)
  encoder/stream/scanner/  token ids -> atoms: the byte-level Aho-Corasick scanner and its tables
  encoder/template/        HF chat templates (export, profiles), response templates, save_pretrained,
                           ``ocml template``

Top-level modules of ``encoder/``, by job:

  facade      encoder (``Encoder``: the public facade over ``codec``), pack (``ocml.pack``), errors (``vocab.errors`` re-exported)
  codec       codec (format + tokenizer + the tables features build once; what every feature
              takes), batch (``Batch``: many renders at once)
  model       messages (``Conversation``, ``Message``, ``Options``), pieces (what a format hands
              the renderer), events (what reading back yields)
  render      render (pieces -> ids, mask, message index), textenc (text pieces -> ids), runs
              (whole-run encoding), sections (system/developer section cache), masks (loss-mask
              policies), cot (which reasoning a render keeps), reasoning (ChatML's ``reasoning=``),
              arguments (tool-call arguments), prefill (an open last assistant message)
  read back   frames (the frame machine), parse (ids -> messages), transcript (``to_text`` /
              ``parse_text``), interchange (2.2 section 10 JSON)
  serving     openai_message (``to_openai``), openai_chunks (stream chunks), openai_envelope (the
              response / chunk objects around them), stops (what a sampler stops on)
  people      cli (``ocml``), cli_view (``ocml inspect``, ``render --color``), tokenview (tokens
              as text)
  speed       gcpolicy (the cyclic collector off while a batch renders)

Modules stay under 500 lines; a longer one says why at the top of its docstring, in a paragraph
that starts with ``Size:`` (``tests/test_module_size.py`` checks both rules, and
``tests/test_layout_map.py`` that every folder and top-level module has its line above).
"""

from __future__ import annotations

from .adapters import to_conversation
from .encoder import Batch, Encoder
from .errors import OcmlError
from .interchange import to_interchange
from .masks import MaskPolicy
from .messages import Conversation, CotPolicy, Message, Mode, Options
from .openai_message import ChatChoice
from .pack import Packed, Packer, PackReport, pack
from .render import RenderResult

__all__ = [
    "Batch", "ChatChoice", "Conversation", "CotPolicy", "Encoder", "MaskPolicy", "Message", "Mode", "OcmlError", "Options",
    "PackReport", "Packed", "Packer", "RenderResult", "pack", "to_conversation", "to_interchange",
]


# ``ocml.encoder.stops.stop_ids(...)`` works without importing the submodule first
# (any submodule: derived from the package, not a list to keep in step).
def __getattr__(name: str):  # type: ignore[no-untyped-def]
    import importlib
    import importlib.util

    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

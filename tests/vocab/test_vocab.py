"""Issue 2: vocabularies, registration, the encode_text safety contract, pickling, errors."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import vocab
from ocml.vocab.errors import OcmlError, UnknownNameError, VocabError

HARMONY_IDS = {"<|startoftext|>": 199998, "<|endoftext|>": 199999, "<|return|>": 200002, "<|constrain|>": 200003,
               "<|channel|>": 200005, "<|start|>": 200006, "<|end|>": 200007, "<|message|>": 200008, "<|call|>": 200012}
OCM22 = vocab.control_table("openchatml-2.2")


def test_harmony_ids():
    tok = vocab.load("o200k_harmony")
    for s, i in HARMONY_IDS.items():
        assert tok.control_id(s) == i
    assert tok.n_vocab == 201088
    assert tok.control_id("<|reserved_200013|>") == 200013
    assert tok.control_id("<|endofprompt|>") == 200018
    assert tok.decode_bytes([200006, 1428, 200008]) == b"<|start|>user<|message|>"


def test_base_has_no_controls():
    tok = vocab.load("o200k_base")
    assert tok.control_id("<|start|>") is None
    assert tok.control_id("<|endoftext|>") == 199999


def test_cl100k_register_appends_after_base():
    tok = vocab.load("cl100k_base", register="openchatml-2.2")
    ids = [tok.control_id(c) for c in OCM22.controls]
    assert len(set(ids)) == 9 and all(i is not None and i > 100276 for i in ids)
    assert ids == list(range(100277, 100286))
    markers = [tok.control_id(m) for m in OCM22.markers]
    assert markers == [100286, 100287, 100288]


def test_existing_specials_keep_their_ids():
    tok = vocab.load("cl100k_base", register="chatml")
    assert tok.control_id("<|fim_prefix|>") == 100258  # cl100k already has it
    assert [tok.control_id(t) for t in ("<s>", "</s>", "<|im_start|>")] == [100277, 100278, 100279]


def test_all_tables_load():
    for name in vocab.FORMAT_NAMES:
        t = vocab.control_table(name)
        assert t.controls
    assert len(vocab.control_table("apertus").controls) == 14
    assert vocab.control_table("openchatml-2.0").controls == ("<|start|>", "<|channel|>", "<|message|>", "<|call|>",
                                                              "<|return|>", "<|end|>")


def test_unknown_names_list_valid_ones():
    with pytest.raises(UnknownNameError) as e:
        vocab.load("o300k")
    assert "o200k_harmony" in str(e.value) and e.value.code == "E-UNKNOWN-NAME"
    with pytest.raises(UnknownNameError) as e:
        vocab.load("o200k_base", register="chatml-9")
    assert "openchatml-2.2" in str(e.value)


def test_harmony_clash_is_an_error():
    with pytest.raises(VocabError) as e:
        vocab.load("cl100k_base", register="harmony")
    assert e.value.code == "E-VOCAB-CLASH"


def test_hash_mismatch_names_file_and_hashes(tmp_path, monkeypatch):
    from ocml.vocab import base

    bad = tmp_path / "o200k_base.tiktoken"
    bad.write_bytes(b"aGVsbG8= 0\n")
    monkeypatch.setenv("OCML_TIKTOKEN_DIR", str(tmp_path))
    base._load_base.cache_clear()
    try:
        with pytest.raises(VocabError) as e:
            base.load_base("o200k_base")
        msg = str(e.value)
        assert str(bad) in msg and "446a9538" in msg and e.value.code == "E-VOCAB-HASH"
    finally:
        base._load_base.cache_clear()


def test_tiktoken_file_path(tmp_path):
    import base64

    path = tmp_path / "tiny.tiktoken"
    path.write_text("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256)))
    tok = vocab.load(str(path), register="openchatml-2.0")
    assert tok.control_id("<|start|>") == 256
    assert tok.decode_bytes(tok.encode_text("hi <|start|>")) == b"hi <|start|>"


def test_pickle_is_a_recipe():
    tok = vocab.load("o200k_harmony")
    blob = pickle.dumps(tok)
    assert len(blob) < 1000
    assert pickle.loads(blob).encode_text("hello") == tok.encode_text("hello")


def test_errors_have_codes_and_hints():
    err = OcmlError("boom", code="E-X", index=3, field="role", hint="do this")
    assert "message 3" in str(err) and "do this" in str(err) and err.to_dict()["code"] == "E-X"


CONTROL_TEXT = st.sampled_from([*OCM22.all_tokens, *HARMONY_IDS, "<|", "|>", "<", "<<|start|>", "<|reserved_200013|>",
                                "<|endoftext|>", "<|endofprompt|>"])
CRAFTED = st.lists(st.one_of(CONTROL_TEXT, st.text(max_size=6)), max_size=12).map("".join)


@settings(max_examples=300, deadline=None)
@given(CRAFTED)
def test_no_text_encodes_to_a_control_id_tiktoken(text):
    for tok in (vocab.load("o200k_harmony"), vocab.load("cl100k_base", register="openchatml-2.2")):
        ids = tok.encode_text(text)
        assert not set(ids) & set(tok.specials.values())
        assert tok.decode_bytes(ids) == text.encode("utf-8", "surrogatepass") or "\ud800" <= max(text or "a")


@pytest.fixture(scope="module")
def hf_ocm():
    return vocab.from_hf(vocab.load("cl100k_base", register="openchatml-2.2").to_hf(), register="openchatml-2.2")


@settings(max_examples=200, deadline=None)
@given(CRAFTED)
def test_no_text_encodes_to_a_control_id_hf(hf_ocm, text):
    ids = hf_ocm.encode_text(text)
    assert not set(ids) & set(hf_ocm.specials.values())


def test_hf_backend_same_ids_as_tiktoken(hf_ocm):
    tk = vocab.load("cl100k_base", register="openchatml-2.2")
    for c in OCM22.all_tokens:
        assert hf_ocm.control_id(c) == tk.control_id(c)
    text = "Hello wörld 日本語 🙂\n\n    def f(x):\n\treturn x**2  # <|start|>\r\n 12345678 DON'T"
    assert hf_ocm.encode_text(text) == tk.encode_text(text)
    assert hf_ocm.decode_bytes(tk.encode_text(text)) == text.encode()


def test_from_hf_registers_missing_tokens():
    import tokenizers

    from tokenizers import models, pre_tokenizers

    raw = tokenizers.Tokenizer(models.BPE(vocab={c: i for i, c in enumerate("abc<|>")}, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok = vocab.from_hf(raw, register="openchatml-2.0")
    ids = [tok.control_id(c) for c in vocab.control_table("openchatml-2.0").controls]
    assert None not in ids and len(set(ids)) == 6
    assert raw.get_vocab_size(True) == 6  # the caller's object is untouched
    assert not set(tok.encode_text("<|start|>")) & set(ids)


# --- to_hf (issue 11): cached conversion, a fresh object per call, role tokens --------------------

@pytest.fixture
def tiny_tiktoken(tmp_path, monkeypatch):
    """A 256-byte .tiktoken vocabulary with openchatml-2.0 registered; empty to_hf cache."""
    import base64
    from collections import OrderedDict

    from ocml.vocab import tiktoken_backend

    monkeypatch.setenv("OCML_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(tiktoken_backend, "_HF_BACKENDS", OrderedDict())
    path = tmp_path / "tiny.tiktoken"
    path.write_text("".join(f"{base64.b64encode(bytes([b])).decode()} {b}\n" for b in range(256)))
    return str(path)


def test_to_hf_converts_once_and_hands_out_independent_objects(tiny_tiktoken, monkeypatch):
    from ocml.vocab import hf_convert, tiktoken_backend

    builds = []
    real = hf_convert.build_hf_tokenizer
    monkeypatch.setattr(hf_convert, "build_hf_tokenizer", lambda *a, **k: builds.append(1) or real(*a, **k))
    tok = vocab.load(tiny_tiktoken, register="openchatml-2.0")
    first = tok.to_hf()
    first.chat_template = "{{ messages }}"
    first.add_tokens(["<|mine|>"])
    first.backend_tokenizer.enable_padding(pad_id=3)
    second = tok.to_hf()
    assert second is not first and second.backend_tokenizer is not first.backend_tokenizer
    assert second.chat_template is None and len(second) == tok.n_vocab and second.backend_tokenizer.padding is None
    assert "<|mine|>" not in second.get_vocab()
    # Another tokenizer object with the same vocabulary + specials reuses the conversion.
    twin = tiktoken_backend.TiktokenTokenizer(tiny_tiktoken, ("openchatml-2.0",), name="twin")
    assert twin is not tok and twin.fingerprint == tok.fingerprint
    third = twin.to_hf()
    assert builds == [1]
    text = "hi <|start|>"
    assert third.encode(text) == second.encode(text) == first.encode(text)


def test_to_hf_role_tokens(tiny_tiktoken):
    tok = vocab.load(tiny_tiktoken, register="openchatml-2.0")
    plain = tok.to_hf()
    assert plain.eos_token is None and plain.pad_token is None  # no <|endoftext|> in this vocabulary
    fast = tok.to_hf(eos_token="<|return|>", pad_token="<|end|>")
    assert fast.eos_token_id == tok.control_id("<|return|>") and fast.pad_token_id == tok.control_id("<|end|>")
    assert tok.to_hf().eos_token is None  # roles of one call never stick to the next
    with pytest.raises(UnknownNameError) as info:
        tok.to_hf(eos_token="<|constrain|>")  # an openchatml-2.2 token, not registered here
    assert info.value.field == "eos_token"


def test_hf_backend_to_hf_roles_and_pickle():
    import transformers

    import tokenizers

    from tokenizers import models, pre_tokenizers

    raw = tokenizers.Tokenizer(models.BPE(vocab={c: i for i, c in enumerate("abcdefgh")}, merges=[]))
    raw.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    raw.add_special_tokens(["<eos>"])
    src = transformers.PreTrainedTokenizerFast(tokenizer_object=raw, eos_token="<eos>")
    tok = vocab.from_hf(src, register="openchatml-2.0")
    assert tok.default_roles["eos_token"] == "<eos>"
    assert tok.to_hf().eos_token == "<eos>"  # the source's roles by default
    fast = tok.to_hf(eos_token="<|end|>")
    assert fast.eos_token_id == tok.control_id("<|end|>")
    fast.add_tokens(["zz"])
    assert len(tok.to_hf()) == tok.n_vocab
    clone = pickle.loads(pickle.dumps(tok))
    assert clone.default_roles == tok.default_roles and clone.encode_text("abc") == tok.encode_text("abc")


def test_rank_cache_is_pinned_and_read_back(tmp_path, monkeypatch):
    """The binary ranks cache (issue 30's vocabulary load): written once, read back equal, and a
    file that is not byte for byte what ocml writes is ignored and rewritten."""
    from ocml.vocab import base, rank_cache

    monkeypatch.setenv("OCML_CACHE_DIR", str(tmp_path))
    base._load_base.cache_clear()
    try:
        parsed = base.load_base("cl100k_base")
        (cached,) = (tmp_path / "ranks").glob("cl100k_base-*.ranks")
        base._load_base.cache_clear()
        calls = []
        monkeypatch.setattr(base, "parse_tiktoken_bytes", lambda *a: calls.append(a))
        again = base.load_base("cl100k_base")
        assert again.ranks == parsed.ranks and again.sha256 == parsed.sha256 and calls == []
        data = bytearray(cached.read_bytes())
        data[-1] ^= 1  # one byte off: the pinned sha256 refuses it
        cached.write_bytes(bytes(data))
        assert rank_cache.read_ranks("cl100k_base", base.encodings_table()["cl100k_base"]["ranks_bin_sha256"],
                               base._official_path("cl100k_base", base.encodings_table()["cl100k_base"])) is None
    finally:
        base._load_base.cache_clear()


def test_llama3_encoding_is_metas_file_at_metas_ids():
    """The ``llama3`` encoding: Meta's tokenizer.model read from inside ``llama_models`` (sha256-pinned),
    with Meta's 256 specials at 128000+; text encodes as Meta's own Tokenizer does."""
    from llama_models.llama3.tokenizer import Tokenizer as MetaTokenizer

    meta = MetaTokenizer.get_instance()
    tok = vocab.load("llama3")
    assert tok.specials == meta.special_tokens and tok.n_vocab == meta.n_words == 128256
    for text in ("Hello, world!", " héllo\n\n  wörld 12345 ", "<|eot_id|> is text here", "日本語 🙂\r\n"):
        assert tok.encode_text(text) == meta.encode(text, bos=False, eos=False)


def test_package_file_hash_mismatch_names_the_package(tmp_path, monkeypatch):
    from ocml.vocab import base

    (tmp_path / "llama3").mkdir()
    (tmp_path / "llama3" / "tokenizer.model").write_bytes(b"aGVsbG8= 0\n")
    monkeypatch.setattr(base, "_package_dir", lambda package: tmp_path)
    base._load_base.cache_clear()
    try:
        with pytest.raises(VocabError) as e:
            base.load_base("llama3")
        assert "82e9d319" in str(e.value) and "llama_models" in e.value.hint and e.value.code == "E-VOCAB-HASH"
    finally:
        base._load_base.cache_clear()


def test_rank_cache_unwritable(tmp_path, monkeypatch):
    from ocml.vocab import base, rank_cache

    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("OCML_CACHE_DIR", str(blocker))
    base._load_base.cache_clear()
    try:
        assert base.load_base("cl100k_base").n_ranks == 100256  # parsed as before, nothing written
    finally:
        base._load_base.cache_clear()
    assert rank_cache.encode({b"a": 0, b"b": 2}) is None  # ranks with a gap: not cached


def test_an_encodings_roles_are_its_end_of_text_and_hf_roles():
    """``encodings.json`` ``roles``: Llama 3's eos is ``<|end_of_text|>`` (no ``<|endoftext|>``), so text
    records end with it and ``to_hf`` declares Meta's bos / eos / pad."""
    from ocml.encoder.inputs.text import end_of_text_id

    tok = vocab.load("llama3")
    assert end_of_text_id(tok) == 128001
    hf = tok.to_hf()
    assert (hf.bos_token, hf.eos_token, hf.pad_token) == ("<|begin_of_text|>", "<|end_of_text|>",
                                                          "<|finetune_right_pad_id|>")

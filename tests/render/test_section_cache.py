"""Issue 9: system / developer sections seen before are neither rebuilt nor re-encoded
(``ocml.encoder.section_cache``), and the cache never changes a single id."""

from __future__ import annotations

import contextlib
import copy
import json
import random
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ocml import encoder
from ocml.encoder.errors import OcmlError
from ocml.encoder.formats.harmony.content import DeveloperContent, ToolDescription, ToolNamespace
from ocml.encoder.section_cache import LRU, SECTIONS, SectionIds

from support.gen import TOOL_NAMES, schema, text
from support.openai_input import openai_conversation, to_harmony_objects


@contextlib.contextmanager
def no_cache() -> Iterator[None]:
    """Sections neither interned nor their ids cached: the plain path."""
    saved = SECTIONS._by_key.max_entries
    SECTIONS.clear()
    SECTIONS._by_key.max_entries = 0
    try:
        yield
    finally:
        SECTIONS._by_key.max_entries = saved
        SECTIONS.clear()


def shared_set(n: int, seed: int) -> list[dict[str, Any]]:
    """Conversations sharing one tool set, system prompt and options (as in SFT sets)."""
    rng = random.Random(seed)
    tools = [{"type": "function", "function": {"name": name, "description": text(rng) or "d",
                                               "parameters": schema(rng)}} for name in TOOL_NAMES[:rng.randint(1, 4)]]
    system = text(rng, 30) or "Be brief."
    out = []
    for _ in range(n):
        conv = openai_conversation(rng)
        msgs = [m for m in conv["messages"] if m["role"] not in ("system", "developer")]
        for m in msgs:
            for c in m.get("tool_calls") or ():
                c["function"]["name"] = rng.choice(tools)["function"]["name"]
        out.append({"messages": [{"role": "system", "content": system}, *msgs], "tools": copy.deepcopy(tools),
                    "reasoning_effort": "low"})
    return out


def renders(enc: encoder.Encoder, convs: list[Any], mode: str = "train") -> list[tuple[list[int], list[bool], list[int]]]:
    return [(r.ids.tolist(), r.mask.tolist(), r.message_index.tolist())
            for r in (enc.render(c, mode=mode, cot="harmony") for c in convs)]


def both_ways(fmt: str, convs: list[Any], mode: str = "train") -> None:
    enc = encoder.Encoder(fmt)
    first = renders(enc, convs, mode)
    again = renders(enc, convs, mode)  # every section now a hit
    batch = [(r.ids.tolist(), r.mask.tolist(), r.message_index.tolist())
             for r in enc.render_batch(convs, mode=mode, cot="harmony")]
    with no_cache():
        plain = renders(encoder.Encoder(fmt), convs, mode)
    assert first == plain
    assert again == plain
    assert batch == plain


@pytest.mark.parametrize("fmt", ["harmony", "openchatml-2.2"])
@pytest.mark.parametrize("mode", ["train", "prompt"])
def test_cached_renders_identical_shared_and_own(fmt: str, mode: str) -> None:
    SECTIONS.clear()
    convs = shared_set(40, 1) + [openai_conversation(random.Random(k)) for k in range(40)] + shared_set(20, 2)
    both_ways(fmt, convs, mode)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_cached_renders_identical_property(seed: int) -> None:
    """Any mix of shared and own sections, in any order: the cache never changes an id."""
    rng = random.Random(seed)
    pool = shared_set(3, seed) + [openai_conversation(rng) for _ in range(3)]
    convs = [rng.choice(pool) for _ in range(8)]
    enc = encoder.Encoder("harmony")
    got = renders(enc, convs)
    with no_cache():
        plain = renders(encoder.Encoder("harmony"), convs)
    assert got == plain


def test_harmony_json_sections_hit_and_match_openai_harmony(harmony: Any) -> None:
    oh = pytest.importorskip("openai_harmony")
    convs = shared_set(30, 3)
    refs = [to_harmony_objects(c, oh) for c in convs]
    jsons = [json.loads(r.to_json()) for r in refs]
    SECTIONS.clear()
    enc = encoder.Encoder("harmony")
    for j, ref in zip(jsons, refs):
        assert enc.render(j, cot="harmony").ids.tolist() == harmony.render_conversation_for_training(ref)
    # one system and one developer item for all: built and encoded once each
    assert enc.renderer.sections.stats["entries"] == 2
    assert enc.renderer.sections.stats["hits"] >= 2 * (len(convs) - 1)
    both_ways("harmony", jsons)


def test_shared_options_are_built_once() -> None:
    SECTIONS.clear()
    enc = encoder.Encoder("harmony")
    convs = shared_set(10, 4)
    for c in convs:
        enc.render(c)
    # the system and the developer section: built once each
    assert SECTIONS.stats["misses"] == 2 and SECTIONS.stats["hits"] == 2 * (len(convs) - 1)
    assert enc.renderer.sections.stats["entries"] == 2  # system + developer
    # a changed tool description is new content: a miss, never the old ids
    changed = copy.deepcopy(convs[0])
    changed["tools"][0]["function"]["description"] += " (v2)"
    r = enc.render(changed)
    assert "(v2)" in enc.tokenizer.decode(r.ids.tolist())
    assert "(v2)" not in enc.tokenizer.decode(enc.render(convs[0]).ids.tolist())


def test_system_section_shared_by_own_tools() -> None:
    """Conversations with their own tools still share the system header (same options)."""
    SECTIONS.clear()
    enc = encoder.Encoder("harmony")
    for k in range(5):
        enc.render({"messages": [{"role": "user", "content": "hi"}],
                    "tools": [{"type": "function", "function": {"name": f"t{k}", "description": "d"}}]})
    assert enc.renderer.sections.stats["entries"] == 1 + 5  # one system section, five developer sections
    assert enc.renderer.sections.stats["hits"] == 4


def test_function_tools_flag_is_part_of_the_key(harmony: Any) -> None:
    """The system text gains a line when a developer message declares function tools: the same
    interned system section renders both ways."""
    oh = pytest.importorskip("openai_harmony")
    sc = oh.SystemContent.new()
    dc = oh.DeveloperContent.new().with_function_tools([oh.ToolDescription.new("f", "d")])
    with_tools = oh.Conversation.from_messages([oh.Message.from_role_and_content(oh.Role.SYSTEM, sc),
                                                oh.Message.from_role_and_content(oh.Role.DEVELOPER, dc),
                                                oh.Message.from_role_and_content(oh.Role.USER, "hi")])
    without = oh.Conversation.from_messages([oh.Message.from_role_and_content(oh.Role.SYSTEM, sc),
                                             oh.Message.from_role_and_content(oh.Role.USER, "hi")])
    enc = encoder.Encoder("harmony")
    for conv in (with_tools, without, with_tools, without):
        got = enc.render(json.loads(conv.to_json()), mode="prompt").ids.tolist()
        assert got == harmony.render_conversation_for_completion(conv, oh.Role.ASSISTANT)


def test_caller_objects_are_never_cached() -> None:
    """Sections the caller built (and may mutate in place) are rendered afresh every time."""
    enc = encoder.Encoder("harmony")
    tools = {"functions": ToolNamespace("functions", None, (ToolDescription("f", "first"),))}
    dc = DeveloperContent(instructions="x", tools=tools)
    from ocml.encoder.messages import Conversation, Message

    c = Conversation((Message(role="developer", structured=dc), Message(role="user", content="hi")))
    a = enc.tokenizer.decode(enc.render(c).ids.tolist())
    tools["functions"] = ToolNamespace("functions", None, (ToolDescription("f", "second"),))
    b = enc.tokenizer.decode(enc.render(c).ids.tolist())
    assert "first" in a and "second" in b and "first" not in b
    assert not SECTIONS.interned(dc)


def test_bounded() -> None:
    lru: LRU[str] = LRU(3, 100)
    for k in range(10):
        assert lru.put(k, "v", 10)
    assert len(lru) == 3 and lru.weight == 30
    assert lru.get(9) == "v" and lru.get(0) is None
    assert not lru.put("big", "v", 101) and len(lru) == 3  # bigger than the bound: not kept
    lru.put("a", "v", 90)
    assert lru.weight <= 100
    ids = SectionIds(max_entries=4)
    enc = encoder.Encoder("harmony")
    enc.renderer.sections = ids
    SECTIONS.clear()
    for k in range(12):
        enc.render({"messages": [{"role": "user", "content": "hi"}], "tools": [
            {"type": "function", "function": {"name": f"t{k}", "description": "d"}}]})
    assert ids.stats["entries"] <= 4
    assert len(SECTIONS._by_key) <= SECTIONS._by_key.max_entries
    assert len(SECTIONS._interned) <= 2 * SECTIONS._by_key.max_entries + 1


def test_unhashable_option_is_a_typed_error() -> None:
    enc = encoder.Encoder("harmony")
    with pytest.raises(OcmlError) as e:
        enc.render({"messages": [{"role": "user", "content": "hi"}], "date": {"y": 2025}})
    assert e.value.field in ("date", "conversation_start_date")


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=4),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
                     max_leaves=12)


@given(_json)
def test_json_copy_is_a_deep_copy(value: Any) -> None:
    """Tool parameters read from harmony JSON are copied (the caller may mutate theirs): equal, unshared."""
    from ocml.encoder.formats.json_fields import copy_json

    got = copy_json(value)
    assert got == copy.deepcopy(value) and type(got) is type(value)
    if isinstance(value, (dict, list)) and value:
        assert got is not value
        value.clear()
        assert got  # the copy kept its content


@given(_json, _json)
def test_content_key_equal_iff_same_content(a: Any, b: Any) -> None:
    from ocml.encoder.section_cache import content_key

    assert content_key(a) == content_key(copy.deepcopy(a))  # separate objects, same content
    if content_key(a) == content_key(b):
        assert a == b and repr(a) == repr(b)  # never a false hit (1, 1.0 and True stay apart)


def test_content_key_falls_back_for_other_types() -> None:
    from collections import OrderedDict

    from ocml.encoder.section_cache import content_key

    assert content_key(1) != content_key(True) != content_key(1.0)
    assert isinstance(content_key(OrderedDict(a=1)), str)  # marshal refuses subclasses: repr
    assert content_key(OrderedDict(a=1)) != content_key({"a": 1})


def test_threads_share_the_caches() -> None:
    """One encoder used from several threads (pipelines, servers): same ids as one thread."""
    from concurrent.futures import ThreadPoolExecutor

    convs = shared_set(30, 7) + [openai_conversation(random.Random(k)) for k in range(30)]
    with no_cache():
        want = renders(encoder.Encoder("harmony"), convs)
    enc = encoder.Encoder("harmony")
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda k: renders(enc, convs[k:] + convs[:k]), range(8)))
    for k, g in enumerate(got):
        assert g == want[k:] + want[:k]

"""Chat template export: structure, options, policies, save_pretrained and the CLI.

The token-for-token parity suite is ``test_template_parity.py``; the documented places where
a template cannot match ocml are in ``test_template_limits.py``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
from typing import Any

import pytest

from ocml import encoder
from ocml.encoder.errors import OcmlError, UnknownNameError, UnrepresentableError
from ocml.encoder.template import chat_template
from ocml.encoder.formats import format_class

from support.template import FORMATS, cases, hf_call, rendered, stack

import transformers
from jinja2 import TemplateError


@pytest.fixture(scope="module")
def harmony_hf():
    return stack("harmony")


class _WithTemplates:
    """The shared HF tokenizer of a vocabulary, rendering with another encoder's templates."""

    def __init__(self, enc: Any, base: Any) -> None:
        self.base = base
        self.templates = {"default": enc.chat_template(), "training": enc.chat_template(training=True)}

    def apply_chat_template(self, conversation: Any, chat_template: str | None = None, **kw: Any) -> Any:
        return self.base.apply_chat_template(conversation, chat_template=self.templates[chat_template or "default"],
                                             **kw)


def _hf_for(enc: Any, base: Any) -> Any:
    return _WithTemplates(enc, base)


# -- structure -----------------------------------------------------------------------------

def _generation_blocks(source: str) -> tuple[int, int]:
    """(generation blocks at top level, generation blocks inside macros), from the parsed AST."""
    from jinja2 import nodes
    from transformers.utils.chat_template_utils import _compile_jinja_template

    env = _compile_jinja_template(source).environment
    tree = env.parse(source)

    def is_generation(node: Any) -> bool:
        return isinstance(node, nodes.CallBlock) and "_generation_support" in repr(node.call)

    total = sum(1 for n in tree.find_all(nodes.CallBlock) if is_generation(n))
    in_macros = sum(1 for m in tree.find_all(nodes.Macro) for n in m.find_all(nodes.CallBlock) if is_generation(n))
    return total - in_macros, in_macros


@pytest.mark.parametrize("fmt", FORMATS)
def test_inference_template_has_no_generation_tag_and_training_has_them_at_top_level(fmt):
    enc = encoder.Encoder(fmt)
    inference, training = enc.chat_template(), enc.chat_template(training=True)
    assert re.search(r"\{%-?\s*(end)?generation\b", inference) is None
    assert _generation_blocks(inference) == (0, 0)
    top, in_macros = _generation_blocks(training)
    assert top >= 1 and in_macros == 0
    assert chat_template(enc) == inference and chat_template(enc, training=True) == training


def _no_floats(value: Any) -> Any:
    if isinstance(value, float):
        return str(value)
    if isinstance(value, list):
        return [_no_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: _no_floats(v) for k, v in value.items()}
    return value


def _json_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _string_arguments(conv: dict[str, Any]) -> dict[str, Any]:
    """What goes through the engine's ``tojson`` made engine-neutral: ``tojson`` differs between
    engines (MiniJinja escapes ``<`` as ``\\u003c`` and prints ``1e-05`` as ``0.00001``; HF's is
    ``json.dumps(ensure_ascii=False)``).  Tool-call arguments become JSON text; floats in tool
    schemas become strings (ChatML writes its tool list with ``tojson``)."""
    if "tools" in conv:
        conv = {**conv, "tools": _no_floats(conv["tools"])}
    msgs = []
    for m in conv["messages"]:
        content = m.get("content")
        if isinstance(content, dict) and "blocks" in content:  # Apertus calls in blocks
            blocks = [{**b, "calls": [{**c, "arguments": _json_text(c["arguments"])} for c in b["calls"]]}
                      if b["type"] == "tool_calls" else b for b in content["blocks"]]
            m = {**m, "content": {"blocks": blocks}}
        if m.get("tool_calls"):
            calls = [{**c, "function": {**c["function"], "arguments": c["function"]["arguments"]
                                        if isinstance(c["function"]["arguments"], str)
                                        else json.dumps(c["function"]["arguments"], ensure_ascii=False)}}
                     for c in m["tool_calls"]]
            m = {**m, "tool_calls": calls}
        if m.get("role") == "tool" and isinstance(m.get("content"), str):  # Llama 3 writes it with tojson
            m = {**m, "content": m["content"].translate(_TOJSON_ESCAPED)}
        msgs.append(m)
    return {**conv, "messages": msgs}


#: what MiniJinja's ``tojson`` escapes and HF's does not (docs/templates.md)
_TOJSON_ESCAPED = str.maketrans("", "", "<>&'")


def test_minijinja_renders_the_inference_template_as_transformers_does(harmony_hf):
    """Engines with a stricter Jinja (MiniJinja: vLLM's and TGI's Rust front ends) accept it."""
    minijinja = pytest.importorskip("minijinja")

    def raise_exception(message: str) -> None:
        raise RuntimeError(message)

    env = minijinja.Environment()
    env.add_function("raise_exception", raise_exception)
    _enc, base = harmony_hf
    for fmt in FORMATS:
        enc = encoder.Encoder(fmt)
        hf = _hf_for(enc, base)
        template = enc.chat_template()
        for conv in map(_string_arguments, cases(14, 30, fmt)):
            opts = {k: v for k, v in conv.items() if k != "messages"}
            # HF drops null-valued message keys before rendering; so do we here
            msgs = [{k: v for k, v in m.items() if v is not None} for m in conv["messages"]]
            for gp in (True, False):
                try:
                    want = hf.apply_chat_template(conv["messages"], tokenize=False, add_generation_prompt=gp, **opts)
                except TemplateError:  # a conversation the format refuses (Llama 3: parallel calls):
                    with pytest.raises(OcmlError):  # render refuses it too, and so does MiniJinja
                        enc.render(conv, mode="prompt")
                    with pytest.raises(Exception, match="E-"):
                        env.render_str(template, messages=msgs, add_generation_prompt=gp, **opts)
                    continue
                got = env.render_str(template, messages=msgs, add_generation_prompt=gp, **opts)
                assert got == want


# -- options -------------------------------------------------------------------------------

def test_no_date_unless_given_and_date_from_clock_is_opt_in(harmony_hf):
    _enc, hf = harmony_hf
    msgs = [{"role": "user", "content": "What day is it?"}]
    plain = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert "Current date" not in plain
    given = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, date="2025-02-03")
    assert "Current date: 2025-02-03\n" in given
    clock = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, date_from_clock=True)
    assert f"Current date: {datetime.date.today():%Y-%m-%d}\n" in clock
    both = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True, date="2025-02-03",
                                  date_from_clock=True)
    assert both == given


def test_reasoning_effort_identity_cutoff_and_instructions(harmony_hf):
    enc, hf = harmony_hf
    conv = {"messages": [{"role": "user", "content": "hi"}], "reasoning_effort": "HIGH", "model_identity": "You are X.",
            "knowledge_cutoff": "2025-01", "instructions": "Be terse.", "builtin_tools": ["python"]}
    assert hf_call(hf, conv, chat_template="training")["input_ids"] == enc.render(conv).ids.tolist()
    text = hf.apply_chat_template(conv["messages"], tokenize=False,
                                  **{k: v for k, v in conv.items() if k != "messages"})
    assert "You are X.\nKnowledge cutoff: 2025-01\n\nReasoning: high\n\n# Tools\n\n## python\n\n" in text
    assert "# Instructions\n\nBe terse." in text
    with pytest.raises(Exception, match="reasoning_effort"):
        hf.apply_chat_template(conv["messages"], tokenize=False, reasoning_effort="extreme")
    with pytest.raises(Exception, match="E-UNKNOWN-NAME"):
        hf.apply_chat_template(conv["messages"], tokenize=False, builtin_tools=["shell"])


@pytest.mark.parametrize("cot", ["default", "harmony", "keep-all", "drop-all"])
def test_cot_policy_is_baked_in_and_can_be_passed(harmony_hf, cot):
    enc0, base = harmony_hf
    enc = encoder.Encoder("harmony", cot=cot)
    hf = _hf_for(enc, base)
    for k, conv, r in rendered(enc, cases(15, 25), "train"):
        out = hf_call(hf, conv, chat_template="training", return_assistant_tokens_mask=True)
        assert out["input_ids"] == r.ids.tolist(), f"case {k} cot={cot}"
        assert out["assistant_masks"] == r.mask.astype(int).tolist()
        passed = hf_call(base, conv, chat_template="training", cot=cot)
        assert passed["input_ids"] == r.ids.tolist()
    with pytest.raises(Exception, match="unknown cot policy"):
        base.apply_chat_template([{"role": "user", "content": "x"}], tokenize=False, cot="some")


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("mask", ["final", "no-analysis", "no-tool-bodies", "last",
                                  {"roles": ["assistant", "user"], "terminator": False, "tool_call_bodies": False}])
def test_mask_policy_is_baked_into_the_training_template(harmony_hf, fmt, mask):
    _enc, harmony_base = harmony_hf
    if format_class(fmt).turns.blocks and mask in ("final", "no-analysis"):  # one frame per turn: no channels
        with pytest.raises(OcmlError, match="has no effect"):
            encoder.Encoder(fmt, mask=mask)
        return
    try:
        enc = encoder.Encoder(fmt, mask=mask)
    except OcmlError as exc:  # ChatML / Apertus: a turn's tool bodies are inside the frame the mask keeps
        assert format_class(fmt).turns.blocks and "has no effect" in str(exc), exc
        return
    hf = _hf_for(enc, harmony_base) if fmt == "harmony" else _mask_stack(fmt, enc)
    for k, conv, r in rendered(enc, cases(16, 25, fmt), "train"):
        out = hf_call(hf, conv, chat_template="training", return_assistant_tokens_mask=True)
        assert out["input_ids"] == r.ids.tolist()
        assert out["assistant_masks"] == r.mask.astype(int).tolist(), f"case {k} {fmt} mask={mask}"


def _mask_stack(fmt: str, enc: Any) -> Any:
    return _WithTemplates(enc, stack(fmt)[1])


def test_weight_and_train_keys(harmony_hf):
    enc, hf = harmony_hf
    conv = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a1", "weight": 0},
                         {"role": "user", "content": "q2", "train": True}, {"role": "assistant", "content": "a2"}]}
    out = hf_call(hf, conv, chat_template="training", return_assistant_tokens_mask=True)
    r = enc.render(conv)
    assert out["input_ids"] == r.ids.tolist() and out["assistant_masks"] == r.mask.astype(int).tolist()
    trained = enc.tokenizer.decode([i for i, m in zip(out["input_ids"], out["assistant_masks"]) if m])
    assert "a1" not in trained and "q2" in trained and "a2" in trained


def test_shape_is_baked_in_and_can_be_passed(harmony_hf):
    _enc, base = harmony_hf
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]
    native = encoder.Encoder("harmony", shape="native")
    hf = _hf_for(native, base)
    got = hf.apply_chat_template(msgs, return_dict=True, chat_template="training")["input_ids"]
    assert got == native.render(msgs).ids.tolist()
    assert native.tokenizer.decode(got) == "<|start|>user<|message|>q<|end|><|start|>assistant<|message|>a<|end|>"
    chat = hf.apply_chat_template(msgs, return_dict=True, shape="chat")["input_ids"]
    assert chat == encoder.Encoder("harmony").render(msgs).ids.tolist()


def test_recipient_after_channel_option(harmony_hf):
    _enc, base = harmony_hf
    enc = encoder.Encoder("harmony", recipient_after_channel=True)
    hf = _hf_for(enc, base)
    seen = False
    for k, conv, r in rendered(enc, cases(17, 30), "train"):
        got = hf_call(hf, conv, chat_template="training")["input_ids"]
        assert got == r.ids.tolist(), f"case {k}"
        seen = seen or "<|channel|>commentary to=functions." in enc.tokenizer.decode(got)
    assert seen


@pytest.mark.parametrize("options", [{"layout": "v0.1-literal"}, {"bos_eos": True},
                                     {"layout": "v0.1-literal", "bos_eos": True, "default_system": "You are Qwen."}])
def test_chatml_options_are_baked_in(options):
    enc = encoder.Encoder("chatml", **options)
    hf = _WithTemplates(enc, stack("chatml")[1])
    for k, conv, r in rendered(enc, cases(19, 25, "chatml"), "train"):
        out = hf_call(hf, conv, chat_template="training", return_assistant_tokens_mask=True)
        assert out["input_ids"] == r.ids.tolist(), f"case {k} {options}"
        assert out["assistant_masks"] == r.mask.astype(int).tolist(), f"case {k} {options}"
        prompt = hf_call(hf, conv, add_generation_prompt=True)["input_ids"]
        assert prompt == enc.render(conv, mode="prompt").ids.tolist(), f"case {k} {options}"


# -- Apertus options ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def apertus_hf():
    return stack("apertus")


_APERTUS_SYSTEM = "You are Apertus, a helpful assistant created by the SwissAI initiative.\nKnowledge cutoff: 2024-04"


def test_apertus_date_comes_from_the_clock_only_when_asked(apertus_hf):
    """No system message: the default system text's date is ``date``, else the encoder's ``date``
    option, else today with ``date_from_clock=true``, else no date line (as ``render``)."""
    enc, hf = apertus_hf
    msgs = [{"role": "user", "content": "What day is it?"}]
    plain = hf.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
    assert f"<|system_start|>{_APERTUS_SYSTEM}<|system_end|>" in plain
    given = hf_call(hf, {"messages": msgs, "date": "2025-02-03"}, add_generation_prompt=True)["input_ids"]
    assert given == enc.render({"messages": msgs, "date": "2025-02-03"}, mode="prompt").ids.tolist()
    assert "Current date: 2025-02-03<|system_end|>" in enc.tokenizer.decode(given)
    assert hf.apply_chat_template(msgs, return_dict=True, add_generation_prompt=True)["input_ids"] == \
        enc.render(msgs, mode="prompt").ids.tolist()  # neither reads a clock
    clock = hf.apply_chat_template(msgs, return_dict=True, add_generation_prompt=True, date_from_clock=True)
    today = f"{datetime.date.today():%Y-%m-%d}"
    assert clock["input_ids"] == enc.render({"messages": msgs, "date": today}, mode="prompt").ids.tolist()
    both = hf.apply_chat_template(msgs, return_dict=True, add_generation_prompt=True, date="2025-02-03",
                                  date_from_clock=True)
    assert both["input_ids"] == given
    baked = encoder.Encoder("apertus", date="2024-12-24")
    got = _hf_for(baked, hf).apply_chat_template(msgs, return_dict=True, add_generation_prompt=True)["input_ids"]
    assert got == baked.render(msgs, mode="prompt").ids.tolist()
    custom = encoder.Encoder("apertus", default_system="You are a test.")
    got = _hf_for(custom, hf).apply_chat_template(msgs, return_dict=True, add_generation_prompt=True)["input_ids"]
    assert got == custom.render(msgs, mode="prompt").ids.tolist()
    assert "<|system_start|>You are a test.<|system_end|>" in custom.tokenizer.decode(got)


@pytest.mark.parametrize("baked", [False, True])
def test_apertus_enable_thinking_is_baked_in_and_can_be_passed(apertus_hf, baked):
    _enc, base = apertus_hf
    enc = encoder.Encoder("apertus", enable_thinking=baked)
    hf = _hf_for(enc, base)
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"},
            {"role": "assistant", "content": {"blocks": [{"type": "thoughts", "text": "t"},
                                                         {"type": "response", "text": "a"}]}}]
    for conv in ({"messages": msgs}, {"messages": msgs, "enable_thinking": not baked}):
        out = hf_call(hf, conv, chat_template="training", return_assistant_tokens_mask=True)
        r = enc.render(conv)
        assert out["input_ids"] == r.ids.tolist() and out["assistant_masks"] == r.mask.astype(int).tolist()
        thinking = conv.get("enable_thinking", baked)
        assert ("Deliberation: enabled" if thinking else "Deliberation: disabled") in enc.tokenizer.decode(r.ids)


@pytest.mark.parametrize("bad, code", [
    ([{"role": "tool", "content": "x"}], "E-CALL-SCHEMA"),  # outside a turn
    ([{"role": "assistant", "content": "a"}, {"role": "tool", "content": "x"}], "E-CALL-SCHEMA"),  # no call before
    ([{"role": "assistant", "content": {"blocks": [{"type": "tool_calls", "calls": [{"name": "f", "arguments": "{}"}]},
                                                   {"type": "response", "text": "[not outputs]"}]}}],
     "E-UNREPRESENTABLE"),
    ([{"role": "assistant", "content": "a"}, {"role": "system", "content": "late"}], "E-INPUT"),
    ([{"role": "developer", "content": "mine"}], "E-INPUT"),  # with enable_thinking below
])
def test_apertus_template_errors_carry_render_codes(apertus_hf, bad, code):
    enc, hf = apertus_hf
    conv = {"messages": [{"role": "user", "content": "q"}, *bad], "date": "2025-01-01"}
    if bad[0]["role"] == "developer":
        conv = {"messages": bad + conv["messages"], "date": "2025-01-01", "enable_thinking": True}
    with pytest.raises(OcmlError) as info:
        enc.render(conv)
    assert info.value.code.startswith(code)
    with pytest.raises(Exception, match=code):
        hf_call(hf, conv)


def test_apertus_turns_merge_messages_as_render_does(apertus_hf):
    """OpenAI dicts and Apertus blocks give the same ids when they say the same thing."""
    enc, hf = apertus_hf
    head = [{"role": "system", "content": {"text": "S"}}, {"role": "user", "content": {"parts": [
        {"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}}]
    openai = head + [{"role": "assistant", "reasoning_content": "t", "tool_calls": [
        {"id": "1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}},
        {"id": "2", "type": "function", "function": {"name": "g", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "1", "content": "1"}, {"role": "tool", "tool_call_id": "2", "content": "2"},
        {"role": "assistant", "content": "done"}]
    blocks = head + [{"role": "assistant", "content": {"blocks": [
        {"type": "thoughts", "text": "t"},
        {"type": "tool_calls", "calls": [{"name": "f", "arguments": {"x": 1}}, {"name": "g", "arguments": "{}"}]},
        {"type": "tool_outputs", "outputs": [{"output": "1"}, "2"]}, {"type": "response", "text": "done"}]}}]
    a = hf.apply_chat_template(openai, return_dict=True, chat_template="training", return_assistant_tokens_mask=True)
    b = hf.apply_chat_template(blocks, return_dict=True, chat_template="training", return_assistant_tokens_mask=True)
    r = enc.render(openai)
    assert a["input_ids"] == b["input_ids"] == r.ids.tolist() == enc.render(blocks).ids.tolist()
    assert a["assistant_masks"] == b["assistant_masks"] == r.mask.astype(int).tolist()
    text = enc.tokenizer.decode(r.ids.tolist())
    assert text.endswith('<|inner_prefix|>t<|tools_prefix|>[{"f": {"x": 1}}, {"g": {}}]<|tools_suffix|>[1, 2]'
                         '<|inner_suffix|>done<|assistant_end|>')
    trained = enc.tokenizer.decode([i for i, m in zip(r.ids.tolist(), a["assistant_masks"]) if m])
    assert "[1, 2]" not in trained and trained.endswith("done<|assistant_end|>")


def test_apertus_token_straddling_outputs_and_answer_is_trained_by_both(apertus_hf):
    """Whole-run encoding: ``]`` closing the (untrained) outputs and the answer's ``\n\n`` are
    one token; ocml and HF's ``char_to_token`` rule both train it."""
    enc, hf = apertus_hf
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "q"},
            {"role": "assistant", "content": {"blocks": [
                {"type": "tool_calls", "calls": [{"name": "f", "arguments": "{}"}]},
                {"type": "tool_outputs", "outputs": ["x"]}, {"type": "response", "text": "\n\nok"}]}}]
    out = hf.apply_chat_template(msgs, return_dict=True, chat_template="training", return_assistant_tokens_mask=True)
    r = enc.render(msgs)
    assert out["input_ids"] == r.ids.tolist() and out["assistant_masks"] == r.mask.astype(int).tolist()
    tail = [(enc.tokenizer.decode([i]), m) for i, m in zip(out["input_ids"], out["assistant_masks"])][-4:]
    assert tail == [("[x", 0), ("]\n\n", 1), ("ok", 1), ("<|assistant_end|>", 1)]


# -- errors --------------------------------------------------------------------------------

def test_template_errors_carry_ocml_codes(harmony_hf):
    _enc, hf = harmony_hf
    bad = [{"role": "user", "content": "q"}, {"role": "tool", "content": "{}"}]
    with pytest.raises(Exception, match="E-CALL-SCHEMA"):
        hf.apply_chat_template(bad, tokenize=False)
    with pytest.raises(OcmlError):
        encoder.Encoder("harmony").render(bad)
    with pytest.raises(Exception, match="E-INPUT"):
        hf.apply_chat_template([{"role": "user", "content": "q", "thinking": "t"}], tokenize=False)


def test_fallback_mode_has_no_template():
    enc = encoder.Encoder("openchatml-2.2", tokenizer="o200k_base")
    with pytest.raises(UnrepresentableError) as info:
        enc.chat_template()
    assert info.value.code == "E-UNREPRESENTABLE" and "register" in info.value.hint


def test_every_renderable_format_has_a_template_and_others_say_so():
    from ocml.encoder.formats import RENDERABLE
    from ocml.encoder.formats.apertus.format import Apertus
    from ocml.encoder.template.profiles import PROFILES, profile_for

    assert set(PROFILES) == set(RENDERABLE) == set(FORMATS)

    class Unlisted(Apertus):  # a working format (Apertus's table and methods) with no row of its own
        name = "apertus-next"

    fmt = object.__new__(Unlisted)
    fmt.__dict__.update(vars(encoder.Encoder("apertus").format))
    with pytest.raises(UnknownNameError) as info:
        profile_for(fmt)
    assert info.value.code == "E-FORMAT-UNAVAILABLE" and all(f in info.value.hint for f in PROFILES)


# -- save_pretrained and the CLI -----------------------------------------------------------

def _run_cli(argv: list[str]) -> int:
    from ocml.encoder.template.cli import add_parser

    parser = argparse.ArgumentParser(prog="ocml")
    add_parser(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args(argv)
    return int(args.fn(args))


def test_cli_prints_the_templates(capsys):
    assert _run_cli(["template", "--format", "openchatml-2.2"]) == 0
    assert capsys.readouterr().out == encoder.Encoder("openchatml-2.2").chat_template()
    assert _run_cli(["template", "--format", "harmony", "--training", "--cot", "keep-all"]) == 0
    assert capsys.readouterr().out == encoder.Encoder("harmony", cot="keep-all").chat_template(training=True)
    for argv, training in ((["template", "--format", "apertus"], False), (["template", "--format", "apertus", "--training"], True)):
        assert _run_cli(argv) == 0
        out = capsys.readouterr().out
        assert out == encoder.Encoder("apertus").chat_template(training=training)
        assert out.startswith("{#- ocml chat template: apertus, ") and "<|assistant_start|>" in out


def test_save_pretrained_folder_loads_offline_and_stops_where_it_should(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = encoder.Encoder("harmony")
    assert _run_cli(["template", "--format", "harmony", "--out", str(tmp_path)]) == 0
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert written == {"tokenizer.json", "tokenizer_config.json", "generation_config.json"}
    assert str(tmp_path / "tokenizer_config.json") in capsys.readouterr().out
    # the templates are named templates in tokenizer_config.json (transformers 4.x reads them too)
    cfg = json.loads((tmp_path / "tokenizer_config.json").read_text("utf-8"))
    assert cfg["chat_template"] == [{"name": "default", "template": enc.chat_template(training=True)},
                                    {"name": "training", "template": enc.chat_template(training=True)},
                                    {"name": "inference", "template": enc.chat_template()}]

    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert tok.eos_token == "<|return|>" and tok.eos_token_id == 200002
    assert tok.pad_token == "<|endoftext|>" and tok.pad_token_id == 199999
    assert set(tok.chat_template) == {"default", "training", "inference"}
    gen = json.loads((tmp_path / "generation_config.json").read_text())
    assert gen["eos_token_id"] == enc.stop_ids() == [200002, 200012]
    assert transformers.GenerationConfig.from_pretrained(str(tmp_path)).eos_token_id == [200002, 200012]

    text = "naïve café 日本語 🙂 def f():\n    return 1"
    assert tok(text, add_special_tokens=False)["input_ids"] == enc.tokenizer.encode_text(text)
    for k, conv, r in rendered(enc, cases(18, 20), "train"):
        out = hf_call(tok, conv, chat_template="training", return_assistant_tokens_mask=True)
        assert out["input_ids"] == r.ids.tolist() and out["assistant_masks"] == r.mask.astype(int).tolist()
        prompt = hf_call(tok, conv, add_generation_prompt=True)["input_ids"]
        assert prompt == enc.render(conv, mode="prompt").ids.tolist()

    # the saved folder read back as an HF-backed ocml tokenizer exports the same templates
    from ocml import vocab
    from ocml.encoder.template.save import hf_tokenizer

    again = encoder.Encoder("harmony", tokenizer=vocab.from_hf(str(tmp_path), register="harmony"))
    assert again.chat_template(training=True) == enc.chat_template(training=True)
    hf2 = hf_tokenizer(again)
    assert (hf2.eos_token, hf2.pad_token) == ("<|return|>", "<|endoftext|>")
    conv = cases(18, 1)[0]
    assert hf_call(hf2, conv, chat_template="training")["input_ids"] == again.render(conv).ids.tolist()


def test_special_roles_of_apertus():
    from ocml.encoder.template.save import special_roles

    enc = encoder.Encoder("apertus")
    # bos: the <s> every Apertus render starts with (the reference template writes {{ bos_token }})
    assert special_roles(enc) == {"eos_token": "<|assistant_end|>", "bos_token": "<s>", "pad_token": "<|endoftext|>"}
    assert enc.render([{"role": "user", "content": "hi"}]).ids[0] == enc.tokenizer.control_id("<s>")
    assert special_roles(encoder.Encoder("chatml", bos_eos=True))["bos_token"] == "<s>"
    assert "bos_token" not in special_roles(encoder.Encoder("chatml"))
    assert "bos_token" not in special_roles(encoder.Encoder("harmony"))
    assert enc.stop_ids() == [enc.tokenizer.control_id(t) for t in ("<|assistant_end|>", "<|tools_suffix|>", "</s>")]


@pytest.mark.parametrize("fmt", ["openchatml-2.2", "openchatml-2.0"])
def test_special_roles_of_openchatml(fmt):
    from ocml.encoder.template.save import special_roles

    enc = encoder.Encoder(fmt)
    assert special_roles(enc) == {"eos_token": "<|return|>", "pad_token": "<|endoftext|>"}
    assert len(enc.stop_ids()) == 2 and enc.tokenizer.control_id("<|return|>") in enc.stop_ids()

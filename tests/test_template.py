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

import encoder
from encoder.errors import OcmlError, UnknownNameError, UnrepresentableError
from encoder.template import chat_template
from test_template_parity import FORMATS, cases, hf_call, rendered, stack

transformers = pytest.importorskip("transformers")


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


def _string_arguments(conv: dict[str, Any]) -> dict[str, Any]:
    """What goes through the engine's ``tojson`` made engine-neutral: ``tojson`` differs between
    engines (MiniJinja escapes ``<`` as ``\\u003c`` and prints ``1e-05`` as ``0.00001``; HF's is
    ``json.dumps(ensure_ascii=False)``).  Tool-call arguments become JSON text; floats in tool
    schemas become strings (ChatML writes its tool list with ``tojson``)."""
    if "tools" in conv:
        conv = {**conv, "tools": _no_floats(conv["tools"])}
    msgs = []
    for m in conv["messages"]:
        if m.get("tool_calls"):
            calls = [{**c, "function": {**c["function"], "arguments": c["function"]["arguments"]
                                        if isinstance(c["function"]["arguments"], str)
                                        else json.dumps(c["function"]["arguments"], ensure_ascii=False)}}
                     for c in m["tool_calls"]]
            m = {**m, "tool_calls": calls}
        msgs.append(m)
    return {**conv, "messages": msgs}


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
            for gp in (True, False):
                want = hf.apply_chat_template(conv["messages"], tokenize=False, add_generation_prompt=gp, **opts)
                # HF drops null-valued message keys before rendering; so do we here
                msgs = [{k: v for k, v in m.items() if v is not None} for m in conv["messages"]]
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
    enc = encoder.Encoder(fmt, mask=mask)
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


def test_formats_without_a_template_say_so():
    from encoder.template.profiles import PROFILES, profile_for

    class Other:
        name = "apertus"

    with pytest.raises(UnknownNameError) as info:
        profile_for(Other())  # type: ignore[arg-type]
    assert info.value.code == "E-FORMAT-UNAVAILABLE" and all(f in info.value.hint for f in PROFILES)


# -- save_pretrained and the CLI -----------------------------------------------------------

def _run_cli(argv: list[str]) -> int:
    from encoder.template.cli import add_parser

    parser = argparse.ArgumentParser(prog="ocml")
    add_parser(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args(argv)
    return int(args.fn(args))


def test_cli_prints_the_templates(capsys):
    assert _run_cli(["template", "--format", "openchatml-2.2"]) == 0
    assert capsys.readouterr().out == encoder.Encoder("openchatml-2.2").chat_template()
    assert _run_cli(["template", "--format", "harmony", "--training", "--cot", "keep-all"]) == 0
    assert capsys.readouterr().out == encoder.Encoder("harmony", cot="keep-all").chat_template(training=True)


def test_save_pretrained_folder_loads_offline_and_stops_where_it_should(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    enc = encoder.Encoder("harmony")
    assert _run_cli(["template", "--format", "harmony", "--out", str(tmp_path)]) == 0
    written = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert {"tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
            "additional_chat_templates/training.jinja", "generation_config.json"} <= written
    assert str(tmp_path / "chat_template.jinja") in capsys.readouterr().out
    assert (tmp_path / "chat_template.jinja").read_text("utf-8") == enc.chat_template()
    training = (tmp_path / "additional_chat_templates" / "training.jinja").read_text("utf-8")
    assert training == enc.chat_template(training=True)

    tok = transformers.AutoTokenizer.from_pretrained(str(tmp_path))
    assert tok.eos_token == "<|return|>" and tok.eos_token_id == 200002
    assert tok.pad_token == "<|endoftext|>" and tok.pad_token_id == 199999
    assert set(tok.chat_template) == {"default", "training"}
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
    import vocab
    from encoder.template.save import hf_tokenizer

    again = encoder.Encoder("harmony", tokenizer=vocab.from_hf(str(tmp_path), register="harmony"))
    assert again.chat_template(training=True) == enc.chat_template(training=True)
    hf2 = hf_tokenizer(again)
    assert (hf2.eos_token, hf2.pad_token) == ("<|return|>", "<|endoftext|>")
    conv = cases(18, 1)[0]
    assert hf_call(hf2, conv, chat_template="training")["input_ids"] == again.render(conv).ids.tolist()


@pytest.mark.parametrize("fmt", ["openchatml-2.2", "openchatml-2.0"])
def test_special_roles_of_openchatml(fmt):
    from encoder.template.save import special_roles

    enc = encoder.Encoder(fmt)
    assert special_roles(enc) == {"eos_token": "<|return|>", "pad_token": "<|endoftext|>"}
    assert len(enc.stop_ids()) == 2 and enc.tokenizer.control_id("<|return|>") in enc.stop_ids()

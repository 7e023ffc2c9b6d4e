"""Templates follow every encoder option that changes the layout.

``chat_template()``, ``save_pretrained`` and ``ocml template`` write the options an encoder was
built with into its templates (``ocml_profile["options"]``: ``Format.init_options()``; the mask
and CoT policies and the input shape: ``ocml_defaults``).  For every format option and each of its
values, over generated conversations: the training template gives ``render(mode="train")``'s ids
and mask, the inference template with ``add_generation_prompt=True`` gives
``render(mode="prompt")``, and a conversation that ``render`` refuses because of the option
(ChatML's ``reasoning="error"``) is refused by the template with the same error code.  ``test_every_format_option_is_covered`` fails when a format gains a
constructor option this table does not try.
"""

from __future__ import annotations

import argparse
import inspect
import random
from typing import Any

import pytest

from ocml import encoder
from ocml.encoder.errors import OcmlError
from ocml.encoder.formats import format_class
from ocml.encoder.formats.chatml import QWEN_SYSTEM

from support.template import FORMATS, MIN_VALID, cases, hf_call, openai_conversation, stack

#: per format: each constructor option and the values tried (the first is the default)
OPTION_VALUES: dict[str, dict[str, tuple[Any, ...]]] = {
    "chatml": {"reasoning": ("error", "drop", "think"), "layout": ("deployed", "v0.1-literal"),
               "bos_eos": (False, True), "default_system": (None, QWEN_SYSTEM)},
    "apertus": {"enable_thinking": (False, True), "date": (None, "2025-01-02"),
                "default_system": (None, "You are a test model.")},
    "harmony": {"recipient_after_channel": (False, True)},
    "openchatml-2.2": {},
    "openchatml-2.0": {},
    "llama3": {"system_header": (True, False), "date": ("26 Jul 2024", "02 Jan 2025"),
               "knowledge_cutoff": ("December 2023", "March 2025"),
               "builtin_tools": ((), ("brave_search", "wolfram_alpha")), "tools_in_user_message": (True, False),
               "tool_results": ("json", "raw")},
}
#: constructor arguments that are not layout options: validation switches, which a template does
#: not apply (``validate_bodies``: a template cannot parse JSON; ``require_call_ids``: OpenChatML
#: calls and replies without ``call_id`` render, ``render`` refuses them)
NOT_LAYOUT = {"self", "tokenizer", "validate_bodies", "require_call_ids"}
#: the refusals that follow a layout option: the template refuses where ``render`` does (other
#: refusals are validation a template does not do, as in ``test_template_parity.rendered``)
OPTION_ERRORS = {"E-INPUT-REASONING"}


def _option_cases() -> list[tuple[str, str, Any]]:
    return [(fmt, name, value) for fmt, opts in OPTION_VALUES.items() for name, values in opts.items()
            for value in values[1:]] + [(fmt, "", None) for fmt in FORMATS]


def test_every_format_option_is_covered():
    for fmt in FORMATS:
        params = set(inspect.signature(format_class(fmt).__init__).parameters) - NOT_LAYOUT
        assert params == set(OPTION_VALUES[fmt]), f"{fmt}: options without a template parity case"


def _conversations(fmt: str, seed: int) -> list[dict[str, Any]]:
    """``cases`` plus, for ChatML, the same conversations with their reasoning (``cases`` takes it
    out: the default ``reasoning="error"`` refuses it) and with ``developer`` read as ``system``;
    for Apertus half without their ``date``."""
    out = cases(seed, 50, fmt)
    if fmt == "chatml":
        rng = random.Random(seed)
        out += [{**c, "messages": [{k: ("system" if k == "role" and v == "developer" else v) for k, v in m.items()}
                                   for m in c["messages"]]} for c in (openai_conversation(rng) for _ in range(60))]
    if fmt == "apertus":
        out = [{k: v for k, v in c.items() if k != "date" or n % 2} for n, c in enumerate(out)]
    return out


def _template_call(base: Any, template: str, conv: dict[str, Any], **kw: Any) -> Any:
    try:
        return hf_call(base, conv, chat_template=template, **kw)
    except Exception as exc:  # noqa: BLE001 - the template's refusal, compared with render's
        return exc


@pytest.mark.parametrize("fmt,name,value", _option_cases())
def test_templates_follow_the_option(fmt, name, value):
    enc = encoder.Encoder(fmt, **({name: value} if name else {}))
    _, base = stack(fmt)  # the format's HF tokenizer; the option's templates are passed in
    training, inference = enc.chat_template(training=True), enc.chat_template()
    if name:
        assert training != stack(fmt)[0].chat_template(training=True), "the option must reach the template"
    seen = {"ok": 0, "refused": 0}
    for k, conv in enumerate(_conversations(fmt, 31)):
        if fmt == "apertus" and "date" not in conv and enc.format.date is None:
            continue  # render dates an undated conversation today; a template reads no clock (limits)
        for mode in ("train", "prompt"):
            if mode == "prompt" and conv["messages"][-1]["role"] == "assistant":
                conv = {**conv, "messages": conv["messages"][:-1]}
            try:
                r = enc.render(conv, mode=mode)
            except OcmlError as exc:
                if exc.code not in OPTION_ERRORS:
                    continue
                got = _template_call(base, training if mode == "train" else inference, conv,
                                     add_generation_prompt=mode == "prompt")
                assert isinstance(got, Exception) and exc.code in str(got), f"case {k} {mode}: {exc.code} vs {got!r}"
                seen["refused"] += 1
                continue
            if mode == "train":
                out = _template_call(base, training, conv, return_assistant_tokens_mask=True)
                assert not isinstance(out, Exception), f"case {k}: {out!r}\n{conv}"
                assert out["input_ids"] == r.ids.tolist(), f"case {k}:\n{base.decode(out['input_ids'])!r}\n" \
                                                           f"{base.decode(r.ids.tolist())!r}"
                assert out["assistant_masks"] == r.mask.astype(int).tolist(), f"case {k}: mask"
            else:
                out = _template_call(base, inference, conv, add_generation_prompt=True)
                assert not isinstance(out, Exception), f"case {k}: {out!r}\n{conv}"
                assert out["input_ids"] == r.ids.tolist(), f"case {k} prompt"
            seen["ok"] += 1
    assert seen["ok"] >= 40 * MIN_VALID.get(fmt, 0.75) / 0.75  # most generated conversations are tried
    if fmt == "chatml" and enc.format.reasoning.value == "error":
        assert seen["refused"] > 0  # the conversations with reasoning


@pytest.mark.parametrize("reasoning", ["drop", "think"])
def test_chatml_reasoning_reaches_the_saved_folder_and_the_cli(reasoning, hf_folders, tmp_path, capsys):
    """The issue's case: a ``chatml`` encoder with ``reasoning="think"`` / ``"drop"`` saved a folder
    whose templates raised E-INPUT-REASONING where ``render`` wrote the think block / dropped it."""
    import transformers

    from ocml.encoder.template.cli import add_parser

    enc = encoder.Encoder("chatml", reasoning=reasoning)
    conv = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4", "thinking": "Add them."}]
    tok = transformers.AutoTokenizer.from_pretrained(str(hf_folders.folder(tmp_path / "tok", "chatml",
                                                                          reasoning=reasoning)))
    out = tok.apply_chat_template(conv, tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
    r = enc.render(conv)
    assert out["input_ids"] == r.ids.tolist() and out["assistant_masks"] == r.mask.astype(int).tolist()
    assert ("<think>\nAdd them.\n</think>\n\n4" in tok.decode(out["input_ids"])) == (reasoning == "think")

    parser = argparse.ArgumentParser(prog="ocml")
    add_parser(parser.add_subparsers(dest="cmd", required=True))
    for argv, training in ((["template", "--format", "chatml", "--reasoning", reasoning], False),
                           (["template", "--format", "chatml", "--reasoning", reasoning, "--training"], True)):
        args = parser.parse_args(argv)
        assert args.fn(args) == 0
        assert capsys.readouterr().out == enc.chat_template(training=training)


def test_cli_mask_reaches_the_template(capsys):
    from ocml.encoder.template.cli import add_parser

    parser = argparse.ArgumentParser(prog="ocml")
    add_parser(parser.add_subparsers(dest="cmd", required=True))
    args = parser.parse_args(["template", "--format", "harmony", "--training", "--mask", "final"])
    assert args.fn(args) == 0
    assert capsys.readouterr().out == encoder.Encoder("harmony", mask="final").chat_template(training=True)

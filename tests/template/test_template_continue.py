"""Prefill: ``render(mode="continue")`` and the exported templates' ``continue_final_message=True``.

* Render prefix property (every format, registered and fallback): ``mode="continue"`` is
  ``mode="train"`` with the last message's terminator (and what follows it) left off, so
  the continue ids are a prefix of the train ids, and a longer answer's train render starts
  with the shorter answer's continue render wherever BPE allows (the answer's text split at
  a space); the mask is the train mask's prefix.
* Template parity (every format with a template): ``apply_chat_template(...,
  continue_final_message=True)`` gives exactly ``render(mode="continue")``'s ids (both
  templates; transformers refuses ``return_assistant_tokens_mask`` with it), over the generated conversations of the template
  parity tests cut after an assistant answer.
"""

from __future__ import annotations

import random

import pytest

from ocml import encoder
from ocml import vocab
from ocml.encoder.errors import InputError

from support.template import FORMATS, _explain, cases, hf_call, stack

SETUPS = [(f, None) for f in vocab.FORMAT_NAMES] + [(f, "o200k_base") for f in vocab.FORMAT_NAMES if f != "harmony"]


def continuable(conv: dict, rng: random.Random) -> dict | None:
    """``conv`` cut after its last assistant message with text content and no tool calls, that
    content cut at a random point (what a caller prefills); None when there is none."""
    msgs = conv["messages"]
    for j in range(len(msgs) - 1, -1, -1):
        m = msgs[j]
        if m.get("role") == "assistant" and isinstance(m.get("content"), str) and m["content"] \
                and not m.get("tool_calls"):
            cut = rng.randint(1, len(m["content"]))
            return {**conv, "messages": [*msgs[:j], {**m, "content": m["content"][:cut]}]}
    return None


@pytest.mark.parametrize(("fmt", "tok"), SETUPS)
def test_continue_is_train_left_open(fmt, tok):
    enc = encoder.Encoder(fmt, tokenizer=tok)
    user = {"role": "user", "content": "Name a colour."}
    for head, tail in (("The colour is", " blue."), ("Blue", ", like the sky 🌤."), ("", "Red.")):
        conv = [user, {"role": "assistant", "content": head + tail}]
        train = enc.render(conv, mode="train")
        cont = enc.render(conv, mode="continue")
        assert cont.open_last and not train.open_last
        n = len(cont.ids)
        assert n < len(train.ids)
        if not enc.format.text_layout.whole_runs or not enc.fallback_controls:
            assert train.ids[:n].tolist() == cont.ids.tolist()
        assert train.mask[:n].tolist() == cont.mask.tolist()
        text = enc.tokenizer.decode_bytes(cont.ids.tolist())
        assert text.endswith((head + tail).encode()) and enc.tokenizer.decode_bytes(train.ids.tolist()).startswith(text)
        ctext = enc.to_text(conv, mode="continue", header=False)  # transcripts: the same rule
        assert ctext.endswith(head + tail) and enc.to_text(conv, mode="train", header=False).startswith(ctext)
        short = enc.render([user, {"role": "assistant", "content": head}], mode="continue")
        if head and not enc.fallback_controls:
            assert train.ids[:len(short.ids)].tolist() == short.ids.tolist()
    with pytest.raises(InputError) as info:
        enc.render([user], mode="continue")
    assert info.value.code == "E-CONTINUE"


@pytest.mark.parametrize("fmt", FORMATS)
def test_continue_final_message_gives_render_continue(fmt):
    enc, hf = stack(fmt)
    rng = random.Random(5)
    n = 0
    for k, conv in enumerate(cases(21, 80, fmt)):
        conv = continuable(conv, rng)
        if conv is None:
            continue
        try:
            r = enc.render(conv, mode="continue")
        except encoder.errors.OcmlError:
            continue
        got = hf_call(hf, conv, continue_final_message=True)["input_ids"]
        want = r.ids.tolist()
        assert got == want, f"case {k} {fmt}: {_explain(enc, got, want)}\n{conv}"
        # the training template too (transformers refuses a mask with continue_final_message)
        assert hf_call(hf, conv, chat_template="training", continue_final_message=True)["input_ids"] == want
        n += 1
    assert n >= 20

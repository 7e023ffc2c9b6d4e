"""``ocml.stops.hf_stopping_criteria`` and ``hf_streamer`` inside a real ``model.generate()`` (CPU).

The model is a tiny randomly initialised Llama built from a config (no download) whose
vocabulary is the encoder's tokenizer; a ``LogitsProcessor`` scripts the next token so it
"generates" a known completion (then runs on past it, as a model that ignores the stop
would).  Checked: generation stops at ``<|return|>`` / ``<|call|>`` ids, and at the text
spelling of a control in fallback mode (a string split over several tokens); in a batch
each row stops on its own step; the streamer's chunks equal ``to_openai`` of the ids
generated up to the stop; a prefilled (``mode="continue"``) prompt streams its continuation.
Needs torch (the ``torch`` extra): skipped cleanly without it.
"""

from __future__ import annotations

import pytest

from ocml import encoder
from ocml.encoder.openai_chunks import accumulate
from ocml.encoder.stops import hf_stopping_criteria, hf_streamer

torch = pytest.importorskip("torch")
import transformers  # noqa: E402

from support.openai_chunks import TOOLS, USER, after, completion, turns  # noqa: E402

_MODELS: dict[int, object] = {}


pytestmark = pytest.mark.needs_torch


def tiny_model(n_vocab: int):
    """A 1-layer Llama with the tokenizer's vocabulary; its own output is scripted away."""
    if n_vocab not in _MODELS:
        torch.manual_seed(0)
        cfg = transformers.LlamaConfig(vocab_size=n_vocab, hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                       num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=512,
                                       tie_word_embeddings=True, bos_token_id=None, eos_token_id=None,
                                       pad_token_id=None)
        _MODELS[n_vocab] = transformers.LlamaForCausalLM(cfg).eval()
    return _MODELS[n_vocab]


class Script(transformers.LogitsProcessor):
    """Row r's step t gets token ``scripts[r][t]`` (past its end: a filler token)."""

    def __init__(self, scripts: list[list[int]], prompt_len: int, filler: int) -> None:
        self.scripts = scripts
        self.prompt_len = prompt_len
        self.filler = filler

    def __call__(self, input_ids, scores):
        t = input_ids.shape[1] - self.prompt_len
        out = torch.full_like(scores, float("-inf"))
        for r, s in enumerate(self.scripts):
            out[r, s[t] if t < len(s) else self.filler] = 0.0
        return out


class Recording:
    """Wraps a stopping criteria: the step at which each row was first marked done."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.done_at: dict[int, int] = {}
        self.steps = 0

    def __call__(self, input_ids, scores, **kw):
        self.steps += 1
        done = self.inner(input_ids, scores, **kw)
        for r, d in enumerate(done.tolist()):
            if d and r not in self.done_at:
                self.done_at[r] = self.steps
        return done


def generate(enc, prompts: list[list[int]], scripts: list[list[int]], *, streamer=None, extra: int = 5):
    """Left-padded batch generation with ocml's stopping criteria only (no eos ids)."""
    pad = enc.tokenizer.control_id("<|endoftext|>") or 0
    width = max(map(len, prompts))
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    attn = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    filler = enc.tokenizer.encode_text(" more")[0]
    crit = Recording(hf_stopping_criteria(enc))
    assert isinstance(crit.inner, transformers.StoppingCriteria)
    out = tiny_model(enc.tokenizer.n_vocab).generate(
        input_ids=ids, attention_mask=attn, max_new_tokens=max(map(len, scripts)) + extra, do_sample=False,
        logits_processor=transformers.LogitsProcessorList([Script(scripts, width, filler)]),
        stopping_criteria=transformers.StoppingCriteriaList([crit]), pad_token_id=pad, eos_token_id=None,
        streamer=streamer)
    return out[:, width:].tolist(), crit


def prompt(enc) -> list[int]:
    return enc.render({"messages": [USER], "tools": TOOLS}, mode="prompt").ids.tolist()


CASES = [("harmony", None), ("openchatml-2.2", None), ("openchatml-2.2", "o200k_base"), ("chatml", None),
         ("chatml", "o200k_base"), ("apertus", None)]


@pytest.mark.parametrize(("fmt", "tok"), CASES, ids=[f"{f}-{t or 'registered'}" for f, t in CASES])
def test_generate_stops_each_row_and_streams_what_to_openai_reads(fmt, tok):
    enc = encoder.Encoder(fmt, tokenizer=tok)
    t = turns(fmt)
    names = ["final", "call"] if fmt == "chatml" else ["reasoning+final", "call", "reasoning+call"]
    scripts = [completion(enc, t[n]) for n in names]
    p = prompt(enc)
    streamer = hf_streamer(enc, model="tiny", id="chatcmpl-t", created=1)
    assert isinstance(streamer, transformers.generation.streamers.BaseStreamer)
    got, crit = generate(enc, [p] * len(scripts), scripts, streamer=streamer)
    chunks = list(streamer)
    for r, s in enumerate(scripts):
        # the row was stopped by ocml's criteria exactly when its script ended (a stop id, or the
        # last token of a control's spelling in fallback mode); the others went on
        assert crit.done_at[r] == len(s), (names[r], crit.done_at, [len(x) for x in scripts])
        assert got[r][:len(s)] == s
        if enc.fallback_controls:  # the stop is text: its spelling ends the row's generated text
            text, last = enc.tokenizer.decode_bytes(s), enc.tokenizer.decode_bytes(s[-1:])
            # the spelling ends in the last token (ChatML: "<|im_end|>" + "\n" may be one token ">\n")
            assert any(0 <= text.rfind(n.encode()) and text.rfind(n.encode()) + len(n) > len(text) - len(last)
                       for n in enc.stop_strings())
        else:
            assert s[-1] in enc.stop_ids()
        want = enc.to_openai(got[r][:len(s)])
        assert want.finish_reason in ("stop", "tool_calls")
        row = [c for c in chunks if c["choices"] and c["choices"][0]["index"] == r]
        assert accumulate(row, r) == {"message": want.message, "finish_reason": want.finish_reason}
    assert max(crit.done_at.values()) == crit.steps == len(got[0])  # generate stopped when the last row did


def test_fallback_stop_string_split_over_tokens():
    """``<|return|>`` spelled as text over several tokens stops generate at its last token."""
    enc = encoder.Encoder("openchatml-2.2", tokenizer="o200k_base")
    s = completion(enc, turns("openchatml-2.2")["final"])
    spelled = enc.tokenizer.encode_text("<|return|>")
    assert len(spelled) > 1 and s[-len(spelled):] == spelled
    got, crit = generate(enc, [prompt(enc)], [s])
    assert crit.done_at == {0: len(s)} and got[0] == s


def test_streamer_events_and_prefill():
    enc = encoder.Encoder("harmony")
    conv = [USER, {"role": "assistant", "content": "The weather in Paris"}]
    r = enc.render(conv, mode="continue")
    full = enc.render([USER, {"role": "assistant", "content": "The weather in Paris is sunny."}], mode="train")
    gen = after(enc, full.ids.tolist(), r.ids.tolist())
    streamer = hf_streamer(enc, prefill=True, id="x", created=1)
    got, _ = generate(enc, [r.ids.tolist()], [gen], streamer=streamer)
    assert got[0] == gen
    out = accumulate(list(streamer))
    assert out == {"message": {"role": "assistant", "content": " is sunny."}, "finish_reason": "stop"}
    ev = hf_streamer(enc, output="events")
    generate(enc, [prompt(enc)], [completion(enc, turns("harmony")["final"])], streamer=ev)
    events = list(ev)
    assert [type(e).__name__ for e in events][-2:] == ["MessageEnd", "Stop"]
    assert "".join(e.text for e in events if type(e).__name__ == "Delta") == turns("harmony")["final"]["content"]


def test_criteria_never_builds_on_transformers_dummy():
    """The order-dependent failure: once transformers decided torch was unavailable (here: torch
    blocked while transformers is first imported), ``from transformers import StoppingCriteria``
    is a dummy whose ``__init__`` raises, though torch imports fine afterwards.  ocml takes the
    class from its own module (which imports torch) and never the dummy."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "import transformers\n"
        "try:\n"
        "    from transformers import StoppingCriteria\n"
        "except Exception:\n"
        "    StoppingCriteria = None\n"
        "del sys.modules['torch']\n"
        "import torch\n"
        "from ocml import encoder\n"
        "from ocml.encoder.stops import hf_stopping_criteria\n"
        "crit = hf_stopping_criteria(encoder.Encoder('harmony'))\n"
        "out = crit(torch.tensor([[1, 200002], [1, 2]]), None)\n"
        "assert out.tolist() == [True, False], out\n"
        "from transformers.generation.stopping_criteria import StoppingCriteria as Real\n"
        "assert isinstance(crit, Real)\n"
        "print('ok', type(StoppingCriteria).__name__)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.startswith("ok"), run.stderr[-2000:]

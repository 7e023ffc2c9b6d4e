"""The stream decoder is O(1) amortised per id on any input (issue 15 item 6).

Adversarial ids at 1M: content full of ``<|`` runs and near-miss control prefixes, headers
that never get ``<|message|>`` (and control ids inside them), stray text between messages,
literal blocks, escapes, a stray control id every few tokens (errors pile up).  Linearity is
checked by a ratio measured in the same test: the time of 4N ids over the time of N ids
(best of 2, CPU time) must stay below 5.5 (a quadratic path gives ~16).  No absolute time.
"""

from __future__ import annotations

import time

import pytest

from ocml import encoder

N = 250_000
STEPS = (1, 1, 2, 3, 5, 8, 16, 64)  # chunk sizes, cycled: single ids and multi-token steps


def _ids(enc, n):
    tok = enc.tokenizer

    def ctl(name):
        i = tok.control_id(name)
        return [i] if i is not None else tok.encode_text(name)

    content = ctl("<|start|>") + tok.encode_text("assistant") + ctl("<|channel|>") + tok.encode_text("final") + \
        ctl("<|message|>")
    unit = (content + tok.encode_text("<|<|x<|" * 300 + "<|sta<|en<<|end|><<|" * 50) + ctl("<|end|>")
            + tok.encode_text("stray <| text <|sta") * 40                    # between messages
            + ctl("<|start|>") + (tok.encode_text("user <|") + ctl("<|channel|>")) * 80  # a header that never ends
            + ctl("<|end|>") + content + ctl("<|literal|>") + tok.encode_text("<|end|><|" * 100)
            + ctl("<|endliteral|>") + (tok.encode_text("a") + ctl("<|constrain|>")) * 50 + ctl("<|end|>"))
    return (unit * (n // len(unit) + 1))[:n]


def _cost(enc, ids):
    best = float("inf")
    for _ in range(2):
        dec = enc.decoder()
        feed = dec.feed
        t = time.process_time()
        k = 0
        j = 0
        n = len(ids)
        while k < n:
            s = STEPS[j % len(STEPS)]
            feed(ids[k:k + s])
            k += s
            j += 1
        dec.finish()
        best = min(best, time.process_time() - t)
    return best, dec


@pytest.mark.parametrize("tokenizer", [None, "o200k_base"], ids=["registered", "fallback"])
def test_stream_time_is_linear_at_1m_adversarial_ids(tokenizer):
    enc = encoder.Encoder("openchatml-2.2") if tokenizer is None else encoder.Encoder("openchatml-2.2",
                                                                                        tokenizer=tokenizer)
    big = _ids(enc, 4 * N)
    small = big[:N]
    t1, _ = _cost(enc, small)
    t4, dec = _cost(enc, big)
    assert len(dec.messages) > 500 and len(dec.errors) > 5000  # the input really is adversarial
    assert t4 / t1 < 5.5, f"4x the ids took {t4 / t1:.1f}x the time ({t1:.2f}s -> {t4:.2f}s)"

"""Issue 26, decode side: each bug where the decoder met its consumers, one regression test each,
judged with the consumers' own code (the openai client's types and stream accumulator).

* a fallback stop whose last token also starts what follows (o200k ``><`` in
  ``<|call|><|start|>`` / ``<|im_end|><|im_start|>``);
* a held message (unknown channel) lost by the chunker;
* ``<|channel|>final answer<|message|>...<|return|>`` read as a tool call;
* a control cut by max tokens (``Answer<|ret``) left in the content;
* a prefilled assistant message whose reasoning ``dec.to_openai()`` dropped;
* a model that skipped ``<|start|>assistant`` before ``<|channel|>``;
* a batch row that went on after its stop (``until_stop``);
* ``hf_streamer`` errors that hung the consumer;
* ``finish_reason`` outside OpenAI's set;
* request bodies as the openai client sends them;
* the request's tools checked;
* response / chunk envelopes.
"""

from __future__ import annotations

import threading
import typing

import pytest
from openai import LengthFinishReasonError
from openai.lib.streaming.chat import ChatCompletionStreamState
from openai.types.chat import ChatCompletion, ChatCompletionChunk, completion_create_params
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice

from ocml import encoder
from ocml import vocab
from ocml.encoder.adapters.options import REQUEST_FIELDS
from ocml.encoder.errors import CallSchemaError, InputError, InputTypeError
from ocml.encoder.openai_chunks import accumulate
from ocml.encoder.openai_envelope import completion
from ocml.encoder.openai_message import FINISH_REASONS
from ocml.encoder.stops import first_stop, hf_stopping_criteria, hf_streamer

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def enc_of(fmt: str, tok: str | None = None) -> encoder.Encoder:
    return encoder.Encoder(fmt, tokenizer=tok)


def spell(enc: encoder.Encoder, *parts: str) -> list[int]:
    """Ids of ``parts`` (a control by its id when registered, else as text), text tokenized alone."""
    tok = enc.tokenizer
    out: list[int] = []
    for p in parts:
        i = tok.control_id(p) if p.startswith("<|") else None
        out += [i] if i is not None else tok.encode_text(p)
    return out


def criteria_cut(enc: encoder.Encoder, ids: list[int]) -> int:
    """Where ``generate()`` with ``hf_stopping_criteria`` stops: the number of ids it keeps."""
    crit = hf_stopping_criteria(enc)
    return next(k for k in range(1, len(ids) + 1) if bool(crit([ids[:k]])[0]))


def openai_stream_final(chunks: list[dict]) -> ChatCompletion:
    """The openai client's own stream accumulator (``client.chat.completions.stream``)."""
    state = ChatCompletionStreamState()
    for c in chunks:
        state.handle_chunk(ChatCompletionChunk.model_validate(c))
    return state.get_final_completion()


# -- a stop merged with what follows ---------------------------------------------------------------

MERGED = {  # format -> (completion text, the stop, finish_reason): the stop's last token is "><"
    "harmony": ("<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>"
                "<|start|>assistant", "<|call|>", "tool_calls"),
    "openchatml-2.2": ("<|channel|>final<|message|>Sunny.<|return|><|start|>assistant", "<|return|>", "stop"),
    "chatml": ("Sunny.<|im_end|><|im_start|>user", "<|im_end|>", "stop"),
}


@pytest.mark.parametrize("fmt", sorted(MERGED))
def test_a_stop_whose_token_starts_the_next_control(fmt):
    enc = enc_of(fmt, "o200k_base")
    text, stop, reason = MERGED[fmt]
    ids = enc.tokenizer.encode_text(text)  # re-tokenized as a whole: the stop's last token is "><"
    k = criteria_cut(enc, ids)
    assert enc.tokenizer.decode_bytes(ids[k - 1:k]) == b"><"
    got = enc.to_openai(ids[:k])
    assert got.finish_reason == reason and got.errors == ()
    ck = enc.chunker()
    chunks = ck.feed(ids[:k]) + ck.finish(stop_reason=stop)  # the stream already stopped: finish adds nothing
    assert accumulate(chunks) == {"message": got.message, "finish_reason": reason}
    assert openai_stream_final(chunks).choices[0].finish_reason == reason  # no LengthFinishReasonError
    dec = enc.decoder(role="assistant")
    ev = dec.feed(ids[:k])
    assert ev[-1].type == "stop" and ev[-1].rest == "<" and dec.to_openai() == got
    assert enc.parse(ids[:k], role="assistant", errors="collect").tail == "<"
    # an engine that stripped the stop's last token says why it stopped: the same message
    ck = enc.chunker()
    assert accumulate(ck.feed(ids[:k - 1]) + ck.finish(stop_reason=stop)) == accumulate(chunks)


# -- held messages, "final WORD", a missing <|start|> ---------------------------------------------

@pytest.mark.parametrize("tok", [None, "o200k_base"])
@pytest.mark.parametrize("channel", ["??", "commentary?"])
def test_a_held_channel_ended_by_return_streams_the_answer(tok, channel):
    enc = enc_of("harmony", tok)
    ids = spell(enc, "<|channel|>", channel, "<|message|>", "Answer", "<|return|>")
    want = enc.to_openai(ids)
    assert want.message["content"] == "Answer" and "reasoning_content" not in want.message
    for cut in (1, 2, len(ids)):
        ck = enc.chunker()
        chunks = [c for a in range(0, len(ids), cut) for c in ck.feed(ids[a:a + cut])] + ck.finish()
        assert accumulate(chunks) == {"message": want.message, "finish_reason": "stop"}
    # ended by <|end|> it stays hidden: reasoning, in both
    ids = spell(enc, "<|channel|>", channel, "<|message|>", "hidden", "<|end|>")
    ck = enc.chunker()
    assert accumulate(ck.feed(ids) + ck.finish())["message"] == enc.to_openai(ids).message \
        == {"role": "assistant", "content": None, "reasoning_content": "hidden"}


@pytest.mark.parametrize("fmt", ["harmony", "openchatml-2.2"])
def test_final_channel_with_a_bare_word_is_the_answer(fmt):
    """Harmony spec: a recipient is written ``to=NAME``; the final channel speaks to the user.
    openai-harmony reads the bare word as a recipient; ocml (as vLLM's gpt-oss path) reads the
    message as the answer, the word as its content type."""
    enc = enc_of(fmt)
    ids = spell(enc, "<|channel|>", "final answer", "<|message|>", "Paris is sunny.", "<|return|>")
    got = enc.to_openai(ids)
    assert got.message == {"role": "assistant", "content": "Paris is sunny."} and got.finish_reason == "stop"
    ck = enc.chunker()
    assert accumulate(ck.feed(ids) + ck.finish()) == {"message": got.message, "finish_reason": "stop"}
    if fmt == "harmony":  # a bare word on commentary is still openai-harmony's recipient (a call)
        ids = spell(enc, "<|channel|>", "commentary get_weather", "<|message|>", "{}", "<|call|>")
        assert enc.to_openai(ids).finish_reason == "tool_calls"


@pytest.mark.parametrize("tok", [None, "o200k_base"])
@pytest.mark.parametrize("fmt", ["harmony", "openchatml-2.2", "openchatml-2.0"])
def test_a_missing_start_before_channel_keeps_the_answer(fmt, tok):
    enc = enc_of(fmt, tok)
    ids = spell(enc, "<|channel|>", "analysis", "<|message|>", "think", "<|end|>",
                "<|channel|>", "final", "<|message|>", "done text", "<|return|>")
    got = enc.to_openai(ids)
    assert got.message == {"role": "assistant", "content": "done text", "reasoning_content": "think"}
    assert got.finish_reason == "stop" and [e.code for e in got.errors] == ["E-PARSE-HEADER"]
    ck = enc.chunker()
    assert accumulate(ck.feed(ids) + ck.finish()) == {"message": got.message, "finish_reason": "stop"}


# -- a control cut by max tokens --------------------------------------------------------------------

@pytest.mark.parametrize(("fmt", "text", "partial"), [
    ("harmony", "<|channel|>final<|message|>Answer<|ret", "<|ret"),
    ("chatml", "Answer<|im_e", "<|im_e"),
    ("openchatml-2.2", "<|channel|>final<|message|>Answer <", "<"),
])
def test_a_control_cut_by_max_tokens_is_not_content(fmt, text, partial):
    enc = enc_of(fmt, "o200k_base")
    ids = enc.tokenizer.encode_text(text)
    got = enc.to_openai(ids)
    assert got.message["content"] == text.split("<|message|>")[-1][:-len(partial)]
    assert got.finish_reason == "length"
    assert [(e.code, e.text) for e in got.errors] == [("E-STREAM-TRUNCATED", partial)]
    for cut in (1, len(ids)):
        ck = enc.chunker()
        chunks = [c for a in range(0, len(ids), cut) for c in ck.feed(ids[a:a + cut])] + ck.finish()
        assert accumulate(chunks) == {"message": got.message, "finish_reason": "length"}
        assert partial not in "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


# -- prefill ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("fmt", ["harmony", "openchatml-2.2", "apertus"])
def test_prefilled_reasoning_is_kept(fmt):
    enc = enc_of(fmt)
    user = {"role": "user", "content": "Name a colour."}
    r = enc.render([user, {"role": "assistant", "reasoning_content": "Pick one.", "content": "The colour is"}],
                   mode="continue")
    full = enc.render([user, {"role": "assistant", "reasoning_content": "Pick one.", "content": "The colour is blue."}],
                      cot="keep-all").ids.tolist()
    dec = enc.decoder(prefill=r)
    dec.feed(full[len(r.ids):])
    dec.finish()
    assert dec.to_openai().message == {"role": "assistant", "content": "The colour is blue.",
                                       "reasoning_content": "Pick one."}


# -- until_stop ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("tok", [None, "o200k_base"])
def test_until_stop_cuts_a_row_that_went_on(tok):
    enc = enc_of("harmony", tok)
    done = spell(enc, "<|channel|>", "final", "<|message|>", "Hi", "<|return|>")
    row = done + spell(enc, "<|start|>", "assistant", "<|channel|>", "final", "<|message|>", "more")
    if tok:
        row = enc.tokenizer.encode_text(enc.tokenizer.decode(row))
    assert enc.to_openai(row).finish_reason == "length"  # every id is read by default
    got = enc.to_openai(row, until_stop=True)
    assert got.message == {"role": "assistant", "content": "Hi"} and got.finish_reason == "stop"
    assert got == enc.to_openai(row[:first_stop(enc, row)])
    assert first_stop(enc, done[:-1]) == len(done) - 1
    with pytest.raises(InputTypeError):
        enc.to_openai(row, until_stop="yes")


# -- hf_streamer ---------------------------------------------------------------------------------------

def _generate(streamer, calls) -> threading.Thread:
    def run():
        try:
            for name, arg in calls:
                getattr(streamer, name)(*arg)
        except Exception:  # noqa: BLE001 - generate()'s thread dies; the consumer must still hear of it
            pass

    t = threading.Thread(target=run)
    t.start()
    return t


def test_streamer_errors_reach_the_consumer():
    enc = enc_of("harmony")
    prompt = enc.render([{"role": "user", "content": "hi"}], mode="prompt").ids.tolist()
    full = enc.render([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Yo"}]).ids.tolist()
    # include_usage without prompt_tokens: the prompt generate() sends gives it
    s = hf_streamer(enc, include_usage=True, timeout=30)
    _generate(s, [("put", ([prompt],))] + [("put", ([t],)) for t in full[len(prompt):]] + [("end", ())]).join()
    chunks = list(s)
    assert chunks[-1]["usage"]["prompt_tokens"] == len(prompt) and chunks[-2]["choices"][0]["finish_reason"] == "stop"
    # an error inside generate()'s thread is raised by the consumer's loop, which then ends
    s = hf_streamer(enc, timeout=30)
    _generate(s, [("put", ([prompt],)), ("put", ([[1, 2], [3, 4]],))]).join()
    with pytest.raises(InputError, match="rows"):
        list(s)
    assert list(s) == []
    # bad arguments are refused where the streamer is built, not in generate()'s thread
    with pytest.raises(InputTypeError):
        hf_streamer(enc, include_usage="yes")
    with pytest.raises(InputTypeError):
        hf_streamer(enc, prompt_tokens=-1)


# -- finish_reason, envelopes --------------------------------------------------------------------------

def test_finish_reasons_are_openais():
    allowed = set(typing.get_args(typing.get_args(ChunkChoice.model_fields["finish_reason"].annotation)[0]))
    assert set(FINISH_REASONS) <= allowed
    enc = enc_of("harmony")
    ids = spell(enc, "<|channel|>", "final", "<|message|>", "Hello there")
    ck = enc.chunker(include_usage=True, prompt_tokens=3)
    chunks = ck.feed(ids) + ck.cancel()
    for c in chunks:
        ChatCompletionChunk.model_validate(c)
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop" and ck.decoder.status == "cancelled"
    assert openai_stream_final(chunks).choices[0].message.content == "Hello there"
    # a length cut is OpenAI's "length": the client's stream helper raises on it, as for OpenAI
    ck = enc.chunker()
    with pytest.raises(LengthFinishReasonError):
        openai_stream_final(ck.feed(ids) + ck.finish())


@pytest.mark.parametrize("fmt", vocab.FORMAT_NAMES)
def test_envelopes_validate_with_the_openai_types(fmt):
    enc = enc_of(fmt)
    user = {"role": "user", "content": "Weather?"}
    prompt = enc.render({"messages": [user], "tools": TOOLS}, mode="prompt").ids.tolist()
    turn = {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "get_weather",
                                                                                   "arguments": '{"c": 1}'}}]}
    full = enc.render({"messages": [user, turn], "tools": TOOLS}).ids.tolist()
    ids = full[len(prompt):] if full[:len(prompt)] == prompt else None
    if ids is None:  # a run merged across the cut (ChatML): the completion as test_openai_chunks makes it
        from support.openai_chunks import after

        ids = after(enc, full, prompt)
    choice = enc.to_openai(ids, tools=TOOLS)
    body = completion([choice, choice], model="m", id="chatcmpl-1", created=1, prompt_tokens=len(prompt),
                      completion_tokens=len(ids))
    got = ChatCompletion.model_validate(body)
    assert [c.index for c in got.choices] == [0, 1] and got.usage.total_tokens == len(prompt) + len(ids)
    # (ChatML calls are read back by the seams-qwen work; until then the call is content)
    assert [c.function.name for c in got.choices[0].message.tool_calls or ()] == \
        [c["function"]["name"] for c in choice.message.get("tool_calls", ())]
    assert choice.finish_reason in FINISH_REASONS
    ck = enc.chunker(include_usage=True, prompt_tokens=len(prompt), tools=TOOLS)
    for c in ck.feed(ids) + ck.finish():
        ChatCompletionChunk.model_validate(c)
    with pytest.raises(InputTypeError):
        completion(enc.decoder(role="assistant").to_openai())  # still running: no finish_reason


# -- request bodies, tools ----------------------------------------------------------------------------

def test_request_fields_are_the_openai_clients():
    """``REQUEST_FIELDS`` are the installed client's request keys but the ones render reads."""
    keys = set(completion_create_params.CompletionCreateParamsBase.__annotations__) | {"stream"}
    read = {"messages", "tools", "functions", "reasoning_effort"}
    assert set(REQUEST_FIELDS) == keys - read


def test_render_takes_a_request_body_as_sent():
    enc = enc_of("harmony")
    msgs = [{"role": "user", "content": "Weather in Paris?"}]
    body = {"model": "gpt-oss-20b", "messages": msgs, "tools": TOOLS, "tool_choice": "auto", "stream": True,
            "stream_options": {"include_usage": True}, "frequency_penalty": 0.0, "presence_penalty": 0.0,
            "logprobs": True, "top_logprobs": 2, "n": 1, "seed": 7, "temperature": 0.7, "top_p": 1.0,
            "max_completion_tokens": 64, "max_tokens": 64, "parallel_tool_calls": False,
            "response_format": {"type": "text"}, "user": "u-1", "metadata": {"k": "v"}, "store": False,
            "stop": ["\n\n"], "logit_bias": {"1": -100}, "service_tier": "auto", "reasoning_effort": "high"}
    want = enc.render({"messages": msgs, "tools": TOOLS, "reasoning_effort": "high"}, mode="prompt").ids.tolist()
    assert enc.render(body, mode="prompt").ids.tolist() == want
    with pytest.raises(InputError) as exc:
        enc.render({**body, "top_k": 20}, mode="prompt")  # a server's own extension: not OpenAI's
    assert exc.value.code == "E-INPUT-OPTION"


@pytest.mark.parametrize("tok", [None, "o200k_base"])
def test_tool_calls_are_checked_against_the_request(tok):
    enc = enc_of("harmony", tok)

    def call(name, args):
        ids = spell(enc, "<|channel|>", f"commentary to=functions.{name} ", "<|constrain|>", "json",
                    "<|message|>", args, "<|call|>")
        return enc.tokenizer.encode_text(enc.tokenizer.decode(ids)) if tok else ids

    for name, args, codes in [("get_weather", '{"city": "P"}', []), ("other", '{"a": 1}', ["E-TOOL-UNKNOWN"]),
                              ("get_weather", '{"city": ', ["E-TOOL-ARGUMENTS"]),
                              ("nope", "[1]", ["E-TOOL-UNKNOWN", "E-TOOL-ARGUMENTS"])]:
        ids = call(name, args)
        got = enc.to_openai(ids, tools=TOOLS)
        assert [e.code for e in got.errors] == codes, name
        assert got.message["tool_calls"][0]["function"] == {"name": name, "arguments": args}  # the call kept
        assert got.finish_reason == "tool_calls"
        ck = enc.chunker(tools=TOOLS)
        assert accumulate(ck.feed(ids) + ck.finish())["message"] == got.message
        assert [e.code for e in ck.errors] == codes
        assert enc.to_openai(ids).errors == ()  # no tools given: nothing checked
        if codes:
            with pytest.raises(CallSchemaError):
                enc.to_openai(ids, tools=TOOLS, strict=True)

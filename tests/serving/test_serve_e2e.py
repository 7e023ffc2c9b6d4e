"""``transformers serve`` on folders ocml saves, driven by the real ``openai`` client (issue 26, item 5).

The test starts ``python -m transformers.cli.transformers serve`` (the ``transformers serve``
CLI, offline, CPU) on 127.0.0.1 at a free port and stops it at the end, whatever happened.
Each setup is a folder written by ``Encoder(...).save_pretrained`` plus a scripted model
(``tests/fixtures/scripted_lm/modeling_scripted.py``, loaded with ``--trust-remote-code``):
its ``script.json`` holds, per planned turn, the prompt ids ocml renders for the conversation
the client sends and the completion ids ocml renders for the planned answer.  So every
request checks, in the real server: the folder's chat template gives ocml's prompt (any other
prompt makes the model raise, the request fails and the server log says where the ids
diverged); generation stops on the folder's ``generation_config.json`` stop ids (running past
the last scripted id raises too); the folder's ``response_template`` turns the completion back
into what was planned: reasoning, the tool call, the answer and ``finish_reason`` - through
``create()`` and through the client's stream helper (``client.chat.completions.stream``).

Setups: Harmony (gpt-oss), ChatML (Qwen2.5 layout), ChatML with ``reasoning="think"`` (Qwen3).
Needs torch (``transformers serve`` does): skipped without it; the client and the server's web
stack are in the ``test`` extra.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from ocml import encoder

from support.paths import FIXTURES

torch = pytest.importorskip("torch")
import openai  # noqa: E402
from safetensors.torch import save_file  # noqa: E402

from support.openai_chunks import completion  # noqa: E402

FIXTURE = FIXTURES / "scripted_lm" / "modeling_scripted.py"
#: encoder options per setup (the folder is saved from that encoder)
SETUPS = {"harmony": ("harmony", {}), "chatml": ("chatml", {}), "chatml-think": ("chatml", {"reasoning": "think"})}
#: setups whose layout has a reasoning block
REASONS = {"harmony", "chatml-think"}
#: strict: the client's stream helper parses only strict function tools
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city", "strict": True,
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"],
                   "additionalProperties": False}}}]
USER = {"role": "user", "content": "Weather in Paris?"}
ARGS = {"city": "Paris"}
RESULT = '{"temp": 20}'
ANSWER = "It is 20 °C in Paris."
THOUGHT_CALL, THOUGHT_ANSWER = "Use the tool.", "The tool says 20."
#: the assistant's tool call as an agent sends it back (OpenAI request shape)
CALL_BACK = {"role": "assistant", "content": None, "tool_calls": [
    {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps(ARGS)}}]}
TOOL_BACK = {"role": "tool", "tool_call_id": "call_1", "content": RESULT}
STARTUP_S = 240   # bounds, not the expected times: imports and start on a loaded 2-core machine
REQUEST_S = 120   # a read (the first request per folder loads it)


pytestmark = [pytest.mark.needs_torch, pytest.mark.server]


def planned(setup: str) -> tuple[dict, dict]:
    """The two assistant turns: the tool call (with its reasoning) and the answer to the result."""
    call = dict(CALL_BACK)
    answer = {"role": "assistant", "content": ANSWER}
    if setup in REASONS:
        call, answer = {**call, "reasoning_content": THOUGHT_CALL}, {**answer, "reasoning_content": THOUGHT_ANSWER}
    return call, answer


#: a setup whose template takes a request's ``chat_template_kwargs``: with them, the prompt differs
#: and the model answers at once (no call), so the answer shows that they reached the template
KWARGS_SETUP, KWARGS = "harmony", {"reasoning_effort": "high"}


def script(enc: encoder.Encoder, setup: str) -> list[dict]:
    """Prompt ids (as ocml renders the conversation the client sends) and the completion planned."""
    call, answer = planned(setup)
    out = []
    for history, turn in (([USER], call), ([USER, CALL_BACK, TOOL_BACK], answer)):
        prompt = enc.render({"messages": history, "tools": TOOLS}, mode="prompt").ids.tolist()
        out.append({"prompt": prompt, "completion": completion(enc, turn, history=history, tools=TOOLS)})
    if setup == KWARGS_SETUP:  # the ids after Harmony's prompt do not depend on its system message
        prompt = enc.render({"messages": [USER], "tools": TOOLS, **KWARGS}, mode="prompt").ids.tolist()
        out.append({"prompt": prompt, "completion": completion(enc, {"role": "assistant", "content": ANSWER},
                                                                       history=[USER], tools=TOOLS)})
    return out


def write_folder(root: Path, setup: str) -> Path:
    """``save_pretrained``'s folder plus the scripted model: config (auto_map), one weight, the script."""
    fmt, options = SETUPS[setup]
    enc = encoder.Encoder(fmt, **options)
    out = enc.save_pretrained(root / setup)
    shutil.copy(FIXTURE, out / FIXTURE.name)
    module = FIXTURE.stem
    config = {"model_type": "ocml_scripted", "vocab_size": enc.tokenizer.n_vocab,
              # serve loads getattr(transformers, architectures[0]).from_pretrained: the auto class
              # is the name that reaches the remote code (a custom class name is an AttributeError)
              "architectures": ["AutoModelForCausalLM"],
              "auto_map": {"AutoConfig": f"{module}.ScriptedConfig", "AutoModelForCausalLM": f"{module}.ScriptedLM"}}
    (out / "config.json").write_text(json.dumps(config, indent=2), "utf-8")
    save_file({"anchor": torch.zeros(1)}, str(out / "model.safetensors"))
    (out / "script.json").write_text(json.dumps(script(enc, setup)), "utf-8")
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """``transformers serve`` in a subprocess; ``log()`` is its output so far."""

    def __init__(self, root: Path) -> None:
        self.port, self.log_path = free_port(), root / "serve.log"
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HOME": str(root / "hf-home"),
               "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false"}
        cmd = [sys.executable, "-m", "transformers.cli.transformers", "serve", "--host", "127.0.0.1",
               "--port", str(self.port), "--trust-remote-code", "--device", "cpu", "--log-level", "info"]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
        self.url = f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text("utf-8", errors="replace")[-8000:]

    def wait_ready(self) -> None:
        deadline = time.monotonic() + STARTUP_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"transformers serve exited with {self.proc.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=5) as r:
                    if json.load(r) == {"status": "ok"}:
                        return
            except OSError:
                time.sleep(0.5)
        pytest.fail(f"transformers serve not ready after {STARTUP_S} s:\n{self.log()}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=20)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(server, {setup: folder}): one server for every folder (a request names its folder as ``model``)."""
    root = tmp_path_factory.mktemp("serve")
    server = Server(root)  # first: it imports while the folders are written (it loads one at its first request)
    try:
        folders = {setup: write_folder(root, setup) for setup in SETUPS}
        server.wait_ready()
        yield server, folders
    finally:
        server.stop()


@pytest.fixture
def ask(served):
    """``ask(setup, method, **kw)``: ``client.chat.completions.<method>(model=<folder>, ...)``; a failed
    request fails the test with the server's log (the scripted model says where a prompt diverged)."""
    server, folders = served
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=REQUEST_S)

    def call(setup: str, method: str, **kw):
        try:
            return getattr(client.chat.completions, method)(model=str(folders[setup]), tools=TOOLS, **kw)
        except openai.APIError as exc:
            time.sleep(1)  # the server writes its traceback after the response
            pytest.fail(f"{type(exc).__name__}: {exc}\n--- server log ---\n{server.log()}")

    return call


def reasoning(obj) -> str | None:
    """The ``reasoning_content`` extension field of a message or delta (openai keeps extra fields)."""
    return (obj.model_extra or {}).get("reasoning_content")


def expected_reasoning(setup: str, thought: str) -> str | None:
    return thought if setup in REASONS else None


def check_call(setup: str, message, finish_reason: str) -> None:
    assert finish_reason == "tool_calls"
    assert [(c.type, c.function.name) for c in message.tool_calls or []] == [("function", "get_weather")]
    assert json.loads(message.tool_calls[0].function.arguments) == ARGS
    assert message.tool_calls[0].id
    assert not message.content, message.content  # no text next to the call (None or "")
    assert reasoning(message) == expected_reasoning(setup, THOUGHT_CALL)


@pytest.mark.parametrize("setup", SETUPS)
def test_tool_call(ask, served, setup):
    resp = ask(setup, "create", messages=[USER])
    check_call(setup, resp.choices[0].message, resp.choices[0].finish_reason)
    assert resp.usage.completion_tokens == len(completion_of(served[1][setup], 0))


@pytest.mark.parametrize("setup", SETUPS)
def test_tool_call_streamed(ask, setup):
    """The client's stream helper: the call arrives whole (``arguments.done`` with parsed arguments),
    reasoning deltas add up, the last chunk says ``tool_calls``."""
    with ask(setup, "stream", messages=[USER]) as stream:
        events = list(stream)
        final = stream.get_final_completion()
    check_call(setup, final.choices[0].message, final.choices[0].finish_reason)
    done = [e for e in events if e.type == "tool_calls.function.arguments.done"]
    assert [(e.name, e.parsed_arguments) for e in done] == [("get_weather", ARGS)]
    chunks = [e.chunk.choices[0] for e in events if e.type == "chunk" and e.chunk.choices]
    thoughts = [reasoning(c.delta) for c in chunks if reasoning(c.delta)]
    assert ("".join(thoughts) or None) == expected_reasoning(setup, THOUGHT_CALL)
    assert [c.finish_reason for c in chunks if c.finish_reason] == ["tool_calls"]


FOLLOW_UP = [USER, CALL_BACK, TOOL_BACK]


@pytest.mark.parametrize("setup", SETUPS)
def test_follow_up_with_the_tool_result(ask, setup):
    """The turn after the tool result (the call sent back as OpenAI's request shape): the answer,
    ``finish_reason`` ``stop``, the same through the stream helper."""
    resp = ask(setup, "create", messages=FOLLOW_UP)
    message = resp.choices[0].message
    assert (message.content, resp.choices[0].finish_reason, message.tool_calls) == (ANSWER, "stop", None)
    assert reasoning(message) == expected_reasoning(setup, THOUGHT_ANSWER)
    with ask(setup, "stream", messages=FOLLOW_UP) as stream:
        events = list(stream)
        final = stream.get_final_completion()
    assert (final.choices[0].message.content, final.choices[0].finish_reason) == (ANSWER, "stop")
    assert [e.content for e in events if e.type == "content.done"] == [ANSWER]
    chunks = [e.chunk.choices[0] for e in events if e.type == "chunk" and e.chunk.choices]
    assert ("".join(reasoning(c.delta) or "" for c in chunks) or None) == expected_reasoning(setup, THOUGHT_ANSWER)


@pytest.mark.parametrize("setup", SETUPS)
def test_agent_loop(ask, setup):
    """An agent's loop as the openai docs write it: the response's message appended as it came
    (server-made call id, extra fields and all), the tool's result, the next request."""
    first = ask(setup, "create", messages=[USER])
    message = first.choices[0].message
    check_call(setup, message, first.choices[0].finish_reason)
    result = {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": RESULT}
    second = ask(setup, "create", messages=[USER, message, result])
    assert (second.choices[0].message.content, second.choices[0].finish_reason) == (ANSWER, "stop")


def inside_the_call(served, setup: str) -> int:
    """A ``max_tokens`` that stops generation inside the call's arguments (3 ids before its stop)."""
    return len(completion_of(served[1][setup], 0)) - 3


@pytest.mark.parametrize("setup", SETUPS)
def test_cut_by_max_tokens(ask, served, setup):
    """``max_tokens`` inside the call: ``length`` and no call (a call cut short is no call: its
    arguments are cut too), as vLLM and SGLang drop it and ``to_openai`` says ``length``."""
    resp = ask(setup, "create", messages=[USER], max_tokens=inside_the_call(served, setup))
    assert (resp.choices[0].finish_reason, resp.choices[0].message.tool_calls) == ("length", None)
    assert resp.usage.completion_tokens == inside_the_call(served, setup)


@pytest.mark.parametrize("setup", SETUPS)
def test_cut_by_max_tokens_streamed(ask, served, setup):
    """The same streamed: the client's stream helper raises ``LengthFinishReasonError``, as on any
    ``length`` stop."""
    with pytest.raises(openai.LengthFinishReasonError):
        with ask(setup, "stream", messages=[USER], max_tokens=inside_the_call(served, setup)) as stream:
            list(stream)


def test_chat_template_kwargs_reach_the_template(ask):
    """A request's ``chat_template_kwargs`` (``extra_body``) are the template's variables: the
    way to send Harmony's ``reasoning_effort``, which serve ignores as a request field."""
    resp = ask(KWARGS_SETUP, "create", messages=[USER], extra_body={"chat_template_kwargs": KWARGS})
    assert (resp.choices[0].message.content, resp.choices[0].finish_reason) == (ANSWER, "stop")


def completion_of(served_folder: Path, turn: int) -> list[int]:
    """The planned completion ids of a turn (0: the call, 1: the answer), as the folder's script holds them."""
    return json.loads((served_folder / "script.json").read_text("utf-8"))[turn]["completion"]


def test_the_scripted_model_refuses_what_is_not_scripted(tmp_path):
    """The harness can fail: the model follows its script id by id and raises on any other prompt
    and past the completion's end (what a wrong template or a missed stop would feed it)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("modeling_scripted", FIXTURE)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    (tmp_path / "script.json").write_text(json.dumps([{"prompt": [5, 6], "completion": [7, 8, 9]}]), "utf-8")
    model = module.ScriptedLM(module.ScriptedConfig(vocab_size=10, name_or_path=str(tmp_path)))
    out = model(input_ids=torch.tensor([[5, 6, 7]]))
    assert out.logits.shape == (1, 1, 10) and int(out.logits[0, -1].argmax()) == 8
    for seq in ([5, 4], [5, 6, 7, 8, 9], [5, 6, 8]):
        with pytest.raises(ValueError, match="unscripted"):
            model(input_ids=torch.tensor([seq]))

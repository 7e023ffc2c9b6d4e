"""A ``save_pretrained`` folder works in TRL as saved, judged with TRL's own code.

TRL 1.16's ``SFTTrainer(assistant_only_loss=True)`` reads the tokenizer's ``default`` template
only (``trl.chat_template_utils.has_generation_markers``) and refuses a template without
``{% generation %}`` blocks that it does not know ("not training-compatible").  The folder's
``default`` is therefore the training template; here, for every format (ChatML with
``reasoning="think"``, Qwen3's layout, so that its rows carry reasoning too):

- TRL's checks: ``has_generation_markers``, ``get_training_chat_template`` (None: nothing to
  patch), ``supports_tool_calling``, ``is_chat_template_prefix_preserving``,
  ``is_chat_template_stop_token_trained``;
- a real ``SFTTrainer`` on a tiny Llama built from a config (CPU) prepares a dataset of chat
  rows (reasoning, tool calls and replies, several turns): its ``input_ids`` equal ocml's render
  and its ``labels`` are exactly ocml's mask;
- the ``default`` template needs transformers' ``generation`` tag: plain jinja2 and MiniJinja
  refuse it at parse time, which is why the folder also names the template without the tags
  ``inference`` (the MiniJinja parity of that one is in ``test_template.py``).
"""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("accelerate")  # trl.trainer imports it
pytest.importorskip("trl")
datasets = pytest.importorskip("datasets")

from ocml import encoder  # noqa: E402

import transformers  # noqa: E402
from trl import chat_template_utils as ctu  # noqa: E402

FORMATS = ("harmony", "openchatml-2.2", "openchatml-2.0", "chatml", "apertus", "llama3")
#: the encoder options a format's folder is saved with here (ChatML: Qwen3's think layout; Llama 3
#: has no place for reasoning: the rows' thinking is dropped)
OPTIONS = {"chatml": {"reasoning": "think"}, "llama3": {"cot": "drop-all"}}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather of a city.",
                                           "parameters": {"type": "object",
                                                          "properties": {"city": {"type": "string"}}}}}]
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}
ROWS = [
    {"messages": [{"role": "user", "content": "Hi there"},
                  {"role": "assistant", "content": "Hello! How can I help?", "thinking": "A greeting."}]},
    {"messages": [{"role": "system", "content": "Be brief."},
                  {"role": "user", "content": "Weather in Oslo?"},
                  {"role": "assistant", "content": "", "thinking": "Call the tool.", "tool_calls": [CALL]},
                  {"role": "tool", "content": '{"temp": 3}', "tool_call_id": "call_1"},
                  {"role": "assistant", "content": "It is 3 °C in Oslo."}],
     "tools": json.dumps(TOOLS)},
    {"messages": [{"role": "user", "content": "2+2?"},
                  {"role": "assistant", "content": "4", "thinking": "Easy."},
                  {"role": "user", "content": "And 3+3?"},
                  {"role": "assistant", "content": "6", "thinking": "Also easy."}]},
]


pytestmark = [pytest.mark.needs_torch, pytest.mark.needs_trl]


@pytest.fixture(scope="module")
def folders(hf_folders, tmp_path_factory):
    root = tmp_path_factory.mktemp("trl")
    return {fmt: hf_folders.folder(root / fmt, fmt, **OPTIONS.get(fmt, {})) for fmt in FORMATS}


def _conversation(row: dict) -> dict:
    return {"messages": row["messages"], **({"tools": json.loads(row["tools"])} if row.get("tools") else {})}


@pytest.mark.parametrize("fmt", FORMATS)
def test_trl_template_checks_pass_on_the_folder_as_saved(folders, fmt):
    tok = transformers.AutoTokenizer.from_pretrained(str(folders[fmt]))
    assert isinstance(tok.chat_template, dict) and ctu.has_generation_markers(tok.chat_template)
    assert ctu.get_training_chat_template(tok) is None  # nothing to patch: TRL takes it as it is
    assert ctu.supports_tool_calling(tok)
    assert ctu.is_chat_template_prefix_preserving(tok)
    assert ctu.is_chat_template_stop_token_trained(tok)
    # transformers' own mask from the default template (no chat_template= given) is ocml's
    enc = encoder.Encoder(fmt, **OPTIONS.get(fmt, {}))
    for row in ROWS:
        conv = _conversation(row)
        out = tok.apply_chat_template(conv["messages"], tools=conv.get("tools"), tokenize=True, return_dict=True,
                                      return_assistant_tokens_mask=True)
        r = enc.render(conv)
        assert out["input_ids"] == r.ids.tolist()
        assert out["assistant_masks"] == r.mask.astype(int).tolist()
        prompt = tok.apply_chat_template(conv["messages"][:-1], tools=conv.get("tools"), tokenize=True,
                                         return_dict=True, add_generation_prompt=True)["input_ids"]
        assert prompt == enc.render({**conv, "messages": conv["messages"][:-1]}, mode="prompt").ids.tolist()


@pytest.mark.parametrize("fmt", FORMATS)
def test_sft_trainer_prepares_ocml_ids_and_masks_from_the_folder(folders, fmt, tmp_path):
    from trl import SFTConfig, SFTTrainer

    tok = transformers.AutoTokenizer.from_pretrained(str(folders[fmt]))
    config = transformers.LlamaConfig(vocab_size=len(tok), hidden_size=8, intermediate_size=16, num_hidden_layers=1,
                                      num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=1024)
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    data = datasets.Dataset.from_list([{"messages": r["messages"], "tools": r.get("tools")} for r in ROWS])
    args = SFTConfig(output_dir=str(tmp_path / "out"), assistant_only_loss=True, max_length=None, report_to="none",
                     use_cpu=True, save_strategy="no", per_device_train_batch_size=1, dataset_num_proc=None)
    trainer = SFTTrainer(model=model, args=args, train_dataset=data, processing_class=tok)
    assert trainer.chat_template is None  # the folder's default template is used as saved
    enc = encoder.Encoder(fmt, **OPTIONS.get(fmt, {}))
    prepared = list(trainer.train_dataset)
    assert len(prepared) == len(ROWS)
    for row, got in zip(ROWS, prepared):
        r = enc.render(_conversation(row))
        assert got["input_ids"] == r.ids.tolist()
        # TRL turns assistant_masks into labels (-100 where the mask is 0)
        assert [label != -100 for label in got["labels"]] == r.mask.tolist()
        assert [label for label in got["labels"] if label != -100] == r.ids[r.mask].tolist()


def test_generation_tags_need_transformers_environment(folders):
    """Why the folder also carries ``inference``: Jinja without transformers' extension refuses
    the ``generation`` tag when it parses the template; the ``inference`` template parses."""
    import jinja2

    tok = transformers.AutoTokenizer.from_pretrained(str(folders["harmony"]))
    env = jinja2.Environment()
    with pytest.raises(jinja2.TemplateSyntaxError, match="generation"):
        env.from_string(tok.chat_template["default"])
    env.from_string(tok.chat_template["inference"])
    minijinja = pytest.importorskip("minijinja")
    mj = minijinja.Environment()
    with pytest.raises(Exception, match="generation"):
        mj.render_str(tok.chat_template["default"], messages=[{"role": "user", "content": "hi"}])
    assert mj.render_str(tok.chat_template["inference"], messages=[{"role": "user", "content": "hi"}],
                         add_generation_prompt=True) == tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)


#: formats whose response template reads tool calls back (ChatML's is the Qwen lane's work)
PARSED_CALLS = ("harmony", "openchatml-2.2", "openchatml-2.0", "apertus", "llama3")
#: formats with no reasoning: the turn read back has none
NO_THINKING = ("llama3",)


@pytest.mark.parametrize("fmt", PARSED_CALLS)
def test_trl_parse_response_reads_a_rendered_call_back(folders, fmt):
    """TRL's ``parse_response`` (its GRPO tool loop) on the folder: a rendered turn with reasoning
    and a call reads back as the HF message (``thinking``, arguments parsed), and that message
    appended to the prompt renders the same ids again."""
    tok = transformers.AutoTokenizer.from_pretrained(str(folders[fmt]))
    enc = encoder.Encoder(fmt, **OPTIONS.get(fmt, {}))
    user = [{"role": "user", "content": "Weather in Oslo?"}]
    turn = {"role": "assistant", "thinking": "Call the tool.", "content": "",
            "tool_calls": [{"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]}
    if fmt in NO_THINKING:
        del turn["thinking"]
    prompt = enc.render({"messages": user, "tools": TOOLS}, mode="prompt").ids.tolist()
    full = enc.render({"messages": [*user, turn], "tools": TOOLS}).ids.tolist()
    assert full[:len(prompt)] == prompt
    parsed = ctu.parse_response(tok, full[len(prompt):], prefix=prompt, tools=TOOLS)
    assert parsed == turn
    again = tok.apply_chat_template([*user, parsed], tools=TOOLS, tokenize=True, return_dict=True)["input_ids"]
    assert again == full

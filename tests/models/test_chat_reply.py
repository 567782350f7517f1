"""How a chat template closes a reply, against the model's end-of-sequence tokens (the audit's
``chat.base-model``): templates shaped as Llama 3's, Gemma's and SmolLM2's, on base and chat configurations."""

from __future__ import annotations

import pytest

from proctor.models.chat_reply import eos_ids, reply_end

LLAMA3 = (
    "{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n{{ m.content }}<|eot_id|>"
    "{% endfor %}{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}"
)
GEMMA = (
    "{% for m in messages %}<start_of_turn>{{ 'model' if m.role == 'assistant' else m.role }}\n{{ m.content }}"
    "<end_of_turn>\n{% endfor %}"
)


@pytest.fixture()
def tokenizer(smollm2_tokenizer_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(smollm2_tokenizer_dir)
    tok.add_special_tokens(
        {
            "additional_special_tokens": [
                "<|start_header_id|>",
                "<|end_header_id|>",
                "<|eot_id|>",
                "<start_of_turn>",
                "<end_of_turn>",
            ]
        }
    )
    return tok


class _Generation:
    def __init__(self, eos):
        self.eos_token_id = eos


def test_smollm2s_template_on_its_chat_and_base_configurations(tokenizer):
    chat = reply_end(tokenizer, eos_ids(tokenizer, None))  # SmolLM2-Instruct: eos '<|im_end|>'
    assert (chat.token, chat.eos, chat.ends_sequence) == ("<|im_end|>", ("<|im_end|>",), True)
    base = reply_end(tokenizer, [tokenizer.convert_tokens_to_ids("<|endoftext|>")])  # SmolLM2 base
    assert (base.token, base.eos, base.ends_sequence) == ("<|im_end|>", ("<|endoftext|>",), False)


def test_a_chat_models_end_of_turn_listed_only_in_its_generation_config_counts(tokenizer):
    """Llama 3 Instruct and Gemma 2 IT keep the tokenizer's eos at end-of-text and list the end of turn in
    generation_config.json: a chat model, not a base one."""
    end_of_text = tokenizer.convert_tokens_to_ids("<|endoftext|>")
    tokenizer.eos_token = "<|endoftext|>"
    for template, turn_end in ((LLAMA3, "<|eot_id|>"), (GEMMA, "<end_of_turn>")):
        tokenizer.chat_template = template
        turn = tokenizer.convert_tokens_to_ids(turn_end)
        base = reply_end(tokenizer, eos_ids(tokenizer, _Generation(end_of_text)))
        assert (base.token, base.ends_sequence) == (turn_end, False)
        chat = reply_end(tokenizer, eos_ids(tokenizer, _Generation([end_of_text, turn])))
        assert (chat.token, chat.ends_sequence) == (turn_end, True)
        assert set(chat.eos) == {"<|endoftext|>", turn_end}


def test_nothing_to_compare_says_nothing(tokenizer):
    tokenizer.chat_template = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"  # plain text
    assert reply_end(tokenizer, [0]) is None
    tokenizer.chat_template = "{{ raise_exception('only one user turn') }}"  # refuses the exchange
    assert reply_end(tokenizer, [0]) is None
    tokenizer.chat_template = None
    assert reply_end(tokenizer, [0]) is None

"""How a model's chat template closes a reply, set against the tokens that end the model's sequences.

A chat model is trained to end its reply with the token its template writes there (``<|im_end|>``,
``<|eot_id|>``, ``<end_of_turn>``), and its configuration names that token as an end of sequence, so that
generation stops there. A base model's tokenizer often ships its chat sibling's template, while its
configuration ends sequences with the plain end-of-text token: the template is one it was never trained on.
The model backends that hold a tokenizer say what they find (``Model.chat_reply_end``); the audit's
``chat.base-model`` rule reads it once the model has loaded.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ChatReplyEnd:
    token: str  # the special token the template writes right after an assistant's reply
    eos: tuple[str, ...]  # the tokens the tokenizer and the generation config end a sequence with

    @property
    def ends_sequence(self) -> bool:
        return self.token in self.eos

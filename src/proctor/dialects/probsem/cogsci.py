"""probsem's CogSci2023-branch scoring (suites with ``premise`` / ``query`` / ``programs``).

As that branch's ``ProbSem`` runs a suite: per context and program,
``sample = "\\n".join(p for p in [premise, text, query, program] if p != ";;")``; its last line is
the program and the rest the text; ``full = "\\n".join([prompt, text, program])``. Both texts are
split into words by NLTK's Treebank tokenizer (newlines kept as words, ``'`` protected) and encoded
with ``is_split_into_words`` by the model's tokenizer loaded with ``add_prefix_space=True``; the
program's log-prob is the sum over the last ``len(encode(program))`` tokens of the full encoding
(special tokens of that encoding counted, as the branch counts them), divided by the square root of
that count (the branch always normalises); the scores are a softmax over the programs.
"""

from __future__ import annotations

import functools
from typing import Any

from proctor.core.errors import ProctorError
from proctor.prompts.builder import PreparedSample
from proctor.kinds.custom import MultipleChoiceTask
from proctor.kinds.token_scores import require_local, target_logprobs

WHAT = "probsem's CogSci2023 suite format"


def words(text: str) -> list[str]:
    """The branch's ``utils.tokenize``: newlines and apostrophes survive the Treebank tokenizer."""
    try:
        from nltk.tokenize.treebank import TreebankWordTokenizer
    except ImportError:
        raise ProctorError(f"{WHAT} needs NLTK's Treebank tokenizer: pip install 'proctor[probsem-legacy]'") from None
    text = text.replace("\n", " NEWLINE ").replace("'", " ` ")
    return [t.replace("NEWLINE", "\n").replace("`", "'") for t in TreebankWordTokenizer().tokenize(text)]


def sample_parts(premise: str, text: str, query: str, program: str) -> tuple[str, str]:
    """(text, program) as the branch's TestSuite.samples and ProbSem._samples split them."""
    joined = "\n".join(p for p in [premise, text, query, program] if p != ";;")
    lines = joined.split("\n")
    return "\n".join(lines[:-1]), lines[-1]


@functools.lru_cache(maxsize=4)
def _prefix_space_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, add_prefix_space=True)


class CogSci2023Task(MultipleChoiceTask):
    """Each context's programs scored as the branch scores them; ``outcome`` gets (log-probs, counts)."""

    def _encoder(self, model: Any):
        """text -> token ids as the branch encodes it. Its tokenizer is loaded with add_prefix_space=True
        (needed for is_split_into_words); where that load is not possible, each word is encoded with a
        leading space and the tokenizer's special tokens are added around them (the same ids for
        byte-level BPE tokenizers)."""
        require_local(model, WHAT)
        try:
            tokenizer = _prefix_space_tokenizer(str(model.path))
            tokenizer(["a"], is_split_into_words=True)
            return lambda text: list(tokenizer(words(text), is_split_into_words=True).input_ids)
        except Exception:  # no loadable folder, or a tokenizer without pre-split input
            base = model.tokenizer

            def encode(text: str) -> list[int]:
                ids = [i for w in words(text) for i in base(" " + w, add_special_tokens=False).input_ids]
                return list(base.build_inputs_with_special_tokens(ids))

            return encode

    def predict_single_batch(self, batch: list[dict[str, Any]]) -> list[Any]:
        encode = self._encoder(self.model)
        sequences, counts = [], []
        for item in batch:
            fields = item["fields"]
            for program in item["choices"]:
                text, last = sample_parts(fields["_probsem_premise"], fields["text"], fields["_probsem_query"], program)
                full = encode("\n".join([fields["_probsem_prompt"], text, last]))
                sequences.append(full)
                counts.append(len(encode(last)))
        scores = iter(target_logprobs(self.model, sequences, counts, WHAT))
        result, position = [], 0
        for item in batch:
            n = len(item["choices"])
            result.append(([sum(next(scores)) for _ in range(n)], counts[position : position + n]))
            position += n
        return result

    def outcome(self, prepared: PreparedSample, prediction: Any) -> tuple[Any, dict]:
        from proctor.kinds.multiple_choice import choice_outcome

        logps, counts = prediction
        return choice_outcome(self.spec, prepared, logps, counts, [False] * len(logps))

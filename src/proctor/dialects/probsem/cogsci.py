"""probsem's CogSci2023-branch scoring (suites with ``premise`` / ``query`` / ``programs``).

As that branch's ``ProbSem`` runs a suite: per context and program,
``sample = "\\n".join(p for p in [premise, text, query, program] if p != ";;")``; its last line is
the program and the rest the text; ``full = "\\n".join([prompt, text, program])``. Both texts are
split into words by NLTK's Treebank tokenizer (newlines kept as words, ``'`` protected) and encoded
as the branch's pinned transformers 4.23.1 encodes them (its tokenizer loaded with
``add_prefix_space=True``, the words passed with ``is_split_into_words``): every word with a leading
space, each word on its own, the tokenizer's special tokens around them. transformers 5 ignores that
flag, so the leading space is added here explicitly (``encode_words``), whatever is installed; the
program's log-prob is the sum over the last ``len(encode(program))`` tokens of the full encoding
(special tokens of that encoding counted, as the branch counts them), divided by the square root of
that count (the branch always normalises); the scores are a softmax over the programs.

The task's spec is its own (``loader``): the suite's contexts are its data, the prompt, premise, query and
programs its handler's options (``task_options.CogSci2023Options``); ``load_samples`` gives each context its
texts (prompt, the programs as choices, the expected program), so the spec has no templates.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, cast

from proctor.core.errors import ProctorError
from proctor.data.sources import GivenTexts, Sample, load_samples
from proctor.dialects.probsem.task_options import CogSci2023Options
from proctor.kinds.base import SampleDetails
from proctor.kinds.custom import MultipleChoiceTask, TaskModel
from proctor.kinds.token_scores import require_local, target_logprobs
from proctor.prompts.builder import PreparedSample

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

    from proctor.kinds.multiple_choice import ChoiceOutcome

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


def encode_words(tokenizer: PreTrainedTokenizerBase, words: list[str]) -> list[int]:
    """``words`` as transformers 4.23.1 encodes them for the branch: each word with a leading space, on its
    own (``is_split_into_words``), then the tokenizer's special tokens. Through the ``tokenizers`` library
    when the tokenizer has one (the branch's CodeGen / GPT-2 family do), so the installed transformers
    plays no part; a tokenizer without one encodes word by word and adds its special tokens."""
    spaced = [" " + word for word in words]
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return list(backend.encode(spaced, is_pretokenized=True, add_special_tokens=True).ids)
    ids = [i for word in spaced for i in tokenizer(word, add_special_tokens=False).input_ids]
    special = getattr(tokenizer, "build_inputs_with_special_tokens", None)
    return list(special(ids)) if special is not None else ids


class CogSci2023Task(MultipleChoiceTask):
    """Each context's programs scored as the branch scores them; ``outcome`` gets (log-probs, counts)."""

    options: CogSci2023Options

    def load_samples(self, limit: int | None = None, variables: Mapping[str, str] | None = None) -> list[Sample]:
        """Every context of the suite (the engine keeps the first ``limit``; results.json counts them all), each
        with its texts: the prompt file's text and the context's, the programs, the expected program (-1: none)."""
        suite = self.spec.data[0].path
        assert suite is not None  # the loader names the suite file
        rows = load_samples(self.spec.data, Path(suite).parent, variables, task_file=suite)
        programs = self.options.programs
        return [
            dataclasses.replace(
                sample,
                given=GivenTexts(
                    prompt=f"{self.options.prompt}\n{sample.fields['text']}",
                    target=sample.fields["expected"],
                    choices=programs,
                ),
            )
            for sample in rows
        ]

    def _encoder(self, model: TaskModel) -> Callable[[str], list[int]]:
        """text -> token ids as the branch encodes it (``encode_words`` on its Treebank words)."""
        require_local(model, WHAT)
        tokenizer = model.tokenizer
        return lambda text: encode_words(tokenizer, words(text))

    def predict_single_batch(self, batch: list[dict[str, Any]]) -> list[Any]:
        encode = self._encoder(self.model)
        sequences, counts = [], []
        premise, query, prompt = self.options.premise, self.options.query, self.options.prompt
        for item in batch:
            for program in item["choices"]:
                text, last = sample_parts(premise, item["fields"]["text"], query, program)
                full = encode("\n".join([prompt, text, last]))
                sequences.append(full)
                counts.append(len(encode(last)))
        scores = iter(target_logprobs(self.model, sequences, counts, WHAT))
        result, position = [], 0
        for item in batch:
            n = len(item["choices"])
            result.append(([sum(next(scores)) for _ in range(n)], counts[position : position + n]))
            position += n
        return result

    def outcome(self, prepared: PreparedSample, prediction: object) -> tuple[ChoiceOutcome, SampleDetails]:
        from proctor.kinds.multiple_choice import choice_outcome

        # what this class's predict_single_batch gave for the sample: its choices' log-probs and token counts
        logps, counts = cast("tuple[list[float], list[int]]", prediction)
        return choice_outcome(self.spec, prepared, logps, counts, [False] * len(logps))

"""Small SEA-HELM-format data written by the tests themselves."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

from tests.support.validate_lines import jsonl_text

MT_BENCH_ID = "aisingapore/MultiTurn-Chat-MT-Bench"
MT_BENCH_BASELINE = "gpt-4.1-2025-04-14"  # the baseline model the shared mt_bench config names


def mt_bench_copy(tmp_path: Path) -> Path:
    """A two-question, two-turn local copy of MT-Bench (writing and math) in SEA-HELM's layout."""
    copy = tmp_path / "mtbench"
    (copy / "en").mkdir(parents=True)
    rows = [
        {
            "question_id": 1,
            "prompts": [{"text": "Name one fruit."}, {"text": "Now name one colour."}],
            "baselines": {MT_BENCH_BASELINE: ["Apple.", "Blue."]},
            "metadata": {"language": "en", "category": "writing"},
        },
        {
            "question_id": 2,
            "prompts": [{"text": "What is 2+2?"}, {"text": "And 3+3?"}],
            "references": ["4", "6"],
            "baselines": {MT_BENCH_BASELINE: ["4", "6"]},
            "metadata": {"language": "en", "category": "math"},
        },
    ]
    (copy / "en" / "eval.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    return copy


# ---------------------------------------------------------------- an upstream-shaped tree (SEA-HELM @ 6844e6c layout)
NLI_ID = "aisingapore/NLR-NLI"  # a hub id, as upstream's nli config names it; mapped with --seahelm-data

_TEMPLATE_ID = """\
      prompt_template:
        preamble: |-
          Tentukan hubungan SENTENCE_1 dan SENTENCE_2. Jawablah hanya dengan format berikut ini:
          "{answer_tag} ANSWER"
        task_template: |-
          SENTENCE_1: {sentence1}
          SENTENCE_2: {sentence2}
        answer_template: |-
          {answer_tag} {label}
        answer_tag: "Jawaban:"
"""


def _hub_task(key: str, head: str, base: int, hub_id: str, languages: dict[str, str]) -> str:
    """The config of a task whose rows SEA-HELM reads from the hub id ``hub_id`` through HuggingFace's
    dataloader, scored by F1/accuracy with ``base`` few-shot examples: ``head`` its lines before the dataloader
    (metadata, name, competency), ``languages`` each language's lines after its files (max_tokens, template)."""
    text = (
        f"{key}:\n{head}"
        "  dataloader_file: src/dataloaders/huggingface_dataloader.py\n  dataloader_class: HuggingFaceDataloader\n"
        "  metric_file: src/metrics/f1_acc_metric.py\n  metric_class: F1AccMetric\n  metric: normalized_accuracy\n"
        f"  fewshot_num_examples:\n    instruct: 0\n    base: {base}\n  languages:\n"
    )
    for language, rest in languages.items():
        text += f"    {language}:\n      filepath: {hub_id}\n      example_filepath: {hub_id}\n{rest}"
    return text


_NLI_HEAD = "  metadata:\n    version: 1.1\n  name: natural_language_inference\n  competency: nlr\n"
_NLI_LANGUAGE = "      max_tokens: MAXTOK\nTEMPLATE_ID"
_NLI = _hub_task("nli", _NLI_HEAD, 5, NLI_ID, {"id": _NLI_LANGUAGE, "vi": _NLI_LANGUAGE + "\n"})
_NLI += """\
nli-logprobs:
  metadata: ${nli.metadata}
  name: nli-logprobs
  competency: ${nli.competency}
  dataloader_file: ${nli.dataloader_file}
  dataloader_class: ${nli.dataloader_class}
  metric_file: src/metrics/logprob_metric.py
  metric_class: LogProbMetric
  metric: average_cumulative_probabilities
  use_logprobs: true
  max_n_runs: 1
  fewshot_num_examples: ${nli.fewshot_num_examples}
  languages: ${nli.languages}
"""

_CAUSAL = """\
causal:
  metadata:
    version: 1
  name: causal_reasoning
  competency: nlr
  metric_file: src/metrics/f1_acc_metric.py
  metric_class: F1AccMetric
  metric: normalized_accuracy
  aggregation_group: causal-all
  languages:
    id:
      filepath: seahelm_tasks/nlr/causal/data/id_copa.jsonl
      example_filepath:
      max_tokens: MAXTOK
TEMPLATE_ID
causal-logprobs:
  metadata: ${causal.metadata}
  name: causal-logprobs
  competency: ${causal.competency}
  metric_file: src/metrics/logprob_metric.py
  metric_class: LogProbMetric
  metric: average_cumulative_probabilities
  use_logprobs: true
  max_n_runs: 1
  languages: ${causal.languages}
"""

_SENTIMENT = """\
sentiment:
  metadata:
    version: 1
  name: sentiment_analysis
  competency: nlu
  metric_file: src/metrics/f1_acc_metric.py
  metric_class: F1AccMetric
  metric: normalized_accuracy
  languages:
    id:
      filepath: seahelm_tasks/nlu/sentiment/data/id_senti.jsonl
      example_filepath:
      max_tokens: MAXTOK
TEMPLATE_ID"""

_MMSTAR = """\
mmstar:
  metadata:
    version: 1
  name: mmstar
  competency: vision
  task_modality: vision
  metric_file: src/metrics/f1_acc_metric.py
  metric_class: F1AccMetric
  dataloader_file: seahelm_tasks/vision/mmstar/mmstar_dataloader.py
  dataloader_class: MMStarDataloader
  metric: normalized_accuracy
  languages:
    en:
      filepath: Lin-Chen/MMStar
      example_filepath:
      max_tokens: 64
      prompt_template:
        preamble: Answer with a letter.
        task_template: "{question}"
        answer_template: "{answer_tag} {label}"
        answer_tag: "Answer:"
"""

_MMSTAR_LOADER = """\
from src.dataloaders.huggingface_image_dataloader import HuggingFaceImageDataloader


class MMStarDataloader(HuggingFaceImageDataloader):
    pass
"""

_SPEECH = """\
speechqa:
  metadata:
    version: 1
  name: speechqa
  competency: audio
  task_modality: audio
  metric_file: src/metrics/f1_acc_metric.py
  metric_class: F1AccMetric
  dataloader_file: seahelm_tasks/audio/speechqa/speechqa_dataloader.py
  dataloader_class: SpeechQADataloader
  metric: normalized_accuracy
  languages:
    en:
      filepath: example/speech-qa
      example_filepath:
      max_tokens: 64
      prompt_template:
        preamble: Answer with a letter.
        task_template: "{question}"
        answer_template: "{answer_tag} {label}"
        answer_tag: "Answer:"
"""

_SPEECH_LOADER = """\
from src.dataloaders.huggingface_audio_dataloader import HuggingFaceAudioDataloader


class SpeechQADataloader(HuggingFaceAudioDataloader):
    pass
"""

TASK_CONFIG = """\
vision:
  en: ["mmstar"]

audio:
  en: ["speechqa"]

seahelm:
  id: ["sentiment", "causal-all", "nli"]
  vi: ["nli"]

seahelm_logprobs:
  id: ["sentiment", "causal-logprobs", "nli-logprobs"]
  vi: ["nli-logprobs"]

everything_id:
  id: all
"""

NLI_ROWS = [
    ("entailment", "Dia makan nasi.", "Dia makan."),
    ("contradiction", "Hari hujan.", "Hari cerah."),
    ("neutral", "Ani membaca.", "Ani senang."),
    ("entailment", "Budi berlari cepat.", "Budi berlari."),
]


def _rows(triples) -> str:
    return "\n".join(
        json.dumps(
            {"id": i, "label": label, "prompts": [{"sentence1": a, "sentence2": b}], "metadata": {"language": "id"}}
        )
        for i, (label, a, b) in enumerate(triples)
    )


def seahelm_tree(tmp_path: Path, max_tokens: int = 8, nli_langs: tuple[str, ...] = ("id", "vi")) -> tuple[Path, dict]:
    """A SEA-HELM repository copy in upstream's layout: nli/nli-logprobs (hub id mapped to a local folder holding
    ``nli_langs``), causal/causal-logprobs (local file, an aggregation group), sentiment, an image task (mmstar),
    an audio task (speechqa) and task_config.yaml. Returns (the seahelm_tasks folder, dialect options mapping the
    hub id)."""
    root = tmp_path / "SEA-HELM"
    tasks = root / "seahelm_tasks"
    template = _TEMPLATE_ID
    files = {
        "nlr/nli/config.yaml": _NLI,
        "nlr/causal/config.yaml": _CAUSAL,
        "nlu/sentiment/config.yaml": _SENTIMENT,
        "vision/mmstar/config.yaml": _MMSTAR,
        "vision/mmstar/mmstar_dataloader.py": _MMSTAR_LOADER,
        "task_config.yaml": TASK_CONFIG,
        "audio/speechqa/config.yaml": _SPEECH,
        "audio/speechqa/speechqa_dataloader.py": _SPEECH_LOADER,
        "nlr/causal/data/id_copa.jsonl": _rows(
            [
                ("A", "Gelas jatuh.", "Gelas pecah."),
                ("B", "Dia lapar.", "Dia makan."),
                ("A", "Lampu mati.", "Ruang gelap."),
            ]
        ),
        "nlu/sentiment/data/id_senti.jsonl": _rows([("Positif", "Bagus.", "-"), ("Negatif", "Buruk.", "-")]),
    }
    for name, text in files.items():
        (tasks / name).parent.mkdir(parents=True, exist_ok=True)
        (tasks / name).write_text(
            text.replace("TEMPLATE_ID", template).replace("MAXTOK", str(max_tokens)), encoding="utf-8"
        )
    data = tmp_path / "nli_copy"
    for lang in nli_langs:
        (data / lang).mkdir(parents=True, exist_ok=True)
        (data / lang / "eval.jsonl").write_text(_rows(NLI_ROWS), encoding="utf-8")
        (data / lang / "examples.jsonl").write_text(_rows(NLI_ROWS[:2]), encoding="utf-8")
    return tasks, {"seahelm_data": {NLI_ID: str(data)}}


# ---------------------------------------------------------------- a sentiment task read from the hub (audit tests)
SENTIMENT_HUB_ID = "aisingapore/NLU-Sentiment-Analysis"  # mapped to the folder 'copy' with --seahelm-data

_SENTIMENT_HEAD = "  name: sentiment_analysis\n  competency: nlu\n"
_SENTIMENT_LANGUAGE = """\
      max_tokens: 32
      prompt_template:
        preamble: |-
          Apa sentimen dari kalimat berikut ini? Gunakan salah satu dari pilihan: Positif, Negatif, atau Netral.
          Jawablah dengan format berikut ini: "{answer_tag} ANSWER"
        task_template: |-
TASK_TEMPLATE
        answer_template: |-
          {answer_tag} {label}
        answer_tag: "Jawaban:"
"""

# Indonesian texts and their labels
SENTIMENT_TEXTS = [
    ("Tempatnya nyaman dan makanannya enak sekali.", "Positif"),
    ("Iya benar, dia sedang jaga warung.", "Netral"),
    ("Pelayanannya lambat dan kami kecewa.", "Negatif"),
    ("Hotel ini bersih, saya akan kembali lagi.", "Positif"),
    ("Gianyar terima bantuan sosial tahun ini.", "Netral"),
    ("Kopinya dingin dan harganya terlalu mahal.", "Negatif"),
]
_ENGLISH = {"Positif": "Positive", "Negatif": "Negative", "Netral": "Neutral"}


def sentiment_rows(
    first_id: int, language: str = "id", repeat_ids: bool = False, text: str = "{t}", english: bool = False
) -> list[dict[str, Any]]:
    """``SENTIMENT_TEXTS`` as SEA-HELM rows, their ids from ``first_id`` (each id twice with ``repeat_ids``); from
    100, the examples, whose texts are others ('Contoh i: ...'). ``text`` formats each text ({t}); ``english``
    writes the labels in English; ``language`` is the rows' metadata."""
    return [
        {
            "id": first_id + (i // 2 if repeat_ids else i),
            "label": _ENGLISH[label] if english else label,
            "prompts": [{"text": text.format(t=t if first_id < 100 else f"Contoh {i}: {t.lower()}")}],
            "metadata": {"language": language},
        }
        for i, (t, label) in enumerate(SENTIMENT_TEXTS)
    ]


def sentiment_files(
    evaluated: list[dict[str, Any]], examples: list[dict[str, Any]], task_template: str = "Kalimat: {text}"
) -> dict[str, str]:
    """The task's config (sa/config.yaml, its ``task_template`` given) and the hub copy it reads (copy/id/:
    ``evaluated`` the rows, ``examples`` the few-shot examples)."""
    language = _SENTIMENT_LANGUAGE.replace("TASK_TEMPLATE", textwrap.indent(task_template, " " * 10))
    config = _hub_task("sentiment", _SENTIMENT_HEAD, 3, SENTIMENT_HUB_ID, {"id": language})
    return {
        "sa/config.yaml": config,
        "copy/id/eval.jsonl": jsonl_text(evaluated),
        "copy/id/examples.jsonl": jsonl_text(examples),
    }


def sentiment_args(folder: Path) -> list[str]:
    """``proctor validate``'s arguments for ``sentiment_files`` written in ``folder``."""
    return [str(folder / "sa"), "--seahelm-data", f"{SENTIMENT_HUB_ID}={folder / 'copy'}"]

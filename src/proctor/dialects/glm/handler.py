"""Runs a GLM-130B task class (a YAML's ``module:``) inside proctor's engine.

Samples (for counts, limits and records) are the data rows GLM would read: one per JSON line, one per
raw-text file. At run time the class is built as GLM's evaluate.py builds it —
``cls(ModelForEvaluation(model), tokenizer, config)`` with ``config.path`` the resolved data folder —
and its own ``evaluate()`` runs (datasets, batches, ``predict_single_batch``, metrics, report hooks).
proctor then reports each file's metric values (``breakdown._source``), each group's
(``breakdown.glm_group``, with GLM's max / median / example-weighted average), the task's values
(weighted average over all files) and the lines the report hooks printed (``glm_report``).
Non-numeric metric values (dicts per category, lists) are flattened to ``name.key`` entries.
"""

from __future__ import annotations

from glob import glob
from os.path import join, relpath
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from proctor.core.errors import ProctorError, TaskDefinitionError
from proctor.core.special_files import refuse_special
from proctor.data.file_text import decode_utf8
from proctor.data.paths import check_inside, data_roots
from proctor.data.readers import json_values
from proctor.data.sources import GivenTexts, Sample, SourceUnavailable, expand_variables
from proctor.dialects.glm.task_options import GLMModuleOptions
from proctor.kinds.base import SampleDetails
from proctor.kinds.capabilities import Executor
from proctor.kinds.custom import CustomTask

if TYPE_CHECKING:
    from proctor.dialects.glm.tokenizer import GLMTokenizer
    from proctor.prompts.builder import PreparedSample

_JSON = (".json", ".jsonl")


def _numeric_leaves(name: str, value: Any) -> dict[str, float]:
    if isinstance(value, bool) or value is None:
        return {name: float(value)} if isinstance(value, bool) else {}
    if isinstance(value, (int, float)) or type(value).__module__ == "numpy":
        try:
            return {name: float(value)}
        except (TypeError, ValueError):
            return {}
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, (list, tuple)) else ()
    out: dict[str, float] = {}
    for key, item in items:
        out.update(_numeric_leaves(f"{name}.{key}", item))
    return out


def _jsonable(value: object) -> object:
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)


def _average(parts: list[tuple[dict[str, float], int]]) -> dict[str, dict]:
    """Per flattened metric: the example-weighted average over the files, with GLM's max and median."""
    import numpy as np

    names: list[str] = []
    for values, _ in parts:
        names += [n for n in values if n not in names]
    out = {}
    for name in names:
        pairs = [(values[name], n) for values, n in parts if name in values]
        vals, weights = [v for v, _ in pairs], [n for _, n in pairs]
        out[name] = {
            "value": float(np.average(vals, weights=weights)) if sum(weights) else float("nan"),
            "stderr": None,
            "max": float(np.max(vals)),
            "median": float(np.median(vals)),
        }
    return out


def _shown(
    item: dict | None, prediction: object, scores: list[float] | None, tokenizer: GLMTokenizer | None
) -> SampleDetails:
    """The fields every dialect's records share (docs/results.md, samples.jsonl), from the row GLM read: a
    multiple-choice row's choices and gold label (per-choice probabilities when the class's prediction
    was the default summed log-probs), or a generation row's text, as decoded, and its targets."""
    import numpy as np

    if not item:
        return {}
    choices = item.get("choices_pretokenized")
    if isinstance(choices, list) and isinstance(prediction, (int, np.integer)):
        label = item.get("label")
        out: SampleDetails = {
            "choices": [str(c) for c in choices],
            "prediction": int(prediction),
            "target": label if isinstance(label, int) and 0 <= label < len(choices) else None,
        }
        out["correct"] = out["target"] == out["prediction"] if out["target"] is not None else None
        if scores is not None and len(scores) == len(choices):
            from proctor.kinds.multiple_choice import softmax

            out.update(logprobs=scores, distribution=softmax(scores))
        return out
    targets = item.get("targets_pretokenized")
    if (
        isinstance(prediction, (list, tuple))
        and tokenizer is not None
        and all(isinstance(t, (int, np.integer)) for t in prediction)
    ):
        out = {"generation": tokenizer.detokenize(list(prediction))}
        if targets is not None:
            out["target"] = [str(t) for t in targets] if isinstance(targets, list) else [str(targets)]
        return out
    return {}


class GLMModuleTask(CustomTask):
    kind = "generate"
    scores_itself = True  # no per-sample proctor metrics: the class's own metrics score each file

    def __init__(self, spec, options=None) -> None:
        super().__init__(spec, options)
        self.options: GLMModuleOptions
        self.yaml = Path(self.options.yaml)
        self.cls: Any = None  # imported by load_samples, once the task's resources (consent) are set
        self.root: Path | None = None
        self._rows: dict[tuple[str, int], dict] = {}
        self.files: dict[str, list[str]] = {}
        self._corpus: dict = {}
        self._extras: dict = {}

    def _import_class(self) -> type:
        """The ``module:`` class, imported with GLM's names in force; only with --trust-task-code."""
        from proctor.core.user_code import TRUST, located, refusal
        from proctor.dialects.glm.names import glm_names, import_task_class
        from proctor.dialects.glm.tasks import BaseTask

        module = self.options.module
        if not getattr(self, "resources", {}).get(TRUST):
            raise refusal(f"module '{module}'", file=self.yaml, field="module")
        try:
            with glm_names():
                cls = import_task_class(module, self.yaml.parent)
        except TaskDefinitionError as exc:
            raise TaskDefinitionError(located(exc), file=self.yaml, field="module") from None
        if not (isinstance(cls, type) and issubclass(cls, BaseTask)):
            raise TaskDefinitionError(
                f"'{module}' must subclass GLM's MultiChoiceTask, GenerationTask or LanguageModelTask "
                "(from evaluation import ...)",
                file=self.yaml,
                field="module",
            )
        return cls

    # ---------------------------------------------------------------- data, before any model
    def _resolve_root(self, variables) -> Path:
        tried = []
        for candidate in self.options.roots:
            try:
                folder = Path(expand_variables(candidate, variables or {})).expanduser()
            except SourceUnavailable as exc:
                tried.append(str(exc))
                continue
            check_inside(
                folder,
                data_roots(self.yaml.parent, variables),
                written=self.options.config["path"],
                file=self.yaml,
                field="path",
            )
            if folder.is_dir():
                return folder
            tried.append(f"no folder {folder}")
        raise TaskDefinitionError(
            "the task's data folder is not available: " + "; ".join(tried) + " (give GLM's DATA_PATH with --data-path)",
            file=self.yaml,
            field="path",
        )

    def load_samples(self, limit: int | None = None, variables=None) -> list[Sample]:
        if self.cls is None:
            self.cls = self._import_class()
        self.root = root = self._resolve_root(variables)
        pattern = self.options.config["file_pattern"]
        groups = {"all": pattern} if isinstance(pattern, str) else pattern
        samples: list[Sample] = []
        for group, glob_pattern in groups.items():
            self.files[group] = [relpath(p, root) for p in sorted(glob(join(str(root), glob_pattern), recursive=True))]
            for rel in self.files[group]:
                path = check_inside(
                    root / rel,
                    data_roots(self.yaml.parent, variables),
                    written=rel,
                    file=self.yaml,
                    field="file-pattern",
                )
                if path.is_dir():
                    continue
                refuse_special(path, "data file", file=self.yaml, field="file-pattern")  # a FIFO would hang
                if path.suffix in _JSON or ".json" in path.name:
                    for row, item in json_values(path):
                        shown = (
                            item.get("inputs_pretokenized", item.get("text_pretokenized", ""))
                            if isinstance(item, dict)
                            else ""
                        )
                        if isinstance(
                            item, dict
                        ):  # the row's choices, label and targets as text, for the sample records
                            self._rows[(str(path), row)] = item
                        samples.append(self._sample(group, rel, path, row, str(shown)))
                else:
                    samples.append(self._sample(group, rel, path, 1, decode_utf8(path)[:200]))
        if not samples:
            raise TaskDefinitionError(
                f"no data file matches {pattern!r} under {root}", file=self.yaml, field="file-pattern"
            )
        return samples

    @staticmethod
    def _sample(group: str, rel: str, path: Path, row: int, shown: str) -> Sample:
        fields = {"_source": rel, "_glm_group": group}
        return Sample(
            f"{group}/{rel}/{row}", fields, str(path), row, row - 1, given=GivenTexts(prompt=shown, target="")
        )

    # ---------------------------------------------------------------- running
    def predict_samples(self, samples: Sequence[PreparedSample], prompts: Sequence[str], executor: Executor):
        from proctor.dialects.glm.configs import build_config
        from proctor.dialects.glm.model import ModelForEvaluation
        from proctor.dialects.glm.names import glm_names
        from proctor.dialects.glm.tokenizer import GLMTokenizer, reset_tokenizer, use_tokenizer
        from proctor.dialects.glm.utils import report_to, reset_report

        if self.root is None:
            raise ProctorError("the GLM task's data was not loaded")
        per_file: dict[tuple[str, str], int] = {}
        for s in samples:
            key = (s.sample.fields["_glm_group"], s.sample.fields["_source"])
            per_file[key] = per_file.get(key, 0) + 1
        self._per_file = per_file
        model = executor.model  # GLM's task code calls the model directly (no run store), as GLM's evaluate does
        tokenizer = GLMTokenizer(model)
        report: list[str] = []
        token, sink = use_tokenizer(tokenizer), report_to(report.append)
        try:
            with glm_names():
                config = build_config(self.cls.config_class(), {**self.options.config, "path": str(self.root)})
                task = self._call("__init__", self.cls, ModelForEvaluation(model), tokenizer, config)
                task.proctor_limits = {file: n for (_, file), n in per_file.items()}
                task.proctor_progress = lambda n: None
                self._call("evaluate", task.evaluate)
        finally:
            reset_report(sink)
            reset_tokenizer(token)
        executor.progress(len(samples))
        return self._collect(task, samples, report, tokenizer)

    def _call(self, hook: str, target: Callable, *args: Any) -> Any:
        """Run the task's code; its failure becomes an error naming the module and the hook."""
        from proctor.core.user_errors import user_code_error

        try:
            return target(*args)
        except ProctorError:
            raise
        except (
            Exception
        ) as exc:  # the class's code (or GLM's stand-ins it called): at the class's own line when it has one
            raise user_code_error(exc, f"{self.options.module}.{hook}", file=self.yaml, field="module") from None

    def _collect(
        self, task: Any, samples: Sequence[Any], report: list[str], tokenizer: GLMTokenizer | None = None
    ) -> list[tuple[None, SampleDetails]]:
        results = task.proctor_results
        files: list[tuple[dict[str, float], int]] = []
        source_parts, group_parts = {}, {}
        for group, by_file in results.items():
            group_files = []
            for file, entry in by_file.items():
                values = {
                    k: v for name, value in entry["metrics"].items() for k, v in _numeric_leaves(name, value).items()
                }
                files.append((values, entry["n"]))
                group_files.append((values, entry["n"]))
                source_parts[file] = {
                    "n_samples": entry["n"],
                    "metrics": {k: {"value": v, "stderr": None} for k, v in values.items()},
                    "detail": _jsonable(entry["metrics"]),
                }
            group_parts[group] = {"n_samples": sum(n for _, n in group_files), "metrics": _average(group_files)}
        self._corpus = {k: {"value": v["value"], "stderr": None} for k, v in _average(files).items()}
        from proctor.scoring.aggregate import breakdown_stats

        self._extras = {
            "breakdown": {"_source": source_parts, "glm_group": group_parts},
            "breakdown_stats": {"_source": breakdown_stats(source_parts)},
            "glm_report": report,
            "glm_class": self.options.module,
        }
        pairs = []
        seen: dict[tuple[str, str], int] = {}
        for s in samples:
            group, file = s.sample.fields["_glm_group"], s.sample.fields["_source"]
            index = seen.get((group, file), 0)
            seen[(group, file)] = index + 1
            entry = results.get(group, {}).get(file)
            record: SampleDetails = {"glm_group": group, "glm_file": file}
            if entry is not None and len(entry["predictions"]) == self._per_file[(group, file)]:  # one item per row
                prediction = entry["predictions"][index]
                record["prediction"] = _jsonable(prediction)
                scores = entry.get("scores") or []
                record.update(
                    _shown(
                        self._rows.get((s.sample.file, s.sample.row)),
                        prediction,
                        scores[index] if len(scores) == len(entry["predictions"]) else None,
                        tokenizer,
                    )
                )
            pairs.append((None, record))
        return pairs

    def corpus_metrics(self) -> dict:
        return self._corpus

    def result_extras(self) -> dict:
        return self._extras

"""GLM's module names (``evaluation``, ``evaluation.*``, ``generation``) resolving to proctor's stand-ins,
only while a GLM task class is imported or run; and the import of ``module: pkg.mod.Class`` as GLM's
evaluate.py imports it (``importlib.import_module`` from the repository root, so relative imports such
as LAMBADA's ``from .strategy import ...`` work and folders with dashes are fine)."""

from __future__ import annotations

import contextlib
import importlib
import sys
import types
from pathlib import Path
from typing import Iterator

from proctor.core.errors import TaskDefinitionError
from proctor.core.user_code import check_installed_module, dotted_module_file, modules_in_force

_PARTS = ("configs", "tasks", "model", "dataset", "metrics", "utils")


def _stand_ins() -> dict[str, types.ModuleType]:
    from proctor.dialects.glm import configs, dataset, metrics, model, strategies, tasks, utils

    package = types.ModuleType("evaluation", "proctor's stand-in for GLM-130B's evaluation package")
    package.__path__ = []  # a package: submodules below resolve through sys.modules
    modules = {
        "configs": configs,
        "tasks": tasks,
        "model": model,
        "dataset": dataset,
        "metrics": metrics,
        "utils": utils,
    }
    for name in ("TaskType", "BaseConfig", "MultiChoiceTaskConfig", "GenerationTaskConfig", "LanguageModelTaskConfig"):
        setattr(package, name, getattr(configs, name))
    setattr(package, "ModelForEvaluation", model.ModelForEvaluation)
    for name in ("BaseTask", "GenerationTask", "MultiChoiceTask", "LanguageModelTask"):
        setattr(package, name, getattr(tasks, name))
    for name in ("EvaluationDataset", "GenerationTaskDataset", "MultiChoiceTaskDataset", "LanguageModelTaskDataset"):
        setattr(package, name, getattr(dataset, name))
    setattr(package, "qa_evaluate", metrics.qa_evaluate)
    setattr(package, "print_rank_0", utils.print_rank_0)
    setattr(
        package,
        "DEFAULT_CLASS",
        {
            configs.TaskType.GENERATION: tasks.GenerationTask,
            configs.TaskType.MULTICHOICE: tasks.MultiChoiceTask,
            configs.TaskType.LANGUAGE_MODEL: tasks.LanguageModelTask,
        },
    )
    out = {"evaluation": package}
    for part, module in modules.items():
        setattr(package, part, module)
        out[f"evaluation.{part}"] = module
    generation = types.ModuleType("generation", "proctor's stand-in for GLM-130B's generation package")
    generation.__path__ = []
    for name in ("BaseStrategy", "BeamSearchStrategy"):
        setattr(generation, name, getattr(strategies, name))
    setattr(generation, "strategies", strategies)
    out["generation"], out["generation.strategies"] = generation, strategies
    return out


@contextlib.contextmanager
def glm_names() -> Iterator[None]:
    """While inside: ``import evaluation`` and friends give proctor's stand-ins; afterwards
    ``sys.modules`` is as it was."""
    with modules_in_force(_stand_ins()):
        yield


def import_task_class(reference: str, base_dir: Path) -> type:
    """``module: tasks.lambada.task.LAMBADA``: the file ``tasks/lambada/task.py`` below the YAML's folder
    or a parent (GLM's paths are relative to its repository root; the file itself, and any package
    ``__init__.py`` the import runs, must lie in the YAML's folder), imported as ``tasks.lambada.task``
    with that root on ``sys.path``; else an installed module; ``file.py:Class`` also works."""
    from proctor.kinds.custom import class_from_file

    if ":" in reference:
        return class_from_file(reference, base_dir, "module")
    module_name, _, class_name = reference.rpartition(".")
    if not module_name:
        raise TaskDefinitionError(f"'{reference}' is not 'package.module.Class'", field="module")
    relative = Path(*module_name.split(".")).with_suffix(".py")
    found = dotted_module_file(module_name, base_dir, field="module")
    if found is None:
        check_installed_module(module_name, base_dir, field="module")
    root = found[0] if found else None
    top = module_name.split(".")[0]
    clashing = {n: m for n, m in sys.modules.items() if n == top or n.startswith(top + ".")} if root else {}
    for name in clashing:
        del sys.modules[name]
    if root is not None:
        sys.path.insert(0, str(root))
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        where = f"{root / relative}" if root else f"no {relative} in the task's folder, and '{module_name}'"
        raise TaskDefinitionError(f"importing {where} failed: {type(exc).__name__}: {exc}", field="module") from None
    finally:
        if root is not None:
            sys.path.remove(str(root))
            for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
                del sys.modules[name]  # the task's own modules live on through the class
            sys.modules.update(clashing)
    if not hasattr(module, class_name):
        raise TaskDefinitionError(f"module '{module_name}' defines no '{class_name}'", field="module")
    return getattr(module, class_name)

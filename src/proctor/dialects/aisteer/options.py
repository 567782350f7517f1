"""The use case dialect's options (``--use-case-data``, ``--use-case-metric``, ``--use-case-arg``,
``--use-case-config``): read by the declaration (the CLI's flags) and by ``runfile``.

A leaf that imports only ``core``, so ``runfile`` can import it without importing the declaration (which names it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, List, Optional

from proctor.core.dialect import BaseOptions, cli

# validate builds a use case as run does (its rows are audited) and so takes what run takes to build it; the file
# named on the command line is run's consent to import it, and a config's code still needs --trust-task-code
BUILDS = frozenset({"run", "validate"})


class AISteerOptions(BaseOptions):
    """The use case dialect's options (``runfile.options_config`` reads them)."""

    use_case_data: Annotated[
        Optional[Path],
        cli(
            "--use-case-data",
            commands=BUILDS,
            metavar="FILE",
            help="Use case files (.py): the evaluation data (.json/.jsonl) for a file that defines only the class.",
        ),
    ] = None
    use_case_metric: Annotated[
        Optional[List[str]],
        cli(
            "--use-case-metric",
            commands=BUILDS,
            metavar="METRIC",
            help="Use case files: a metric (built-in name, FILE.py:CLASS or module:CLASS; repeatable).",
        ),
    ] = None
    use_case_arg: Annotated[
        Optional[List[str]],
        cli(
            "--use-case-arg",
            commands=BUILDS,
            metavar="KEY=VALUE",
            help="Use case files: KEY=VALUE keyword argument of the use case (JSON value; repeatable).",
        ),
    ] = None
    use_case_config: Annotated[
        Optional[Path],
        cli(
            "--use-case-config",
            commands=BUILDS,
            metavar="FILE",
            help="Use case files: a YAML/JSON file with evaluation_data, evaluation_metrics, "
            "use_case_kwargs, gen_kwargs, batch_size.",
        ),
    ] = None

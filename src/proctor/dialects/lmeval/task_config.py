"""What an lm-eval task's config is to proctor, named once for the modules that read it.

``TaskConfig``: one lm-eval task's config as lm-eval's ``TaskConfig`` is built from it, its YAML's keys (``task``,
``dataset_path``, ``doc_to_text``, ``metric_list``, ...) with its ``include`` merged in. The values are whatever the
YAML holds: strings, numbers, lists, nested mappings, ``!function`` callables.
"""

from __future__ import annotations

from typing import Any

TaskConfig = dict[str, Any]

# lm-eval's ``generation_kwargs`` of a generate_until task (``until``, ``max_gen_toks``, ``temperature``, ``top_p``,
# ``do_sample``, ...), each value as lm-eval hands it to the model
GenerationKwargs = dict[str, Any]

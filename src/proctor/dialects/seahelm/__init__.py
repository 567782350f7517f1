"""SEA-HELM compatibility: task-folder configs, prompts, metrics, judges and plug-ins.

The dialect adapter (``proctor.dialects.seahelm.dialect``) turns ``seahelm_tasks/<competency>/<task>/config.yaml``
files into proctor tasks whose handler (:class:`proctor.dialects.seahelm.task.SeaHelmTask`) runs SEA-HELM's
pipeline: dataloader -> conversations -> generation -> metric class -> (judge).
"""

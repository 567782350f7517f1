"""lm-evaluation-harness task files: ``declaration`` (what the registry reads), ``options``, ``claims`` (which files
and names are lm-eval's), ``loader`` (tasks from files and the catalogue), and the modules they use.

Nothing is imported here: the registry imports ``declaration`` on every run, which must not load the rest.
"""

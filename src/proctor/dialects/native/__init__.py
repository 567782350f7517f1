"""proctor's own task YAML: ``declaration`` (what the registry reads), ``loader`` (tasks from a file), ``checks``.

Nothing is imported here: the registry imports ``declaration`` on every run, which must not load the rest.
"""

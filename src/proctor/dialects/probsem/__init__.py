"""probsem test suites: ``declaration`` (what the registry reads), ``options``, ``loader`` (tasks from prompts and
suites), ``cogsci`` (the CogSci2023 branch's scoring), ``exports`` (probsem's results CSV).

Nothing is imported here: the registry imports ``declaration`` on every run, which must not load the rest.
"""

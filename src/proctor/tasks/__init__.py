"""Public names for user task classes (a native ``task_class`` or a GLM-130B ``module:`` written for proctor).

The classes live in ``proctor.kinds.custom``; this package keeps the import path that user files use.
"""

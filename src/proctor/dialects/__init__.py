"""Dialect plug-ins: one package per task-file format (native, probsem, glm, seahelm, aisteer, lmeval).

The layers below never name a dialect: each package registers itself with ``proctor.core.registry``
when the registry loads the packages found here (and any ``proctor.dialects`` entry points).
"""

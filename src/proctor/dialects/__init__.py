"""Dialect implementations: one package per task-file format (native, probsem, glm, seahelm, aisteer, lmeval).

The layers below never name a dialect. Each is declared by a module of ``proctor.plugins`` (its names,
options and which files it claims), which imports the package here only when one of its files is read.
"""

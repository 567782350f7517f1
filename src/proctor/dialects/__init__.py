"""Dialect implementations: one package per task-file format (native, probsem, glm, seahelm, aisteer, lmeval).

The layers below never name a dialect. Each package declares its dialect in its ``declaration`` module (its names,
options and which files it claims; a leaf that imports only ``core``), which ``core/registry.py`` finds by scanning
this package and which names the rest of the package by ``"module:attr"`` references, imported only when one of its
files is read. Nothing is imported here, nor in a dialect package's ``__init__``.
"""

"""Steering: a model wrapper that changes what a base model computes.

A ``SteeringPipeline`` (``pipeline.py``) wraps a base model with controls of four kinds — input
(``controls.py``: prompt rewrites), structural (``structural.py``: weight deltas, LoRA), state
(``state.py``: activation additions on the forward pass) and output (``controls.py``: token
biases) — and ``SteeredModel`` (``steered_model.py``) makes a pipeline a proctor ``Model``.
``specs.py`` expands parameter sweeps of controls. This package wraps models only: it names no
dialect (AISteer360's names for these classes live in ``proctor.dialects.aisteer``).
"""

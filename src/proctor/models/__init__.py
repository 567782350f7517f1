"""Model backends: the three-call contract and its implementations."""

from proctor.models.base import Model
from proctor.models.registry import load_model

__all__ = ["Model", "load_model"]

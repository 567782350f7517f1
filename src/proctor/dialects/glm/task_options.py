"""The options of a GLM-130B ``module:`` task (one per YAML), as its handler (``handler.py``) receives them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from proctor.dialects.glm.config_fields import GLMConfig


class GLMModuleOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    module: str  # the GLM task class, imported only with --trust-task-code
    yaml: str  # the task YAML (its folder is where the class and relative paths are looked up)
    roots: list[str]  # candidate data folders, ${DATA_PATH} first
    config: GLMConfig  # the YAML's settings, handed to the class's config (GLM's build_config)

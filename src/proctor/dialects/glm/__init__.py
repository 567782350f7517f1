"""GLM-130B's ``evaluation`` package (and its ``generation`` strategies), standing in for task classes
written against it (a task YAML's ``module:``).

``names.glm_names()`` makes ``import evaluation`` / ``from evaluation.dataset import ...`` /
``from generation import BeamSearchStrategy`` resolve to these modules while proctor imports and runs
such a class; ``handler.GLMModuleTask`` runs the class inside proctor's engine. Nothing is installed
at import time.
"""

"""The built-in plug-ins: one declaration module per dialect (``register(registry)``), as an installed
package declares its own under the ``proctor.plugins`` entry-point group.

A declaration names its dialect, its options and which files it claims, and imports its dialect
package (``proctor.dialects.<name>``) only inside the methods that need it, so a native YAML run
imports no other dialect. Dialect packages may import their declaration (its claim helpers); the
declarations never import a dialect package at module level.
"""

"""Deprecated: ``proctor.dialects.aisteer.analysis`` under its former path (importing it warns, in ``__init__``)."""

from proctor.dialects.aisteer.analysis import (  # noqa: F401
    config_points,
    pareto_front,
    plot_sensitivity,
    plot_tradeoff,
    results_table,
    summarize,
    to_dataframe,
    write_csv,
)

"""Public import path of the benchmark analysis helpers (``proctor.usecases.analysis``)."""

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

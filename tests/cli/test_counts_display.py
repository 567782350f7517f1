"""Counts among the metrics (SEA-HELM's null_count, a use case's n_correct) print as whole numbers, not 4.0000."""

from __future__ import annotations

import pytest

from proctor.cli.display import fmt_value, print_results
from proctor.runs.report import fmt

pytestmark = pytest.mark.fast


def test_counts_print_as_whole_numbers_and_rates_with_four_decimals(capsys):
    assert fmt_value(4, "null_count") == "4" and fmt_value(4) == "4"
    assert fmt_value(4.0, "null_count") == "4" and fmt_value(12.0, "n_correct,none") == "12"
    assert fmt_value(4.0, "acc") == "4.0000" and fmt_value(0.5, "null_count") == "0.5000"
    assert fmt_value(True) == "1.0000"  # a flag is not a count
    assert (fmt(3), fmt(0.25), fmt(None)) == ("3", "0.2500", "—")
    results = {
        "model": {"model": "m"},
        "tasks": {
            "t": {
                "version": "1",
                "n_samples": 4,
                "metrics": {
                    "null_count": {"value": 4, "stderr": None},
                    "n_correct": {"value": 3.0, "stderr": None},
                    "acc": {"value": 0.75, "stderr": 0.25},
                },
            }
        },
    }
    print_results(results)
    lines = capsys.readouterr().out.splitlines()
    row = {name: line for line in lines for name in ("null_count", "n_correct", "acc") if f" {name} " in line}
    assert row["null_count"].split("│")[-3].strip() == "4"
    assert row["n_correct"].split("│")[-3].strip() == "3"
    assert row["acc"].split("│")[-3].strip() == "0.7500" and row["acc"].split("│")[-2].strip() == "0.2500"

"""The one place that answers "did you mean" and "listed twice"."""

import pytest

from proctor.core.names import close_names, first_repeat

pytestmark = pytest.mark.fast


def test_close_names_best_first_and_only_close_ones():
    assert close_names("acuracy", ["exact_match", "acc", "accuracy", "acc_norm"]) == ["accuracy"]
    assert close_names("acuracy", ["exact_match", "acc", "accuracy", "acc_norm"], n=3) == ["accuracy", "acc"]
    assert close_names("bleu", ["accuracy", "exact_match"]) == []


def test_first_repeat_is_the_second_listing_of_the_first_name_repeated():
    assert first_repeat(["a", "b", "c"]) is None
    assert first_repeat([]) is None
    assert first_repeat(["b", "a", "c", "a", "b"]) == (3, "a")
    assert first_repeat(iter([1, 2, 2])) == (2, 2)

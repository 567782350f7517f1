"""One importer of user Python files (core/user_code.py): module names stable across processes,
errors that name the file and line, and dialect names installed only while the file is imported."""

from __future__ import annotations

import hashlib
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from proctor.core.errors import TaskDefinitionError
from proctor.core.user_code import class_in_file, import_file, module_name
from tests.conftest import REPO

pytestmark = pytest.mark.fast

SRC = REPO / "src"


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    return path


def test_module_name_is_the_sha256_of_the_resolved_path(tmp_path):
    file = write(tmp_path / "m.py", "X = 1\n")
    expected = "proctor_user_" + hashlib.sha256(str(file.resolve()).encode()).hexdigest()[:16]
    assert module_name(file) == expected
    assert module_name(tmp_path / "." / "m.py") == expected  # the same file, however it is spelled


def test_module_name_is_the_same_in_another_process(tmp_path):
    file = write(tmp_path / "m.py", "class C:\n    pass\n")
    here = import_file(file).__name__
    code = f"from proctor.core.user_code import import_file; " f"print(import_file({str(file)!r}).__name__)"
    env = {"PYTHONPATH": str(SRC), "PYTHONHASHSEED": "random", "PATH": ""}
    there = [
        subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout.strip()
        for _ in range(2)
    ]
    assert there == [here, here]


def test_a_class_in_a_user_file_pickles_by_reference(tmp_path):
    file = write(tmp_path / "cls.py", "class Point:\n    def __init__(self, x):\n        self.x = x\n")
    point = class_in_file(file, "Point")(3)
    again = pickle.loads(pickle.dumps(point))
    assert type(again) is type(point) and again.x == 3


def test_a_file_is_imported_once_unless_fresh(tmp_path):
    file = write(
        tmp_path / "count.py", "import builtins\nbuiltins._proctor_count = getattr(builtins, '_proctor_count', 0) + 1\n"
    )
    import builtins

    try:
        first = import_file(file)
        assert import_file(file) is first and builtins._proctor_count == 1
        assert import_file(file, fresh=True) is not first and builtins._proctor_count == 2
    finally:
        del builtins._proctor_count


def test_a_syntax_error_names_file_and_line(tmp_path):
    file = write(tmp_path / "bad.py", "import os\n\ndef broken(:\n")
    with pytest.raises(TaskDefinitionError) as info:
        import_file(file, field="task_class")
    assert info.value.file == str(file) and info.value.line == 3 and info.value.field == "task_class"
    assert "syntax error" in str(info.value) and module_name(file) not in sys.modules


def test_a_failing_import_names_the_line_that_failed(tmp_path):
    file = write(tmp_path / "boom.py", "X = 1\nraise ValueError('no data')\n")
    with pytest.raises(TaskDefinitionError) as info:
        import_file(file)
    assert info.value.line == 2 and "ValueError: no data" in str(info.value) and str(file) in str(info.value)


def test_a_missing_file_or_class_is_named(tmp_path):
    with pytest.raises(TaskDefinitionError, match="no such Python file"):
        import_file(tmp_path / "absent.py")
    file = write(tmp_path / "ok.py", "X = 1\n")
    with pytest.raises(TaskDefinitionError, match="defines no 'Y'") as info:
        class_in_file(file, "Y", field="metric_class")
    assert info.value.file == str(file) and info.value.field == "metric_class"


def test_the_file_folder_is_on_the_path_only_while_importing(tmp_path):
    write(tmp_path / "helper_for_user_code.py", "VALUE = 7\n")
    file = write(tmp_path / "main.py", "from helper_for_user_code import VALUE\n")
    try:
        assert import_file(file).VALUE == 7
        assert str(tmp_path.resolve()) not in sys.path
    finally:
        sys.modules.pop("helper_for_user_code", None)


def test_seahelm_src_names_exist_only_while_task_folder_code_is_imported(tmp_path):
    from proctor.dialects.seahelm.named_classes import BUILTIN_CLASSES, resolve_class

    write(
        tmp_path / "my_metric.py",
        """
        from src.metrics.seahelm_metric import SeaHelmMetric

        class MyMetric(SeaHelmMetric):
            pass
    """,
    )
    config = tmp_path / "config.yaml"
    cls = resolve_class(
        "my_metric.py",
        "MyMetric",
        root=tmp_path,
        config_file=config,
        trust=True,
        what="metric",
        default="SeaHelmMetric",
    )
    assert issubclass(cls, BUILTIN_CLASSES["SeaHelmMetric"])
    assert cls.__module__ == module_name(tmp_path / "my_metric.py")
    assert "src" not in sys.modules and not any(name.startswith("src.") for name in sys.modules)


def test_seahelm_task_folder_error_names_the_code_file_and_the_config(tmp_path):
    from proctor.dialects.seahelm.named_classes import resolve_class

    write(tmp_path / "broken.py", "class Broken(:\n")
    with pytest.raises(TaskDefinitionError) as info:
        resolve_class(
            "broken.py",
            "Broken",
            root=tmp_path,
            config_file=tmp_path / "config.yaml",
            trust=True,
            what="metric",
            default="X",
        )
    message = str(info.value)
    assert "config.yaml" in message and "broken.py:1" in message and "metric_class" in message

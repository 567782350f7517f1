"""``core/file_lock.hold_file``: one holder at a time across processes; the second refuses or waits; closing
the handle releases the lock. The other holder is a real process (spawned), ordered by events, never by time."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from proctor.core.file_lock import hold_file

pytestmark = pytest.mark.fast

SPAWN = multiprocessing.get_context("spawn")  # a fresh interpreter: nothing of pytest's process is shared
PATIENCE = 60  # seconds: only how long a broken test may hang, never what it measures


class Busy(Exception):
    pass


class CannotOpen(Exception):
    pass


def _cannot_open(exc: OSError) -> Exception:
    return CannotOpen(str(exc))


def _busy() -> Exception:
    return Busy("held elsewhere")


def _hold_until_told(path: Path, held, release, released, leave) -> None:  # in the other process
    with hold_file(path, cannot_open=_cannot_open, refuse=_busy) as handle:
        handle.write("the first holder")
        handle.flush()
        held.set()
        release.wait(PATIENCE)
    released.set()  # the handle is closed, and this process still runs
    leave.wait(PATIENCE)


def _wait_for_it(path: Path, waiting, acquired) -> None:  # in the other process
    with hold_file(path, cannot_open=_cannot_open, before_waiting=waiting.set):
        acquired.set()


def test_a_second_process_is_refused_while_the_first_holds_and_not_once_it_closes(tmp_path):
    path = tmp_path / "folder" / ".lock"  # the folder is made too
    held, release, released, leave = (SPAWN.Event() for _ in range(4))
    other = SPAWN.Process(target=_hold_until_told, args=(path, held, release, released, leave))
    other.start()
    try:
        assert held.wait(PATIENCE)
        second = hold_file(path, cannot_open=_cannot_open, refuse=_busy)
        with pytest.raises(Busy, match="held elsewhere") as info, second:
            pytest.fail("held twice")
        assert info.value.__suppress_context__  # the refusal alone, not the BlockingIOError under it
        assert path.read_text() == "the first holder"  # the refused one wrote nothing
        release.set()
        assert released.wait(PATIENCE)  # the holder closed its handle but has not exited
        with hold_file(path, cannot_open=_cannot_open, refuse=_busy) as handle:
            assert handle is not None
            handle.seek(0)
            assert handle.read() == "the first holder"  # a+: the file is kept, the holder may rewrite it
    finally:
        leave.set()
        release.set()
        other.join(PATIENCE)
    assert other.exitcode == 0


def test_a_second_process_waits_until_the_first_releases(tmp_path):
    path = tmp_path / ".lock"
    waiting, acquired = SPAWN.Event(), SPAWN.Event()
    with hold_file(path, cannot_open=_cannot_open, refuse=_busy):
        other = SPAWN.Process(target=_wait_for_it, args=(path, waiting, acquired))
        other.start()
        try:
            assert waiting.wait(PATIENCE)  # it found the file held and said so before waiting
            assert not acquired.is_set()  # held here: it cannot have it yet
        except BaseException:
            other.kill()
            raise
    assert acquired.wait(PATIENCE)  # released here: it gets the lock
    other.join(PATIENCE)
    assert other.exitcode == 0


def test_a_file_that_cannot_be_opened_is_the_callers_error(tmp_path):
    (tmp_path / "a-file").write_text("")
    (tmp_path / "a-folder.lock").mkdir()
    for path in (tmp_path / "a-file" / ".lock", tmp_path / "a-folder.lock"):
        with pytest.raises(CannotOpen) as info, hold_file(path, cannot_open=_cannot_open):
            pytest.fail("opened")
        assert info.value.__suppress_context__


def test_refuse_and_wait_are_exclusive(tmp_path):
    both = hold_file(tmp_path / ".lock", cannot_open=_cannot_open, refuse=_busy, before_waiting=lambda: None)
    with pytest.raises(TypeError, match="not both"), both:
        pass

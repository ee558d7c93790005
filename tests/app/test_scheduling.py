"""The training thread yields the CPU to the GUI: it runs at a higher nice value (Linux), which the
threads it starts (TensorFlow's pools, the recorder) inherit."""
from __future__ import annotations

import os
import sys
import threading

import pytest

from app import scheduling
from app.worker import TrainingThread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice is Linux's")


def _nice_in_thread(env: str | None, monkeypatch) -> tuple[int, int, bool]:
    if env is None:
        monkeypatch.delenv(scheduling.NICE_ENV, raising=False)
    else:
        monkeypatch.setenv(scheduling.NICE_ENV, env)
    out = {}

    def body() -> None:
        out["took"] = scheduling.lower_this_thread()
        out["own"] = scheduling.thread_nice(threading.get_native_id())
        child = threading.Thread(target=lambda: out.__setitem__("child", scheduling.thread_nice(threading.get_native_id())))
        child.start()
        child.join()

    t = threading.Thread(target=body)
    t.start()
    t.join()
    return out["own"], out["child"], out["took"]


def test_training_thread_and_its_children_run_nicer(monkeypatch):
    base = os.getpriority(os.PRIO_PROCESS, 0)
    own, child, took = _nice_in_thread(None, monkeypatch)
    assert took and own == child == max(base, scheduling.DEFAULT_TRAINING_NICE)
    assert scheduling.thread_nice(threading.get_native_id()) == base  # the calling (GUI) thread is untouched


def test_nice_is_configurable_and_can_be_turned_off(monkeypatch):
    base = os.getpriority(os.PRIO_PROCESS, 0)
    own, child, took = _nice_in_thread("7", monkeypatch)
    assert took and own == child == max(base, 7)
    own, _, took = _nice_in_thread("0", monkeypatch)
    assert not took and own == base
    own, _, took = _nice_in_thread("not a number", monkeypatch)
    assert took and own == max(base, scheduling.DEFAULT_TRAINING_NICE)


def test_the_windows_worker_thread_is_lowered(qtbot, monkeypatch):
    monkeypatch.delenv(scheduling.NICE_ENV, raising=False)
    handle = TrainingThread()
    try:
        seen = {}
        from PySide6.QtCore import QMetaObject, Qt, QTimer

        def record() -> None:
            seen["nice"] = scheduling.thread_nice(threading.get_native_id())

        timer = QTimer()  # fires on the worker thread: reads that thread's nice value
        timer.moveToThread(handle.thread)
        timer.setSingleShot(True)
        timer.timeout.connect(record, Qt.ConnectionType.DirectConnection)
        QMetaObject.invokeMethod(timer, "start", Qt.ConnectionType.QueuedConnection)
        qtbot.waitUntil(lambda: "nice" in seen, timeout=5000)
        assert seen["nice"] == max(os.getpriority(os.PRIO_PROCESS, 0), scheduling.DEFAULT_TRAINING_NICE)
    finally:
        handle.shutdown()

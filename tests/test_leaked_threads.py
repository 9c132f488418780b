"""Unit tests of leaked_threads.note: which threads a case left running."""

from __future__ import annotations

import threading

from pytest_agentbench.sdk import leaked_threads


def test_nothing_started_is_nothing_leaked() -> None:
    assert leaked_threads.note(threading.enumerate()) == []


def test_a_running_non_daemon_thread_started_since_is_leaked_and_a_daemon_is_not() -> None:
    release = threading.Event()
    before = threading.enumerate()
    kept = threading.Thread(target=release.wait, name="kept")
    daemon = threading.Thread(target=release.wait, name="daemon", daemon=True)
    finished = threading.Thread(target=lambda: None, name="finished")
    for thread in (kept, daemon, finished):
        thread.start()
    finished.join()
    try:
        assert leaked_threads.note(before) == [kept]
        assert kept in leaked_threads.alive()
    finally:
        release.set()
        kept.join()
        daemon.join()
    assert kept not in leaked_threads.alive()


def test_a_thread_that_ended_while_another_started_is_not_mistaken_for_no_change() -> None:
    # The same number of threads before and after: only identities tell them apart.
    release = threading.Event()
    ending = threading.Thread(target=release.wait, name="ending")
    ending.start()
    before = threading.enumerate()
    release.set()
    ending.join()
    stay = threading.Event()
    started = threading.Thread(target=stay.wait, name="started")
    started.start()
    try:
        assert len(threading.enumerate()) == len(before)
        assert leaked_threads.note(before) == [started]
    finally:
        stay.set()
        started.join()

"""Progress of long work: each step logs its count and time, a step predicted to take long
shows a tqdm bar (a quick one none), and without tqdm a slow step logs lines of progress
(time from a fake clock, never the wall)."""

from __future__ import annotations

import logging

import pytest

import symgrad as sg
from symgrad.base import progress


def test_steps_log_their_time(caplog):
    caplog.set_level(logging.DEBUG, logger="symgrad")
    x = sg.var("x")
    f = x
    for k in range(200):  # sin or tanh by the Thue-Morse sequence: not rolled into a loop
        f = (sg.tanh if bin(k).count("1") % 2 else sg.sin)(f) * (1.0 + k / 256)
    sg.grad(f, x)
    assert any(r.getMessage().startswith("reverse mode: 601 nodes in ") for r in caplog.records)
    sg.compile(f)
    assert any(r.getMessage().startswith("compile (CPython):") for r in caplog.records)


def test_a_step_predicted_to_take_long_shows_a_bar(monkeypatch):
    pytest.importorskip("tqdm")
    clock = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(progress, "_bars", True)
    s = progress.start("slow", total=1_000)
    for _ in range(100):
        clock[0] += 0.01  # 10 ms per unit: 10 s predicted
        s.update()
    assert s._bar is not None and s._bar.n >= 64
    s.close()
    assert s._bar is None
    quick = progress.start("quick", total=1_000)
    for _ in range(1_000):
        clock[0] += 1e-5  # 10 ms in all: no bar
        quick.update()
    assert quick._bar is None


def test_without_tqdm_a_slow_step_logs_lines(monkeypatch, caplog):
    caplog.set_level(logging.INFO, logger="symgrad")
    clock = [0.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    monkeypatch.setattr(progress, "_bars", False)
    s = progress.start("slow", total=10_000)
    for _ in range(2_000):
        clock[0] += 0.01
        s.update()
    s.close()
    lines = [r.getMessage() for r in caplog.records]
    assert any(line.startswith("slow: ") and " of 10,000 nodes after " in line
               for line in lines)
    assert lines[-1].startswith("slow: 2,000 nodes in 20.00 s")


def test_a_step_logs_at_info_only_when_it_took_long_and_closes_once(monkeypatch, caplog):
    """Under INFO_AFTER seconds a step logs at DEBUG, from then on at INFO; the count is
    written with its unit (singular for one); closing twice logs once."""
    caplog.set_level(logging.DEBUG, logger="symgrad")
    clock = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    with progress.step("quick", unit="item") as s:
        s.update()
        clock[0] += progress.INFO_AFTER / 2
    slow = progress.start("slow", total=3)
    slow.update(3)
    clock[0] += progress.INFO_AFTER
    assert slow.close() == progress.INFO_AFTER
    assert slow.close() == 0.0
    done = [(r.levelno, r.getMessage()) for r in caplog.records if " in " in r.getMessage()]
    assert done == [(logging.DEBUG, "quick: 1 item in 0.50 s"),
                    (logging.INFO, "slow: 3 nodes in 1.00 s")]


def test_enable_sends_records_to_stderr_and_disable_makes_the_library_quiet(capsys):
    try:
        progress.enable(logging.INFO, bar=False)
        assert progress.logger.isEnabledFor(logging.INFO)
        progress.logger.info("hello")
        assert capsys.readouterr().err == "symgrad: hello\n"
    finally:
        progress.disable()
    progress.logger.warning("unseen")
    assert capsys.readouterr().err == ""
    assert not progress.logger.isEnabledFor(logging.INFO)

"""runner.lock.signals_interrupt restores the handlers it replaced, also when Python cannot name the
old one: a handler installed by C code (an MPI library preloaded into the CLI's process, as a PMPI tool
in LD_PRELOAD is) reads as None, which signal.signal refuses."""
from __future__ import annotations

import signal

from mpitempo.runner import lock


def test_a_handler_installed_outside_python_is_restored_as_the_default(monkeypatch):
    real = signal.signal
    seen = []

    def fake(sig, handler):
        if handler is None:      # what the real call refuses: "signal handler must be signal.SIG_IGN, ..."
            raise TypeError("signal handler must be signal.SIG_IGN, signal.SIG_DFL, or a callable object")
        seen.append((sig, handler))
        real(sig, handler)
        return None              # the previous handler was set in C: Python sees None

    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    monkeypatch.setattr(lock.signal, "signal", fake)
    try:
        with lock.signals_interrupt():
            pass
    finally:
        monkeypatch.undo()
        for s, h in before.items():
            signal.signal(s, h)
    assert [h for _, h in seen[-2:]] == [signal.SIG_DFL, signal.SIG_DFL]

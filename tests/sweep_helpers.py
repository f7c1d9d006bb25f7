"""Run functions for sweep tests: they record each start and each finish as files, so a test can count them."""
import os
import time
from pathlib import Path


def slow_run(config, out_dir: Path, progress: bool = False, device=None) -> dict:
    "Sleeps a little, records that it started and that it finished (one marker file per event)."
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"started.{os.getpid()}.{time.time_ns()}").touch()
    time.sleep(float(config.framework_params.get("sleep", os.environ.get("SLOW_RUN_SECONDS", "0.4"))))   # a run's own
    (out_dir / f"finished.{time.time_ns()}").touch()
    if config.framework_params.get("fail"): raise RuntimeError("asked to fail")
    return dict(status="done", metrics=dict(score=float(config.seed)), pid=os.getpid())


def threads_flush(config, out_dir: Path, progress: bool = False, device=None) -> dict:
    "Records whether a thread it starts flushes denormal numbers to zero (05a), as its score."
    import threading
    from disentlit.training import _flushing
    seen = []
    t = threading.Thread(target=lambda: seen.append(_flushing()))
    t.start(); t.join()
    return dict(status="done", metrics=dict(flushing=float(seen[0])))


def slow_pack(configs, out_dirs, progress: bool = False, device=None) -> list:
    """A group run function (`run_sweep(..., pack=K)`): `slow_run` on each run of the group, its exception returned as
    that run's outcome; each run directory marked with the size of its group and the process that ran it."""
    outcomes = []
    for config, out_dir in zip(configs, out_dirs):
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / f"pack.{len(configs)}.{os.getpid()}").touch()
        try: outcomes.append(slow_run(config, out_dir))
        except RuntimeError as e: outcomes.append(e)
    return outcomes


# the prelude of a child process that SIGKILLs itself at the {kill_at}-th packed step (a crash: no clean-up, no flush);
# the code after it (str.format'ed with the same fields) starts the packed training to be killed
DIE_AT_PACKED_STEP = """
import os, signal, sys
import disentlit.packed as packed
step, calls = packed._packed_step, []
def dying_step(*a, **k):
    calls.append(1)
    if len(calls) == {kill_at}: os.kill(os.getpid(), signal.SIGKILL)
    return step(*a, **k)
packed._packed_step = dying_step
"""

"""Faults of the machine rather than of the input: a closed or full stdout, a full or read-only disk under an output,
two processes on one run directory, damaged files a command reads. Each ends in one line (or a one-line warning), never
a traceback, and leaves no temporary file and no half-written file under a final name.

Disks are small filesystems the test makes (a tmpfs in a mount namespace of its own, where the system allows it), else
a writer patched to fail half-way with ENOSPC."""
import contextlib
import errno
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest

from disentlit.cli import main

TINY = ["--dataset", "xyobject", "--framework", "betavae", "--latents", "2", "--steps", "2", "--batch-size", "4",
        "--quiet"]
FC = dict(model="fc", width=16)   # the sweeps' runs: a small fully connected model (what is tested is the files, not it)


def _main(*argv) -> tuple[int, str, str]:
    "`main` in this process: (status, stdout, stderr)."
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try: code = main(list(argv))
        except SystemExit as e: code = e.code
    return code, out.getvalue(), err.getvalue()


def _one_line(err: str, starts: str = "disentlit: error:"):
    assert err.startswith(starts) and err.count("\n") == 1 and "Traceback" not in err, err


def _leftovers(folder: Path) -> list[str]:
    "Temporary files, and empty files under a final name, anywhere under `folder`."
    return [str(p) for p in folder.rglob("*") if p.is_file() and (".tmp" in p.name or p.stat().st_size == 0)]


def test_closed_stdout_ends_quietly(data_home):
    "`disentlit datasets | head -1`: the reader leaves early; no traceback, no 'Exception ignored', status 141."
    p = subprocess.run("disentlit datasets | true; echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                       capture_output=True, text=True, timeout=300)
    assert p.stdout.strip() == "141" and p.stderr == "", (p.stdout, p.stderr)
    p = subprocess.run("disentlit datasets --json | head -c 10 > /dev/null; echo ${PIPESTATUS[0]}", shell=True,
                       executable="/bin/bash", capture_output=True, text=True, timeout=300)
    assert p.stdout.strip() in ("0", "141") and p.stderr == "", (p.stdout, p.stderr)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
@pytest.mark.parametrize("argv", [["datasets"], ["datasets", "--json"],
                                  ["distances", "--dataset", "xyobject", "--pairs", "50", "--json", "--quiet"]])
def test_full_stdout_is_one_line(data_home, argv):
    with open("/dev/full", "w") as full:
        p = subprocess.run(["disentlit", *argv], stdout=full, stderr=subprocess.PIPE, text=True, timeout=300)
    assert p.returncode == 2, p.stderr
    _one_line(p.stderr)
    assert "standard output: No space left on device" in p.stderr, p.stderr


def _small_disk(tmp_path: Path, kb: int, script: str) -> subprocess.CompletedProcess:
    """Run the shell `script` with a tmpfs of `kb` KiB at `$DISK` (and `$DISENTLIT_DATA` beside it), in a mount
    namespace of its own, so the filesystem goes when the script ends; skip where the system does not allow it."""
    if not shutil.which("unshare") or sys.platform != "linux":
        pytest.skip("no unshare here: no small filesystem can be made")
    disk = tmp_path / "disk"
    disk.mkdir()
    probe = subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size=16k tmpfs {disk}"],
                           capture_output=True)
    if probe.returncode != 0: pytest.skip(f"cannot mount a tmpfs here: {probe.stderr.decode().strip()}")
    env = dict(os.environ, DISK=str(disk), DISENTLIT_DATA=str(tmp_path / "data"))
    return subprocess.run(["unshare", "-m", "sh", "-c", f"mount -t tmpfs -o size={kb}k tmpfs $DISK && {script}"],
                          env=env, capture_output=True, text=True, timeout=600)


LIST = ' ; echo $? ; find $DISK -type f -printf "%P %s\\n"'   # the status, then every file left and its size


def test_train_on_a_full_disk_is_one_line_and_leaves_no_half_checkpoint(tmp_path):
    "A 512 KiB disk holds the run's config and log but not its checkpoint: one line naming it; nothing half-written."
    p = _small_disk(tmp_path, 512, "disentlit train " + " ".join(TINY[:-1]) + " --steps 60 --checkpoint-every 50 "
                                   "--out $DISK/run --quiet" + LIST)
    lines = p.stdout.splitlines()
    assert lines[0] == "2", (p.stdout, p.stderr)
    _one_line(p.stderr)
    assert "checkpoint.pt: No space left on device; free some space" in p.stderr, p.stderr
    files = dict(l.rsplit(" ", 1) for l in lines[1:])
    assert not [f for f in files if ".tmp" in f or f.endswith("checkpoint.pt")], files     # no temp, no half checkpoint
    assert not [f for f, size in files.items() if size == "0" and not f.endswith(".jsonl")], files


def test_figures_on_a_full_disk_leave_no_empty_png(tmp_path, data_home):
    "Figures that do not fit: one line; every PNG left is whole, none empty, no temporary file."
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(dict(name="s", base=dict(dataset="xyobject", framework="betavae", latents=2, steps=2, **FC,
                                                        batch_size=4, metrics=["mig"],
                                                        metric_params=dict(mig=dict(num_train=50))),
                                    grid=dict(loss=["mse", "box_blur"]))))
    db = tmp_path / "s.sqlite"
    swept = subprocess.run(["disentlit", "sweep", str(spec), "--db", str(db), "--quiet"], capture_output=True)
    assert swept.returncode == 0, swept.stderr
    p = _small_disk(tmp_path, 48, f"disentlit figures --db {db} --out $DISK/figs" + LIST)
    lines = p.stdout.splitlines()
    assert lines[0] == "2", (p.stdout, p.stderr)
    _one_line(p.stderr)
    assert "No space left on device" in p.stderr, p.stderr
    files = dict(l.rsplit(" ", 1) for l in lines[1:])
    assert not [f for f, size in files.items() if ".tmp" in f or size == "0"], files


def test_statistics_on_a_read_only_data_folder_are_computed_with_a_warning(tmp_path):
    "The statistics cache cannot be written (read-only DISENTLIT_DATA): the numbers all the same, and one warning line."
    p = _small_disk(tmp_path, 64, "mkdir $DISK/data && mount -o remount,ro $DISK && DISENTLIT_DATA=$DISK/data "
                                  "disentlit datasets --stats xysquares --set num_squares=2 --set rgb=false --set "
                                  "grid_size=3 --json --quiet")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["mean"], p.stdout
    _one_line(p.stderr, "disentlit: warning:")
    assert "Read-only file system" in p.stderr and "computed but not cached" in p.stderr, p.stderr


def _enospc_half_way(self, data):
    "Path.write_bytes on a disk that fills up half-way through the file."
    with open(self, "wb") as f: f.write(bytes(data)[: len(data) // 2])
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_checkpoint_that_does_not_fit_leaves_the_last_one(tmp_path, data_home):
    "The same through a patched writer (any system): the run's last checkpoint stands, nothing half-written beside it."
    run = tmp_path / "run"
    assert _main("train", *TINY, "--out", str(run))[0] == 0
    before = (run / "checkpoint.pt").read_bytes()
    with mock.patch("pathlib.Path.write_bytes", _enospc_half_way):
        code, out, err = _main("train", *TINY[:-5], "--steps", "4", "--batch-size", "4", "--quiet", "--out", str(run))
    assert code == 2, err
    _one_line(err)
    assert f"checkpoint {run / 'checkpoint.pt'}: No space left on device" in err, err
    assert (run / "checkpoint.pt").read_bytes() == before and not _leftovers(run), _leftovers(run)


def test_two_trains_on_one_run_directory(tmp_path, data_home):
    "While one process holds a run directory, a second `train` on it is refused with one line, and changes nothing."
    run = tmp_path / "run"
    assert _main("train", *TINY, "--out", str(run))[0] == 0
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom pathlib import Path\n"
                               "from disentlit.runs import run_lock\n"
                               "with run_lock(Path(sys.argv[1])):\n    print('held', flush=True); time.sleep(120)",
                               str(run)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        before = {p.name: p.read_bytes() for p in run.iterdir()}
        code, out, err = _main("train", *TINY[:-5], "--steps", "4", "--batch-size", "4", "--quiet", "--out", str(run))
        assert code == 2, err
        _one_line(err)
        assert f"run directory {run} is in use by another process" in err, err
        assert {p.name: p.read_bytes() for p in run.iterdir()} == before
    finally:
        holder.kill(); holder.wait()
    assert _main("train", *TINY[:-5], "--steps", "4", "--batch-size", "4", "--quiet", "--out", str(run))[0] == 0


def test_a_damaged_log_is_read_up_to_the_damage(tmp_path, data_home):
    "A binary or half-written log.jsonl: train resumes (the damage cut off), figures draw, nothing fails."
    run = tmp_path / "run"
    assert _main("train", *TINY[:-5], "--steps", "4", "--batch-size", "4", "--checkpoint-every", "2", "--quiet",
                 "--out", str(run))[0] == 0
    log = (run / "log.jsonl").read_bytes()
    for damage, until in ((bytes(range(256)) * 8, 6), (b'{"step": 3, "lo', 8)):
        (run / "log.jsonl").write_bytes(log.split(b"\n")[0] + b"\n" + damage)
        code, out, err = _main("train", *TINY[:-5], "--steps", str(until), "--batch-size", "4", "--checkpoint-every",
                               "2", "--quiet", "--out", str(run))
        assert code == 0 and "Traceback" not in err, err
        steps = [json.loads(l)["step"] for l in (run / "log.jsonl").read_text().splitlines()]
        assert steps == [1, until - 1, until], steps                  # what the damage cut off is gone


def test_damaged_rows_are_left_out_of_figures_with_a_warning(tmp_path, data_home):
    "Garbage in a results row's JSON columns: `figures` draws the other runs and names the damaged one in one line."
    import sqlite3
    spec = tmp_path / "s.json"
    spec.write_text(json.dumps(dict(name="s", base=dict(dataset="xyobject", framework="betavae", latents=2, steps=2, **FC,
                                                        batch_size=4, metrics=["mig"],
                                                        metric_params=dict(mig=dict(num_train=50))),
                                    grid=dict(loss=["mse", "box_blur"]), repeats=2)))
    db = tmp_path / "s.sqlite"
    assert _main("sweep", str(spec), "--db", str(db), "--quiet")[0] == 0
    with contextlib.closing(sqlite3.connect(db)) as con:
        damaged = con.execute("SELECT id FROM runs ORDER BY rowid LIMIT 1").fetchone()[0]
        con.execute("UPDATE runs SET result='{\"final\": \"garbage' WHERE id=?", (damaged,)); con.commit()
    code, out, err = _main("figures", "--db", str(db), "--out", str(tmp_path / "figs"))
    assert code == 0, err
    _one_line(err, "disentlit: warning:")
    assert f"run {damaged} left out: its result is not JSON" in err, err
    assert (tmp_path / "figs" / "results.csv").read_text().count("\n") == 4            # the header and three runs

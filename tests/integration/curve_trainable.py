"""A command trainable with deterministic learning curves, for the scheduler
integration tests (test_asha.py), which import curve() to predict what the
scheduler must decide.

The config (RUNG_CONFIG) holds x and y in [0, 1], max_t, the last step,
and optionally stride (default 1): the program reports at the steps
stride, 2 stride, ... and at max_t (steps(config)). At step t it reports

    loss_t = f(x, y) + a(y) * exp(-t / b(x)) + 0.02 sin(1.7 t + 10 x + 6 y)

with f = 0.1 + 0.5 (x - 0.7)^2 + 0.3 (y - 0.4)^2, a = 0.2 + 0.6 y and
b = 1 + 8 x: a good x converges slowly, so curves cross and early rungs
mislead sometimes, as in the lc4 benchmark (bench/README.md); the small
wiggle makes curves non-monotone, so the best value so far is not always
the last one.

Checkpoints: before reporting step t it writes checkpoint-<t>.json into
RUNG_TRIAL_DIR (one file per step: a program told to stop or pause may run
a step or two further before SIGTERM arrives, and the step it resumes from
must still be there). With RUNG_RESUME_STEP=s > 0 it needs checkpoint-<s>
(else it prints an error to stderr and exits 1) and goes on with the steps
after s.
Each run appends {"trial_id", "start", "resume"} as a JSON line to
RUNG_TRIAL_DIR/runs.log, to $CURVE_LOG when set (a file shared by every
trial, so that its order is the order the runs started in), and prints it
as a plain log line.

Environment knobs: CURVE_SLEEP_MS, a pause after each report; CURVE_GATE, a
file path: after reporting step CURVE_GATE_STEP (default 5; a run that
does not report that step never waits) the program waits while that file
exists (at most 60 s), having written
CURVE_GATE + ".held" with its trial id, so that a test can act while a
trial is known to be in the middle of its run. SIGTERM ends it at once.

Python standard library only."""

import json
import math
import os
import signal
import sys
import time


def curve(config, t):
    """The loss at step t for config (a dict with x and y)."""
    x = float(config["x"])
    y = float(config["y"])
    final = 0.1 + 0.5 * (x - 0.7) ** 2 + 0.3 * (y - 0.4) ** 2
    return (final + (0.2 + 0.6 * y) * math.exp(-t / (1.0 + 8.0 * x))
            + 0.02 * math.sin(1.7 * t + 10.0 * x + 6.0 * y))


def steps(config):
    """The steps the program reports at, ascending."""
    max_t = int(config.get("max_t", 27))
    stride = int(config.get("stride", 1))
    out = list(range(stride, max_t + 1, stride))
    if not out or out[-1] != max_t:
        out.append(max_t)
    return out


def append_line(path, doc):
    """Appends one JSON line with a single write (O_APPEND)."""
    data = (json.dumps(doc, sort_keys=True) + "\n").encode()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def write_checkpoint(trial_dir, step, loss):
    path = os.path.join(trial_dir, "checkpoint-%d.json" % step)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"step": step, "loss": loss}, f)
    os.replace(tmp, path)  # atomic: a SIGTERM never leaves half a checkpoint


def read_checkpoint(trial_dir, step):
    """The checkpoint of step, or None when there is none at that step."""
    try:
        with open(os.path.join(trial_dir, "checkpoint-%d.json" % step)) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("step") == step else None


def hold_at_gate(trial_id):
    gate = os.environ.get("CURVE_GATE")
    if not gate or not os.path.exists(gate):
        return
    with open(gate + ".held.tmp", "w") as f:
        f.write(trial_id)
    os.replace(gate + ".held.tmp", gate + ".held")
    deadline = time.monotonic() + 60
    while os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.01)


def main():
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    config = json.loads(os.environ.get("RUNG_CONFIG") or "{}")
    trial_dir = os.environ.get("RUNG_TRIAL_DIR") or "."
    trial_id = os.environ.get("RUNG_TRIAL_ID", "?")
    sleep_s = float(os.environ.get("CURVE_SLEEP_MS") or 0) / 1000.0
    gate_step = int(os.environ.get("CURVE_GATE_STEP") or 5)
    resume = int(os.environ.get("RUNG_RESUME_STEP") or 0)

    todo = steps(config)
    if resume > 0:
        if read_checkpoint(trial_dir, resume) is None:
            sys.stderr.write("curve_trainable: RUNG_RESUME_STEP=%d but no checkpoint of step "
                             "%d in %s\n" % (resume, resume, trial_dir))
            sys.exit(1)
        todo = [t for t in todo if t > resume]
    start = todo[0] if todo else resume + 1

    run = {"trial_id": trial_id, "start": start, "resume": resume}
    append_line(os.path.join(trial_dir, "runs.log"), run)
    if os.environ.get("CURVE_LOG"):
        append_line(os.environ["CURVE_LOG"], run)
    print("curve_trainable: run " + json.dumps(run, sort_keys=True), flush=True)

    for t in todo:
        loss = curve(config, t)
        write_checkpoint(trial_dir, t, loss)
        print("@rung " + json.dumps({"step": t, "loss": loss}), flush=True)
        if t == gate_step:
            hold_at_gate(trial_id)
        if sleep_s > 0:
            time.sleep(sleep_s)


if __name__ == "__main__":
    main()

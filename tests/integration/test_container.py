"""Integration tests of container trials (docs/api.md, "trainable":
container; docs/workers.md, "Containers"): a real rungd, a real rung-worker
offering podman, and a real podman running a busybox image
(container_image.sh makes it, offline).

- A trial whose trainable names the image runs inside it: it reports, sees
  its trial folder mounted at the same path, and its variables;
- paused with `running: pause`, its container is gone (nothing left in
  `podman ps -a`); resumed, it goes on from the step its checkpoint holds;
- an image that does not exist fails the trial with an error naming it.

(Which workers get a container trial: tests/integration/test_blobs.py.)

Where podman cannot run here, the test reports Skipped with the reason.
"""

import os
import subprocess

import rungd_harness as h
import worker_harness as wh

HERE = os.path.dirname(os.path.abspath(__file__))
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"]
WORKER_ARGS = ["--container-runtime", "podman",
               "--container-arg=--runtime=runc", "--container-arg=--cgroup-manager=cgroupfs",
               "--container-run-arg=--network=none",
               "--container-run-arg=--ulimit=nofile=1024:1024",
               "--container-run-arg=--ulimit=nproc=1024:1024"]

# A busybox shell loop: resumes after the step in $RUNG_TRIAL_DIR/ckpt,
# reports each step, checkpoints it, and goes slowly enough to be paused.
LOOP = ('start=0; [ -f "$RUNG_TRIAL_DIR/ckpt" ] && start=$(cat "$RUNG_TRIAL_DIR/ckpt"); '
        'i=$((start + 1)); while [ $i -le 40 ]; do '
        'echo "@rung {\\"step\\": $i, \\"loss\\": $i, \\"seen\\": $SEEN}"; '
        'echo $i > "$RUNG_TRIAL_DIR/ckpt"; sleep 0.2; i=$((i + 1)); done')

_image = None


def image():
    """The test image's name, or skip with the reason."""
    global _image
    if _image is None:
        run = subprocess.run(["bash", os.path.join(HERE, "container_image.sh")],
                             capture_output=True, text=True, timeout=120)
        _image = (run.returncode, run.stdout.strip() or run.stderr.strip())
    if _image[0] == 77:
        raise __import__("unittest").SkipTest("podman cannot run containers here: %s" % _image[1])
    if _image[0] != 0:
        raise AssertionError("container_image.sh failed: %s" % _image[1])
    return _image[1]


def containers():
    run = subprocess.run(PODMAN + ["ps", "-a", "--format", "{{.Image}}"], capture_output=True,
                         text=True, timeout=30)
    return [line for line in run.stdout.split() if "rung-test-busybox" in line]


class ContainerCase(wh.WorkerTestCase):

    def spec(self, img, **over):
        s = h.spec(num_samples=1, max_failures=0, trainable={
            "type": "command", "argv": ["/bin/sh", "-c", LOOP], "env": {"SEEN": "7"},
            "container": {"image": img, "runtime": "podman"}})
        s.update(over)
        return s

    def test_a_container_trial_reports_pauses_and_resumes(self):
        img = image()
        d = self.daemon()
        boxed = self.worker(d, "boxed", extra=WORKER_ARGS)
        eid = d.create_experiment(self.spec(img))["id"]
        def reported():
            trials = d.all_trials(eid)
            if not trials:
                return None  # not proposed yet (a slow build)
            t = trials[0]
            if t["state"] == "failed":
                raise AssertionError("the container trial failed: %s\n%s"
                                     % (t.get("error"), t.get("log_tail")))
            return t if (t.get("step") or 0) >= 3 else None
        trial = h.wait_until(reported, 60, "the container trial to report 3 steps")
        self.assertEqual(trial["last"]["seen"], 7)  # trainable.env reached the program
        ids = self.worker_ids(d)
        self.assertEqual(trial["worker_id"], ids["boxed"], boxed.diagnostics())
        d.pause(eid, running="pause")
        h.wait_until(lambda: d.trial(trial["id"])["state"] == "paused", 30,
                     "the trial to be paused")
        h.wait_until(lambda: containers() == [], 20, "its container to be gone")
        paused_at = d.trial(trial["id"])["step"]
        d.resume(eid)
        d.wait_state(eid, "completed", timeout=90)
        steps = [m["step"] for m in d.metrics_of(trial["id"])]
        self.assertEqual(steps, list(range(1, 41)))  # each step once: it went on, not over
        self.assertGreaterEqual(paused_at, 3)
        self.assertEqual(containers(), [])

    def test_a_missing_image_fails_naming_it(self):
        image()
        d = self.daemon()
        self.worker(d, "boxed", extra=WORKER_ARGS)
        eid = d.create_experiment(self.spec("localhost/no-such-image-here"))["id"]
        d.wait_state(eid, "failed", timeout=60)
        t = d.all_trials(eid)[0]
        self.assertEqual(t["state"], "failed")
        self.assertIn("no-such-image-here", (t.get("error") or "") + (t.get("log_tail") or ""))


if __name__ == "__main__":
    h.main()

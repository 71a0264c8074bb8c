"""Integration tests of early stopping in rungd (server/asha.h): a real
experiment of a command trainable with deterministic learning curves
(curve_trainable.py) ends with exactly the trials stopped, completed,
paused and promoted that a replay of the rule predicts.

One rung-worker with one CPU slot and max_concurrent_trials 1 runs the
trials strictly one after the other, in the order the server leases them
(promoted trials first, then new trials by number). Once the experiment has
ended, the test fetches the configs the random searcher drew, computes every
curve (curve_trainable.curve) and replays the rule here, in Python written
from the rule's text (asha.h, docs/api.md; Ray Tune's ASHAScheduler and
MedianStoppingRule, the ASHA paper's promotions), independent of the C:

- asha: rungs at grace * rf^k; a report at step >= max_t completes the
  trial; else the highest rung <= step the trial has not recorded at
  records its score (-loss), and a score strictly below numpy's linear
  percentile (1 - 1/rf) of the scores recorded there before stops it.
- promote: nothing is stopped at a rung; a trial goes on only from the top
  floor(n/rf) of its rung (ties: lower number first), else it pauses;
  after every recorded value the paused trials that now rank there are
  promoted (highest rung, best score, lowest number first) to the front of
  the line; with nothing running, queued or left to start, the end game
  promotes the best paused trial in the top ceil(n/rf) at the highest rung,
  or, when none qualifies, stops every paused trial.
- median: from grace_period on, a trial whose best value so far is strictly
  worse than the median of the other trials' running means over
  [grace, t] (of trials whose last result's time >= t; at least
  min_samples_required of them) is stopped; an ended trial's last result
  counts once more (Ray's on_trial_complete).

The predictions are compared with the trials' final states, steps, rungs and
stored metrics, with the order the trainable's runs started in (a log file
shared by all trials), and with where promoted trials resumed (their
checkpoints, RUNG_RESUME_STEP). One test kills rungd with SIGKILL in the
middle and restarts it: the rung records rebuilt from the stored reports
must give the same decisions.

What this cannot see: ties (the configs are continuous, so no two values
are equal, and numpy's percentile is only checked away from ties); and the
order among promotions made by one report: with one trial at a time a
report promotes at most one trial (a paused trial can move into the top of
its rung only when the reporting trial ranks below it, and so pauses), so
what is checked is which trial is promoted when, and that promoted trials
run before new ones. The seeds were picked so that wrong variants of the
rule (another quantile, interpolation or rung choice, the cutoff taken
with the new value, promotions behind new trials, the end game's floor
instead of ceil, the median without the repeated last result, over all
trials, over all steps, or with the last value instead of the best) each
predict a different outcome.
"""

import collections
import json
import math
import os
import time

import curve_trainable as ct
import rungd_harness as h
import worker_harness as wh

TRAINABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "curve_trainable.py")
MAX_T = 27
GRACE = 1
RF = 3


# ---- the replay (the rule, from its text) ----------------------------------

def milestones(max_t, grace, rf):
    """Ray's rungs of bracket 0: grace * rf^k, k = 0 .. floor(log_rf(max_t/grace))."""
    n = int(math.log(max_t / grace) / math.log(rf) + 1)
    return [grace * rf ** k for k in range(n)]


def np_percentile_linear(values, pct):
    """numpy.percentile(values, pct) with the default (linear) method: the
    virtual index (n - 1) * q, then numpy's _lerp, which computes from the
    upper neighbour when the fraction is >= 0.5."""
    q = pct / 100.0
    s = sorted(values)
    n = len(s)
    vi = (n - 1) * q
    if vi >= n - 1:
        return s[-1]
    if vi < 0:
        return s[0]
    lo = math.floor(vi)
    g = vi - lo
    a, b = s[lo], s[lo + 1]
    d = b - a
    return b - d * (1 - g) if g >= 0.5 else a + d * g


def highest_unrecorded(ms, recorded, t):
    """Index of the highest rung <= t not in recorded, or None."""
    for k in range(len(ms) - 1, -1, -1):
        if t >= ms[k] and k not in recorded:
            return k
    return None


Outcome = collections.namedtuple("Outcome", "state step rung")
Trial = collections.namedtuple("Trial", "loss steps")  # loss(t); the steps it reports at


def replay_asha(trials, max_t, grace, rf):
    """Trials run one after the other in number order. Returns an Outcome
    per trial number (rung: the milestone that stopped it, else None)."""
    ms = milestones(max_t, grace, rf)
    pct = (1 - 1 / rf) * 100
    rungs = [[] for _ in ms]  # scores recorded at each rung, in arrival order
    out = []
    for trial in trials:
        recorded = set()
        outcome = None
        for t in trial.steps:
            loss = trial.loss(t)
            if t >= max_t:
                outcome = Outcome("completed", t, None)
                # on_trial_complete: the last result at the highest rung not yet recorded
                k = highest_unrecorded(ms, recorded, t)
                if k is not None:
                    rungs[k].append(-loss)
                break
            k = highest_unrecorded(ms, recorded, t)
            if k is None:
                continue
            score = -loss
            stop = bool(rungs[k]) and score < np_percentile_linear(rungs[k], pct)
            rungs[k].append(score)
            recorded.add(k)
            if stop:
                outcome = Outcome("stopped", t, ms[k])
                break
        out.append(outcome)
    return out


def replay_promote(trials, max_t, grace, rf):
    """The promote variant. Returns (outcomes by number, runs): runs is the
    sequence of (trial number, first step) in the order the runs start."""
    ms = milestones(max_t, grace, rf)
    n_trials = len(trials)
    recs = [dict() for _ in ms]  # rung -> {trial: score}
    recorded = [set() for _ in trials]
    paused = {}  # trial -> rung index
    last = [0] * n_trials
    outcome = [None] * n_trials
    queue = collections.deque()  # promoted trials, first to run first
    next_new = 0
    runs = []

    def rank(k, i):
        mine = recs[k][i]
        return sum(1 for j, s in recs[k].items() if s > mine or (s == mine and j < i))

    def qualifying(ceil_rule):
        """Paused trials in the top floor (ceil) of n/rf of their rung, in
        promotion order: highest rung, best score, lowest number."""
        c = []
        for i, k in paused.items():
            share = len(recs[k]) / rf
            top = math.ceil(share) if ceil_rule else math.floor(share)
            if rank(k, i) < top:
                c.append((-ms[k], -recs[k][i], i))
        return [i for _, _, i in sorted(c)]

    while True:
        if queue:
            i = queue.popleft()
        elif next_new < n_trials:
            i = next_new
            next_new += 1
        else:
            break
        todo = [t for t in trials[i].steps if t > last[i]]
        runs.append((i, todo[0]))
        for t in todo:
            last[i] = t
            loss = trials[i].loss(t)
            if t >= max_t:
                outcome[i] = Outcome("completed", t, None)
                k = highest_unrecorded(ms, recorded[i], t)
                if k is not None:
                    recs[k][i] = -loss
                    recorded[i].add(k)
                break
            k = highest_unrecorded(ms, recorded[i], t)
            if k is None:
                continue
            recs[k][i] = -loss
            recorded[i].add(k)
            pause = rank(k, i) >= math.floor(len(recs[k]) / rf)
            if pause:
                paused[i] = k
            for j in reversed(qualifying(False)):  # promotions go to the front
                del paused[j]
                queue.appendleft(j)
            if pause:
                break
        # Nothing runs now: the end game when nothing is queued or left to start.
        if not queue and next_new >= n_trials and paused:
            c = qualifying(True)
            if c:
                del paused[c[0]]
                queue.appendleft(c[0])
            else:
                for j, k in paused.items():
                    outcome[j] = Outcome("stopped", last[j], ms[k])
                paused.clear()
    return outcome, runs


def replay_median(trials, grace, min_samples):
    """Ray's MedianStoppingRule (mode min), trials one after the other."""
    results = []  # per trial: [(time, value)], in arrival order
    out = []

    def running_mean(rs, t):
        total, count = 0.0, 0
        for tt, v in rs:
            if grace <= tt <= t:
                total += v
                count += 1
        return total / count if count else None

    for i, trial in enumerate(trials):
        mine = []
        results.append(mine)
        outcome = None
        for t in trial.steps:
            mine.append((t, trial.loss(t)))
            if t < grace:
                continue
            means = []
            for j, rs in enumerate(results):
                if j == i or not rs or rs[-1][0] < t:
                    continue
                m = running_mean(rs, t)
                if m is not None:
                    means.append(m)
            if not means or len(means) < min_samples:
                continue
            means.sort()
            n = len(means)
            median = means[n // 2] if n % 2 else (means[n // 2 - 1] + means[n // 2]) / 2.0
            best = min(v for _, v in mine)
            if median < best:
                outcome = Outcome("stopped", t, None)
                break
        if outcome is None:
            outcome = Outcome("completed", trial.steps[-1], None)
        mine.append(mine[-1])  # on_trial_complete records the last result again
        out.append(outcome)
    return out


# ---- the tests ---------------------------------------------------------------

def read_json_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def search_space(max_t, strides):
    """x and y uniform on [0, 1]; the trainable's last step; its stride
    (every stride-th step is reported, and max_t), drawn from strides."""
    return {"x": {"type": "uniform", "low": 0.0, "high": 1.0},
            "y": {"type": "uniform", "low": 0.0, "high": 1.0},
            "stride": {"type": "choice", "values": list(strides)} if len(strides) > 1
            else strides[0],
            "max_t": max_t}


def replay_input(trials):
    """The curve and the steps of each trial, from its config."""
    return [Trial((lambda c: (lambda t: ct.curve(c, t)))(t["config"]), ct.steps(t["config"]))
            for t in trials]


class CurveTestCase(wh.WorkerTestCase):

    def curve_spec(self, scheduler, num_samples, seed, max_t=MAX_T, strides=(1,), sleep_ms=5,
                   env=None):
        """One worker slot, one trial at a time, the curve trainable."""
        self.run_log = os.path.join(self.tmp, "runs.log")
        s = wh.command_spec(
            [wh.PYTHON, TRAINABLE], name="curves", num_samples=num_samples,
            max_concurrent_trials=1, max_failures=0, search_space=search_space(max_t, strides),
            searcher={"type": "random", "seed": seed}, scheduler=scheduler)
        s["trainable"]["env"] = dict({"CURVE_LOG": self.run_log,
                                      "CURVE_SLEEP_MS": str(sleep_ms)}, **(env or {}))
        return s

    def trials_by_number(self, d, eid, n):
        trials = sorted(d.all_trials(eid), key=lambda t: t["number"])
        self.assertEqual([t["number"] for t in trials], list(range(n)), "trial numbers")
        return trials

    def table(self, trials, predicted):
        rows = ["number id   state/step/rung (server) vs (replay)     x      y      stride"]
        for t, p in zip(trials, predicted):
            rows.append("%4d %4d   %-9s %3s %4s  vs  %-9s %3s %4s   %.4f %.4f %d" % (
                t["number"], t["id"], t["state"], t["step"], t.get("rung"), p.state, p.step,
                p.rung, t["config"]["x"], t["config"]["y"], t["config"]["stride"]))
        return "\n".join(rows)

    def runs(self, trials):
        """The shared run log as (trial number, first step, resume step)."""
        number = {str(t["id"]): t["number"] for t in trials}
        return [(number[r["trial_id"]], r["start"], r["resume"])
                for r in read_json_lines(self.run_log)]

    def assert_one_run_each(self, trials):
        """Without promotions: one run per trial, from its first step, in
        number order."""
        self.assertEqual(self.runs(trials),
                         [(t["number"], ct.steps(t["config"])[0], 0) for t in trials],
                         "the order the trials ran in")

    def check_outcomes(self, d, eid, trials, predicted, why, check_rung=True):
        """Final states, steps, rungs, counts and stored reports match."""
        got = [(t["state"], t["step"]) for t in trials]
        want = [(p.state, p.step) for p in predicted]
        self.assertEqual(got, want, "states and end steps differ from the replay\n%s\n%s"
                         % (self.table(trials, predicted), why()))
        if check_rung:
            self.assertEqual([t.get("rung") for t in trials], [p.rung for p in predicted],
                             "the trials' rung\n%s" % self.table(trials, predicted))
        exp = d.experiment(eid)
        self.assertEqual(exp["state"], "completed", why())
        counts = collections.Counter(p.state for p in predicted)
        self.assertEqual(exp["counts"], {"pending": 0, "running": 0, "paused": 0, "preempted": 0,
                                         "completed": counts["completed"],
                                         "stopped": counts["stopped"], "failed": 0,
                                         "canceled": 0}, exp["counts"])
        self.assertEqual(exp["total_trials"], len(trials))
        # Every step up to the end was stored once, with the curve's value.
        for t, p in zip(trials, predicted):
            self.assertEqual(t["attempt"], 1, t)
            items = d.metrics_of(t["id"])
            self.assertEqual([i["step"] for i in items],
                             [s for s in ct.steps(t["config"]) if s <= p.step],
                             "stored reports of trial %d (number %d)" % (t["id"], t["number"]))
            for i in items:
                self.assertEqual(i["metrics"]["loss"], ct.curve(t["config"], i["step"]),
                                 "trial %d step %d" % (t["id"], i["step"]))
        return exp

    def assert_interesting(self, predicted, stop_steps=3):
        """The replay has trials completed and trials stopped at several
        steps, so that a scheduler that stops nothing, or everything at its
        first rung, cannot pass."""
        states = collections.Counter(p.state for p in predicted)
        self.assertGreater(states["completed"], 0, predicted)
        self.assertGreater(states["stopped"], 0, predicted)
        self.assertGreaterEqual(len({p.step for p in predicted if p.state == "stopped"}),
                                stop_steps, predicted)


class Asha(CurveTestCase):
    """1 and 2: asha (rf 3, grace 1, max_t 27, one bracket) stops exactly the
    trials the replay stops, at the same rungs, with and without a kill -9
    of rungd in the middle. A third of the trials report every third step
    only (3, 6, 9, ...): their report at 3 is scored at rung 3 (the highest
    reached), and the one at 6 at rung 1, as Ray's loop over the rungs does."""

    N = 20
    SEED = 120
    STRIDES = (1, 1, 3)
    SCHED = {"type": "asha", "time_attr": "step", "max_t": MAX_T, "grace_period": GRACE,
             "reduction_factor": RF, "brackets": 1}

    def predicted_and_check(self, d, eid, why):
        trials = self.trials_by_number(d, eid, self.N)
        predicted = replay_asha(replay_input(trials), MAX_T, GRACE, RF)
        self.assert_interesting(predicted)
        self.assertIn(3, [t["config"]["stride"] for t in trials])
        exp = self.check_outcomes(d, eid, trials, predicted, why)
        for t in trials:
            self.assertEqual(t.get("bracket"), 0, t)
        self.assert_one_run_each(trials)
        return trials, predicted, exp

    def test_asha_stops_what_the_replay_stops(self):
        d = self.daemon()
        spec = self.curve_spec(self.SCHED, self.N, self.SEED, strides=self.STRIDES)
        eid = d.create_experiment(spec)["id"]
        w = self.worker(d, "w", cpu_slots=1, once=True)
        self.assertEqual(self.wait_workers_exit([w], 90), [0], self.explain(d, w))
        self.predicted_and_check(d, eid, lambda: self.explain(d, w))

    def test_rung_records_survive_a_kill9_of_rungd(self):
        d = self.daemon(fixed_port=True)
        gate = os.path.join(self.tmp, "gate")
        spec = self.curve_spec(self.SCHED, self.N, self.SEED, strides=self.STRIDES,
                               sleep_ms=15, env={"CURVE_GATE": gate, "CURVE_GATE_STEP": "5"})
        eid = d.create_experiment(spec)["id"]
        w = self.worker(d, "w", cpu_slots=1)

        # After a few stops, hold the next trial that reports step 5 (no rung:
        # it runs on for sure, and no lease is in flight), kill rungd, let
        # the trial report into the void, and bring rungd back.
        h.wait_until(lambda: d.experiment(eid)["counts"]["stopped"] >= 3 or
                     d.experiment(eid)["state"] != "running", 60, "three trials stopped")
        with open(gate, "w"):
            pass
        h.wait_until(lambda: os.path.exists(gate + ".held") or
                     d.experiment(eid)["state"] != "running", 60,
                     "a trial to reach the gate at step 5")
        self.assertTrue(os.path.exists(gate + ".held"),
                        "the experiment ended before a trial reached step 5 after three stops;"
                        " change SEED\n" + self.explain(d, w))
        with open(gate + ".held") as f:
            tid = int(f.read())
        self.wait_trial(d, tid, lambda t: t["step"] == 5, 10,
                        "the report of step 5 of trial %d" % tid)
        before = d.experiment(eid)["counts"]
        self.assertEqual(before["running"], 1, before)
        d.kill9()
        os.remove(gate)
        time.sleep(0.5)  # reports of steps 6, 7, ... wait in the worker for the daemon
        d.restart()
        d.wait_experiment(eid, lambda e: e["state"] != "running", 60,
                          "experiment %d to end after the restart" % eid)
        self.assertTrue(w.alive(), w.diagnostics())
        trials, predicted, exp = self.predicted_and_check(d, eid, lambda: self.explain(d, w))
        # The kill was in the middle: trials had been stopped before it, and
        # the held trial and others were decided after it.
        held = [t for t in trials if t["id"] == tid][0]
        self.assertGreater(held["step"], 5, held)
        self.assertGreaterEqual(before["stopped"], 3, before)
        self.assertLess(before["stopped"] + before["completed"] + 1, self.N, before)


class Promote(CurveTestCase):
    """3: asha with promote (rf 3, grace 1, max_t 27): pauses, promotions,
    the order of the runs and the end game are the replay's; a promoted
    trial resumes from its checkpoint and reports no step twice."""

    N = 15
    SEED = 1

    def test_promote_pauses_and_promotes_what_the_replay_does(self):
        d = self.daemon()
        sched = {"type": "asha", "time_attr": "step", "max_t": MAX_T, "grace_period": GRACE,
                 "reduction_factor": RF, "brackets": 1, "promote": True}
        eid = d.create_experiment(self.curve_spec(sched, self.N, self.SEED))["id"]
        w = self.worker(d, "w", cpu_slots=1, once=True)
        self.assertEqual(self.wait_workers_exit([w], 90), [0], self.explain(d, w))
        self.assertIs(d.experiment(eid)["scheduler"].get("promote"), True)

        trials = self.trials_by_number(d, eid, self.N)
        predicted, runs = replay_promote(replay_input(trials), MAX_T, GRACE, RF)
        why = lambda: self.explain(d, w)  # noqa: E731

        # Not vacuous: trials were promoted (runs from a later step), some
        # completed, some ended paused (stopped by the end game).
        self.assertGreaterEqual(len([r for r in runs if r[1] > 1]), 3, runs)
        self.assertGreater(sum(p.state == "completed" for p in predicted), 0, predicted)
        self.assertGreater(sum(p.state == "stopped" for p in predicted), 0, predicted)

        self.check_outcomes(d, eid, trials, predicted, why)
        # The runs, first ones and promotions alike, started in the replay's
        # order, each promoted one after the step of its checkpoint.
        got = self.runs(trials)
        self.assertEqual([(i, start) for i, start, _ in got], runs,
                         "the order of the runs (trial number, first step)\n%s\n%s"
                         % (self.table(trials, predicted), why()))
        for i, start, resume in got:
            self.assertEqual(resume, start - 1, "run of trial number %d" % i)
        # Each trial's own log (in its trial folder) has the same runs.
        folder = os.path.join(self.tmp, "work-w", "trials")
        for t in trials:
            own = read_json_lines(os.path.join(folder, str(t["id"]), "runs.log"))
            self.assertEqual([(r["start"], r["resume"]) for r in own],
                             [(s, r) for i, s, r in got if i == t["number"]],
                             "runs.log of trial %d" % t["id"])


class Median(CurveTestCase):
    """4: the median stopping rule stops the trials, at the steps, that a
    replay of Ray's MedianStoppingRule stops (some trials report every
    third step only, so running means cover different steps)."""

    N = 12
    SEED = 126
    STEPS = 12
    STRIDES = (1, 1, 3)

    def test_median_stops_what_the_replay_stops(self):
        d = self.daemon()
        sched = {"type": "median", "time_attr": "step", "grace_period": 1,
                 "min_samples_required": 3}
        spec = self.curve_spec(sched, self.N, self.SEED, max_t=self.STEPS,
                               strides=self.STRIDES)
        eid = d.create_experiment(spec)["id"]
        w = self.worker(d, "w", cpu_slots=1, once=True)
        self.assertEqual(self.wait_workers_exit([w], 90), [0], self.explain(d, w))

        trials = self.trials_by_number(d, eid, self.N)
        predicted = replay_median(replay_input(trials), 1, 3)
        self.assert_interesting(predicted)
        self.check_outcomes(d, eid, trials, predicted, lambda: self.explain(d, w),
                            check_rung=False)
        self.assert_one_run_each(trials)


class PromotedQueue(h.RungdTestCase):
    """5: promoted trials that wait for their worker keep their place in
    line across a kill -9 of rungd. Two workers over HTTP, driven by the
    test: worker a pauses trials 0, 1 and 2; worker b's reports promote 1,
    then 0, then 2. A promotion goes to the front of the line, so a leases
    2, 0, 1: neither number order nor its reverse. A rungd that rebuilt the
    line in another order after a restart would resume them differently, and
    every later decision would differ from a run without the restart."""

    SCHED = {"type": "asha", "time_attr": "step", "max_t": 4, "grace_period": 1,
             "reduction_factor": 2, "brackets": 1, "promote": True}
    EXPECTED = [(2, 1), (0, 1), (1, 2)]  # (number, resume_step) in lease order

    def run_new(self, w, number, losses):
        """Leases trial `number` (a new one) on w and reports losses at
        steps 1, 2, ...; returns the last report's action."""
        t = w.lease_one()
        self.assertEqual((t["number"], t.get("resume_step")), (number, 0), t)
        action = None
        for step, loss in enumerate(losses, 1):
            action = w.report_ok(t, step, {"loss": loss})
        return action

    def promote_three(self, d):
        eid = d.create_experiment(h.spec(num_samples=12, scheduler=self.SCHED))["id"]
        a, b = h.Worker(d, "a"), h.Worker(d, "b")
        # rf 2, rungs at steps 1 and 2; a trial goes on from the top
        # floor(n/2) of a rung and pauses otherwise (the report says stop).
        # b may not take a trial a paused, so b always gets a new one.
        self.assertEqual(self.run_new(a, 0, [0.9]), "stop")  # rung 1: 0.9
        self.assertEqual(self.run_new(a, 1, [0.5, 0.45]), "stop")  # 0.5 | rung 2: 0.45
        self.assertEqual(self.run_new(a, 2, [0.92]), "stop")
        # 0.3 goes on; its 0.5 at rung 2 ranks below 1's 0.45: 1 is promoted.
        self.assertEqual(self.run_new(b, 3, [0.3, 0.5]), "stop")
        self.assertEqual(self.run_new(b, 4, [0.95]), "stop")
        # Six values at rung 1: 0's 0.9 is third, in the top 3: promoted.
        self.assertEqual(self.run_new(b, 5, [0.96]), "stop")
        self.assertEqual(self.run_new(b, 6, [0.97]), "stop")
        # Eight values: 2's 0.92 is fourth, in the top 4: promoted.
        self.assertEqual(self.run_new(b, 7, [0.98]), "stop")
        states = {t["number"]: t["state"] for t in d.all_trials(eid)}
        self.assertEqual([states[i] for i in range(8)], ["pending"] * 3 + ["paused"] * 5, states)
        return a

    def leased_by(self, w, n):
        got = []
        for _ in range(n):
            t = w.lease_one()
            got.append((t["number"], t.get("resume_step")))
        return got

    def test_promoted_trials_keep_their_order_across_a_kill9(self):
        d = self.daemon(db=os.path.join(self.tmp, "plain.db"))
        a = self.promote_three(d)
        self.assertEqual(self.leased_by(a, 3), self.EXPECTED, "without a restart")

        d = self.daemon(db=os.path.join(self.tmp, "killed.db"))
        a = self.promote_three(d)
        d.kill9()
        d.restart()
        self.assertEqual(self.leased_by(a, 3), self.EXPECTED, "after kill -9 and restart")

if __name__ == "__main__":
    wh.main()

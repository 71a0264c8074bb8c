"""A Ray Tune driver that test_compat.py kills mid-run and restores:
`python3 ray_restore.py STORAGE_PATH` runs Tuner.fit(); the trainable
sleeps a little each iteration so the driver can be killed while trials
run."""

import sys
import time

from rung.compat import tune
from rung.compat.train import RunConfig


def slow_fn(config):
    for i in range(1, 5):
        time.sleep(0.15)
        tune.report({"loss": (config["x"] - 0.6) ** 2 + 1.0 / i})


def tuner(storage):
    return tune.Tuner(slow_fn, param_space={"x": tune.uniform(0, 1)},
                      tune_config=tune.TuneConfig(
                          metric="loss", mode="min", num_samples=6, max_concurrent_trials=2,
                          search_alg=tune.BasicVariantGenerator(random_state=11)),
                      run_config=RunConfig(name="restore", storage_path=storage))


if __name__ == "__main__":
    result = tuner(sys.argv[1]).fit().get_best_result()
    print("best", result.config, result.metrics["loss"], flush=True)

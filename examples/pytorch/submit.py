#!/usr/bin/python3
"""Tunes examples/pytorch/train.py with Rung, from Python.

Bayesian search (a Gaussian process) over the learning rate, momentum,
weight decay, width and batch size of a PyTorch MLP on Fashion-MNIST, with
ASHA stopping the poor trials at epochs 1 and 3 of 9. Start a rungd and a
rung-worker first (examples/pytorch/README.md), then:

    /usr/bin/python3 examples/pytorch/submit.py            # 16 trials
    /usr/bin/python3 examples/pytorch/submit.py --trials 40 --epochs 27

It submits the experiment, follows it until it ends, and prints the best
trial's config and val_loss, then the trials as a table. `--server` (or
$RUNG_SERVER) names the daemon, as for the `rung` command.

The trials run train.py with the interpreter running this script
(sys.executable): it must have PyTorch (Debian's python3-torch:
/usr/bin/python3).
"""

import argparse
import os
import sys

try:
    import rung
except ImportError:
    # Not installed (pip install ./python): the copy in this repository.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                    "..", "..", "python"))
    import rung
from rung import search

TRAIN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "train.py")


def parse_args():
    p = argparse.ArgumentParser(description="Tunes examples/pytorch/train.py with Rung.")
    p.add_argument("--server", default=None,
                   help="rungd's address (default $RUNG_SERVER, else http://127.0.0.1:8080)")
    p.add_argument("--trials", type=int, default=16, help="trials in all (default 16)")
    p.add_argument("--epochs", type=int, default=9,
                   help="epochs of a trial that ASHA never stops: its max_t (default 9)")
    p.add_argument("--concurrent", type=int, default=2,
                   help="trials running at a time at most (default 2)")
    p.add_argument("--train-samples", type=int, default=20000,
                   help="training images of each trial (default 20000 of 60000)")
    p.add_argument("--val-samples", type=int, default=5000,
                   help="validation images, from the test set (default 5000)")
    p.add_argument("--seed", type=int, default=1, help="the searcher's seed (default 1)")
    p.add_argument("--promote", action="store_true",
                   help="ASHA's promotion variant: trials pause at a rung and resume "
                        "from their checkpoint when promoted")
    p.add_argument("--timeout", type=float, default=None,
                   help="give up waiting after this many seconds")
    return p.parse_args()


def main():
    args = parse_args()
    exp = rung.Experiment(
        name="fmnist-pytorch",
        trainable=TRAIN,  # runs [sys.executable, TRAIN] in the worker
        param_space={
            "lr": search.loguniform(1e-3, 0.5),
            "momentum": search.uniform(0.5, 0.99),
            "weight_decay": search.loguniform(1e-6, 1e-2),
            "hidden": search.choice([32, 64, 128, 256]),
            "batch_size": search.choice([32, 64, 128, 256]),
            # Constants reach train.py's rung.config() like the rest.
            "epochs": args.epochs,
            "train_samples": args.train_samples,
            "val_samples": args.val_samples,
        },
        metric="val_loss",
        mode="min",
        searcher={"type": "bayes", "seed": args.seed},
        scheduler={"type": "asha", "time_attr": "step", "max_t": args.epochs,
                   "grace_period": 1, "reduction_factor": 3, "promote": args.promote},
        num_samples=args.trials,
        max_concurrent_trials=args.concurrent,
        client=rung.Client(args.server),
    )
    exp.submit()
    print("experiment %d submitted to %s" % (exp.id, exp.client.server), flush=True)

    try:
        final = exp.wait(progress=True, timeout=args.timeout)
    except rung.ExperimentFailed as e:
        sys.exit("experiment %d failed: %s" % (exp.id, e.experiment.get("error")))

    counts = final["counts"]
    print("experiment %d %s: %d completed, %d stopped early by ASHA, %d failed"
          % (exp.id, final["state"], counts["completed"], counts["stopped"], counts["failed"]))
    best = exp.best()
    if best is None:
        sys.exit("no trial reported val_loss")
    print("best trial %d: val_loss %.4f at epoch %s" % (best.trial_id, best.value, best.step))
    print("best config: %s" % best.config)

    # The trials as a table (Experiment.dataframe() when pandas is there).
    try:
        df = exp.dataframe()
    except ImportError:
        return
    cols = ["id", "state", "lr", "momentum", "weight_decay", "hidden", "batch_size", "steps",
            "best_value", "last.val_acc"]
    print(df.sort_values("best_value")[[c for c in cols if c in df.columns]]
          .to_string(index=False, float_format=lambda v: "%.4g" % v))


if __name__ == "__main__":
    main()

# The same search with Ray Tune, line by line (for comparison; Rung needs
# none of it). In Ray the trainable is a function that Ray calls in its own
# worker processes; in Rung it is train.py, a program that rung-worker runs,
# so it also runs by hand.
#
#   from ray import tune
#   from ray.tune.schedulers import ASHAScheduler
#   from ray.tune.search.optuna import OptunaSearch  # Ray has no GP search that
#                                                    # takes choice(); TPE instead
#
#   def train_fn(config):                    # train.py's main(), where
#       cfg = {**DEFAULTS, **config}         #   cfg = rung.config(DEFAULTS)
#       ...                                  #   the same training loop
#       tune.report(val_loss=val_loss,       #   rung.report(step=epoch,
#                   val_acc=val_acc)         #       val_loss=val_loss, val_acc=val_acc)
#       # checkpoints: ray.train.Checkpoint  #   torch.save(..., rung.checkpoint_dir())
#       # and tune.get_checkpoint()          #   and rung.resume_step()
#
#   tuner = tune.Tuner(
#       tune.with_resources(train_fn, {"cpu": 1}),      # trainable=TRAIN
#                                                       # (resources_per_trial: 1 CPU by default)
#       param_space={
#           "lr": tune.loguniform(1e-3, 0.5),           # search.loguniform(1e-3, 0.5)
#           "momentum": tune.uniform(0.5, 0.99),        # search.uniform(0.5, 0.99)
#           "weight_decay": tune.loguniform(1e-6, 1e-2),
#           "hidden": tune.choice([32, 64, 128, 256]),  # search.choice([32, 64, 128, 256])
#           "batch_size": tune.choice([32, 64, 128, 256]),
#           "epochs": 9, "train_samples": 20000, "val_samples": 5000,
#       },
#       tune_config=tune.TuneConfig(
#           metric="val_loss", mode="min",              # metric="val_loss", mode="min"
#           search_alg=OptunaSearch(seed=1),            # searcher={"type": "bayes", "seed": 1}
#           scheduler=ASHAScheduler(                    # scheduler={"type": "asha",
#               time_attr="training_iteration",         #   "time_attr": "step",
#               max_t=9, grace_period=1,                #   "max_t": 9, "grace_period": 1,
#               reduction_factor=3),                    #   "reduction_factor": 3}
#           num_samples=16,                             # num_samples=16
#           max_concurrent_trials=2,                    # max_concurrent_trials=2
#       ),
#   )
#   results = tuner.fit()                               # exp.submit(); exp.wait(progress=True)
#   best = results.get_best_result()                    # best = exp.best()
#   print(best.config, best.metrics["val_loss"])        # best.config, best.value
#   df = results.get_dataframe()                        # exp.dataframe()

"""rung.convert: W&B sweep configs and Ray Tune param spaces as Rung specs.

The W&B fixtures under fixtures/ are the examples of W&B's documentation
(docs.wandb.ai, "Define a sweep configuration"); the Ray spaces are those of
Ray Tune's documentation ("Tune Search Space API", "Working with Tune
Search Spaces"), written with rung.search. Ray itself is not installed
here: small stand-ins with the class names and attributes of
ray/tune/search/sample.py test how Ray's own domain objects are read, and a
test with the real Ray runs where it is installed. With RUNGD set (ctest
sets it), the converted specs are also submitted to a real rungd, which
must accept them.
"""

from __future__ import annotations

import importlib.util
import math
import os
import shutil
import sys
import tempfile
import unittest
from typing import Any, Optional

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

from rung import search as tune  # noqa: E402  (Ray's spelling: `from ray import tune`)
from rung._yaml import load_yaml  # noqa: E402
from rung.convert import from_ray_param_space, from_wandb, wandb_to_spec  # noqa: E402

FIXTURES = os.path.join(HERE, "fixtures")


def fixture(name: str) -> dict:
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as f:
        return load_yaml(f.read())


def args(names: list[str], prefix: str = "--") -> list[str]:
    return [f"{prefix}{n}={{{n}}}" for n in names]


class WandbDocExamplesTest(unittest.TestCase):
    """W&B's documented sweeps, converted whole."""

    def test_basic_structure_example(self) -> None:
        spec = wandb_to_spec(fixture("wandb_sweepdemo.yaml"))
        self.assertEqual(spec, {
            "name": "sweepdemo",
            "metric": "validation_loss",
            "mode": "min",
            "search_space": {
                "learning_rate": {"type": "uniform", "low": 0.0001, "high": 0.1},
                "batch_size": {"type": "choice", "values": [16, 32, 64]},
                "epochs": {"type": "choice", "values": [5, 10, 15]},
                "optimizer": {"type": "choice", "values": ["adam", "sgd"]},
            },
            "searcher": {"type": "bayes"},
            "trainable": {"type": "command", "argv": ["python3", "train.py"] + args(
                ["learning_rate", "batch_size", "epochs", "optimizer"])},
        })

    def test_random_example(self) -> None:
        spec = wandb_to_spec(fixture("wandb_random.yaml"))
        self.assertEqual(spec["search_space"], {
            # q_log_uniform_values with an integer q: W&B gives integers.
            "batch_size": {"type": "qlograndint", "low": 32, "high": 256, "q": 8},
            "dropout": {"type": "choice", "values": [0.3, 0.4, 0.5]},
            "epochs": 1,
            "fc_layer_size": {"type": "choice", "values": [128, 256, 512]},
            "learning_rate": {"type": "uniform", "low": 0, "high": 0.1},
            "optimizer": {"type": "choice", "values": ["adam", "sgd"]},
        })
        self.assertEqual(spec["searcher"], {"type": "random"})
        self.assertEqual(spec["num_samples"], 20)  # run_cap
        self.assertEqual((spec["metric"], spec["mode"]), ("loss", "min"))
        self.assertNotIn("scheduler", spec)

    def test_bayes_hyperband_example(self) -> None:
        spec = wandb_to_spec(fixture("wandb_bayes_hyperband.yaml"))
        # s: 2, eta: 3, max_iter: 27: W&B's brackets are 27/3 = 9 and 9/3 = 3,
        # and no run ends at any of them but by the rule.
        self.assertEqual(spec["scheduler"], {"type": "asha", "grace_period": 3,
                                             "reduction_factor": 3, "max_t": 9,
                                             "end_at_max_t": False})
        self.assertEqual(spec["search_space"]["decay"],
                         {"type": "choice", "values": [1e-5, 1e-6, 1e-7]})
        self.assertEqual(spec["search_space"]["epochs"], 27)
        self.assertEqual(spec["searcher"], {"type": "bayes"})
        self.assertNotIn("num_samples", spec)  # no run_cap

    def test_nested_example_is_refused(self) -> None:
        with self.assertRaisesRegex(ValueError, r"^parameters\.nested_category_1\.parameters: "
                                    r"nested parameters .* not supported by Rung yet"):
            wandb_to_spec(fixture("wandb_nested.yaml"))

    def test_macro_example_is_refused(self) -> None:
        # Its custom macros name batch_size and optimizer, which the sweep
        # does not define: W&B would pass them through unreplaced.
        with self.assertRaisesRegex(ValueError, r"^command\[3\]: \$\{batch_size\} is neither"):
            wandb_to_spec(fixture("wandb_command_macros.yaml"))
        sweep = fixture("wandb_command_macros.yaml")
        sweep["parameters"]["batch_size"] = {"values": [16, 32]}
        sweep["parameters"]["optimizer"] = {"values": ["adam", "sgd"]}
        spec = wandb_to_spec(sweep)
        self.assertEqual(spec["trainable"]["argv"],
                         ["python3", "run.py", "--batch_size={batch_size}",
                          "--optimizer={optimizer}", "--test=True"])

    def test_grid_min_iter(self) -> None:
        spec = wandb_to_spec(fixture("wandb_grid_min_iter.yaml"))
        self.assertEqual(spec["search_space"], {
            "optimizer": {"type": "grid", "values": ["adam", "sgd"]},
            "layers": {"type": "grid", "values": [1, 2, 3]},  # int_uniform: max included
            "dropout": {"type": "grid", "values": [0.1, 0.2, 0.3]},  # arange: max excluded
            "epochs": 81,
        })
        self.assertEqual(spec["searcher"], {"type": "grid"})
        self.assertEqual(spec["num_samples"], 1)
        self.assertEqual(spec["mode"], "max")
        self.assertEqual(spec["stop"], {"metric_threshold": 0.99})  # metric.target
        scheduler = spec["scheduler"]
        self.assertEqual(scheduler["grace_period"], 3)
        self.assertEqual(scheduler["reduction_factor"], 3)
        # No max_iter: max_t lies on the rungs, past 10^9, within 40 rungs.
        rungs = math.log(scheduler["max_t"] / 3, 3)
        self.assertAlmostEqual(rungs, round(rungs))
        self.assertLessEqual(rungs, 40)
        self.assertGreater(scheduler["max_t"], 1e9)
        self.assertEqual(spec["trainable"]["argv"], ["python3", "train.py"] + args(
            ["optimizer", "layers", "dropout", "epochs"], prefix=""))


def sweep(**params: Any) -> dict:
    return {"method": "random", "metric": {"name": "loss"}, "parameters": params}


def domain(param: dict, method: str = "random") -> Any:
    s = sweep(x=param)
    s["method"] = method
    return wandb_to_spec(s)["search_space"]["x"]


class WandbDistributionTest(unittest.TestCase):
    """Each W&B distribution (sweep-config-keys, "Distribution options")."""

    def test_random_and_bayes(self) -> None:
        e = math.exp
        cases = [
            ({"value": 3}, 3),
            ({"distribution": "constant", "value": "adam"}, "adam"),
            ({"value": [1, 2]}, [1, 2]),
            ({"value": {"layers": 2}}, {"type": "grid", "values": [{"layers": 2}]}),
            ({"values": [1, "a", True]}, {"type": "choice", "values": [1, "a", True]}),
            ({"distribution": "categorical", "values": [0.5]}, {"type": "choice",
                                                               "values": [0.5]}),
            ({"min": 1, "max": 10}, {"type": "randint", "low": 1, "high": 11}),
            ({"distribution": "int_uniform", "min": -3, "max": 3},
             {"type": "randint", "low": -3, "high": 4}),
            ({"min": 0, "max": 0.5}, {"type": "uniform", "low": 0, "high": 0.5}),
            ({"distribution": "uniform", "min": 1, "max": 2},
             {"type": "uniform", "low": 1, "high": 2}),
            ({"distribution": "q_uniform", "min": 0.0, "max": 1.0, "q": 0.25},
             {"type": "quniform", "low": 0.0, "high": 1.0, "q": 0.25}),
            ({"distribution": "q_uniform", "min": 0.0, "max": 1.0},
             {"type": "quniform", "low": 0.0, "high": 1.0, "q": 1}),
            ({"distribution": "q_uniform", "min": 0, "max": 100, "q": 10},
             {"type": "qrandint", "low": 0, "high": 100, "q": 10}),
            ({"distribution": "log_uniform_values", "min": 1e-4, "max": 1e-1},
             {"type": "loguniform", "low": 1e-4, "high": 1e-1}),
            ({"distribution": "log_uniform", "min": -9.2, "max": -2.3},
             {"type": "loguniform", "low": e(-9.2), "high": e(-2.3)}),
            ({"distribution": "q_log_uniform_values", "min": 32, "max": 256, "q": 8},
             {"type": "qlograndint", "low": 32, "high": 256, "q": 8}),
            # W&B's example: 139.0 and 256 unreachable before; integers to 256 now.
            ({"distribution": "q_log_uniform_values", "min": 32, "max": 256, "q": 1},
             {"type": "qlograndint", "low": 32, "high": 256, "q": 1}),
            # Bounds rounded to the multiples of q W&B can draw.
            ({"distribution": "q_log_uniform_values", "min": 30, "max": 250, "q": 8},
             {"type": "qlograndint", "low": 32, "high": 248, "q": 8}),
            ({"distribution": "q_log_uniform_values", "min": 32, "max": 256},
             {"type": "qloguniform", "low": 32, "high": 256, "q": 1.0}),
            ({"distribution": "q_log_uniform_values", "min": 0.001, "max": 0.1, "q": 0.001},
             {"type": "qloguniform", "low": 0.001, "high": 0.1, "q": 0.001}),
            # exp(1) = 2.72 and exp(3) = 20.1 round to 2 and 20.
            ({"distribution": "q_log_uniform", "min": 1, "max": 3, "q": 2},
             {"type": "qlograndint", "low": 2, "high": 20, "q": 2}),
            ({"distribution": "q_log_uniform", "min": 0, "max": 3, "q": 0.5},
             {"type": "qloguniform", "low": 1.0, "high": e(3), "q": 0.5}),
            ({"distribution": "q_uniform", "min": 0.5, "max": 10.5, "q": 1},
             {"type": "qrandint", "low": 0, "high": 10, "q": 1}),
            ({"distribution": "normal", "mu": 1, "sigma": 0.5},
             {"type": "normal", "mean": 1, "sd": 0.5}),
            ({"distribution": "normal"}, {"type": "normal", "mean": 0.0, "sd": 1.0}),
            ({"distribution": "q_normal", "mu": 10, "sigma": 3, "q": 2},
             {"type": "qnormal", "mean": 10, "sd": 3, "q": 2}),
            ({"distribution": "inv_log_uniform", "min": 1, "max": 5},
             {"type": "loguniform", "low": e(-5), "high": e(-1)}),
            ({"distribution": "inv_log_uniform_values", "min": 0.01, "max": 1},
             {"type": "loguniform", "low": 0.01, "high": 1}),
        ]
        for param, expected in cases:
            with self.subTest(param=param):
                self.assertEqual(domain(param), expected)
                s = sweep(x=param)
                s["method"] = "bayes"
                self.assertEqual(wandb_to_spec(s)["search_space"]["x"], expected)

    def test_grid(self) -> None:
        self.assertEqual(domain({"values": [1, None, [2]]}, "grid"),
                         {"type": "grid", "values": [1, None, [2]]})
        self.assertEqual(domain({"value": 0.5}, "grid"), 0.5)
        self.assertEqual(domain({"min": 2, "max": 5}, "grid"),
                         {"type": "grid", "values": [2, 3, 4, 5]})
        self.assertEqual(domain({"distribution": "q_uniform", "min": 0, "max": 10, "q": 5},
                                "grid"), {"type": "grid", "values": [0, 5]})
        self.assertEqual(domain({"distribution": "q_uniform", "min": 0.1, "max": 0.35,
                                 "q": 0.1}, "grid"), {"type": "grid", "values": [0.1, 0.2, 0.3]})

    def test_no_rung_domain_yet(self) -> None:
        for dist, words in [("log_normal", "log-normal"),
                            ("q_log_normal", "quantized log-normal"), ("beta", "beta"),
                            ("q_beta", "quantized beta")]:
            with self.subTest(distribution=dist):
                with self.assertRaisesRegex(ValueError, rf"^parameters\.x\.distribution: {dist}: "
                                            rf"Rung has no {words} domain yet"):
                    domain({"distribution": dist, "mu": 0, "sigma": 1} if "beta" not in dist
                           else {"distribution": dist})


class WandbRefusalTest(unittest.TestCase):
    """Every refusal names the field at fault."""

    def refuse(self, config: dict, field: str, words: str = "") -> None:
        with self.assertRaises(ValueError) as ctx:
            wandb_to_spec(config)
        message = str(ctx.exception)
        self.assertTrue(message.startswith(field + ": "), message)
        self.assertIn(words, message)

    def test_refusals(self) -> None:
        base = sweep(x={"values": [1, 2]})
        cases = [
            ({**base, "bogus": 1}, "bogus", "not a key of a W&B sweep config"),
            ({**base, "job": "j"}, "job", "Launch"),
            ({**base, "image_uri": "i"}, "image_uri", "Launch"),
            ({**base, "metrics": [{"name": "a"}, {"name": "b"}]}, "metrics", "one metric"),
            ({**base, "scheduler": {"engine": "optuna"}}, "scheduler", "engines"),
            ({**base, "method": "custom"}, "method", "grid, random or bayes"),
            ({k: v for k, v in base.items() if k != "method"}, "method", "required"),
            ({**base, "parameters": {}}, "parameters", "at least one"),
            ({**base, "name": 5}, "name", "string"),
            ({**base, "metric": {"name": "a", "goal": "up"}}, "metric.goal", "minimize"),
            ({**base, "metric": {"goal": "minimize"}}, "metric.name", "required"),
            ({**base, "metric": {"name": "a", "extra": 1}}, "metric.extra", "not a key"),
            ({**base, "metric": {"name": "a", "impute": "best"}}, "metric.impute", "worst"),
            ({**base, "metric": {"name": "a", "impute_while_running": "latest"}},
             "metric.impute_while_running", "not supported"),
            ({**base, "metric": {"name": "a", "target": "high"}}, "metric.target", "number"),
            ({"method": "bayes", "parameters": base["parameters"]}, "metric", "bayes"),
            (sweep(x=3), "parameters.x", "mapping"),
            (sweep(x={}), "parameters.x", "needs values"),
            (sweep(x={"values": [1], "probabilities": [1.0]}), "parameters.x.probabilities",
             "equal probability"),
            (sweep(x={"values": [[1], 2]}), "parameters.x.values[0]", "numbers, strings"),
            (sweep(x={"values": []}), "parameters.x.values", "non-empty"),
            (sweep(x={"distribution": "gamma"}), "parameters.x.distribution",
             "not a W&B distribution"),
            (sweep(x={"distribution": "uniform", "min": 0, "max": 1, "q": 2}), "parameters.x.q",
             "takes min, max"),
            (sweep(x={"distribution": "uniform", "min": 0}), "parameters.x.max", "required"),
            (sweep(x={"min": 1, "max": 1.0}), "parameters.x.max", "greater than min"),
            (sweep(x={"min": 3, "max": 1}), "parameters.x.max", ">= min"),
            (sweep(x={"distribution": "int_uniform", "min": 0.5, "max": 3}), "parameters.x.min",
             "integer"),
            (sweep(x={"min": "a", "max": 1}), "parameters.x.min", "number"),
            (sweep(x={"distribution": "q_uniform", "min": 0, "max": 1, "q": 0}),
             "parameters.x.q", "> 0"),
            (sweep(x={"distribution": "log_uniform_values", "min": 0, "max": 1}),
             "parameters.x.min", "> 0"),
            (sweep(x={"distribution": "log_uniform", "min": 0, "max": 1000}),
             "parameters.x.max", "exp(1000)"),
            ({**base, "method": "grid", "parameters": {"x": {"min": 0.0, "max": 1.0}}},
             "parameters.x.distribution", "method grid"),
            ({**base, "method": "grid", "run_cap": 1}, "run_cap", "2 combinations"),
            ({**base, "run_cap": 0}, "run_cap", ">= 1"),
            ({**base, "run_cap": 2.5}, "run_cap", "integer"),
            ({**base, "early_terminate": {"type": "median"}}, "early_terminate.type",
             "hyperband"),
            ({**base, "early_terminate": {"type": "hyperband", "min_iter": 3, "strict": False}},
             "early_terminate.strict", "lenient rule"),
            ({**base, "early_terminate": {"type": "hyperband", "min_iter": 3, "strict": "no"}},
             "early_terminate.strict", "boolean"),
            (sweep(x={"distribution": "q_log_uniform_values", "min": 0.2, "max": 9, "q": 1}),
             "parameters.x.min", "rounds to 0"),
            (sweep(x={"distribution": "normal", "sigma": 0}), "parameters.x.sigma", "> 0"),
            (sweep(x={"min": 0, "max": 2 ** 63 - 1}), "parameters.x", "2^53"),
            ({**base, "method": "grid", "parameters": {"x": {
                "distribution": "q_uniform", "min": -2 ** 63 + 1, "max": 2 ** 63 - 1, "q": 1}}},
             "parameters.x", "grid values"),
            (sweep(x={"distribution": "q_uniform", "min": -1e300, "max": 1, "q": 1}),
             "parameters.x.min", "2^53"),
            ({**base, "early_terminate": {"type": "hyperband", "min_iter": 3, "eta": 1}},
             "early_terminate.eta", "> 1"),
            ({**base, "early_terminate": {"type": "hyperband", "max_iter": 27}},
             "early_terminate.s", "needs s"),
            ({**base, "early_terminate": {"type": "hyperband"}}, "early_terminate.min_iter",
             "needs min_iter"),
            ({**base, "early_terminate": {"type": "hyperband", "min_iter": 9, "max_iter": 3}},
             "early_terminate.max_iter", ">= min_iter"),
            ({**base, "early_terminate": {"type": "hyperband", "max_iter": 2, "s": 1}},
             "early_terminate.s", "no bracket"),
            ({**base, "early_terminate": {"type": "hyperband", "min_iter": 3, "when": 1}},
             "early_terminate.when", "not a key"),
            ({"method": "random", "parameters": base["parameters"],
              "early_terminate": {"type": "hyperband", "min_iter": 3}}, "metric",
             "early_terminate"),
            ({**base, "program": 3}, "program", "file name"),
            ({**base, "command": "python train.py"}, "command", "list"),
            ({**base, "command": ["${env}"]}, "command", "nothing to run"),
            ({**base, "command": ["${interpreter}", "${program}"]}, "command[1]", "no program"),
            ({**base, "command": ["python", "${args_json}"]}, "command[1]", "RUNG_CONFIG"),
            ({**base, "command": ["python", "${args_json_file}"]}, "command[1]", "RUNG_CONFIG"),
            ({**base, "command": ["python", "--home=${envvar:HOME}"]}, "command[1]",
             "without a shell"),
            ({**base, "command": ["python", "x${args}"]}, "command[1]", "whole command item"),
            ({**base, "command": ["python", "${args_no_boolean_flags}"],
              "parameters": {"flag": {"values": [True, False]}}}, "command[1]", "flag"),
            ({**base, "command": ["python", None]}, "command[1]", "string"),
        ]
        for config, field, words in cases:
            with self.subTest(field=field, words=words):
                self.refuse(config, field, words)

    def test_not_a_mapping(self) -> None:
        with self.assertRaisesRegex(ValueError, "mapping"):
            wandb_to_spec(["method", "grid"])  # type: ignore[arg-type]


class WandbMappingTest(unittest.TestCase):
    """The keys that map one to one, and what is left out."""

    def test_ignored_service_keys(self) -> None:
        s = sweep(x={"values": [1]})
        s.update(entity="me", project="p", description="d", controller={"type": "local"},
                 apiVersion="v1", kind="sweep")
        self.assertEqual(set(wandb_to_spec(s)), {"metric", "mode", "search_space", "searcher"})

    def test_metric(self) -> None:
        s = sweep(x={"values": [1]})
        s["metric"] = {"name": "acc", "goal": "maximize", "target": 0.9, "impute": "worst",
                       "impute_while_running": "false"}
        spec = wandb_to_spec(s)
        self.assertEqual((spec["metric"], spec["mode"], spec["stop"]),
                         ("acc", "max", {"metric_threshold": 0.9}))
        self.assertEqual(list(spec)[-1], "stop")

    def test_hyperband_both_bounds(self) -> None:
        s = sweep(x={"values": [1]})
        s["early_terminate"] = {"type": "hyperband", "min_iter": 2, "max_iter": 50, "eta": 2}
        self.assertEqual(wandb_to_spec(s)["scheduler"],
                         {"type": "asha", "grace_period": 2, "reduction_factor": 2, "max_t": 50,
                          "end_at_max_t": False})
        # max_iter and s: W&B's brackets are int(100/3) = 33 and int(33.3/3) = 11,
        # and 33 is the top rung (max_iter itself is none).
        s["early_terminate"] = {"type": "hyperband", "max_iter": 100, "s": 2}
        self.assertEqual(wandb_to_spec(s)["scheduler"],
                         {"type": "asha", "grace_period": 11, "reduction_factor": 3,
                          "max_t": 33, "end_at_max_t": False})
        # strict true, W&B's default, is Rung's rule.
        s["early_terminate"]["strict"] = True
        self.assertEqual(wandb_to_spec(s)["scheduler"]["max_t"], 33)

    def test_commands(self) -> None:
        s = sweep(lr={"min": 0.0, "max": 1.0}, flag={"values": [True, False]})
        s["program"] = "train.py"
        s["command"] = ["${env}", "${interpreter}", "${program}", "--lr=${lr}", "${args}",
                        "${args_no_hyphens}", "--epochs", 3]
        self.assertEqual(wandb_to_spec(s)["trainable"]["argv"],
                         ["python3", "train.py", "--lr={lr}", "--lr={lr}", "--flag={flag}",
                          "lr={lr}", "flag={flag}", "--epochs", "3"])
        s = sweep(lr={"min": 0.0, "max": 1.0})
        s["command"] = ["/usr/bin/python3", "t.py", "${args_no_boolean_flags}"]
        self.assertEqual(wandb_to_spec(s)["trainable"]["argv"],
                         ["/usr/bin/python3", "t.py", "--lr={lr}"])
        self.assertNotIn("trainable", wandb_to_spec(sweep(lr={"values": [1]})))


class FromWandbTest(unittest.TestCase):
    """from_wandb builds an Experiment (not submitted: no daemon needed)."""

    def test_from_file(self) -> None:
        path = os.path.join(FIXTURES, "wandb_random.yaml")
        exp = from_wandb(path)
        spec = exp.spec()
        self.assertIsNone(exp.id)
        self.assertEqual(spec["name"], "wandb_random")  # the file's stem
        self.assertEqual(spec["num_samples"], 20)
        self.assertEqual(spec["search_space"], wandb_to_spec(fixture("wandb_random.yaml"))[
            "search_space"])
        self.assertEqual(spec["trainable"]["argv"][:2], ["python3", "train.py"])
        self.assertEqual(spec["trainable"]["cwd"], FIXTURES)  # where W&B's agent would run

    def test_keyword_arguments_win(self) -> None:
        exp = from_wandb(os.path.join(FIXTURES, "wandb_sweepdemo.yaml"), num_samples=12,
                         name="demo", trainable=["python3", "other.py"], max_concurrent_trials=2)
        spec = exp.spec()
        self.assertEqual((spec["name"], spec["num_samples"], spec["max_concurrent_trials"]),
                         ("demo", 12, 2))
        self.assertEqual(spec["trainable"], {"type": "command", "argv": ["python3", "other.py"]})
        self.assertEqual(spec["searcher"], {"type": "bayes"})

    def test_from_dict(self) -> None:
        s = sweep(x={"values": [1, 2]})
        s["run_cap"] = 4
        s["name"] = "from-a-dict"
        exp = from_wandb(s, trainable={"type": "external"})
        self.assertEqual(exp.spec()["name"], "from-a-dict")
        self.assertNotIn("cwd", exp.spec()["trainable"])

    def test_what_it_needs(self) -> None:
        with self.assertRaisesRegex(ValueError, r"^run_cap: .*num_samples="):
            from_wandb(os.path.join(FIXTURES, "wandb_sweepdemo.yaml"))
        with self.assertRaisesRegex(ValueError, r"^program: .*trainable="):
            from_wandb(sweep(x={"values": [1]}), num_samples=2)
        with self.assertRaisesRegex(ValueError, r"^metric: .*metric="):
            from_wandb({"method": "grid", "parameters": {"x": {"values": [1]}}},
                       trainable=["true"])
        with self.assertRaisesRegex(ValueError, r"^parameters\.nested_category_1\.parameters: "):
            from_wandb(os.path.join(FIXTURES, "wandb_nested.yaml"))
        with self.assertRaises(TypeError):
            from_wandb(42)  # type: ignore[arg-type]

    def test_bad_yaml_names_file_and_line(self) -> None:
        folder = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, folder)
        path = os.path.join(folder, "sweep.yaml")
        with open(path, "w", encoding="utf-8") as f:
            f.write("method: random\nmethod: grid\n")
        with self.assertRaisesRegex(ValueError, r"sweep\.yaml: line 2: duplicate key 'method'"):
            from_wandb(path)


# ---------------------------------------------------------------------------
# Ray Tune.


class RayDocExamplesTest(unittest.TestCase):
    """Ray Tune's documented param spaces, written with rung.search."""

    def test_search_space_api_example(self) -> None:
        # "Tune Search Space API": every function Rung has a domain for.
        config = {
            "uniform": tune.uniform(-5, -1),
            "quniform": tune.quniform(3.2, 5.4, 0.2),
            "loguniform": tune.loguniform(1e-4, 1e-2),
            "qloguniform": tune.qloguniform(1e-4, 1e-1, 5e-5),
            "randn": tune.randn(10, 2),
            "qrandn": tune.qrandn(10, 2, 0.2),
            "randint": tune.randint(-9, 15),
            "qrandint": tune.qrandint(-21, 12, 3),
            "lograndint": tune.lograndint(1, 10),
            "qlograndint": tune.qlograndint(1, 10, 2),
            "choice": tune.choice(["a", "b", "c"]),
            "grid": tune.grid_search([32, 64, 128]),
        }
        space = from_ray_param_space(config)
        self.assertEqual(space, config)  # the API's domains pass through
        self.assertEqual(space["randint"], {"type": "randint", "low": -9, "high": 15})
        # Ray's names and argument order, the API's spelling.
        self.assertEqual(space["randn"], {"type": "normal", "mean": 10, "sd": 2})
        self.assertEqual(tune.randn(), {"type": "normal", "mean": 0.0, "sd": 1.0})
        self.assertEqual(space["qrandn"], {"type": "qnormal", "mean": 10, "sd": 2, "q": 0.2})
        self.assertEqual(tune.qnormal(1, 2, 0.5), {"type": "qnormal", "mean": 1, "sd": 2,
                                                   "q": 0.5})
        self.assertEqual(space["qlograndint"], {"type": "qlograndint", "low": 1, "high": 10,
                                                "q": 2})
        self.assertEqual(space["grid"], {"type": "grid", "values": [32, 64, 128]})

    def test_tutorial_examples(self) -> None:
        # "Working with Tune Search Spaces".
        self.assertEqual(from_ray_param_space({"bar": tune.grid_search([True, False])}),
                         {"bar": {"type": "grid", "values": [True, False]}})
        space = from_ray_param_space({
            "param1": tune.choice([True, False]),
            "bar": tune.uniform(0, 10),
            "const": "hello",  # "It is also ok to specify constant values."
        })
        self.assertEqual(space, {"param1": {"type": "choice", "values": [True, False]},
                                 "bar": {"type": "uniform", "low": 0, "high": 10},
                                 "const": "hello"})
        # What Ray's own tune.grid_search returns is a plain dict.
        self.assertEqual(from_ray_param_space({"x": {"grid_search": [1, 2, 3, 4]}}),
                         {"x": {"type": "grid", "values": [1, 2, 3, 4]}})

    def test_constants(self) -> None:
        self.assertEqual(from_ray_param_space({"a": 1, "b": 2.5, "c": None, "d": [1, (2, 3)],
                                               "e": True}),
                         {"a": 1, "b": 2.5, "c": None, "d": [1, [2, 3]], "e": True})
        # A nested dict of constants is the constant it is in Ray.
        self.assertEqual(from_ray_param_space({"model": {"layers": 2, "act": "relu"}}),
                         {"model": {"type": "grid", "values": [{"layers": 2, "act": "relu"}]}})

    def test_refusals_name_the_parameter(self) -> None:
        cases = [
            ({"e": {"eval": "spec.config.a * 2"}}, "e", "eval"),
            ({"m": {"x": {"eval": "1 + 1"}, "y": 2}}, "m.x", "eval"),
            ({"c": tune.choice([{"a": tune.uniform(0, 1)}, 3])}, "c.values[1]", "mixes dicts"),
            ({"c": tune.choice([{"a": tune.grid_search([1, 2])}])}, "c.values[0].a",
             "grid_search inside a choice"),
            ({"c": tune.choice([{}])}, "c.values[0]", "empty dict"),
            ({"f": lambda spec: 1}, "f", "function"),
            ({"n": float("nan")}, "n", "finite"),
            ({"l": [tune.uniform(0, 1)]}, "l[0]", "inside a list"),
            ({"g": {"grid_search": []}}, "g.grid_search", "non-empty"),
            ({"g": {"grid_search": [tune.uniform(0, 1)]}}, "g.grid_search[0]", "grid_search"),
            ({"o": object()}, "o", "not a search space domain"),
        ]
        for space, field, words in cases:
            with self.subTest(field=field):
                with self.assertRaises(ValueError) as ctx:
                    from_ray_param_space(space)
                self.assertTrue(str(ctx.exception).startswith(field + ": "), str(ctx.exception))
                self.assertIn(words, str(ctx.exception))
        with self.assertRaisesRegex(ValueError, "^param_space: "):
            from_ray_param_space([1, 2])  # type: ignore[arg-type]
        with self.assertRaisesRegex(ValueError, "^param_space: "):
            from_ray_param_space({1: 2})  # type: ignore[dict-item]

    @unittest.skipUnless(importlib.util.find_spec("numpy"), "numpy is not installed")
    def test_numpy_values(self) -> None:
        import numpy as np

        self.assertEqual(from_ray_param_space({"a": np.float64(0.5), "b": np.arange(3),
                                               "c": tune.choice([np.int64(1), 2])}),
                         {"a": 0.5, "b": [0, 1, 2], "c": {"type": "choice", "values": [1, 2]}})
        self.assertIs(type(from_ray_param_space({"a": np.int32(3)})["a"]), int)


# Stand-ins with the shapes of ray/tune/search/sample.py: the Domain classes
# Float, Integer, Categorical and Function with lower, upper, categories and
# a sampler; the samplers Uniform, LogUniform, Normal (mean, sd), Grid and
# Quantized (sampler, q). Ray's own samplers are nested subclasses named
# _Uniform, _LogUniform, _Normal: the converter reads the class hierarchy.


class Domain:
    sampler: Any = None


class Float(Domain):
    def __init__(self, lower: Optional[float], upper: Optional[float]):
        self.lower = lower if lower is not None else float("-inf")
        self.upper = upper if upper is not None else float("inf")


class Integer(Domain):
    def __init__(self, lower: int, upper: int):
        self.lower, self.upper = lower, upper


class Categorical(Domain):
    def __init__(self, categories: list):
        self.categories = list(categories)


class Function(Domain):
    def __init__(self, func: Any):
        self.func = func


class Sampler:
    pass


class Uniform(Sampler):
    pass


class LogUniform(Sampler):
    pass


class Normal(Sampler):
    def __init__(self, mean: float, sd: float):
        self.mean, self.sd = mean, sd


class Grid(Sampler):
    pass


class Quantized(Sampler):
    def __init__(self, sampler: Sampler, q: float):
        self.sampler, self.q = sampler, q


class _Uniform(Uniform):
    pass


class _LogUniform(LogUniform):
    pass


class _Normal(Normal):
    pass


def ray_like(domain: Domain, sampler: Optional[Sampler] = None,
             q: Optional[float] = None) -> Domain:
    domain.sampler = sampler
    if q is not None:
        domain.sampler = Quantized(sampler or _Uniform(), q)
    return domain


class RayObjectsTest(unittest.TestCase):
    """Ray's own Domain objects, read by duck typing (Ray is not installed
    here: the stand-ins above have its class names and attributes)."""

    def test_each_ray_function(self) -> None:
        cases = [
            # tune.uniform(-5, -1)
            (ray_like(Float(-5, -1), _Uniform()), {"type": "uniform", "low": -5, "high": -1}),
            # Float with no sampler chosen: Ray's default is uniform
            (ray_like(Float(0, 1)), {"type": "uniform", "low": 0, "high": 1}),
            # tune.quniform(3.2, 5.4, 0.2)
            (ray_like(Float(3.2, 5.4), _Uniform(), 0.2),
             {"type": "quniform", "low": 3.2, "high": 5.4, "q": 0.2}),
            # tune.loguniform(1e-4, 1e-2)
            (ray_like(Float(1e-4, 1e-2), _LogUniform()),
             {"type": "loguniform", "low": 1e-4, "high": 1e-2}),
            # tune.qloguniform(1e-4, 1e-1, 5e-5)
            (ray_like(Float(1e-4, 1e-1), _LogUniform(), 5e-5),
             {"type": "qloguniform", "low": 1e-4, "high": 1e-1, "q": 5e-5}),
            # tune.randn(10, 2)
            (ray_like(Float(None, None), _Normal(10, 2)), {"type": "normal", "mean": 10, "sd": 2}),
            # tune.randint(-9, 15): upper excluded in both
            (ray_like(Integer(-9, 15), _Uniform()), {"type": "randint", "low": -9, "high": 15}),
            # tune.qrandint(-21, 12, 3): upper included in both
            (ray_like(Integer(-21, 12), _Uniform(), 3),
             {"type": "qrandint", "low": -21, "high": 12, "q": 3}),
            # tune.lograndint(1, 10)
            (ray_like(Integer(1, 10), _LogUniform()), {"type": "lograndint", "low": 1, "high": 10}),
            # tune.qrandn(10, 2, 0.2)
            (ray_like(Float(None, None), _Normal(10, 2), 0.2),
             {"type": "qnormal", "mean": 10, "sd": 2, "q": 0.2}),
            # tune.qlograndint(1, 10, 2): upper included, as in Rung
            (ray_like(Integer(1, 10), _LogUniform(), 2),
             {"type": "qlograndint", "low": 1, "high": 10, "q": 2}),
            # tune.choice(["a", "b", "c"])
            (ray_like(Categorical(["a", "b", "c"]), _Uniform()),
             {"type": "choice", "values": ["a", "b", "c"]}),
            # Categorical(...).grid(), as Ray's grid search over categories
            (ray_like(Categorical([1, 2]), Grid()), {"type": "grid", "values": [1, 2]}),
        ]
        for obj, expected in cases:
            with self.subTest(expected=expected):
                self.assertEqual(from_ray_param_space({"p": obj}), {"p": expected})

    def test_refused(self) -> None:
        cases = [
            (ray_like(Function(lambda spec: 1)), "tune.sample_from"),
            (ray_like(Float(0, None), _Uniform()), "finite"),
            (ray_like(Integer(0.5, 3), _Uniform()), "integer"),  # type: ignore[arg-type]
            (ray_like(Categorical([ray_like(Float(0, 1))]), _Uniform()), "inside a choice"),
            (ray_like(Integer(0, 9), _Uniform(), 0), "must be > 0"),
            (ray_like(Float(0, 1), Sampler()), "has no Rung domain"),
        ]
        for obj, words in cases:
            with self.subTest(words=words):
                with self.assertRaises(ValueError) as ctx:
                    from_ray_param_space({"p": obj})
                self.assertRegex(str(ctx.exception), r"^p(\.\w+|\[0\])?: ")
                self.assertIn(words, str(ctx.exception))

    def test_quantized_as_ray_draws(self) -> None:
        # Ray's Quantized returns the plain draw for q == 1 and otherwise
        # rounds to multiples of q within the bounds.
        cases = [
            (ray_like(Integer(40, 1000), _Uniform(), 1), {"type": "randint", "low": 40,
                                                          "high": 1000}),
            (ray_like(Integer(0, 100), _Uniform(), 10), {"type": "qrandint", "low": 0,
                                                         "high": 100, "q": 10}),
            (ray_like(Integer(1, 1024), _LogUniform(), 1), {"type": "lograndint", "low": 1,
                                                            "high": 1024}),
            (ray_like(Integer(8, 1024), _LogUniform(), 8), {"type": "qlograndint", "low": 8,
                                                            "high": 1024, "q": 8}),
            (ray_like(Float(0, 10), _Uniform(), 1), {"type": "uniform", "low": 0, "high": 10}),
            (ray_like(Float(None, None), _Normal(10, 2), 0.5),
             {"type": "qnormal", "mean": 10, "sd": 2, "q": 0.5}),
        ]
        for obj, expected in cases:
            with self.subTest(expected=expected):
                self.assertEqual(from_ray_param_space({"p": obj}), {"p": expected})
        # rung.search's qrandint draws as Ray's.
        self.assertEqual(tune.qrandint(40, 1000), {"type": "randint", "low": 40, "high": 1000})

    def test_nested_and_conditional(self) -> None:
        # A nested dict of domains is a sub-space; a choice of dicts a
        # conditional choice; a dict with a key "type" a choice of one branch.
        space = from_ray_param_space({
            "model": {"lr": ray_like(Float(1e-4, 1e-1), _LogUniform()), "layers": 2,
                      "act": {"grid_search": ["relu", "gelu"]}},
            "opt": ray_like(Categorical([
                {"name": "sgd", "momentum": ray_like(Float(0, 0.99), _Uniform()),
                 "extra": {"nesterov": True}},
                {"name": "adam", "betas": {"b2": tune.uniform(0.9, 0.999)}},
            ]), _Uniform()),
            "net": {"type": "resnet", "depth": tune.choice([18, 34])},
        })
        self.assertEqual(space, {
            "model": {"lr": {"type": "loguniform", "low": 1e-4, "high": 1e-1}, "layers": 2,
                      "act": {"type": "grid", "values": ["relu", "gelu"]}},
            "opt": {"type": "choice", "values": [
                {"name": "sgd", "momentum": {"type": "uniform", "low": 0, "high": 0.99},
                 "extra": {"type": "choice", "values": [{"nesterov": True}]}},
                {"name": "adam", "betas": {"b2": {"type": "uniform", "low": 0.9,
                                                  "high": 0.999}}},
            ]},
            "net": {"type": "choice", "values": [
                {"type": "resnet", "depth": {"type": "choice", "values": [18, 34]}}]},
        })
        # The API's own nested and conditional forms pass through.
        api = {"m": {"lr": tune.uniform(0, 1)},
               "o": tune.choice([{"name": "a", "x": tune.uniform(0, 1)}, {"name": "b"}])}
        self.assertEqual(from_ray_param_space(api), api)

    @unittest.skipUnless(importlib.util.find_spec("ray"),
                         "ray is not installed here; the stand-ins above test the duck typing")
    def test_real_ray(self) -> None:  # pragma: no cover (needs ray)
        from ray import tune as ray_tune

        space = from_ray_param_space({
            "uniform": ray_tune.uniform(-5, -1),
            "quniform": ray_tune.quniform(3.2, 5.4, 0.2),
            "loguniform": ray_tune.loguniform(1e-4, 1e-2),
            "qloguniform": ray_tune.qloguniform(1e-4, 1e-1, 5e-5),
            "randn": ray_tune.randn(10, 2),
            "randint": ray_tune.randint(-9, 15),
            "qrandint": ray_tune.qrandint(-21, 12, 3),
            "lograndint": ray_tune.lograndint(1, 10),
            "choice": ray_tune.choice(["a", "b", "c"]),
            "grid": ray_tune.grid_search([32, 64, 128]),
        })
        self.assertEqual(space["quniform"], tune.quniform(3.2, 5.4, 0.2))
        self.assertEqual(space["randn"], tune.normal(10, 2))
        self.assertEqual(space["qrandint"], tune.qrandint(-21, 12, 3))
        self.assertEqual(space["grid"], tune.grid_search([32, 64, 128]))
        with self.assertRaisesRegex(ValueError, "^f: tune.sample_from"):
            from_ray_param_space({"f": ray_tune.sample_from(lambda spec: 1)})


# ---------------------------------------------------------------------------
# What rungd makes of them.


def _harness() -> Any:
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    import rungd_harness

    return rungd_harness


@unittest.skipUnless(os.environ.get("RUNGD"), "RUNGD is not set (ctest sets it to the built "
                     "rungd): the converted specs are not submitted")
class AcceptedByRungdTest(unittest.TestCase):
    """The converted specs are valid: a real rungd accepts every one."""

    @classmethod
    def setUpClass(cls) -> None:
        cls.harness = _harness()
        cls.folder = tempfile.mkdtemp(prefix="rung-convert-")
        cls.daemon = cls.harness.Daemon(cls.folder).start()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.daemon.stop()
        shutil.rmtree(cls.folder, ignore_errors=True)

    # Domains the converter writes that rungd learns in a parallel change
    # (qlograndint, normal, qnormal: issue 38's domains branch).
    NEW_DOMAINS = ("qlograndint", "normal", "qnormal")

    def rungd_knows(self, dtype: str) -> bool:
        probe = {"search_space": {"x": {"type": dtype, "low": 1, "high": 8, "q": 1, "mean": 0,
                                        "sd": 1}}, "metric": "loss", "mode": "min",
                 "num_samples": 1, "trainable": {"type": "command", "argv": ["true"]}}
        status, reply = self.daemon.call("POST", "/api/v1/experiments", probe)
        message = (reply or {}).get("error", {}).get("message", "")
        return not (status == 400 and f'unknown type "{dtype}"' in message)

    def submit(self, spec: dict) -> dict:
        """Submits spec; where this rungd does not know a domain of
        NEW_DOMAINS yet, that parameter is sent as its low (or mean), and
        the reply's search_space shows the converter's domain there again,
        so that comparing it checks the other parameters."""
        space = dict(spec["search_space"])
        for name, d in space.items():
            if isinstance(d, dict) and d.get("type") in self.NEW_DOMAINS and \
                    not self.rungd_knows(d["type"]):
                space[name] = d.get("low", d.get("mean"))
        exp = self.daemon.create_experiment({**spec, "search_space": space})
        exp["search_space"] = {**exp["search_space"], **{
            n: spec["search_space"][n] for n in space if space[n] != spec["search_space"][n]}}
        return exp

    def test_wandb_fixtures(self) -> None:
        for name, samples in [("wandb_sweepdemo.yaml", 5), ("wandb_random.yaml", None),
                              ("wandb_bayes_hyperband.yaml", 5), ("wandb_grid_min_iter.yaml",
                                                                  None)]:
            with self.subTest(fixture=name):
                spec = from_wandb(os.path.join(FIXTURES, name), **(
                    {"num_samples": samples} if samples else {})).spec()
                exp = self.submit(spec)
                self.assertEqual(exp["search_space"], spec["search_space"])
                if name == "wandb_grid_min_iter.yaml":
                    self.assertEqual(exp["total_trials"], 18)  # 2 x 3 x 3 combinations
                    self.assertEqual(exp["scheduler"]["max_t"], spec["scheduler"]["max_t"])
                    self.assertEqual(exp["stop"], {"metric_threshold": 0.99})

    def test_every_wandb_distribution(self) -> None:
        params = {
            "c": {"value": {"a": 1}}, "cat": {"values": [1, "a"]},
            "iu": {"min": 1, "max": 3}, "u": {"min": 0.0, "max": 1.0},
            "qu": {"distribution": "q_uniform", "min": 0.0, "max": 1.0, "q": 0.5},
            "qi": {"distribution": "q_uniform", "min": 0, "max": 10, "q": 5},
            "lu": {"distribution": "log_uniform", "min": -5, "max": 0},
            "luv": {"distribution": "log_uniform_values", "min": 0.001, "max": 1},
            "qlu": {"distribution": "q_log_uniform", "min": 1, "max": 5, "q": 2},
            "qlur": {"distribution": "q_log_uniform", "min": 0, "max": 5, "q": 0.5},
            "n": {"distribution": "normal", "mu": 1, "sigma": 2},
            "qn": {"distribution": "q_normal", "mu": 10, "sigma": 2, "q": 2},
            "qluv": {"distribution": "q_log_uniform_values", "min": 32, "max": 256, "q": 8},
            "ilu": {"distribution": "inv_log_uniform", "min": 1, "max": 5},
            "iluv": {"distribution": "inv_log_uniform_values", "min": 0.1, "max": 10},
        }
        s = sweep(**params)
        s["run_cap"] = 8
        s["program"] = "train.py"
        exp = self.submit(from_wandb(s).spec())
        self.assertEqual(exp["total_trials"], 8)
        trials = self.daemon.all_trials(exp["id"])
        for t in trials:
            config = t["config"]
            self.assertIn(config["iu"], (1, 2, 3))  # W&B's max included
            self.assertEqual(config["c"], {"a": 1})
            self.assertIn(config["qi"], (0, 5, 10))

    def test_ray_doc_example(self) -> None:
        space = from_ray_param_space({
            "uniform": tune.uniform(-5, -1),
            "quniform": tune.quniform(3.2, 5.4, 0.2),
            "loguniform": tune.loguniform(1e-4, 1e-2),
            "qloguniform": tune.qloguniform(1e-4, 1e-1, 5e-5),
            "randint": tune.randint(-9, 15),
            "qrandint": tune.qrandint(-21, 12, 3),
            "lograndint": tune.lograndint(1, 10),
            "choice": tune.choice(["a", "b", "c"]),
            "grid": tune.grid_search([32, 64, 128]),
            "nested_constant": {"a": [1, 2]},
            "ray_quniform": ray_like(Float(3.2, 5.4), _Uniform(), 0.2),
        })
        spec = self.harness.spec(search_space=space, num_samples=2)
        exp = self.submit(spec)
        self.assertEqual(exp["total_trials"], 6)
        for t in self.daemon.all_trials(exp["id"]):
            self.assertEqual(t["config"]["nested_constant"], {"a": [1, 2]})
            self.assertTrue(-9 <= t["config"]["randint"] < 15)

    def test_ray_nested_and_conditional(self) -> None:
        # What the client converts, rungd takes: configs come flat, dotted.
        space = from_ray_param_space({
            "model": {"lr": ray_like(Float(1e-4, 1e-1), _LogUniform()), "layers": 2},
            "opt": ray_like(Categorical([
                {"name": "sgd", "momentum": ray_like(Float(0, 0.99), _Uniform())},
                {"name": "adam", "extra": {"amsgrad": True}},
            ]), _Uniform()),
            "net": {"type": "resnet", "depth": tune.choice([18, 34])},
            "bs": ray_like(Integer(40, 1000), _Uniform(), 1),
        })
        exp = self.submit(self.harness.spec(search_space=space, num_samples=6))
        for t in self.daemon.all_trials(exp["id"]):
            c = t["config"]
            self.assertEqual(c["model.layers"], 2)
            self.assertTrue(1e-4 <= c["model.lr"] < 1e-1)
            self.assertEqual(c["net.type"], "resnet")
            self.assertIn(c["net.depth"], (18, 34))
            self.assertTrue(40 <= c["bs"] <= 999)
            if c["opt.name"] == "sgd":
                self.assertIn("opt.momentum", c)
            else:
                self.assertEqual(c["opt.extra.amsgrad"], True)


if __name__ == "__main__":
    unittest.main()

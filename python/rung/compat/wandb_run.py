"""`python3 -m rung.compat.wandb_run SCRIPT [ARGS...]` runs a W&B training
script as a Rung trial, and `python3 -m rung.compat.wandb_run --function
FILE NAME` calls the function NAME() of FILE (what wandb.agent was given):
either way with the `wandb` stand-in (wandb_shim/) first on sys.path and on
PYTHONPATH (for the programs the script starts), so `import wandb` finds
it. The run is finished after the script or function returns, as W&B's
agent does.
"""

from __future__ import annotations

import os
import runpy
import sys

SHIM_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "wandb_shim")


def install() -> None:
    """Puts the stand-in first, here and for child processes."""
    if sys.path[:1] != [SHIM_DIR]:
        sys.path.insert(0, SHIM_DIR)
    old = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = SHIM_DIR + (os.pathsep + old if old else "")


def _finish() -> None:
    shim = sys.modules.get("wandb")
    if shim is not None and getattr(shim, "_RUNG_SHIM", False):
        shim.finish()


def run_function(fn) -> None:
    """Calls fn() (W&B's agent takes a function of no arguments)."""
    install()
    try:
        fn()
    finally:
        _finish()


def main(argv: list[str]) -> int:
    if not argv or (argv[0] == "--function" and len(argv) != 3):
        print("usage: python3 -m rung.compat.wandb_run SCRIPT [ARGS...] | --function FILE NAME",
              file=sys.stderr)
        return 2
    install()
    if argv[0] == "--function":
        from .run import load_function

        run_function(load_function(argv[1], argv[2]))
        return 0
    script = argv[0]
    sys.argv = list(argv)
    sys.path.insert(1, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    finally:
        _finish()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
"""LCBench through YAHPO Gym's surrogate network (bench/README.md, "LCBench").

Two halves:

- export: reads the data folder's model.onnx with Debian's python3-onnx (1.12;
  bench only, `bash scripts/deps.sh --bench`) and writes the graph as two
  files the evaluators read without onnx: lcbench_graph.json (the inputs,
  outputs, the output's column names, the initializers' dtype, shape and
  byte offset, and the node list with its attributes; Constant values
  inline; "tasks", encoding.json's x_cat of each task id, and "task_ids",
  config_space.json's 34) and lcbench_graph.bin (the initializers, little-endian, each at an
  offset that is a multiple of 8).
- a numpy evaluator of that file: the 17 operator types the graph uses, with
  ONNX's semantics (numpy broadcasting for the elementwise ops, Gemm's
  transA/transB/alpha/beta, BatchNormalization's inference form, Slice's
  starts/ends/axes/steps inputs with ONNX's clamping, Gather on any axis
  with negative indices, Cast), in float32 as an ONNX runtime computes.
  bench/lcbench.c is the C evaluator of the same file; `check` compares
  it, or ONNX Runtime on model.onnx (bench/lcbench_ort.js), with this one.

The network takes the raw hyperparameters: its first nodes scale them (log
for epoch, learning_rate and weight_decay), and its last nodes map the six
sigmoid outputs back to the metrics' units, so an input row is
x_cat = [the task's index in encoding.json] and
x_cont = [epoch, batch_size, learning_rate, momentum, weight_decay,
          num_layers, max_units, max_dropout] as they are.

Usage:
  lcbench_export.py export DATA_DIR OUT_DIR      write the two files
  lcbench_export.py sanity OUT_DIR [DATA_DIR]    task 3945 at the defaults,
                                                 against ONNX Runtime's figures
  lcbench_export.py check OUT_DIR N CMD ...       another evaluator vs numpy on
                                                 N random rows: CMD ... ROWS_FILE
                                                 prints each row's six outputs
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

FORMAT = "rung-onnx-graph"
VERSION = 1
GRAPH_JSON = "lcbench_graph.json"
GRAPH_BIN = "lcbench_graph.bin"

# The output's columns, in order. YAHPO Gym's lcbench scenario names them
# (its y_names); the graph's last nodes agree: column 0 is a linear map to
# 0 .. 46791 (seconds), 1 an exp map to 0 .. 99.5 (val_accuracy in %),
# 3 and 5 exp maps to 0 .. 1 (balanced accuracies), 2 and 4 linear maps
# to 0.02 .. 34.5 and 0.33 .. 5.9 (cross-entropies).
OUTPUT_COLUMNS = [
    "time",
    "val_accuracy",
    "val_cross_entropy",
    "val_balanced_accuracy",
    "test_cross_entropy",
    "test_balanced_accuracy",
]
X_CONT = [
    "epoch",
    "batch_size",
    "learning_rate",
    "momentum",
    "weight_decay",
    "num_layers",
    "max_units",
    "max_dropout",
]

# ONNX TensorProto data types this format carries.
DTYPES = {1: "float32", 6: "int32", 7: "int64", 11: "float64"}
NP = {"float32": np.float32, "int32": np.int32, "int64": np.int64, "float64": np.float64}


# ---- export ----


def _attr_json(onnx, numpy_helper, attr):
    v = onnx.helper.get_attribute_value(attr)
    if isinstance(v, onnx.TensorProto):
        a = numpy_helper.to_array(v)
        dt = DTYPES.get(v.data_type)
        if dt is None:
            raise SystemExit(f"export: a tensor attribute of type {v.data_type} is not supported")
        # float32 values as the doubles they are: exact both ways
        return {"dtype": dt, "shape": list(a.shape), "data": a.astype(NP[dt]).ravel().tolist()}
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, (list, tuple)):
        return [x.decode() if isinstance(x, bytes) else x for x in v]
    return v


def export(data_dir, out_dir):
    try:
        import onnx
        from onnx import numpy_helper
    except ImportError:
        raise SystemExit(
            "export: needs python3-onnx (Debian; `bash scripts/deps.sh --bench` installs it)"
        )
    path = os.path.join(data_dir, "model.onnx")
    if not os.path.exists(path):
        raise SystemExit(f"export: {path} missing (bench/README.md, 'LCBench', says where to get it)")
    m = onnx.load(path)
    g = m.graph
    init_names = {t.name for t in g.initializer}
    inits = []
    blob = bytearray()
    for t in g.initializer:
        dt = DTYPES.get(t.data_type)
        if dt is None:
            raise SystemExit(f"export: initializer {t.name}: data type {t.data_type} not supported")
        a = numpy_helper.to_array(t).astype(np.dtype(NP[dt]).newbyteorder("<"))
        while len(blob) % 8:
            blob.append(0)
        inits.append(
            {"name": t.name, "dtype": dt, "shape": list(a.shape), "offset": len(blob), "count": int(a.size)}
        )
        blob += a.tobytes()

    def vinfo(v):
        tt = v.type.tensor_type
        dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
        return {"name": v.name, "dtype": DTYPES[tt.elem_type], "shape": dims}

    nodes = []
    for n in g.node:
        attrs = {a.name: _attr_json(onnx, numpy_helper, a) for a in n.attribute}
        nodes.append({"op": n.op_type, "inputs": list(n.input), "outputs": list(n.output), "attrs": attrs})
    outputs = [vinfo(v) for v in g.output]
    graph = {
        "format": FORMAT,
        "version": VERSION,
        "source": "model.onnx",
        "opset": max(o.version for o in m.opset_import if o.domain in ("", "ai.onnx")),
        "blob": GRAPH_BIN,
        "blob_bytes": len(blob),
        "inputs": [vinfo(v) for v in g.input if v.name not in init_names],
        "outputs": outputs,
        "output_columns": OUTPUT_COLUMNS,
        "x_cont": X_CONT,
        "initializers": inits,
        "nodes": nodes,
    }
    if len(outputs) != 1 or outputs[0]["shape"][-1] != len(OUTPUT_COLUMNS):
        raise SystemExit("export: expected one output of 6 columns; is this LCBench's model.onnx?")
    # the task ids' x_cat, so that the C side needs only this folder
    enc_path = os.path.join(data_dir, "encoding.json")
    if not os.path.exists(enc_path):
        raise SystemExit(f"export: {enc_path} missing")
    with open(enc_path) as f:
        graph["tasks"] = {k: v for k, v in json.load(f)["OpenML_task_id"].items() if k != "#na#"}
    graph["task_ids"] = tasks(data_dir)
    ops = sorted({n["op"] for n in nodes})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, GRAPH_BIN), "wb") as f:
        f.write(bytes(blob))
    with open(os.path.join(out_dir, GRAPH_JSON), "w") as f:
        json.dump(graph, f, indent=1)
        f.write("\n")
    print(
        f"export: {len(nodes)} nodes, {len(ops)} op types ({' '.join(ops)}), "
        f"{len(inits)} initializers ({len(blob)} bytes) -> {out_dir}"
    )


# ---- the numpy evaluator ----


class Graph:
    def __init__(self, out_dir):
        path = os.path.join(out_dir, GRAPH_JSON)
        if not os.path.exists(path):
            raise SystemExit(f"lcbench: {path} missing: run `lcbench_export.py export DATA_DIR {out_dir}` first")
        with open(path) as f:
            self.g = json.load(f)
        if self.g.get("format") != FORMAT or self.g.get("version") != VERSION:
            raise SystemExit(f"lcbench: {path}: not a {FORMAT} version {VERSION} file")
        with open(os.path.join(out_dir, self.g["blob"]), "rb") as f:
            blob = f.read()
        self.init = {}
        for t in self.g["initializers"]:
            dt = np.dtype(NP[t["dtype"]]).newbyteorder("<")
            a = np.frombuffer(blob, dtype=dt, count=t["count"], offset=t["offset"])
            self.init[t["name"]] = a.astype(NP[t["dtype"]]).reshape(t["shape"])
        self.columns = self.g["output_columns"]

    def run(self, x_cat, x_cont):
        """The outputs for a batch: x_cat [N, 1] (int32 in LCBench), x_cont float32 [N, 8]."""
        env = dict(self.init)
        env[self.g["inputs"][0]["name"]] = np.asarray(x_cat, dtype=NP[self.g["inputs"][0]["dtype"]])
        env[self.g["inputs"][1]["name"]] = np.asarray(x_cont, dtype=np.float32)
        for n in self.g["nodes"]:
            args = [env[i] if i else None for i in n["inputs"]]
            outs = OPS[n["op"]](args, n["attrs"])
            for name, v in zip(n["outputs"], outs):
                env[name] = v
        return env[self.g["outputs"][0]["name"]]


def _binary(f):
    def op(args, attrs):
        a, b = args
        if a.dtype != b.dtype:
            raise ValueError(f"elementwise op on {a.dtype} and {b.dtype}")
        return [f(a, b).astype(a.dtype)]

    return op


def _div(a, b):
    if np.issubdtype(a.dtype, np.integer):
        # ONNX's integer Div truncates toward zero (C's /), not numpy's floor
        q = np.abs(a) // np.abs(b)
        return np.where((a < 0) != (b < 0), -q, q)
    return a / b


def _gemm(args, attrs):
    a, b = args[0], args[1]
    c = args[2] if len(args) > 2 else None
    if attrs.get("transA", 0):
        a = a.T
    if attrs.get("transB", 0):
        b = b.T
    y = np.float32(attrs.get("alpha", 1.0)) * (a @ b)
    if c is not None:
        y = y + np.float32(attrs.get("beta", 1.0)) * c
    return [y.astype(np.float32)]


def _batchnorm(args, attrs):
    x, scale, bias, mean, var = args
    if attrs.get("training_mode", 0):
        raise ValueError("BatchNormalization: training_mode is not supported")
    shape = (1, -1) + (1,) * (x.ndim - 2)  # the channel axis is 1
    eps = np.float32(attrs.get("epsilon", 1e-5))
    y = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + eps)
    return [(y * scale.reshape(shape) + bias.reshape(shape)).astype(np.float32)]


def _gather(args, attrs):
    data, idx = args
    axis = attrs.get("axis", 0)
    axis = axis + data.ndim if axis < 0 else axis
    idx = np.where(idx < 0, idx + data.shape[axis], idx)
    return [np.take(data, idx, axis=axis)]


def _concat(args, attrs):
    return [np.concatenate(args, axis=attrs["axis"])]


def _cast(args, attrs):
    to = DTYPES.get(attrs["to"])
    if to is None:
        raise ValueError(f"Cast: to={attrs['to']} not supported")
    return [args[0].astype(NP[to])]


def _unsqueeze(args, attrs):
    x = args[0]
    axes = args[1].tolist() if len(args) > 1 else attrs["axes"]  # an input from opset 13
    rank = x.ndim + len(axes)
    for a in sorted(a + rank if a < 0 else a for a in axes):
        x = np.expand_dims(x, a)
    return [x]


def _shape(args, attrs):
    s = np.array(args[0].shape, dtype=np.int64)
    return [s[attrs.get("start", 0) : attrs.get("end", len(s))]]


def _slice(args, attrs):
    x = args[0]
    starts, ends = args[1].tolist(), args[2].tolist()
    axes = args[3].tolist() if len(args) > 3 and args[3] is not None else list(range(len(starts)))
    steps = args[4].tolist() if len(args) > 4 and args[4] is not None else [1] * len(starts)
    sl = [slice(None)] * x.ndim
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = a + x.ndim if a < 0 else a
        d = x.shape[a]
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st > 0:  # ONNX's clamping
            s, e = min(max(s, 0), d), min(max(e, 0), d)
        else:
            s, e = min(max(s, 0), d - 1), min(max(e, -1), d - 1)
        sl[a] = slice(s, e if e >= 0 else None, st)
    return [x[tuple(sl)]]


def _constant(args, attrs):
    v = attrs["value"]
    return [np.array(v["data"], dtype=NP[v["dtype"]]).reshape(v["shape"])]


def _unary(f):
    return lambda args, attrs: [f(args[0]).astype(args[0].dtype)]


OPS = {
    "Gemm": _gemm,
    "BatchNormalization": _batchnorm,
    "Relu": _unary(lambda x: np.maximum(x, 0)),
    "Gather": _gather,
    "Concat": _concat,
    "Add": _binary(np.add),
    "Sub": _binary(np.subtract),
    "Mul": _binary(np.multiply),
    "Div": _binary(_div),
    "Log": _unary(np.log),
    "Exp": _unary(np.exp),
    "Sigmoid": _unary(lambda x: 1 / (1 + np.exp(-x))),
    "Cast": _cast,
    "Unsqueeze": _unsqueeze,
    "Shape": _shape,
    "Slice": _slice,
    "Constant": _constant,
}


# ---- the benchmark's helpers ----


def task_index(data_dir, task):
    """The x_cat of an OpenML task id, from the data folder's encoding.json."""
    with open(os.path.join(data_dir, "encoding.json")) as f:
        enc = json.load(f)["OpenML_task_id"]
    if str(task) not in enc:
        raise SystemExit(f"lcbench: task {task} not in encoding.json")
    return enc[str(task)]


def tasks(data_dir):
    """The 34 task ids of config_space.json, in its order."""
    with open(os.path.join(data_dir, "config_space.json")) as f:
        cs = json.load(f)
    for h in cs["hyperparameters"]:
        if h["name"] == "OpenML_task_id":
            return [int(c) for c in h["choices"]]
    raise SystemExit("lcbench: config_space.json has no OpenML_task_id")


# config_space.json's defaults: the config of the sanity check below
DEFAULT = {
    "batch_size": 91,
    "learning_rate": 0.0031622777,
    "momentum": 0.545,
    "weight_decay": 0.050005,
    "num_layers": 3,
    "max_units": 256,
    "max_dropout": 0.5,
}


def rows(config, epochs):
    """x_cont rows of one config at the given epochs."""
    return np.array([[e] + [config[k] for k in X_CONT[1:]] for e in epochs], dtype=np.float32)


SANITY_EPOCHS = [1, 2, 4, 8, 16, 32, 52]
# ONNX Runtime 1.30 (bench/lcbench_ort.js) on model.onnx, task 3945 at
# DEFAULT (bench/README.md, "LCBench": how they were measured)
ORT_ACC = [38.1950, 76.4429, 87.5198, 90.2043, 91.5574, 92.7218, 93.3988]
ORT_TIME = [15.9236, 23.0229, 41.2263, 62.3148, 81.7161, 115.1806, 165.6897]
# the figure in the data folder's README.md, "default-like config" (its
# config is not given; DEFAULT does not reproduce it: bench/README.md)
README_ACC = [47.9, 83.5, 89.3, 90.5, 90.8, 91.1, 91.7]


def sanity(out_dir, data_dir):
    g = Graph(out_dir)
    idx = task_index(data_dir, 3945) if data_dir else 34
    y = g.run(np.full((len(SANITY_EPOCHS), 1), idx), rows(DEFAULT, SANITY_EPOCHS))
    print(f"task 3945 (x_cat {idx}), config_space.json's defaults: {DEFAULT}")
    print("epoch  val_accuracy %  (ONNX Runtime) (data README)    time s  (ONNX Runtime)")
    for i, e in enumerate(SANITY_EPOCHS):
        print(
            f"{e:5d}  {y[i, 1]:14.2f}  ({ORT_ACC[i]:12.2f}) ({README_ACC[i]:11.1f})"
            f"  {y[i, 0]:8.1f}  ({ORT_TIME[i]:12.1f})"
        )
    d_acc = np.abs(y[:, 1] - ORT_ACC).max()
    d_time = np.abs(y[:, 0] - ORT_TIME).max()
    print(f"max |numpy - ONNX Runtime|: val_accuracy {d_acc:.4f} points, time {d_time:.4f} s")
    return 0 if d_acc < 0.01 and d_time < 0.01 else 1


def random_inputs(n, seed):
    """Rows over config_space.json's ranges (log where it says so, and
    weight_decay too), task indices 0 .. 35 (encoding.json's)."""
    r = np.random.default_rng(seed)
    x_cat = r.integers(0, 36, size=(n, 1)).astype(np.int64)
    lo = np.array([1, np.log(16), np.log(1e-4), 0.1, np.log(1e-5), 1, np.log(64), 0.0])
    hi = np.array([52, np.log(512), np.log(0.1), 0.99, np.log(0.1), 5, np.log(1024), 1.0])
    u = lo + (hi - lo) * r.random((n, 8))
    for j in (1, 2, 4, 6):
        u[:, j] = np.exp(u[:, j])
    for j in (0, 1, 5, 6):
        u[:, j] = np.round(u[:, j])
    return x_cat, u.astype(np.float32)


def check(out_dir, n, cmd):
    """Another evaluator against this one on n random rows: cmd + [ROWS_FILE]
    prints the six outputs of each row (bench/lcbench.c's lcbench_eval
    --graph DIR --eval, or bench/lcbench_ort.js MODEL)."""
    g = Graph(out_dir)
    x_cat, x_cont = random_inputs(n, 40)
    want = g.run(x_cat, x_cont)
    with tempfile.TemporaryDirectory() as tmp:
        inp = os.path.join(tmp, "rows.txt")
        with open(inp, "w") as f:
            for c, x in zip(x_cat[:, 0], x_cont):
                f.write(f"{c} " + " ".join(repr(float(v)) for v in x) + "\n")
        out = subprocess.run(cmd + [inp], check=True, capture_output=True, text=True).stdout
    got = np.array([[float(v) for v in line.split()] for line in out.splitlines()])
    if got.shape != want.shape:
        print(f"check: {cmd[0]} gave shape {got.shape}, numpy {want.shape}")
        return 1
    d = np.abs(got - want)
    # relative to the column's range: float32's rounding of time (46791 *
    # a sigmoid) is ~0.004 s whatever the row's time is
    scale = np.abs(want).max(axis=0)
    print(f"check: {n} random rows, {' '.join(cmd)} against numpy; max |difference| per column:")
    for j, name in enumerate(g.columns):
        print(f"  {name:24s} {d[:, j].max():.3g}  (of max |value| {scale[j]:.4g})")
    worst = (d.max(axis=0) / scale).max()
    print(f"max |difference| / column's max |value|: {worst:.3g}")
    return 0 if worst < 1e-5 else 1


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) >= 2 else 2
    cmd = argv[1]
    if cmd == "export" and len(argv) == 4:
        export(argv[2], argv[3])
        return 0
    if cmd == "sanity" and len(argv) in (3, 4):
        return sanity(argv[2], argv[3] if len(argv) == 4 else None)
    if cmd == "check" and len(argv) >= 5 and argv[3].isdigit():
        return check(argv[2], int(argv[3]), argv[4:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))

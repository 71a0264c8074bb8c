/* LCBench through YAHPO Gym's surrogate network, in C (bench/README.md,
 * "LCBench"): an interpreter of the graph bench/lcbench_export.py exports
 * (lcbench_graph.json, the op list, and lcbench_graph.bin, the weights),
 * for the 17 operator types the network uses, with ONNX's semantics.
 *
 * A row is x_cat = the task's index in the data folder's encoding.json and
 * x_cont = [epoch, batch_size, learning_rate, momentum, weight_decay,
 * num_layers, max_units, max_dropout] as they are (the network scales them
 * itself); its outputs are LCB_OUTPUTS columns, named by lcb_output_name:
 * time (s), val_accuracy (%), val_cross_entropy, val_balanced_accuracy
 * (0 .. 1), test_cross_entropy, test_balanced_accuracy. */
#ifndef RUNG_BENCH_LCBENCH_H
#define RUNG_BENCH_LCBENCH_H

#include <stddef.h>
#include <stdint.h>

#define LCB_X_CONT 8
#define LCB_OUTPUTS 6
/* the most rows one lcb_eval takes: the buffers grow to fit a batch, and a
 * batch of 2^16 rows needs ~0.5 GB of them (910 floats a row a layer) */
#define LCB_MAX_ROWS 65536

typedef struct LcbGraph LcbGraph;

/* Loads DIR/lcbench_graph.json and the blob it names. Returns a new graph
 * (free with lcb_free), or NULL with a message in err. */
LcbGraph *lcb_load(const char *dir, char *err, size_t errlen);
void lcb_free(LcbGraph *g);

/* The x_cat of an OpenML task id ("3945"): the graph file's "tasks", which
 * the exporter copies from encoding.json; -1 when it has no such task. */
int lcb_task_index(const LcbGraph *g, const char *task);

/* Column j's name (borrowed), j < LCB_OUTPUTS. */
const char *lcb_output_name(const LcbGraph *g, int j);

/* The outputs of n rows (1 <= n <= LCB_MAX_ROWS): x_cat[n], x_cont[n x 8]
 * row-major, out[n x 6] row-major. No I/O: the graph's buffers grow on the
 * first batch of a size and are reused. Returns 0, or -1 with a message in
 * err (a bad index, a shape the graph cannot take). */
int lcb_eval(LcbGraph *g, int n, const int32_t *x_cat, const float *x_cont, float *out, char *err,
             size_t errlen);

#endif

// What the experiment page's charts of one metric show, shared by every
// chart module that wants to follow it (experiment.js sets it; charts
// subscribe): the picked metric, and the trials brushed on the parallel
// coordinates (charts/parallel.js). Plain state with listeners, no DOM, so
// node imports it too (tests/browser/charts_model.test.mjs).
//
// A metric is {name, kind: 'objective'|'metric', mode: 'min'|'max', log}:
// an objective's value is the trial's best (one objective) or its `values`
// entry (several); a reported metric's is the value in the trial's last
// report (trials.csv's `metric:<name>` columns, the trial object's `last`;
// docs/api.md). `log`: whether its charts were asked for a log y axis
// (they fall back to linear when a value is <= 0: logOrLinear in
// charts/uplot.js).

let metric = null;
let brushed = null; // Set of trial ids, or null: nothing brushed
const listeners = new Set();

function emit(what) {
  for (const fn of [...listeners]) fn(what);
}

/** The picked metric, or null before the page set one. */
export function getMetric() {
  return metric;
}

/** Picks a metric (an object as above); listeners hear 'metric'. */
export function setMetric(m) {
  const same = metric && m && metric.name === m.name && metric.kind === m.kind && metric.mode === m.mode && metric.log === m.log;
  metric = m ? { ...m } : null;
  if (!same) emit('metric');
}

/** The ids of the brushed trials (a Set), or null when nothing is brushed. */
export function getBrushed() {
  return brushed;
}

/** Sets the brushed trials (a Set of ids, kept as given: the caller does
 * not change it afterwards; or null to clear); listeners hear 'brush'. */
export function setBrushed(ids) {
  brushed = ids ? (ids instanceof Set ? ids : new Set(ids)) : null;
  emit('brush');
}

/** Calls fn('metric' | 'brush') on each change; returns the unsubscribe. */
export function subscribe(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** Forgets everything (a new experiment page). */
export function resetMetricState() {
  metric = null;
  brushed = null;
}

// Metric names that are better high; any other reported metric is taken as
// better low until the page's min/max toggle says otherwise.
const MAX_LIKE = /(^|[_.\-\s])(acc|accuracy|auc|auroc|f1|precision|recall|score|reward|return|iou|map|r2|top[0-9]+|bleu|rouge|throughput)($|[_.\-\s0-9])/i;

/** The mode inferred from a reported metric's name ("val_acc": max, "loss": min). */
export function inferMode(name) {
  return MAX_LIKE.test(String(name)) ? 'max' : 'min';
}

/** A trial's value of metric m (finite number) or null. */
export function metricValue(t, m) {
  if (!t || !m) return null;
  let v;
  if (m.kind === 'objective') v = m.single ? (t.best ? t.best.value : null) : (t.values ? t.values[m.name] : null);
  else v = t.last ? t.last[m.name] : null;
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

// The compare page's bookkeeping (views/compare.js), without DOM, so node
// tests import it (tests/browser/compare_model.test.mjs): which keys differ
// among a few configs or specs, a spec flattened to key paths, and an
// experiment's best value so far.

// The experiment object's fields that are not the spec's (docs/api.md, "The
// experiment object"): left out when a spec has to be read from it (a
// rungd without GET /experiments/{id}/spec).
const RUNTIME = new Set(['id', 'state', 'ended_reason', 'error', 'owner', 'created_at', 'ended_at',
  'total_trials', 'counts', 'best', 'pareto']);

/** A value's JSON with object keys sorted: equal values, equal text. */
export function canonical(v) {
  if (v === undefined) return 'undefined';
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical(v[k])}`).join(',')}}`;
}

/**
 * objs: a list of flat objects (configs: dotted paths to values). Returns
 * {keys, differ, same}: every key in order of first appearance, those
 * whose value is not the same in all (a key some lack differs), and the
 * others.
 */
export function keyDiff(objs) {
  const keys = [];
  const seen = new Set();
  for (const o of objs) {
    for (const k of Object.keys(o || {})) {
      if (!seen.has(k)) {
        seen.add(k);
        keys.push(k);
      }
    }
  }
  const differ = [];
  const same = [];
  for (const k of keys) {
    const texts = new Set(objs.map((o) => canonical(o && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined)));
    (texts.size > 1 ? differ : same).push(k);
  }
  return { keys, differ, same };
}

/** A spec as {path: value}: objects are walked (keys joined with dots), an
 * array, an empty object and a scalar are values. */
export function flatten(obj, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(obj || {})) {
    const path = prefix ? `${prefix}.${k}` : k;
    if (v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length) flatten(v, path, out);
    else out[path] = v;
  }
  return out;
}

/** The spec fields of an experiment object (without id, state, counts, ...). */
export function specOfExperiment(x) {
  const out = {};
  for (const [k, v] of Object.entries(x || {})) if (!RUNTIME.has(k)) out[k] = v;
  return out;
}

/** The objective an experiment's best-so-far follows: {name, mode} (with
 * several objectives, the first: docs/api.md). */
export function objectiveOf(x) {
  if (x && x.metric) return { name: x.metric, mode: x.mode || 'min' };
  const m = (x && Array.isArray(x.metrics) && x.metrics[0]) || {};
  return { name: m.name || '', mode: m.mode || 'min' };
}

/** A trial's value of the objective: its best, or with several objectives
 * its `values` entry; null when it has none (or it is not finite). */
export function trialValue(t, name) {
  let v = t.best ? t.best.value : null;
  if ((v === null || v === undefined) && t.values) v = t.values[name];
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

/**
 * The best value so far of experiment x over its trials: by 'number' (x:
 * trial number, every trial with a value in number order) or by 'time'
 * (x: seconds from the experiment's created_at to the trial's ended_at,
 * the ended trials with a value in that order). Returns {x, y, ids}: at
 * each trial, the best of it and those before.
 */
export function bestSoFar(x, trials, by = 'number') {
  const { name, mode } = objectiveOf(x);
  const better = mode === 'max' ? (a, b) => a > b : (a, b) => a < b;
  const t0 = Date.parse(x.created_at);
  const pts = [];
  for (const t of trials) {
    const v = trialValue(t, name);
    if (v === null) continue;
    if (by === 'time') {
      const end = t.ended_at ? Date.parse(t.ended_at) : NaN;
      if (!Number.isFinite(end)) continue;
      pts.push([(end - t0) / 1000, v, t.id, t.number]);
    } else {
      pts.push([t.number, v, t.id, t.number]);
    }
  }
  pts.sort((a, b) => a[0] - b[0] || a[3] - b[3]);
  const out = { x: [], y: [], ids: [] };
  let cur = null;
  for (const [px, v, id] of pts) {
    if (cur === null || better(v, cur)) cur = v;
    out.x.push(px);
    out.y.push(cur);
    out.ids.push(id);
  }
  return out;
}

/** Ids from a query value "3,1,2": positive integers, each once, in order. */
export function idList(text) {
  const out = [];
  for (const s of String(text || '').split(',')) {
    const n = Number(s.trim());
    if (Number.isInteger(n) && n > 0 && !out.includes(n)) out.push(n);
  }
  return out;
}

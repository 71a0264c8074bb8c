// Population Based Training (docs/schedulers.md, "pbt") as the dashboard
// shows it: pure computation, no DOM, so that node can import it.
//
// A trial's history is cut into segments at its exploits (its `lineage`,
// oldest first): segment 0 is the steps up to and including the first
// exploit's step, segment k the steps after exploit k's step up to and
// including exploit k+1's (the report at a milestone is the one judged,
// with the config before the exploit). Segment 0 belongs to the trial's
// own family (its id); the segment after an exploit at step s from donor D
// belongs to the family of D's segment holding D's step `donor_step` (= s),
// recursively through D's own lineage. There is one family per original
// member of the population.

/** Whether an experiment (the API's object) runs the pbt scheduler. */
export function isPbt(x) {
  return !!(x && x.scheduler && (x.scheduler.type === 'pbt' || x.scheduler.type === 'pb2'));
}

/** A trial's lineage, oldest first ([] when it has none). */
export function lineageOf(t) {
  return t && Array.isArray(t.lineage) ? t.lineage : [];
}

/** The index of the segment of `lineage` that holds `step`: how many
 * exploits happened at a step before it. */
export function segmentIndex(lineage, step) {
  let k = 0;
  while (k < lineage.length && lineage[k].step < step) k++;
  return k;
}

/**
 * The family of each segment of every trial: Map trial id -> [family id of
 * segment 0, 1, ...] (lineage.length + 1 of them). trials: Map id -> trial
 * object or an iterable of them. A donor not among the trials is taken as
 * a family of its own, and so is a cycle (which a real lineage never has).
 */
export function familyTable(trials) {
  const byId = trials instanceof Map ? trials : new Map([...trials].map((t) => [t.id, t]));
  const memo = new Map(); // "id/k" -> family
  const busy = new Set();

  function familyOf(id, k) {
    if (k === 0) return id;
    const key = `${id}/${k}`;
    if (memo.has(key)) return memo.get(key);
    const entry = lineageOf(byId.get(id))[k - 1];
    const donor = entry ? byId.get(entry.donor) : null;
    let fam = entry ? entry.donor : id;
    if (donor && !busy.has(key)) {
      busy.add(key);
      const at = Number.isFinite(entry.donor_step) ? entry.donor_step : entry.step;
      fam = familyOf(donor.id, segmentIndex(lineageOf(donor), at));
      busy.delete(key);
    }
    memo.set(key, fam);
    return fam;
  }

  const out = new Map();
  for (const [id, t] of byId) {
    const n = lineageOf(t).length;
    const fams = new Array(n + 1);
    for (let k = 0; k <= n; k++) fams[k] = familyOf(id, k);
    out.set(id, fams);
  }
  return out;
}

/**
 * A trial's learning curve cut into its segments: [{segment, family,
 * steps, values, first, last, points}] in step order, only the segments
 * with reports. steps/values start with the previous segment's last point
 * when there is one (joined: true), so that the drawn curve is unbroken and
 * the jump at an exploit takes the new family's colour; first, last and
 * points describe the segment's own reports. curve: {steps, values}.
 */
export function curveSegments(trial, curve, fams) {
  const lineage = lineageOf(trial);
  const order = curve.steps.map((_, i) => i).sort((a, b) => curve.steps[a] - curve.steps[b]);
  const parts = [];
  let part = null;
  let prev = -1; // index of the previous point
  for (const i of order) {
    const step = curve.steps[i];
    const k = segmentIndex(lineage, step);
    if (!part || part.segment !== k) {
      part = { segment: k, family: fams ? fams[k] : trial.id, steps: [], values: [], first: step, last: step, points: 0, joined: false };
      if (prev >= 0) {
        part.steps.push(curve.steps[prev]);
        part.values.push(curve.values[prev]);
        part.joined = true;
      }
      parts.push(part);
    }
    part.steps.push(step);
    part.values.push(curve.values[i]);
    part.last = step;
    part.points++;
    prev = i;
  }
  return parts;
}

/**
 * A parameter's value as a step function of step for one trial: [{segment,
 * family, start, end, value}], one piece per segment; the value holds on
 * (start, end]. Before the first exploit it is lineage[0].from[param] (the
 * config when there is no lineage), after the exploit at s that entry's
 * config[param], from s + 1 on. The first piece starts at 0, the last ends
 * at lastStep (or its start, when the trial has not gone further).
 */
export function schedule(trial, param, fams, lastStep) {
  const lineage = lineageOf(trial);
  const first = lineage.length ? lineage[0].from : trial.config;
  const pieces = [];
  for (let k = 0; k <= lineage.length; k++) {
    const cfg = k === 0 ? first : lineage[k - 1].config;
    const start = k === 0 ? 0 : lineage[k - 1].step;
    let end = k < lineage.length ? lineage[k].step : lastStep;
    if (!Number.isFinite(end) || end < start) end = start;
    pieces.push({
      segment: k,
      family: fams ? fams[k] : trial.id,
      start,
      end,
      value: cfg && param in cfg ? cfg[param] : null,
    });
  }
  return pieces;
}

/** The parameters an exploit changed: [{param, from, to}], the entry's
 * config order first, then what only `from` had. */
export function changes(entry) {
  const from = (entry && entry.from) || {};
  const to = (entry && entry.config) || {};
  const keys = [...Object.keys(to), ...Object.keys(from).filter((k) => !(k in to))];
  const out = [];
  for (const k of keys) {
    if (JSON.stringify(from[k]) !== JSON.stringify(to[k])) out.push({ param: k, from: from[k], to: to[k] });
  }
  return out;
}

/** The last step a trial reached: its curve's last step, else its `step`. */
export function lastStep(trial, curve) {
  let m = -Infinity;
  if (curve) for (const s of curve.steps) if (s > m) m = s;
  if (trial && Number.isFinite(trial.step) && trial.step > m) m = trial.step;
  return Number.isFinite(m) ? m : null;
}

/**
 * The population's families in trial-number order: [{id, number, color}]
 * with one colour each, palette's first, then hues a golden angle apart.
 * trials: an iterable of trial objects.
 */
export function familyColors(trials, palette) {
  const list = [...trials].sort((a, b) => a.number - b.number || a.id - b.id);
  return list.map((t, i) => ({
    id: t.id,
    number: t.number,
    color: i < palette.length ? palette[i] : `hsl(${Math.round((i * 137.508) % 360)}, 65%, 42%)`,
  }));
}

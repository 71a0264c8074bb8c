// Formatting of numbers, times, configs and states, shared by every view.

/** Trial states in display order; the last four are final. "preempted":
 * its worker gave it back, it waits to resume (docs/api.md). */
export const STATES = ['pending', 'running', 'preempted', 'paused', 'completed', 'stopped', 'failed', 'canceled'];
export const FINAL = new Set(['completed', 'stopped', 'failed', 'canceled']);
export const DASH = '\u2014';

/** True for a usable metric value (the API sends non-finite ones as strings). */
export function isNum(v) {
  return typeof v === 'number' && Number.isFinite(v);
}

/** A metric value with up to 6 significant digits ("0.123457",
 * "1.23457e-7"), the API's strings for non-finite values as they are, or
 * a dash for none. */
export function num(v) {
  if (v === null || v === undefined) return DASH;
  if (typeof v === 'string') return v;
  if (typeof v !== 'number') return String(v);
  if (!Number.isFinite(v)) return String(v);
  return String(Number(v.toPrecision(6)));
}

/** An integer (step, count), or a dash. */
export function int(v) {
  return v === null || v === undefined ? DASH : String(v);
}

/** One config value, exactly (configs are shown to be copied). */
export function configValue(v) {
  if (v === null) return 'null';
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

/** A config as "key=value, key=value". */
export function configText(config) {
  if (!config || typeof config !== 'object') return DASH;
  return Object.entries(config)
    .map(([k, v]) => `${k}=${configValue(v)}`)
    .join(', ');
}

function pad(n, w = 2) {
  return String(n).padStart(w, '0');
}

/** An RFC 3339 time as local "YYYY-MM-DD HH:MM:SS", or a dash. */
export function time(iso) {
  if (!iso) return DASH;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

/** Milliseconds as "3.2 s", "4 min 5 s", "2 h 3 min". */
export function duration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return DASH;
  const s = ms / 1000;
  if (s < 60) return `${s < 10 ? s.toFixed(1) : Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} min ${Math.round(s - m * 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}

/** How long ago an RFC 3339 time was ("5 s ago"). */
export function ago(iso, now = Date.now()) {
  if (!iso) return DASH;
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return DASH;
  return `${duration(Math.max(0, now - t))} ago`;
}

/** Sum of an experiment's counts: the trials that exist. */
export function countTotal(counts) {
  let n = 0;
  for (const s of STATES) n += (counts && counts[s]) || 0;
  return n;
}

/** Trials in final states (completed + stopped + failed + canceled). */
export function countDone(counts) {
  let n = 0;
  for (const s of FINAL) n += (counts && counts[s]) || 0;
  return n;
}

/** "type" of a searcher or scheduler object. */
export function typeOf(obj, fallback) {
  return (obj && typeof obj === 'object' && obj.type) || fallback;
}

/** The first line of a (possibly multi-line) text, or "" for none. */
export function firstLine(text) {
  if (text === null || text === undefined) return '';
  const s = String(text);
  const i = s.indexOf('\n');
  return (i < 0 ? s : s.slice(0, i)).replace(/\r$/, '');
}

/** How many invalid @rung lines a trial's `warnings` counts (0 when absent). */
export function warningCount(t) {
  const w = t && t.warnings;
  return w && typeof w.count === 'number' ? w.count : 0;
}

// Sub-spaces nest 8 levels deep at most (docs/api.md, "search_space").
const SPACE_DEPTH_MAX = 8;

function isDomain(v) {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && typeof v.type === 'string';
}

/** Walks a (sub-)space in spec order (docs/api.md, "Nested and conditional
 * spaces"): each path that gets a column goes to `cols` (path ->
 * {domain}), every path the spec names to `known`. A searched parameter gets
 * a column, and so does a constant inside a branch (it tells the branches
 * apart; its domain is then a choice of the branches' constants); other
 * constants are the same in every trial. A path that several branches share
 * gathers their values when they are constants or choices, and otherwise
 * keeps the first domain unless that is a log one and a later is not (a
 * log axis could not place the other branch's values). */
const LOG_TYPES = new Set(['loguniform', 'qloguniform', 'lograndint', 'qlograndint']);

function spacePaths(space, prefix, inBranch, depth, cols, known) {
  for (const [key, v] of Object.entries(space || {})) {
    const path = prefix ? `${prefix}.${key}` : key;
    known.add(path);
    const values = isDomain(v) && v.type === 'choice' && Array.isArray(v.values) ? v.values : [];
    const plain = (o) => o !== null && typeof o === 'object' && !Array.isArray(o);
    if (values.length && plain(values[0]) && depth < SPACE_DEPTH_MAX) {
      for (const b of values) if (plain(b)) spacePaths(b, path, true, depth + 1, cols, known);
    } else if (plain(v) && !isDomain(v) && depth < SPACE_DEPTH_MAX) {
      spacePaths(v, path, inBranch, depth + 1, cols, known);
    } else if (isDomain(v) || inBranch) {
      const domain = isDomain(v) ? v : { type: 'choice', values: [v] };
      const had = cols.get(path);
      if (!had) {
        cols.set(path, { domain });
      } else if (had.domain.type === 'choice' && domain.type === 'choice') {
        const seen = new Set(had.domain.values.map((x) => JSON.stringify(x)));
        const more = (domain.values || []).filter((x) => !seen.has(JSON.stringify(x)));
        had.domain = { type: 'choice', values: [...had.domain.values, ...more] };
      } else if (LOG_TYPES.has(had.domain.type) && !LOG_TYPES.has(domain.type) && domain.type !== 'choice') {
        had.domain = domain;
      }
    }
  }
}

/** The parameters of a search space as the configs name them: flattened
 * dotted paths in spec order, each {name, domain}; a branch's parameters
 * are held only by the trials that took it. */
export function spaceParams(space) {
  const cols = new Map();
  spacePaths(space, '', false, 0, cols, new Set());
  return [...cols].map(([name, c]) => ({ name, domain: c.domain }));
}

/** The parameter columns of a trials table: the flattened config keys the
 * trials hold (configs are flat with dotted keys and hold only the branches
 * taken), in spec order, then the keys the spec does not name. */
export function paramColumns(space, trials) {
  const cols = new Map();
  const known = new Set();
  spacePaths(space, '', false, 0, cols, known);
  const held = new Set();
  for (const t of trials) for (const k of Object.keys((t && t.config) || {})) held.add(k);
  return [...[...cols.keys()].filter((c) => held.has(c)), ...[...held].filter((k) => !known.has(k))];
}

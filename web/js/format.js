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

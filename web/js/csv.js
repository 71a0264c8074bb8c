// trials.csv (docs/api.md) read back into trial-like objects for the charts:
// {id, number, state, config, best: {value} | null, step, feasible, last}
// (last: {name: value} of the `metric:<name>` columns, as the trial
// object's `last` holds the last report's metrics; the array's
// `metricNames` lists those names in the header's order). One request of
// about 110 bytes per trial instead of ten JSON pages of 450 each.

import { STATES } from './format.js';

/** Rows of RFC 4180 text (quoted fields may hold commas, quotes, newlines). */
export function parseCsv(text) {
  if (text.indexOf('"') < 0) {
    // Nothing quoted (the usual case: numbers and plain names): split.
    const lines = text.split(/\r?\n/);
    if (lines.length && lines[lines.length - 1] === '') lines.pop();
    return lines.map((l) => l.split(','));
  }
  const rows = [];
  let row = [];
  let field = '';
  let i = 0;
  const n = text.length;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 34 /* " */ && field === '') {
      i++;
      for (;;) {
        const q = text.indexOf('"', i);
        if (q < 0) {
          field += text.slice(i);
          i = n;
          break;
        }
        field += text.slice(i, q);
        if (text.charCodeAt(q + 1) === 34) {
          field += '"';
          i = q + 2;
        } else {
          i = q + 1;
          break;
        }
      }
      continue;
    }
    if (c === 44 /* , */) {
      row.push(field);
      field = '';
      i++;
    } else if (c === 10 || c === 13) {
      row.push(field);
      rows.push(row);
      row = [];
      field = '';
      i += c === 13 && text.charCodeAt(i + 1) === 10 ? 2 : 1;
    } else {
      // An unquoted run up to the next separator.
      let j = i;
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d === 44 || d === 10 || d === 13) break;
        j++;
      }
      field += text.slice(i, j);
      i = j;
    }
  }
  if (field !== '' || row.length) {
    row.push(field);
    rows.push(row);
  }
  return rows;
}

/** The CSV text of one config value, as server/store_read_csv.c writes it (store_csv_value). */
function csvText(v) {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : null; // reals: compare as numbers
  return JSON.stringify(v);
}

/** A config value from its CSV text, typed by its domain (a number for
 * numeric domains, the matching choice for choice and grid). */
function typed(text, domain) {
  if (domain && typeof domain === 'object' && !Array.isArray(domain) && typeof domain.type === 'string') {
    if (domain.type === 'choice' || domain.type === 'grid') {
      for (const v of Array.isArray(domain.values) ? domain.values : []) {
        if (typeof v === 'number' ? Number(text) === v : csvText(v) === text) return v;
      }
      return text;
    }
    return text === '' ? null : Number(text);
  }
  // A constant: shown as given.
  if (domain === null || typeof domain !== 'object') {
    return typeof domain === 'number' ? Number(text) : typeof domain === 'boolean' ? text === 'true' : text;
  }
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** The number that text[a, b) spells when it is an integer of at most 15
 * digits (an optional '-'), exactly as Number() reads it; else NaN. Most
 * cells of trials.csv are such integers, and reading them from the
 * characters spares a string each. */
function intAt(text, a, b) {
  let i = a;
  const neg = text.charCodeAt(i) === 45;
  if (neg) i++;
  if (i === b || b - i > 15) return NaN;
  let v = 0;
  for (; i < b; i++) {
    const c = text.charCodeAt(i) - 48;
    if (c < 0 || c > 9) return NaN;
    v = v * 10 + c;
  }
  return neg ? -v : v;
}

/** Number(text.slice(a, b)). */
function numAt(text, a, b) {
  const v = intAt(text, a, b);
  return v === v ? v : Number(text.slice(a, b));
}

/** typed(text, domain) as a function of a cell text[a, b), for a column
 * of 50,000 cells: a choice's values are looked up in a Map of their CSV
 * text (numbers by value), a numeric domain's text read as a number. */
function typer(domain) {
  if (domain && typeof domain === 'object' && !Array.isArray(domain) && typeof domain.type === 'string') {
    if (domain.type === 'choice' || domain.type === 'grid') {
      const values = Array.isArray(domain.values) ? domain.values : [];
      const byText = new Map();
      const byNumber = new Map();
      // The first match wins, as in typed().
      for (const v of values) {
        if (typeof v === 'number') {
          if (!byNumber.has(v)) byNumber.set(v, v);
        } else {
          const t = csvText(v);
          if (!byText.has(t)) byText.set(t, v);
        }
      }
      if (byNumber.size === 0) {
        return (text, a, b) => {
          const t = text.slice(a, b);
          return byText.has(t) ? byText.get(t) : t;
        };
      }
      return (text, a, b) => {
        if (byText.size === 0) {
          const n = numAt(text, a, b);
          return byNumber.has(n) ? byNumber.get(n) : text.slice(a, b);
        }
        return typed(text.slice(a, b), domain);
      };
    }
    return (text, a, b) => (a === b ? null : numAt(text, a, b));
  }
  return (text, a, b) => typed(text.slice(a, b), domain);
}

/** finite(text.slice(a, b)). */
function finiteAt(text, a, b) {
  if (a === b) return null;
  const v = numAt(text, a, b);
  return Number.isFinite(v) ? v : null;
}

/** text.slice(a, b), without a new string when it is a trial state. */
function stateAt(text, a, b) {
  for (const s of STATES) {
    if (s.length === b - a && text.startsWith(s, a)) return s;
  }
  return text.slice(a, b);
}

/** A trial read from trials.csv: the fields above; `last` is made from its
 * row's metric cells the first time it is read (then kept), unless the row
 * gave it (`own`). */
class CsvTrial {
  #own;
  #lazy;
  #row;

  constructor(id, number, state, config, best, step, feasible, own, lazy, row) {
    this.id = id;
    this.number = number;
    this.state = state;
    this.config = config;
    this.best = best;
    this.step = step;
    this.feasible = feasible;
    this.#own = own;
    this.#lazy = own ? null : lazy;
    this.#row = row;
  }

  get last() {
    if (this.#own) return this.#own;
    const last = {};
    const { text, names, at } = this.#lazy;
    const M = names.length;
    for (let m = 0, o = 2 * M * this.#row; m < M; m++, o += 2) {
      if (at[o + 1] > at[o]) last[names[m]] = lastValue(text.slice(at[o], at[o + 1]));
    }
    this.#own = last;
    this.#lazy = null;
    return last;
  }
}

/** A `metric:<name>` cell as the trial object's `last` holds it: a number,
 * or the API's string for a non-finite value ("NaN", "Infinity"). */
function lastValue(text) {
  const v = Number(text);
  return Number.isFinite(v) ? v : text;
}

function finite(text) {
  if (text === '') return null;
  const v = Number(text);
  return Number.isFinite(v) ? v : null;
}

/**
 * Trial objects from trials.csv for the search space `space`, or null when
 * the header is not the one expected (then the caller reads JSON pages).
 */
export function trialsFromCsv(text, space) {
  // Quoted cells are rare (strings with commas): only then is the whole
  // text split into rows first.
  const quoted = text.indexOf('"') >= 0;
  const rows = quoted ? parseCsv(text) : null;
  if (rows ? rows.length === 0 : text === '') return null;
  const nl = text.indexOf('\n');
  const head = rows ? rows[0] : (nl < 0 ? text : text.slice(0, nl)).replace(/\r$/, '').split(',');
  const col = (name) => head.indexOf(name);
  const iId = col('id');
  const iNum = col('number');
  const iState = col('state');
  const iBest = head.lastIndexOf('best_value');
  const iSteps = head.lastIndexOf('steps');
  // With constraints (docs/api.md): true, false, empty before any report.
  const iFeasibleAt = head.lastIndexOf('feasible');
  const iFeasible = iFeasibleAt > iBest ? iFeasibleAt : -1;
  if (iId !== 0 || iNum < 0 || iState < 0 || iBest < 0) return null;
  const params = Object.keys(space || {}).map((name) => [name, head.indexOf(name, iState + 1), typer(space[name])]);
  if (params.some(([, i]) => i < 0 || i >= iBest)) return null;
  // The reported metrics (docs/api.md: after `steps`, `metric:<name>`).
  const metricCols = [];
  head.forEach((name, i) => {
    if (i > iBest && name.startsWith('metric:')) metricCols.push([name.slice(7), i]);
  });
  const out = [];
  out.metricNames = metricCols.map(([name]) => name);
  // Each row's metric cells are read only when a chart or the table asks
  // for them (CsvTrial's `last`): at load they are where they are in the
  // text, [at[2r], at[2r + 1]) of row r (about 40 ms of 50,000 rows' load
  // otherwise, most of it the garbage of their strings).
  const M = metricCols.length;
  const lazy = { text, names: out.metricNames, at: M ? new Int32Array(2 * M * 1024) : null };
  const trial = (id, number, state, config, best, step, feasible, last) => {
    out.push(new CsvTrial(id, number, state, config, best === null ? null : { value: best }, step, feasible, last, lazy, out.length));
  };
  if (rows) {
    for (let r = 1; r < rows.length; r++) {
      const row = rows[r];
      if (row.length < head.length) continue;
      const config = {};
      for (const [name, i, type] of params) config[name] = type(row[i], 0, row[i].length);
      const last = {};
      for (const [name, i] of metricCols) {
        if (row[i] !== '') last[name] = lastValue(row[i]);
      }
      // (rows with quotes are read whole: `last` is made here)
      trial(Number(row[iId]), Number(row[iNum]), row[iState], config, finite(row[iBest]),
        iSteps >= 0 ? finite(row[iSteps]) : null,
        iFeasible < 0 || row[iFeasible] === '' ? null : row[iFeasible] === 'true', last);
    }
    return out;
  }
  // Nothing quoted: a line at a time, each cell read where it is (its
  // start and end in `cut`), without splitting the text into strings.
  const F = head.length;
  const cut = new Int32Array(F + 1);
  let at = text.indexOf('\n') + 1;
  while (at > 0 && at < text.length) {
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const next = end + 1;
    if (text.charCodeAt(end - 1) === 13) end--;
    let f = 0;
    let c = at;
    cut[0] = at;
    while (f < F) {
      const comma = text.indexOf(',', c);
      if (comma < 0 || comma >= end) {
        cut[++f] = end + 1;
        break;
      }
      cut[++f] = comma + 1;
      c = comma + 1;
    }
    at = next;
    if (f < F) continue; // a short row (as split would give it)
    // Cell j is text[cut[j], cut[j + 1] - 1).
    const config = {};
    for (const [name, i, type] of params) config[name] = type(text, cut[i], cut[i + 1] - 1);
    const feasible = iFeasible < 0 || cut[iFeasible] === cut[iFeasible + 1] - 1 ? null
      : cut[iFeasible + 1] - 1 - cut[iFeasible] === 4 && text.startsWith('true', cut[iFeasible]);
    if (M) {
      const r = out.length;
      if (2 * M * (r + 1) > lazy.at.length) {
        const grown = new Int32Array(lazy.at.length * 2);
        grown.set(lazy.at);
        lazy.at = grown;
      }
      for (let m = 0, o = 2 * M * r; m < M; m++, o += 2) {
        const i = metricCols[m][1];
        lazy.at[o] = cut[i];
        lazy.at[o + 1] = cut[i + 1] - 1;
      }
    }
    trial(numAt(text, cut[iId], cut[iId + 1] - 1), numAt(text, cut[iNum], cut[iNum + 1] - 1),
      stateAt(text, cut[iState], cut[iState + 1] - 1), config, finiteAt(text, cut[iBest], cut[iBest + 1] - 1),
      iSteps >= 0 ? finiteAt(text, cut[iSteps], cut[iSteps + 1] - 1) : null, feasible, null);
  }
  return out;
}

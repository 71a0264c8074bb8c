// trials.csv (docs/api.md) read back into trial-like objects for the charts:
// {id, number, state, config, best: {value} | null, step, feasible}. One request of
// about 110 bytes per trial instead of ten JSON pages of 450 each.

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

/** The CSV text of one config value, as server/api.c writes it. */
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
  const rows = parseCsv(text);
  if (rows.length === 0) return null;
  const head = rows[0];
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
  const params = Object.keys(space || {}).map((name) => [name, head.indexOf(name, iState + 1), space[name]]);
  if (params.some(([, i]) => i < 0 || i >= iBest)) return null;
  const out = [];
  for (let r = 1; r < rows.length; r++) {
    const row = rows[r];
    if (row.length < head.length) continue;
    const config = {};
    for (const [name, i, domain] of params) config[name] = typed(row[i], domain);
    const best = finite(row[iBest]);
    const step = iSteps >= 0 ? finite(row[iSteps]) : null;
    out.push({
      id: Number(row[iId]),
      number: Number(row[iNum]),
      state: row[iState],
      config,
      best: best === null ? null : { value: best },
      step,
      feasible: iFeasible < 0 || row[iFeasible] === '' ? null : row[iFeasible] === 'true',
    });
  }
  return out;
}

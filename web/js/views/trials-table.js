// The experiment page's trials table: one page of 50 trials at a time (it
// must stay fast with 10,000+), sorted by number, best value first or worst
// value first, filtered by state, with prev/next paging. Each row ends with
// its count of invalid @rung lines and its error in one line (error_summary:
// the first line and the exception line; the whole error in the title).
//
// Metric columns (`table-metrics` adds or removes one): a reported
// metric's value in the trial's last report (`last`; docs/api.md), a
// `trial-metric` cell with data-name. With trials brushed on the parallel
// coordinates (setBrushed), the table holds only those: built from the
// trials the charts hold (trials.csv, kept up to date by
// experiment-data.js) instead of the API's pages, sorted and filtered the
// same way here, and says "N of M trials, brushed" with a button to clear
// it (`brush-info`, `brush-clear`). Those rows have what trials.csv holds:
// no start time, duration, warnings or error.
import * as api from '../api.js';
import { h, setAttr, setState, setText, syncRows } from '../dom.js';
import { DASH, FINAL, STATES, configValue, countTotal, duration, firstLine, int, num, paramColumns, time, warningCount } from '../format.js';
import { compareBar, pickBox } from '../picks.js';

const PAGE_SIZE = 50;
const SORTS = [
  ['number', 'trial number'],
  ['value', 'best value first'],
  ['-value', 'worst value first'],
];

/**
 * id: the experiment; data: its ExperimentData (for how many trials have a
 * value); onChange(): called when the user changes the query (poll now).
 * Returns {el, needsTrials(), prefetch(signal), sync(x, signal, early)}.
 */
export function createTrialsTable(id, data, onChange, { onClearBrush = null } = {}) {
  const query = { sort: 'number', state: '', offset: 0 };
  let page = { key: '', sig: '', rows: [] };
  let paramNames = null;
  // Several objectives (docs/api.md): a column each, the trial's `values`.
  let objectives = null;
  let metricCols = []; // names of the reported metrics shown as columns
  let lastX = null; // the experiment of the last sync
  let brushed = null; // a Set of trial ids, or null
  let apiPage = null; // the API's page while brushed rows are shown

  const sortSel = h('select', { testid: 'sort', 'aria-label': 'sort trials', onchange: () => setQuery({ sort: sortSel.value }) },
    SORTS.map(([v, label]) => h('option', { value: v, text: label })));
  const filterSel = h('select', { testid: 'filter-state', 'aria-label': 'filter by state', onchange: () => setQuery({ state: filterSel.value }) },
    h('option', { value: '', text: 'all states' }),
    STATES.map((s) => h('option', { value: s, text: s })));
  const prev = h('button', { type: 'button', testid: 'page-prev', disabled: true, onclick: () => setQuery({ offset: Math.max(0, query.offset - PAGE_SIZE) }) }, '\u2039 Prev');
  const next = h('button', { type: 'button', testid: 'page-next', disabled: true, onclick: () => setQuery({ offset: query.offset + PAGE_SIZE }) }, 'Next \u203a');
  const pageInfo = h('span', { class: 'page-info', testid: 'page-info', text: '0\u20130 of 0' });
  const metricsSel = h('select', { testid: 'table-metrics', 'aria-label': 'metric columns', onchange: () => toggleMetric(metricsSel.value) },
    h('option', { value: '', text: 'metric columns\u2026' }));
  const brushText = h('span', { testid: 'brush-text' });
  const brushClear = h('button', { type: 'button', testid: 'brush-clear', onclick: () => { if (onClearBrush) onClearBrush(); } }, 'Clear brush');
  const brushInfo = h('span', { class: 'brush-info', testid: 'brush-info', hidden: true }, brushText, ' ', brushClear);
  const theadRow = h('tr');
  const tbody = h('tbody');
  const rowMap = new Map();
  const el = h('div', null,
    h('div', { class: 'toolbar' },
      h('label', null, 'Sort ', sortSel), h('label', null, 'State ', filterSel), metricsSel, brushInfo,
      compareBar('trials', tbody), // picks.js: the trial-pick boxes' Compare (N)
      h('span', { class: 'spacer' }), prev, pageInfo, next),
    h('div', { class: 'table-wrap' }, h('table', { class: 'grid', testid: 'trials' }, h('thead', null, theadRow), tbody)));

  const key = () => JSON.stringify(query);

  function setQuery(change) {
    if ('sort' in change || 'state' in change) change.offset = 0;
    Object.assign(query, change);
    sortSel.value = query.sort;
    filterSel.value = query.state;
    if (brushed) renderBrushed(); // from the trials held: at once
    onChange();
  }

  /** The options of table-metrics: each reported metric, checked when shown. */
  function renderMetricOptions() {
    const names = [...data.metricNames];
    const want = ['', ...names].join('\u0000') + '|' + metricCols.join('\u0000');
    if (metricsSel.dataset.sig === want) return;
    metricsSel.dataset.sig = want;
    metricsSel.replaceChildren(h('option', { value: '', text: 'metric columns\u2026' }),
      ...names.map((n) => h('option', { value: n, text: `${metricCols.includes(n) ? '\u2713' : '+'} ${n}` })));
    metricsSel.value = '';
  }

  function toggleMetric(name) {
    metricsSel.value = '';
    if (!name) return;
    metricCols = metricCols.includes(name) ? metricCols.filter((n) => n !== name) : [...metricCols, name];
    renderMetricOptions();
    if (!lastX || !paramNames) return;
    setup(lastX, paramNames);
    tbody.replaceChildren();
    rowMap.clear();
    syncRows(tbody, rowMap, page.rows, (t) => t.id, createRow, updateRow);
  }

  /** The header for the parameter columns `names`: the flattened config
   * keys of the trials (docs/api.md, "Nested and conditional spaces"). */
  function setup(x, names) {
    paramNames = names;
    objectives = x.metrics && x.metrics.length ? x.metrics : null;
    theadRow.replaceChildren(
      h('th', { class: 'pick', title: 'pick to compare' }),
      h('th', { class: 'num', text: '#' }),
      h('th', { text: 'State' }),
      ...(objectives
        ? objectives.map((m) => h('th', { class: 'num objective', text: `${m.name} (${m.mode})` }))
        : [h('th', { class: 'num', text: `Best ${x.metric}` })]),
      h('th', { class: 'num', text: (x.scheduler && x.scheduler.time_attr) || 'step' }),
      h('th', { class: 'num', text: 'Rung' }),
      ...metricCols.map((m) => h('th', { class: 'num metric-col', 'data-name': m, text: m, title: 'in the last report' })),
      ...paramNames.map((p) => h('th', { class: 'param', text: p })),
      h('th', { text: 'Started' }),
      h('th', { class: 'num', text: 'Duration' }),
      h('th', { class: 'num', text: 'Warnings', title: 'invalid @rung lines the worker refused' }),
      h('th', { text: 'Error' }));
  }

  function createRow(t) {
    const c = {
      link: h('a', { href: `#/trials/${t.id}` }),
      state: h('span', { testid: 'trial-state' }),
      value: h('td', { class: 'num', testid: 'trial-value' }),
      objectives: (objectives || []).map((m) => h('td', { class: 'num', testid: 'trial-objective', 'data-name': m.name })),
      step: h('td', { class: 'num', testid: 'trial-step' }),
      rung: h('td', { class: 'num' }),
      metrics: metricCols.map((m) => h('td', { class: 'num', testid: 'trial-metric', 'data-name': m })),
      params: paramNames.map(() => h('td', { class: 'param' })),
      started: h('td'),
      duration: h('td', { class: 'num' }),
      warnings: h('td', { class: 'num', testid: 'trial-warnings' }),
      error: h('td', { class: 'error-cell', testid: 'trial-error' }),
    };
    c.infeasible = h('span', { class: 'infeasible-tag', testid: 'trial-infeasible', text: 'infeasible', hidden: true });
    const row = h('tr', { testid: 'trial-row', 'data-id': t.id },
      h('td', { class: 'pick' }, pickBox('trials', t.id)),
      h('td', { class: 'num' }, c.link), h('td', null, c.state, ' ', c.infeasible),
      objectives ? c.objectives : c.value, c.step, c.rung, c.metrics, c.params, c.started, c.duration,
      c.warnings, c.error);
    row.cells_ = c;
    return row;
  }

  function updateRow(row, t) {
    const c = row.cells_;
    setText(c.link, t.number);
    setAttr(c.link, 'title', `trial id ${t.id}`);
    setState(c.state, t.state);
    // Constraints (docs/api.md): a trial whose last report breaks one.
    c.infeasible.hidden = t.feasible !== false;
    row.classList.toggle('infeasible', t.feasible === false);
    setText(c.value, t.best ? num(t.best.value) : DASH);
    (objectives || []).forEach((m, i) => {
      const v = t.values ? t.values[m.name] : undefined;
      setText(c.objectives[i], v === undefined || v === null ? DASH : num(v));
    });
    setText(c.step, int(t.step));
    setText(c.rung, t.rung === null || t.rung === undefined ? DASH : num(t.rung));
    metricCols.forEach((m, i) => {
      const v = t.last ? t.last[m] : undefined;
      setText(c.metrics[i], v === undefined || v === null ? DASH : num(v));
      setAttr(c.metrics[i], 'data-value', v === undefined || v === null ? null : String(v));
    });
    paramNames.forEach((p, i) => {
      const v = t.config ? t.config[p] : undefined;
      // A parameter of a branch the trial did not take: an empty cell.
      setText(c.params[i], v === undefined ? '' : typeof v === 'number' ? num(v) : configValue(v));
      setAttr(c.params[i], 'title', v === undefined ? null : configValue(v));
    });
    setText(c.started, time(t.started_at));
    const start = t.started_at ? Date.parse(t.started_at) : NaN;
    const end = t.ended_at ? Date.parse(t.ended_at) : t.state === 'running' ? Date.now() : NaN;
    setText(c.duration, duration(end - start));
    const nWarn = warningCount(t);
    setText(c.warnings, nWarn);
    c.warnings.classList.toggle('has-warnings', nWarn > 0);
    const last = nWarn > 0 && t.warnings.last && t.warnings.last.length ? t.warnings.last[t.warnings.last.length - 1] : null;
    setAttr(c.warnings, 'title', last ? `last: ${last.why || ''}\n${last.line || ''}` : null);
    // Errors come from user programs: text nodes and attributes only.
    setText(c.error, t.error ? (t.error_summary || firstLine(t.error)) : '');
    setAttr(c.error, 'title', t.error ? t.error : null);
  }

  // The config keys of every trial held, per data.trialsVersion: walking
  // 50,000 configs at each new page cost the sort and filter 10-20 ms.
  let heldKeys = { version: -1, trials: [] };

  /** paramColumns of the trials held and the page's items. */
  function columnsOf(x, items) {
    if (heldKeys.version !== data.trialsVersion) {
      // One trial per distinct set of keys stands for the rest.
      const seen = new Map();
      for (const t of data.trials.values()) {
        const k = t && t.config ? Object.keys(t.config).join('\u0000') : '';
        if (!seen.has(k)) seen.set(k, t);
      }
      heldKeys = { version: data.trialsVersion, trials: [...seen.values()] };
    }
    return paramColumns(x.search_space, [...heldKeys.trials, ...items]);
  }

  /** The brushed trials in the table's order and state filter. */
  function brushedItems() {
    const out = [];
    for (const tid of brushed) {
      const t = data.trials.get(tid);
      if (t && (!query.state || t.state === query.state)) out.push(t);
    }
    const x = lastX || {};
    const mode = x.mode || ((x.metrics || [])[0] || {}).mode || 'min';
    const val = (t) => (t.best && typeof t.best.value === 'number' ? t.best.value : null);
    if (query.sort === 'number') {
      out.sort((a, b) => a.number - b.number);
    } else {
      // Best first (or worst first), the trials without a value last, ties by number.
      const sign = (mode === 'max' ? -1 : 1) * (query.sort === '-value' ? -1 : 1);
      out.sort((a, b) => {
        const va = val(a);
        const vb = val(b);
        if (va === null || vb === null) return (va === null) - (vb === null) || a.number - b.number;
        return (va - vb) * sign || a.number - b.number;
      });
    }
    return out;
  }

  /** The page of brushed trials, from the trials held. */
  function renderBrushed() {
    const items = brushedItems();
    const total = items.length;
    if (query.offset > 0 && query.offset >= total) query.offset = Math.max(0, Math.floor((total - 1) / PAGE_SIZE) * PAGE_SIZE);
    const rows = items.slice(query.offset, query.offset + PAGE_SIZE);
    page = { key: `brushed/${key()}`, sig: '', rows };
    if (!paramNames && lastX) setup(lastX, paramColumns(lastX.search_space, rows));
    if (paramNames) syncRows(tbody, rowMap, rows, (t) => t.id, createRow, updateRow);
    const all = lastX ? countTotal(lastX.counts || {}) : data.trials.size;
    setText(brushText, `${total} of ${all} trials, brushed`);
    brushInfo.hidden = false;
    renderInfo(total);
  }

  function renderInfo(total) {
    const n = page.rows.length;
    setText(pageInfo, `${n ? query.offset + 1 : 0}\u2013${query.offset + n} of ${total}`);
    prev.disabled = query.offset === 0;
    next.disabled = query.offset + PAGE_SIZE >= total;
  }

  /** Trials with a best value (in a state, or all), from the charts' data. */
  function valuedCount(state) {
    let n = 0;
    for (const t of data.trials.values()) {
      if (t.best && t.best.value !== null && t.best.value !== undefined && (!state || t.state === state)) n++;
    }
    return n;
  }

  /** The current query's page in an order the API has (number or value). */
  async function fetchPage(signal) {
    const k = key();
    const doc = await api.listTrials(id, { state: query.state, sort: query.sort, limit: PAGE_SIZE, offset: query.offset }, signal);
    return { key: k, items: doc.items || [] };
  }

  /** Worst value first: the API sorts best first with the trials without a
   * value last, so this is the valued part read backwards, then the rest;
   * how many have a value comes from the trials the charts hold. */
  async function fetchWorstFirst(total, signal) {
    const K = Math.min(total, valuedCount(query.state));
    const o = query.offset;
    const end = Math.min(o + PAGE_SIZE, total);
    const list = (offset, limit) =>
      api.listTrials(id, { state: query.state, sort: 'value', limit, offset }, signal).then((d) => d.items || []);
    const [valued, rest] = await Promise.all([
      o < K ? list(K - Math.min(end, K), Math.min(end, K) - o) : [],
      end > K ? list(Math.max(o, K), end - Math.max(o, K)) : [],
    ]);
    return [...valued.reverse(), ...rest];
  }

  return {
    el,

    /** Only the trials `ids` (a Set), or every trial again (null). */
    setBrushed(ids) {
      const was = !!brushed;
      brushed = ids;
      query.offset = 0;
      if (brushed) {
        if (!was) apiPage = page;
        renderBrushed();
      } else {
        brushInfo.hidden = true;
        page = apiPage || { key: '', sig: '', rows: [] };
        page.key = ''; // the API's page is read again
        onChange();
      }
    },

    /** Worst-first pages need the trials' values (data.syncTrials) first. */
    needsTrials: () => query.sort === '-value',

    /** A new query's page, asked for before the experiment is in; or null. */
    prefetch(signal) {
      if (brushed || query.sort === '-value' || key() === page.key) return null;
      const p = fetchPage(signal);
      p.catch(() => {}); // awaited in sync; this only keeps it from being "unhandled"
      return p;
    },

    /** Brings the table up to date for the experiment x just read; early:
     * prefetch()'s promise. */
    async sync(x, signal, early) {
      lastX = x;
      renderMetricOptions();
      if (brushed) {
        renderBrushed();
        return;
      }
      const c = x.counts || {};
      const total = query.state ? c[query.state] || 0 : countTotal(c);
      if (query.offset > 0 && query.offset >= total) {
        query.offset = Math.max(0, Math.floor((total - 1) / PAGE_SIZE) * PAGE_SIZE);
        early = null; // it asked for a page that is not there any more
      }
      const k = key();
      const sig = JSON.stringify([c, x.best && x.best.trial_id, x.best && x.best.value]);
      // Finished trials are not fetched again: a page of final trials
      // changes only when the counts or the best change (a new trial, a new
      // order), and not even then in number order when the page is full.
      const stable = query.sort === 'number' && !query.state && page.rows.length === PAGE_SIZE;
      const needed = k !== page.key ||
        page.rows.some((t) => !FINAL.has(t.state)) ||
        (sig !== page.sig && !stable) ||
        (query.sort !== 'number' && (c.running || 0) > 0);
      if (needed) {
        let items;
        if (query.sort === '-value') {
          items = await fetchWorstFirst(total, signal);
        } else {
          const got = early ? await early : null;
          items = got && got.key === k ? got.items : (await fetchPage(signal)).items;
        }
        if (k !== key()) return; // the user changed it meanwhile; their change polls again
        page = { key: k, sig, rows: items };
        const names = columnsOf(x, items);
        if (!paramNames || JSON.stringify(names) !== JSON.stringify(paramNames)) {
          setup(x, names); // a branch seen for the first time: new columns
          tbody.replaceChildren();
          rowMap.clear();
        }
        syncRows(tbody, rowMap, items, (t) => t.id, createRow, updateRow);
      }
      renderInfo(total);
    },
  };
}

// #/experiments/ID — one experiment: state and counts, the best trial,
// cancel and CSV, the charts (learning curves, history, one scatter per
// parameter, parallel coordinates) and one page of its trials.
import * as api from '../api.js';
import { createBestChart } from '../charts/best.js';
import { ashaRungs, createCurvesChart } from '../charts/curves.js';
import { createParallelChart } from '../charts/parallel.js';
import { createScatterChart } from '../charts/scatter.js';
import { loadUPlot, searchParams } from '../charts/uplot.js';
import { h, setAttr, setState, setText, syncRows } from '../dom.js';
import { DASH, FINAL, STATES, configText, configValue, countTotal, duration, int, num, time, typeOf } from '../format.js';
import { startPoll } from '../poll.js';
import { reportError, clearError } from '../shell.js';
import { ExperimentData } from './experiment-data.js';

const PAGE_SIZE = 50;
const SORTS = [
  ['number', 'trial number'],
  ['value', 'best value first'],
  ['-value', 'worst value first'],
];

export function mount(root, { id }) {
  document.title = `Experiment ${id} · Rung`;
  const data = new ExperimentData(id);
  const query = { sort: 'number', state: '', offset: 0 };
  let page = { key: '', sig: '', rows: [], total: 0 };
  let exp = null;
  let charts = null;
  let chartsDrawn = '';
  let destroyed = false;

  // ---- header, counts, best trial ----
  const title = h('h1', { testid: 'exp-title', text: `Experiment ${id}` });
  const stateBadge = h('span', { class: 'state', testid: 'exp-state' });
  const meta = h('p', { class: 'meta' });
  const cancel = h('button', { type: 'button', class: 'danger', testid: 'cancel', disabled: true, onclick: onCancel },
    'Cancel experiment');
  const csv = h('a', { class: 'button', testid: 'csv', href: api.csvUrl(id), download: `experiment-${id}-trials.csv`, onclick: onCsv },
    'Download CSV');
  const countEls = {};
  const counts = h('div', { class: 'counts' },
    STATES.map((s) => {
      countEls[s] = h('span', { class: 'count-num', testid: `count-${s}`, text: '0' });
      return h('div', { class: `count state-border-${s}` }, countEls[s], h('span', { class: `count-label state-${s}`, text: s }));
    }));
  const bestValue = h('span', { class: 'best-value num', testid: 'best-value', text: DASH });
  const bestConfig = h('div', { class: 'best-config', testid: 'best-config' });
  const bestLink = h('a', { testid: 'best-link', hidden: true });
  const bestStep = h('span', { class: 'muted' });
  const bestBox = h('div', { class: 'best-trial card', testid: 'best-trial' },
    h('div', { class: 'card-title' }, 'Best trial ', bestLink),
    h('div', null, bestValue, ' ', bestStep),
    bestConfig);

  // ---- charts ----
  const curvesEl = h('div', { class: 'chart', testid: 'chart-curves' });
  const bestEl = h('div', { class: 'chart', testid: 'chart-best' });
  const scatterGrid = h('div', { class: 'chart-grid' });
  const parallelEl = h('div', { class: 'chart', testid: 'chart-parallel' });

  // ---- trials table ----
  const sortSel = h('select', { testid: 'sort', 'aria-label': 'sort trials', onchange: () => setQuery({ sort: sortSel.value }) },
    SORTS.map(([v, label]) => h('option', { value: v, text: label })));
  const filterSel = h('select', { testid: 'filter-state', 'aria-label': 'filter by state', onchange: () => setQuery({ state: filterSel.value }) },
    h('option', { value: '', text: 'all states' }),
    STATES.map((s) => h('option', { value: s, text: s })));
  const prev = h('button', { type: 'button', testid: 'page-prev', onclick: () => setQuery({ offset: Math.max(0, query.offset - PAGE_SIZE) }) }, '\u2039 Prev');
  const next = h('button', { type: 'button', testid: 'page-next', onclick: () => setQuery({ offset: query.offset + PAGE_SIZE }) }, 'Next \u203a');
  const pageInfo = h('span', { class: 'page-info', testid: 'page-info', text: `0\u20130 of 0` });
  const theadRow = h('tr');
  const tbody = h('tbody');
  const rowMap = new Map();
  let paramNames = [];

  root.append(
    h('section', { class: 'page' },
      h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Experiments'), ' / ', `#${id}`),
      h('div', { class: 'title-row' }, h('div', null, title, meta), h('div', { class: 'actions' }, stateBadge, cancel, csv)),
      h('div', { class: 'summary' }, counts, bestBox),
      h('h2', { text: 'Learning curves' }), curvesEl,
      h('h2', { text: 'Best so far' }), bestEl,
      h('h2', { text: 'Trials' }),
      h('div', { class: 'toolbar' },
        h('label', null, 'Sort ', sortSel), h('label', null, 'State ', filterSel),
        h('a', { href: '#/workers', class: 'muted' }, 'workers'),
        h('span', { class: 'spacer' }), prev, pageInfo, next),
      h('div', { class: 'table-wrap' }, h('table', { class: 'grid', testid: 'trials' }, h('thead', null, theadRow), tbody)),
      h('h2', { text: 'Parameters against the metric' }), scatterGrid,
      h('h2', { text: 'Parallel coordinates' }), parallelEl));

  function setQuery(change) {
    if ('sort' in change || 'state' in change) change.offset = 0;
    Object.assign(query, change);
    sortSel.value = query.sort;
    filterSel.value = query.state;
    poller.kick();
  }

  async function onCancel() {
    if (!exp || exp.state !== 'running') return;
    if (!window.confirm(`Cancel experiment "${exp.name || id}"? Pending trials are canceled; running trials stop at their next report.`)) return;
    cancel.disabled = true;
    try {
      renderHeader(await api.cancelExperiment(id));
      clearError('cancel');
    } catch (e) {
      reportError('cancel', e);
    }
    poller.kick();
  }

  async function onCsv(ev) {
    if (!api.hasToken()) return; // a plain link works without a token
    ev.preventDefault();
    try {
      const blob = await api.getCsv(id);
      const href = URL.createObjectURL(blob);
      const a = h('a', { href, download: `experiment-${id}-trials.csv` });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(href), 10000);
      clearError('csv');
    } catch (e) {
      reportError('csv', e);
    }
  }

  function renderHeader(x) {
    exp = x;
    document.title = `${x.name || `Experiment ${id}`} · Rung`;
    setText(title, x.name || `Experiment ${id}`);
    setState(stateBadge, x.state);
    const sched = x.scheduler || {};
    setText(meta, [
      `#${x.id}`,
      `${x.metric} (${x.mode})`,
      `searcher ${typeOf(x.searcher, 'random')}`,
      `scheduler ${typeOf(sched, 'fifo')}${sched.promote ? ' (promote)' : ''}`,
      `${x.total_trials} trials`,
      `created ${time(x.created_at)}`,
      x.ended_at ? `ended ${time(x.ended_at)}` : null,
    ].filter(Boolean).join(' \u00b7 '));
    cancel.disabled = x.state !== 'running';
    for (const s of STATES) setText(countEls[s], (x.counts && x.counts[s]) || 0);
    const b = x.best;
    if (b) {
      setText(bestValue, num(b.value));
      setText(bestConfig, configText(b.config));
      const t = data.trials.get(b.trial_id);
      setText(bestLink, t ? `#${t.number} (id ${b.trial_id})` : `id ${b.trial_id}`);
      setAttr(bestLink, 'href', `#/trials/${b.trial_id}`);
      bestLink.hidden = false;
      setText(bestStep, `at step ${int(b.step)}`);
    } else {
      setText(bestValue, DASH);
      setText(bestConfig, 'no results yet');
      bestLink.hidden = true;
      setText(bestStep, '');
    }
  }

  // ---- the trials page ----
  function setupTable(x) {
    paramNames = searchParams(x.search_space).map((p) => p.name);
    theadRow.replaceChildren(
      h('th', { class: 'num', text: '#' }),
      h('th', { text: 'State' }),
      h('th', { class: 'num', text: `Best ${x.metric}` }),
      h('th', { class: 'num', text: (x.scheduler && x.scheduler.time_attr) || 'step' }),
      h('th', { class: 'num', text: 'Rung' }),
      ...paramNames.map((p) => h('th', { class: 'param', text: p })),
      h('th', { text: 'Started' }),
      h('th', { class: 'num', text: 'Duration' }));
  }

  function createRow(t) {
    const c = {
      link: h('a', { href: `#/trials/${t.id}` }),
      state: h('span', { testid: 'trial-state' }),
      value: h('td', { class: 'num', testid: 'trial-value' }),
      step: h('td', { class: 'num', testid: 'trial-step' }),
      rung: h('td', { class: 'num' }),
      params: paramNames.map(() => h('td', { class: 'param' })),
      started: h('td'),
      duration: h('td', { class: 'num' }),
    };
    const row = h('tr', { testid: 'trial-row', 'data-id': t.id },
      h('td', { class: 'num' }, c.link), h('td', null, c.state), c.value, c.step, c.rung, c.params, c.started, c.duration);
    row.cells_ = c;
    return row;
  }

  function updateRow(row, t) {
    const c = row.cells_;
    setText(c.link, t.number);
    setAttr(c.link, 'title', `trial id ${t.id}`);
    setState(c.state, t.state);
    setText(c.value, t.best ? num(t.best.value) : DASH);
    setText(c.step, int(t.step));
    setText(c.rung, t.rung === null || t.rung === undefined ? DASH : num(t.rung));
    paramNames.forEach((p, i) => {
      const v = t.config ? t.config[p] : undefined;
      setText(c.params[i], v === undefined ? DASH : typeof v === 'number' ? num(v) : configValue(v));
      setAttr(c.params[i], 'title', v === undefined ? null : configValue(v));
    });
    setText(c.started, time(t.started_at));
    const start = t.started_at ? Date.parse(t.started_at) : NaN;
    const end = t.ended_at ? Date.parse(t.ended_at) : t.state === 'running' ? Date.now() : NaN;
    setText(c.duration, duration(end - start));
  }

  function renderPage(total) {
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

  async function syncPage(x, signal) {
    const c = x.counts || {};
    const total = query.state ? c[query.state] || 0 : countTotal(c);
    if (query.offset > 0 && query.offset >= total) {
      query.offset = Math.max(0, Math.floor((total - 1) / PAGE_SIZE) * PAGE_SIZE);
    }
    const key = JSON.stringify(query);
    const sig = JSON.stringify([c, x.best && x.best.trial_id, x.best && x.best.value]);
    // Finished trials are not fetched again: a page of final trials changes
    // only when the counts or the best change (a new trial, a new order),
    // and not even then in number order when the page is full.
    const stable = query.sort === 'number' && !query.state && page.rows.length === PAGE_SIZE;
    const needed = key !== page.key ||
      page.rows.some((t) => !FINAL.has(t.state)) ||
      (sig !== page.sig && !stable) ||
      (query.sort !== 'number' && (c.running || 0) > 0);
    if (!needed) {
      renderPage(total);
      return;
    }
    let items;
    if (query.sort === '-value') {
      // The API sorts best first, trials without a value last, so worst
      // first is the valued part read backwards, then the rest; K (how many
      // have a value) comes from the trials the charts hold.
      const K = Math.min(total, valuedCount(query.state));
      const o = query.offset;
      const end = Math.min(o + PAGE_SIZE, total);
      items = [];
      const list = (offset, limit) =>
        api.listTrials(id, { state: query.state, sort: 'value', limit, offset }, signal).then((d) => d.items || []);
      const [valued, rest] = await Promise.all([
        o < K ? list(K - Math.min(end, K), Math.min(end, K) - o) : [],
        end > K ? list(Math.max(o, K), end - Math.max(o, K)) : [],
      ]);
      items = [...valued.reverse(), ...rest];
    } else {
      const doc = await api.listTrials(id, { state: query.state, sort: query.sort, limit: PAGE_SIZE, offset: query.offset }, signal);
      items = doc.items || [];
    }
    if (key !== JSON.stringify(query)) return; // the user changed it meanwhile; the kick refetches
    page = { key, sig, rows: items, total };
    syncRows(tbody, rowMap, items, (t) => t.id, createRow, updateRow);
    renderPage(total);
  }

  // ---- charts ----
  async function setupCharts(x) {
    const uPlot = await loadUPlot();
    const params = searchParams(x.search_space);
    const sched = x.scheduler || {};
    const onStep = !sched.time_attr || sched.time_attr === 'step';
    const made = {
      curves: createCurvesChart(curvesEl, uPlot, {
        metric: x.metric,
        rungs: onStep ? ashaRungs(sched) : [],
        onPick: (tid) => { window.location.hash = `#/trials/${tid}`; },
      }),
      best: createBestChart(bestEl, uPlot, { metric: x.metric, mode: x.mode }),
      scatter: params.map((p) => {
        const el = h('div', { class: 'chart', testid: `chart-scatter-${p.name}` });
        scatterGrid.append(el);
        return createScatterChart(el, uPlot, { param: p, metric: x.metric });
      }),
      parallel: createParallelChart(parallelEl, { params, metric: x.metric, mode: x.mode }),
    };
    if (params.length === 0) scatterGrid.append(h('p', { class: 'muted', text: 'The search space has no parameters to plot.' }));
    return made;
  }

  function renderCharts() {
    const bestId = exp && exp.best ? exp.best.trial_id : null;
    const trialsKey = `${data.trialsVersion}/${bestId}`;
    const curvesKey = `${data.curvesVersion}/${trialsKey}`;
    const [lastCurves, lastTrials] = chartsDrawn.split('|');
    if (curvesKey !== lastCurves) charts.curves.update(data.curves, data.trials, bestId);
    if (trialsKey !== lastTrials) {
      charts.best.update(data.trials);
      for (const s of charts.scatter) s.update(data.trials, bestId);
      charts.parallel.update(data.trials, bestId);
    }
    chartsDrawn = `${curvesKey}|${trialsKey}`;
  }

  const prefetch = new AbortController();
  data.prefetch(prefetch.signal);
  loadUPlot(); // start loading the charts' module with the data
  const poller = startPoll('experiment', async (signal) => {
    const expP = api.getExperiment(id, signal);
    const curvesP = data.syncCurves(signal);
    curvesP.catch(() => {}); // awaited below; this only keeps it from being "unhandled"
    const x = await expP;
    if (destroyed) return undefined;
    if (!charts) {
      setupTable(x);
      charts = setupCharts(x);
    }
    renderHeader(x);
    const trialsP = data.syncTrials(x, signal);
    trialsP.catch(() => {});
    if (query.sort === '-value') await trialsP; // its page needs the trials' values
    await syncPage(x, signal);
    await Promise.all([curvesP, trialsP]);
    charts = await charts;
    if (destroyed) return undefined;
    renderHeader(x); // the best trial's number may be known now
    renderCharts();
    return data.backlog > 0 ? 100 : undefined;
  });

  return () => {
    destroyed = true;
    prefetch.abort();
    poller.stop();
    clearError('cancel');
    clearError('csv');
    Promise.resolve(charts).then((c) => {
      if (!c) return;
      c.curves.destroy();
      c.best.destroy();
      c.scatter.forEach((s) => s.destroy());
      c.parallel.destroy();
    });
  };
}

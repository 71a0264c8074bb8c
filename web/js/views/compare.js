// #/compare?trials=1,2,3 — picked trials side by side: their curves of one
// metric overlaid (a select picks it among those they reported: GET
// /trials/{id}/metrics), their state, best value and steps, and the
// parameters whose values differ among them (the equal ones folded away).
// #/compare?experiments=1,2 — picked experiments: their best value so far
// overlaid (against trial number or time since submission) and the spec
// keys that differ (GET /experiments/{id}/spec's "effective"; the
// experiment object without its runtime fields when rungd has no such
// route). Picks are made with the checkboxes of the trials table and the
// experiments list (picks.js). Both poll until what they show is final.
import * as api from '../api.js';
import { createOverlayChart, overlayColor } from '../charts/overlay.js';
import { loadUPlot } from '../charts/uplot.js';
import { bestSoFar, canonical, flatten, idList, keyDiff, objectiveOf, specOfExperiment, trialValue } from '../compare-model.js';
import { h, setText } from '../dom.js';
import { DASH, FINAL, configValue, countDone, int, num, typeOf } from '../format.js';
import { DONE, startPoll } from '../poll.js';
import { compareHref, togglePick } from '../picks.js';
import { tagChips } from './tags.js';

const METRICS_PAGE = 10000; // server/api_trials.c METRICS_MAX: a full page, read on
const LIST_PAGE = 1000; // docs/api.md: lists give at most 1,000 at once
const LIVE = new Set(['running', 'paused']);
const REREAD_MS = 5000; // a running experiment's trials are read again at most this often

export function mount(root, { query }) {
  const trials = idList(query.get('trials'));
  const experiments = idList(query.get('experiments'));
  if (trials.length) return mountTrials(root, trials);
  if (experiments.length) return mountExperiments(root, experiments);
  document.title = 'Compare · Rung';
  root.append(h('section', { class: 'page' },
    h('h1', { text: 'Compare' }),
    h('p', { class: 'empty', testid: 'compare-empty' },
      'Pick trials with the checkboxes of an experiment\u2019s trials table (or shift-click their learning curves), ',
      'or experiments in the ', h('a', { href: '#/' }, 'experiments list'), ', then press Compare.')));
  return () => {};
}

/** A cell showing a value of a config or spec exactly (absent: a dash). */
function valueCell(v, attrs) {
  const absent = v === undefined;
  return h('td', { class: 'param', ...attrs, 'data-value': absent ? null : canonical(v), text: absent ? DASH : configValue(v) });
}

/** The head row: a label, then a column per item (swatch and link). */
function headRow(label, items) {
  return h('tr', null, h('th', { text: label }), items.map((it) => h('th', { testid: it.testid, 'data-id': it.id },
    h('span', { class: 'swatch', style: `background:${it.color}` }), h('a', { href: it.href, text: it.label }))));
}

/** The differing keys as rows (testid rowId, data-param / data-key), the
 * others folded in a <details> (testid sameId). */
function diffTables({ diff, cols, valueOf, keyAttr, rowId, diffId, sameId, noun, head }) {
  const cellAttrs = (c) => ({ testid: 'compare-value', [`data-${cols.kind}`]: c.id });
  const diffBody = diff.differ.length
    ? diff.differ.map((k) => h('tr', { testid: rowId, [keyAttr]: k }, h('th', { class: 'param', text: k }),
      cols.items.map((c) => valueCell(valueOf(c, k), cellAttrs(c)))))
    : [h('tr', null, h('td', { class: 'muted', colspan: cols.items.length + 1, text: `no ${noun} differs` }))];
  const same = h('details', { class: 'compare-same', testid: sameId },
    h('summary', { text: `Same in all (${diff.same.length})` }),
    h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
      h('tbody', null, diff.same.map((k) => h('tr', { testid: `${rowId.replace(/-row$/, '')}-same-row`, [keyAttr]: k },
        h('th', { class: 'param', text: k }),
        valueCell(valueOf(cols.items[0], k), {})))))));
  return [
    h('div', { class: 'table-wrap' }, h('table', { class: 'grid compare-diff', testid: diffId },
      h('thead', null, head), h('tbody', null, diffBody))),
    same,
  ];
}

// ---- trials ----------------------------------------------------------------

function mountTrials(root, ids) {
  document.title = `Compare trials ${ids.join(', ')} \u00b7 Rung`;
  let destroyed = false;
  const byId = new Map(); // id -> {trial, attempt, lastStep, reports}
  const exps = new Map(); // experiment id -> experiment object
  let metric = null; // the metric drawn
  let chosen = false; // the user chose it
  let chart = null;
  let chartMetric = null;
  let drawnKey = '';
  let tablesKey = '';

  const metricSel = h('select', { testid: 'compare-metric', 'aria-label': 'metric', onchange: () => {
    metric = metricSel.value;
    chosen = true;
    renderChart();
  } });
  const chartEl = h('div', { class: 'chart', testid: 'compare-chart' });
  const summary = h('table', { class: 'grid compare-summary', testid: 'compare-table' });
  const diffHolder = h('div');
  const crumbs = h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Experiments'), ' / compare');
  root.append(h('section', { class: 'page', testid: 'compare-trials-page' },
    crumbs,
    h('h1', { testid: 'compare-title', text: `Compare ${ids.length} trials` }),
    h('div', { class: 'toolbar' }, h('label', null, 'Metric ', metricSel), h('span', { class: 'spacer' }),
      h('span', { class: 'muted', text: 'shift-click a curve to unpick its trial' })),
    chartEl,
    h('h2', { text: 'Trials' }),
    h('div', { class: 'table-wrap' }, summary),
    h('h2', { text: 'Parameters that differ' }),
    diffHolder));

  const cols = () => ids.filter((id) => byId.has(id)).map((id) => {
    const t = byId.get(id).trial;
    return { id, trial: t, color: overlayColor(ids.indexOf(id)) };
  });

  function renderTables() {
    const cs = cols();
    const key = canonical(cs.map((c) => [c.trial, byId.get(c.id).reports.length, exps.has(c.trial.experiment_id)]));
    if (key === tablesKey) return;
    tablesKey = key;
    const head = headRow('Trial', cs.map((c) => ({ id: c.id, testid: 'compare-trial', color: c.color,
      href: `#/trials/${c.id}`, label: `#${c.trial.number} (id ${c.id})` })));
    const expName = (eid) => {
      const x = exps.get(eid);
      return x && x.name ? x.name : `experiment ${eid}`;
    };
    const row = (label, testid, cell) => h('tr', null, h('th', { text: label }), cs.map((c) => {
      const td = cell(c);
      td.dataset.testid = testid;
      td.dataset.trial = String(c.id);
      return td;
    }));
    summary.replaceChildren(h('thead', null, head), h('tbody', null,
      row('Experiment', 'compare-experiment', (c) => h('td', null,
        h('a', { href: `#/experiments/${c.trial.experiment_id}`, text: expName(c.trial.experiment_id) }))),
      row('State', 'compare-state', (c) => h('td', null, h('span', { class: `state state-${c.trial.state}`, text: c.trial.state }))),
      row('Best', 'compare-best', (c) => {
        const b = c.trial.best;
        return h('td', { class: 'num', 'data-value': b ? String(b.value) : null,
          text: b ? `${num(b.value)} at step ${int(b.step)}` : DASH });
      }),
      row('Steps', 'compare-steps', (c) => h('td', { class: 'num', 'data-step': c.trial.step ?? null,
        'data-reports': byId.get(c.id).reports.length,
        text: `${int(c.trial.step)} (${byId.get(c.id).reports.length} reports)` })),
      row('Tags', 'compare-tags', (c) => h('td', { class: 'tags-cell' }, tagChips(c.trial.tags, { link: false })))));
    const diff = keyDiff(cs.map((c) => c.trial.config || {}));
    diffHolder.replaceChildren(...diffTables({
      diff,
      cols: { kind: 'trial', items: cs },
      valueOf: (c, k) => (c.trial.config && Object.prototype.hasOwnProperty.call(c.trial.config, k) ? c.trial.config[k] : undefined),
      keyAttr: 'data-param',
      rowId: 'compare-diff-row',
      diffId: 'compare-diff',
      sameId: 'compare-same',
      noun: 'parameter',
      head: headRow('Parameter', cs.map((c) => ({ id: c.id, testid: 'compare-diff-trial', color: c.color,
        href: `#/trials/${c.id}`, label: `#${c.trial.number} (id ${c.id})` }))),
    }));
  }

  /** The metric names the trials reported (numbers or non-finite
   * strings), the objective of the first trial's experiment first. */
  function metricNames() {
    const names = [];
    for (const id of ids) {
      const s = byId.get(id);
      if (!s) continue;
      for (const r of s.reports) {
        for (const [k, v] of Object.entries(r.metrics || {})) {
          if ((typeof v === 'number' || typeof v === 'string') && !names.includes(k)) names.push(k);
        }
      }
    }
    const first = byId.get(ids.find((id) => byId.has(id)));
    const x = first ? exps.get(first.trial.experiment_id) : null;
    const obj = x ? objectiveOf(x).name : null;
    if (obj && names.includes(obj)) return [obj, ...names.filter((n) => n !== obj)];
    return names;
  }

  function renderSelect(names) {
    const want = names.join('\u0000');
    if (metricSel.dataset.names !== want) {
      metricSel.dataset.names = want;
      metricSel.replaceChildren(...names.map((n) => h('option', { value: n, text: n })));
    }
    if (!chosen || !names.includes(metric)) metric = names[0] || null;
    if (metric !== null) metricSel.value = metric;
  }

  async function renderChart() {
    const names = metricNames();
    renderSelect(names);
    const uPlot = await loadUPlot();
    if (destroyed) return;
    if (!chart || chartMetric !== metric) {
      if (chart) chart.destroy();
      chartMetric = metric;
      drawnKey = '';
      chart = createOverlayChart(chartEl, uPlot, {
        xLabel: 'step',
        yLabel: metric || '',
        onPick: (id, ev) => {
          if (ev && ev.shiftKey) {
            // Unpick: the page of the trials left.
            togglePick('trials', id, false);
            window.location.hash = compareHref('trials', ids.filter((x) => x !== id));
          } else {
            window.location.hash = `#/trials/${id}`;
          }
        },
      });
    }
    const lines = [];
    for (const c of cols()) {
      const s = byId.get(c.id);
      const x = [];
      const y = [];
      for (const r of s.reports) {
        if (!r.metrics || !(metric in r.metrics)) continue;
        const v = r.metrics[metric];
        x.push(r.step);
        y.push(typeof v === 'number' && Number.isFinite(v) ? v : null); // "NaN": a gap
      }
      if (x.length) lines.push({ id: c.id, label: `trial #${c.trial.number} (id ${c.id})`, color: c.color, x, y });
    }
    const key = canonical([metric, lines.map((l) => [l.id, l.x.length])]);
    if (key === drawnKey) return;
    drawnKey = key;
    chart.update(lines);
  }

  /** The reports of trial id's current attempt since the last call. */
  async function syncMetrics(id, signal) {
    const s = byId.get(id);
    for (;;) {
      const doc = await api.getMetrics(id, s.lastStep, signal);
      if (doc.attempt !== s.attempt) {
        const stale = s.lastStep !== -1; // asked from the old attempt's cursor
        s.attempt = doc.attempt;
        s.reports = [];
        s.lastStep = -1;
        if (stale) continue;
      }
      const items = doc.items || [];
      if (items.length) {
        s.lastStep = items[items.length - 1].step;
        s.reports.push(...items);
      }
      if (items.length < METRICS_PAGE) return;
    }
  }

  const poller = startPoll('compare', async (signal) => {
    const got = await Promise.all(ids.map((id) => api.getTrial(id, signal)));
    for (const t of got) {
      const s = byId.get(t.id);
      if (s) s.trial = t;
      else byId.set(t.id, { trial: t, attempt: null, lastStep: -1, reports: [] });
    }
    const missing = [...new Set(got.map((t) => t.experiment_id))].filter((eid) => !exps.has(eid));
    for (const x of await Promise.all(missing.map((eid) => api.getExperiment(eid, signal)))) exps.set(x.id, x);
    // Final trials whose reports are all in are not asked again.
    await Promise.all(got.filter((t) => !(FINAL.has(t.state) && byId.get(t.id).done))
      .map(async (t) => {
        await syncMetrics(t.id, signal);
        byId.get(t.id).done = FINAL.has(t.state);
      }));
    if (destroyed) return undefined;
    renderTables();
    await renderChart();
    return got.every((t) => FINAL.has(t.state)) ? DONE : undefined;
  });

  return () => {
    destroyed = true;
    poller.stop();
    if (chart) chart.destroy();
  };
}

// ---- experiments -----------------------------------------------------------

function mountExperiments(root, ids) {
  document.title = `Compare experiments ${ids.join(', ')} \u00b7 Rung`;
  let destroyed = false;
  const byId = new Map(); // id -> {x, trials, spec, sig}
  let by = 'number';
  let chart = null;
  let chartBy = null;
  let drawnKey = '';
  let tablesKey = '';

  const bySel = h('select', { testid: 'compare-x', 'aria-label': 'x axis', onchange: () => {
    by = bySel.value;
    renderChart();
  } },
  h('option', { value: 'number', text: 'trial number' }),
  h('option', { value: 'time', text: 'time since submitted (s)' }));
  const chartEl = h('div', { class: 'chart', testid: 'compare-chart' });
  const summary = h('table', { class: 'grid compare-summary', testid: 'compare-exp-table' });
  const diffHolder = h('div');
  const specNote = h('p', { class: 'muted', testid: 'compare-spec-source' });
  root.append(h('section', { class: 'page', testid: 'compare-experiments-page' },
    h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Experiments'), ' / compare'),
    h('h1', { testid: 'compare-title', text: `Compare ${ids.length} experiments` }),
    h('div', { class: 'toolbar' }, h('span', null, 'Best value so far against '), bySel),
    chartEl,
    h('h2', { text: 'Experiments' }),
    h('div', { class: 'table-wrap' }, summary),
    h('h2', { text: 'Spec keys that differ' }), specNote,
    diffHolder));

  const cols = () => ids.filter((id) => byId.has(id)).map((id) => ({ id, ...byId.get(id), color: overlayColor(ids.indexOf(id)) }));

  function renderTables() {
    const cs = cols();
    const key = canonical(cs.map((c) => [c.x, c.spec]));
    if (key === tablesKey) return;
    tablesKey = key;
    const label = (c) => c.x.name || `experiment ${c.id}`;
    const items = (testid) => cs.map((c) => ({ id: c.id, testid, color: c.color, href: `#/experiments/${c.id}`, label: `${label(c)} (#${c.id})` }));
    const row = (title, testid, cell) => h('tr', null, h('th', { text: title }), cs.map((c) => {
      const td = cell(c);
      td.dataset.testid = testid;
      td.dataset.experiment = String(c.id);
      return td;
    }));
    summary.replaceChildren(h('thead', null, headRow('Experiment', items('compare-experiment'))), h('tbody', null,
      row('State', 'compare-state', (c) => h('td', null, h('span', { class: `state state-${c.x.state}`, text: c.x.state }))),
      row('Trials', 'compare-trials-done', (c) => h('td', { class: 'num', text: `${countDone(c.x.counts)}/${c.x.total_trials}` })),
      row('Objective', 'compare-objective', (c) => {
        const o = objectiveOf(c.x);
        return h('td', { text: `${o.name} (${o.mode})` });
      }),
      row('Best', 'compare-best', (c) => h('td', { class: 'num', 'data-value': c.x.best ? String(c.x.best.value) : null,
        text: c.x.best ? num(c.x.best.value) : DASH })),
      row('Searcher', 'compare-searcher', (c) => h('td', { text: typeOf(c.x.searcher, 'random') })),
      row('Scheduler', 'compare-scheduler', (c) => h('td', { text: typeOf(c.x.scheduler, 'fifo') })),
      row('Tags', 'compare-tags', (c) => h('td', { class: 'tags-cell' }, tagChips(c.x.tags)))));
    const flat = new Map(cs.map((c) => [c.id, flatten(c.spec.value)]));
    const fromObject = cs.filter((c) => c.spec.from === 'experiment').map((c) => c.id);
    setText(specNote, fromObject.length
      ? `The spec with its defaults, as the experiment object holds it (rungd has no /spec for ${fromObject.join(', ')}).`
      : 'The effective spec of each (GET /experiments/{id}/spec: as submitted, with the defaults).');
    diffHolder.replaceChildren(...diffTables({
      diff: keyDiff(cs.map((c) => flat.get(c.id))),
      cols: { kind: 'experiment', items: cs },
      valueOf: (c, k) => {
        const f = flat.get(c.id);
        return Object.prototype.hasOwnProperty.call(f, k) ? f[k] : undefined;
      },
      keyAttr: 'data-key',
      rowId: 'compare-spec-row',
      diffId: 'compare-spec-diff',
      sameId: 'compare-spec-same',
      noun: 'spec key',
      head: headRow('Key', items('compare-spec-experiment')),
    }));
  }

  async function renderChart() {
    const uPlot = await loadUPlot();
    if (destroyed) return;
    if (!chart || chartBy !== by) {
      if (chart) chart.destroy();
      chartBy = by;
      drawnKey = '';
      chart = createOverlayChart(chartEl, uPlot, {
        xLabel: by === 'time' ? 'seconds since submitted' : 'trial number',
        yLabel: 'best so far',
        stepped: true,
        onPick: (id) => { window.location.hash = `#/experiments/${id}`; },
      });
    }
    const lines = cols().map((c) => {
      const b = bestSoFar(c.x, c.trials, by);
      const o = objectiveOf(c.x);
      return { id: c.id, label: `${c.x.name || `experiment ${c.id}`} (#${c.id}, ${o.name} ${o.mode})`, color: c.color, x: b.x, y: b.y };
    }).filter((l) => l.x.length);
    const key = canonical([by, lines.map((l) => [l.id, l.x, l.y])]);
    if (key === drawnKey) return;
    drawnKey = key;
    chart.update(lines);
  }

  async function allTrials(id, signal) {
    const items = [];
    for (;;) {
      const doc = await api.listTrials(id, { sort: 'number', limit: LIST_PAGE, offset: items.length }, signal);
      items.push(...(doc.items || []));
      if (!(doc.items || []).length || items.length >= doc.total) return items;
    }
  }

  /** {from: 'spec'|'experiment', value}: the effective spec, or the
   * experiment object's spec fields where rungd has no /spec route. */
  async function specOf(x, signal) {
    try {
      const s = await api.getSpec(x.id, signal);
      return { from: 'spec', value: s.effective };
    } catch (e) {
      // The experiment was just read: a 404 here is a rungd without the route.
      if (e && (e.status === 404 || e.status === 405)) {
        return { from: 'experiment', value: specOfExperiment(x) };
      }
      throw e;
    }
  }

  const poller = startPoll('compare', async (signal) => {
    const xs = await Promise.all(ids.map((id) => api.getExperiment(id, signal)));
    await Promise.all(xs.map(async (x) => {
      const old = byId.get(x.id);
      // Trials and spec are read again only when the experiment changed,
      // and while it runs at most every REREAD_MS (every trial each time).
      const sig = canonical([x.counts, x.best, x.state, x.tags, x.notes, x.num_samples]);
      if (old && (old.sig === sig || (LIVE.has(x.state) && performance.now() - old.at < REREAD_MS))) {
        old.x = x;
        return;
      }
      const [trials, spec] = await Promise.all([allTrials(x.id, signal), specOf(x, signal)]);
      byId.set(x.id, { x, trials, spec, sig, at: performance.now() });
    }));
    if (destroyed) return undefined;
    renderTables();
    await renderChart();
    return xs.every((x) => !LIVE.has(x.state)) ? DONE : undefined;
  });

  return () => {
    destroyed = true;
    poller.stop();
    if (chart) chart.destroy();
  };
}

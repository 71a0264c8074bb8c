// #/experiments/ID — one experiment: state and counts, why it failed or
// ended, its settings (metric, searcher, scheduler, resources and a gang's
// nodes), the best trial, pause/resume, cancel and CSV, the charts (learning curves, history, one scatter per
// parameter, parallel coordinates; with several objectives the Pareto front;
// under the pbt scheduler its section, pbt-section.js, in place of the
// learning curves) and one page of its trials. The charts of one metric
// (curves, best so far, the scatters, the parallel coordinates) show the
// metric picked in `metric-picker` (an objective, or any reported metric:
// views/metric-state.js holds it for every chart module); a drag on the
// parallel coordinates' axes brushes trials: the table holds only them and
// the other charts fade the rest.
import * as api from '../api.js';
import { createBestChart } from '../charts/best.js';
import { TrialColumns } from '../charts/columns.js';
import { ashaRungs, createCurvesChart } from '../charts/curves.js';
import { createParallelChart } from '../charts/parallel.js';
import { createParetoChart } from '../charts/pareto.js';
import { createScatterChart } from '../charts/scatter.js';
import { loadUPlot, searchParams } from '../charts/uplot.js';
import { h, setAttr, setState, setText } from '../dom.js';
import { DASH, STATES, configText, int, num, time, typeOf } from '../format.js';
import { startPoll } from '../poll.js';
import { reportError, clearError } from '../shell.js';
import { isPbt } from '../pbt.js';
import { createAnalysisSection } from './analysis-section.js';
import { ExperimentData } from './experiment-data.js';
import { getBrushed, getMetric, inferMode, resetMetricState, setBrushed, setMetric, subscribe } from './metric-state.js';
import { createPbtSection } from './pbt-section.js';
import { createSpecPanel } from './spec-panel.js';
import { createTagsNotes } from './tags.js';
import { togglePick } from '../picks.js';
import { createTrialsTable } from './trials-table.js';

// Experiment states that can still be paused, resumed or canceled.
const LIVE = new Set(['running', 'paused']);

export function mount(root, { id }) {
  document.title = `Experiment ${id} · Rung`;
  const data = new ExperimentData(id);
  let exp = null;
  let charts = null;
  let chartsDrawn = '';
  let destroyed = false;
  let brushVersion = 0;
  resetMetricState();

  // ---- header, counts, best trial ----
  const title = h('h1', { testid: 'exp-title', text: `Experiment ${id}` });
  const stateBadge = h('span', { class: 'state', testid: 'exp-state' });
  const metaText = h('span');
  // resources_per_trial: per trial, or per node of a gang (docs/api.md, "Gangs").
  const resources = h('span', { testid: 'exp-resources' });
  const meta = h('p', { class: 'meta' }, metaText, ' \u00b7 ', resources);
  const cancel = h('button', { type: 'button', class: 'danger', testid: 'cancel', disabled: true, onclick: onCancel },
    'Cancel experiment');
  // Pause (docs/api.md, POST /experiments/{id}/pause), shown while it runs;
  // the box adds ?running=pause. Resume, shown while it is paused.
  const pauseRunning = h('input', { type: 'checkbox', testid: 'pause-running' });
  const pauseRunningLabel = h('label', { class: 'pause-running', title: 'Pause the running trials too: they stop at their next report and resume from their checkpoint' },
    pauseRunning, ' pause running trials too');
  const pause = h('button', { type: 'button', testid: 'pause', onclick: onPause }, 'Pause');
  const resume = h('button', { type: 'button', testid: 'resume', hidden: true, onclick: onResume }, 'Resume');
  const pauseGroup = h('span', { class: 'pause-group', hidden: true }, pauseRunningLabel, pause);
  let busy = false; // a pause, resume or cancel request in flight
  // Why it failed (error) and why it ended (ended_reason), when the API says.
  const endedReason = h('span', { testid: 'exp-ended-reason' });
  const endedLine = h('p', { class: 'ended-line', hidden: true }, 'Ended: ', endedReason);
  const expError = h('pre', { class: 'exp-error', testid: 'exp-error', hidden: true });
  const pausedNote = h('p', { class: 'paused-note', testid: 'exp-paused-note', hidden: true },
    'Paused: no trial of it is leased until it is resumed.');
  const csv = h('a', { class: 'button', testid: 'csv', href: api.csvUrl(id), download: `experiment-${id}-trials.csv` },
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
  const curvesTitle = h('h2', { text: 'Learning curves' });
  // Population Based Training (docs/schedulers.md): families, their curves,
  // the mutated parameters' schedules and a trial's lineage.
  const pbtHolder = h('div', { hidden: true });
  const bestEl = h('div', { class: 'chart', testid: 'chart-best' });
  const scatterGrid = h('div', { class: 'chart-grid' });
  const parallelEl = h('div', { class: 'chart', testid: 'chart-parallel' });
  // Several objectives (docs/api.md): the front as a scatter for two; for
  // three or four, parallel coordinates over the objectives and a table of
  // the front with a column per objective.
  const paretoEl = h('div', { class: 'chart', testid: 'chart-pareto' });
  const objectivesEl = h('div', { class: 'chart', testid: 'chart-objectives' });
  const paretoTable = h('table', { class: 'grid', testid: 'pareto-table' });
  const paretoSection = h('div', { hidden: true }, h('h2', { text: 'Pareto front' }), paretoEl, objectivesEl,
    h('div', { class: 'table-wrap' }, paretoTable));

  // ---- the metric of the charts of one metric (metric-state.js) ----
  const metricSel = h('select', { testid: 'metric-picker', 'aria-label': 'metric of the charts', onchange: onPickMetric });
  // A reported metric's mode (better low or high) is inferred from its
  // name (inferMode) until this says otherwise; an objective's is the spec's.
  const modeSel = h('select', { testid: 'metric-mode', 'aria-label': 'better', hidden: true, onchange: onPickMetric },
    h('option', { value: 'min', text: 'min is better' }), h('option', { value: 'max', text: 'max is better' }));
  const logBox = h('input', { type: 'checkbox', testid: 'metric-log', onchange: onPickMetric });
  const metricBar = h('div', { class: 'toolbar metric-bar' },
    h('label', null, 'Metric ', metricSel), modeSel,
    h('label', { title: 'a log y axis; linear while any value is \u2264 0' }, logBox, ' log y'));
  let metricOptions = []; // [{value, metric}]
  // The analysis section (analysis-section.js): importance, contour, EDF,
  // the workers' timeline.
  const analysisHolder = h('div');

  // ---- trials table ----
  const table = createTrialsTable(id, data, () => poller.kick(), {
    onClearBrush: () => Promise.resolve(charts).then((c) => c && c.parallel.clearBrush && c.parallel.clearBrush()),
  });
  // Tags and notes (tags.js) and the spec as submitted and with defaults.
  const specPanel = createSpecPanel(id);
  const tagsNotes = createTagsNotes('experiment', id, { onSaved: (x) => { renderHeader(x); specPanel.refresh(); } });

  root.append(
    h('section', { class: 'page' },
      h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Experiments'), ' / ', `#${id}`),
      h('div', { class: 'title-row' }, h('div', null, title, meta),
        h('div', { class: 'actions' }, stateBadge, pauseGroup, resume, cancel, csv,
        h('a', { class: 'button', testid: 'timeline', href: `#/experiments/${id}/events` }, 'Timeline'))),
      expError, endedLine, pausedNote, tagsNotes.el, specPanel.el,
      h('div', { class: 'summary' }, counts, bestBox), paretoSection, metricBar,
      pbtHolder, curvesTitle, curvesEl,
      h('h2', { text: 'Best so far' }), bestEl,
      h('h2', { text: 'Trials' }), table.el,
      h('h2', { text: 'Slice plots: each parameter against the metric' }), scatterGrid,
      h('h2', { text: 'Parallel coordinates' }), parallelEl,
      analysisHolder));

  async function onCancel() {
    if (!exp || !LIVE.has(exp.state) || busy) return;
    if (!window.confirm(`Cancel experiment "${exp.name || id}"? Pending trials are canceled; running trials stop at their next report.`)) return;
    await act('cancel', () => api.cancelExperiment(id));
  }

  async function onPause() {
    if (!exp || exp.state !== 'running' || busy) return;
    await act('pause', () => api.pauseExperiment(id, { pauseRunning: pauseRunning.checked }));
  }

  async function onResume() {
    if (!exp || exp.state !== 'paused' || busy) return;
    await act('resume', () => api.resumeExperiment(id));
  }

  /** One of the buttons' requests: the experiment it answers is shown at
   * once; a failure goes to the error banner under `source`. */
  async function act(source, call) {
    busy = true;
    renderButtons();
    try {
      const x = await call();
      clearError(source);
      if (!destroyed && x) renderHeader(x);
    } catch (e) {
      if (!destroyed) reportError(source, e);
    } finally {
      busy = false;
      if (!destroyed) renderButtons();
    }
    poller.kick();
  }

  function renderButtons() {
    const state = exp ? exp.state : null;
    // A viewer, or a member on another's experiment, gets no buttons it
    // may not use (docs/api.md, "Roles per route"); the API refuses anyway.
    const steer = api.canSteer(exp);
    cancel.hidden = !steer;
    cancel.disabled = busy || !LIVE.has(state);
    pauseGroup.hidden = !steer || state !== 'running';
    pause.disabled = busy;
    resume.hidden = !steer || state !== 'paused';
    resume.disabled = busy;
  }

  function renderHeader(x) {
    exp = x;
    document.title = `${x.name || `Experiment ${id}`} · Rung`;
    setText(title, x.name || `Experiment ${id}`);
    setState(stateBadge, x.state);
    const sched = x.scheduler || {};
    setText(metaText, [
      `#${x.id}`,
      Array.isArray(x.metrics) ? x.metrics.map((m) => `${m.name} (${m.mode})`).join(', ') : `${x.metric} (${x.mode})`,
      `searcher ${typeOf(x.searcher, 'random')}`,
      `scheduler ${typeOf(sched, 'fifo')}${sched.promote ? ' (promote)' : ''}`,
      `${x.total_trials} trials`,
      `created ${time(x.created_at)}`,
      x.ended_at ? `ended ${time(x.ended_at)}` : null,
    ].filter(Boolean).join(' \u00b7 '));
    const r = x.resources_per_trial || {};
    const nodes = Number.isInteger(r.nodes) ? r.nodes : 1;
    const each = `cpu ${r.cpu ?? 1}, gpu ${r.gpu ?? 0}`;
    setText(resources, nodes > 1 ? `${nodes} nodes per trial, each ${each}` : `${each} per trial`);
    setAttr(resources, 'data-nodes', nodes);
    renderButtons();
    tagsNotes.update(x, api.canSteer(x));
    setText(endedReason, x.ended_reason || '');
    endedLine.hidden = !x.ended_reason;
    setText(expError, x.error || ''); // text, never markup: it quotes trial errors
    expError.hidden = !x.error;
    pausedNote.hidden = x.state !== 'paused';
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
      // Several objectives have no best (docs/api.md): the front stands for it.
      const several = Array.isArray(x.metrics) && x.metrics.length > 1;
      setText(bestConfig, several ? 'several objectives: see the Pareto front' : 'no results yet');
      bestLink.hidden = true;
      setText(bestStep, '');
    }
  }

  // ---- charts ----

  /** The metric options: the objective(s), then every reported metric
   * (trials.csv's metric:<name> columns) that is not one. */
  function renderMetricOptions(x) {
    const objectives = Array.isArray(x.metrics) && x.metrics.length ? x.metrics : [{ name: x.metric, mode: x.mode }];
    const names = new Set(objectives.map((m) => m.name));
    const opts = objectives.map((m, i) => ({
      value: `objective:${m.name}`,
      label: `${m.name} (objective, ${m.mode})`,
      // The first objective's value is the trial's best, as before.
      metric: { name: m.name, kind: 'objective', mode: m.mode, single: i === 0 },
    }));
    for (const name of [...data.metricNames].sort()) {
      if (!names.has(name)) opts.push({ value: `metric:${name}`, label: name, metric: { name, kind: 'metric', mode: null } });
    }
    const sig = opts.map((o) => o.value).join('\u0000');
    if (metricSel.dataset.sig !== sig) {
      const was = metricSel.value;
      metricSel.dataset.sig = sig;
      metricSel.replaceChildren(...opts.map((o) => h('option', { value: o.value, text: o.label })));
      metricSel.value = opts.some((o) => o.value === was) ? was : opts[0].value;
    }
    metricOptions = opts;
    if (!getMetric()) setMetric({ ...opts[0].metric, log: false });
  }

  function onPickMetric() {
    const o = metricOptions.find((m) => m.value === metricSel.value);
    if (!o) return;
    const m = { ...o.metric, log: logBox.checked };
    if (m.kind === 'metric') {
      const prev = getMetric();
      // A newly picked metric starts from its inferred mode.
      if (!prev || prev.name !== m.name || prev.kind !== 'metric') modeSel.value = inferMode(m.name);
      m.mode = modeSel.value;
    }
    modeSel.hidden = m.kind !== 'metric';
    setMetric(m);
  }

  // A click opens the trial; a shift-click on a curve picks it to compare (picks.js).
  function pickOrOpen(tid, ev) {
    if (ev && ev.shiftKey) togglePick('trials', tid);
    else window.location.hash = `#/trials/${tid}`;
  }

  let chartsMetric = ''; // the metric the charts of one metric were made for (JSON)

  /** The charts of one metric, for the metric m. */
  function metricCharts(x, uPlot, m, params) {
    chartsMetric = JSON.stringify(m);
    const sched = x.scheduler || {};
    const onStep = !sched.time_attr || sched.time_attr === 'step';
    const pick = pickOrOpen;
    curvesEl.replaceChildren();
    bestEl.replaceChildren();
    parallelEl.replaceChildren();
    scatterGrid.replaceChildren();
    const made = {
      curves: isPbt(x) ? { update() {}, destroy() {} } : createCurvesChart(curvesEl, uPlot, {
        metric: m.name,
        rungs: onStep ? ashaRungs(sched) : [],
        onPick: pick,
      }),
      best: createBestChart(bestEl, uPlot, { metric: m }),
      scatter: params.map((p) => {
        const el = h('div', { class: 'chart', testid: `chart-scatter-${p.name}` });
        scatterGrid.append(el);
        return createScatterChart(el, uPlot, { param: p, metric: m.name });
      }),
      parallel: createParallelChart(parallelEl, { params, metric: m.name, mode: m.mode, onBrush: setBrushed }),
    };
    if (params.length === 0) scatterGrid.append(h('p', { class: 'muted', text: 'The search space has no parameters to plot.' }));
    return made;
  }

  async function setupCharts(x) {
    const uPlot = await loadUPlot();
    const params = searchParams(x.search_space);
    const pick = pickOrOpen;
    // Under pbt the section's curves, coloured by family, stand for these.
    const pbt = isPbt(x) ? createPbtSection(x, uPlot, { onPick: pick }) : null;
    if (pbt) pbtHolder.replaceChildren(pbt.el);
    pbtHolder.hidden = !pbt;
    curvesTitle.hidden = !!pbt;
    curvesEl.hidden = !!pbt;
    renderMetricOptions(x);
    const made = {
      pbt,
      uPlot,
      params,
      ...metricCharts(x, uPlot, getMetric(), params),
      pareto: null,
      objectives: null,
      analysis: createAnalysisSection(x, uPlot, { onPick: pick }),
    };
    analysisHolder.replaceChildren(made.analysis.el);
    const objectives = Array.isArray(x.metrics) ? x.metrics : [];
    paretoSection.hidden = objectives.length < 2;
    paretoEl.hidden = objectives.length !== 2;
    objectivesEl.hidden = objectives.length < 3;
    paretoTable.hidden = objectives.length < 3;
    if (objectives.length >= 3) made.objectives = createParallelChart(objectivesEl, { objectives });
    if (objectives.length === 2) {
      made.pareto = createParetoChart(paretoEl, uPlot, {
        metrics: objectives,
        onPick: (tid) => { window.location.hash = `#/trials/${tid}`; },
      });
    }
    return made;
  }

  /** Another metric picked (metric-state.js): its charts made anew, its
   * curves read from the start, any brush dropped (it was over the old
   * metric's axis). */
  async function onMetricChange() {
    const c = await charts;
    if (!c || destroyed || !exp) return;
    const m = getMetric();
    if (JSON.stringify(m) === chartsMetric) return;
    c.curves.destroy();
    c.best.destroy();
    c.scatter.forEach((sc) => sc.destroy());
    c.parallel.destroy();
    Object.assign(c, metricCharts(exp, c.uPlot, m, c.params));
    data.setCurvesMetric(m.kind === 'metric' ? m.name : null);
    if (getBrushed()) setBrushed(null);
    colsCache = null;
    chartsDrawn = '';
    renderCharts();
    poller.kick();
  }

  /** Trials brushed or unbrushed: the table at once, the charts at the
   * next frame (after the table is painted). */
  function onBrushChange() {
    table.setBrushed(getBrushed());
    brushVersion++;
    requestAnimationFrame(() => setTimeout(() => {
      if (!destroyed && charts && !(charts instanceof Promise)) renderCharts();
    }, 0));
  }

  const unsubscribe = subscribe((what) => {
    if (destroyed) return;
    if (what === 'metric') onMetricChange();
    else if (what === 'brush') onBrushChange();
  });

  let colsCache = null; // {key, cols}: the TrialColumns of the picked metric

  let paretoDrawn = '';

  /** Three or four objectives: the front (the API's order: by the first
   * objective, best first), one row a trial, a column per objective in the
   * spec's order (data-value: the exact value), then its config. */
  function renderParetoTable(front) {
    const metrics = exp.metrics || [];
    paretoTable.replaceChildren(
      h('thead', null, h('tr', null, h('th', { text: 'Trial' }),
        ...metrics.map((m) => h('th', { class: 'num objective', 'data-objective': m.name, text: `${m.name} (${m.mode})` })),
        h('th', { text: 'Config' }))),
      h('tbody', null, front.map((p) => {
        const t = data.trials.get(p.trial_id);
        return h('tr', { testid: 'pareto-row', 'data-id': p.trial_id },
          h('td', null, h('a', { href: `#/trials/${p.trial_id}`, text: t ? `#${t.number} (id ${p.trial_id})` : `id ${p.trial_id}` })),
          ...metrics.map((m) => {
            const v = (p.values || {})[m.name];
            return h('td', { class: 'num objective', 'data-value': v === undefined ? null : String(v), text: num(v) });
          }),
          h('td', { class: 'param', text: configText(p.config) }));
      })));
  }

  function renderCharts() {
    const bestId = exp && exp.best ? exp.best.trial_id : null;
    const m = getMetric();
    const brushed = getBrushed();
    const trialsKey = `${data.trialsVersion}/${bestId}`;
    const curvesKey = `${data.curvesVersion}/${trialsKey}/${brushVersion}`;
    const [lastCurves, lastTrials, lastBrush] = chartsDrawn.split('|');
    const opts = { log: !!(m && m.log), brushed };
    if (curvesKey !== lastCurves) {
      charts.curves.update(data.curves, data.trials, bestId, data.curvesBest, opts);
      if (charts.pbt) charts.pbt.update(data, bestId);
    }
    if (trialsKey !== lastTrials || String(brushVersion) !== lastBrush) {
      if (trialsKey !== lastTrials) charts.best.update(data.trials, opts);
      // Read once for every chart of every trial (charts/columns.js); the
      // first objective's values are the trials' best as always.
      if (!colsCache || colsCache.key !== trialsKey) {
        colsCache = { key: trialsKey, cols: new TrialColumns(data.trials, m && !(m.kind === 'objective' && m.single) ? m : null) };
      }
      const cols = colsCache.cols;
      for (const sc of charts.scatter) sc.update(data.trials, bestId, cols, opts);
      if (trialsKey !== lastTrials) charts.parallel.update(data.trials, bestId, null, cols);
    }
    const front = exp && Array.isArray(exp.pareto) ? exp.pareto : null;
    const frontKey = JSON.stringify(front);
    if (front && (trialsKey !== lastTrials || frontKey !== paretoDrawn)) {
      if (charts.pareto) charts.pareto.update(data.trials, front);
      if (charts.objectives) charts.objectives.update(data.trials, null, front);
      if (!paretoTable.hidden) renderParetoTable(front);
    }
    paretoDrawn = frontKey;
    chartsDrawn = `${curvesKey}|${trialsKey}|${brushVersion}`;
  }

  let firstDraw = true; // no poll has drawn the charts yet
  loadUPlot(); // start loading the charts' module with the data
  const poller = startPoll('experiment', async (signal) => {
    // rungd answers one request at a time, in order: the small ones first.
    const expP = api.getExperiment(id, signal);
    const pageP = table.prefetch(signal);
    data.prefetch(signal);
    const curvesP = data.syncCurves(signal);
    curvesP.catch(() => {}); // awaited below; this only keeps it from being "unhandled"
    const x = await expP;
    if (destroyed) return undefined;
    if (!charts) charts = setupCharts(x);
    renderHeader(x);
    const trialsP = data.syncTrials(x, signal);
    trialsP.then(() => { if (!destroyed) renderMetricOptions(x); }, () => {});
    trialsP.catch(() => {});
    if (table.needsTrials()) await trialsP;
    await table.sync(x, signal, pageP);
    // The charts of every trial once the trials are in; on the first load
    // with the curves too (rungd answers them right after trials.csv,
    // index.html), in one go: drawn apart, the curves' answer waited
    // behind the first charts' paint and the analysis section, and the
    // page was whole about 0.7 s later (bench/dashboard.sh, 50,000 trials).
    // Afterwards renderCharts draws only what changed.
    await trialsP;
    if (firstDraw) await curvesP.catch(() => {}); // a failure is thrown below
    firstDraw = false;
    charts = await charts;
    if (destroyed) return undefined;
    renderHeader(x); // the best trial's number may be known now
    renderCharts();
    // The analysis section after the charts above have been painted: its
    // EDF sorts every trial, which at 50,000 held the first paint back by
    // about 0.3 s (bench/dashboard.sh); its other charts wait on requests.
    const c = charts;
    requestAnimationFrame(() => setTimeout(() => { if (!destroyed) c.analysis.update(x, data); }, 0));
    await curvesP;
    if (destroyed) return undefined;
    renderCharts();
    return data.backlog > 0 ? 100 : undefined;
  });

  window.addEventListener('rung:session', renderButtons);
  return () => {
    destroyed = true;
    window.removeEventListener('rung:session', renderButtons);
    unsubscribe();
    resetMetricState();
    poller.stop();
    clearError('cancel');
    clearError('pause');
    clearError('resume');
    clearError('csv');
    specPanel.destroy();
    Promise.resolve(charts).then((c) => {
      if (!c) return;
      c.curves.destroy();
      if (c.pbt) c.pbt.destroy();
      c.best.destroy();
      c.scatter.forEach((s) => s.destroy());
      c.parallel.destroy();
      if (c.pareto) c.pareto.destroy();
      if (c.objectives) c.objectives.destroy();
      c.analysis.destroy();
    });
  };
}

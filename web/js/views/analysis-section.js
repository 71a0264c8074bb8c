// The experiment page's analysis section: parameter importance (fANOVA,
// GET .../importance), a contour of the metric over two numeric parameters
// (GET .../surface), the empirical distribution function of the metric
// over the trials, and the workers' timeline (GET .../timeline). The
// per-parameter scatters above it are the slice plots. Each chart asks for
// its data only when what it shows can have changed: importance and the
// contour when the count of completed trials moves (the API computes them
// from completed trials), the timeline when any count moves (and every few
// seconds while trials run, so that running bars grow), the EDF when the
// page's trials change. A request in flight is never doubled, and a failure
// is shown in the chart it concerns (an older rungd without these routes
// answers 404: the rest of the page works on).
import * as api from '../api.js';
import { createContourChart } from '../charts/contour.js';
import { createEdfChart } from '../charts/edf.js';
import { getMetric, metricValue, subscribe } from './metric-state.js';
import { createImportanceChart } from '../charts/importance.js';
import { createTimelineChart } from '../charts/timeline.js';
import { axisKind, searchParams } from '../charts/uplot.js';
import { h } from '../dom.js';

const TIMELINE_RUNNING_MS = 5000; // the running bars grow this often
const RETRY_MS = 1500; // an answer older than the completed trials: asked again after this
const RETRIES = 8; // ... this many times per count of completed trials

/** The numeric parameters a contour can take (the surface endpoint takes
 * numeric domains only: docs/api.md). */
export function contourParams(space) {
  return searchParams(space).filter((p) => p.domain.type !== 'choice' && p.domain.type !== 'grid' && axisKind(p.domain).kind !== 'cat');
}

/** x: the experiment; uPlot: the charts' constructor or null; onPick(id)
 * opens a trial. Returns {el, update(x, data), destroy()}; data: the
 * page's ExperimentData. */
export function createAnalysisSection(x, uPlot, { onPick }) {
  const id = x.id;
  const metric = x.metric || ((x.metrics || [])[0] || {}).name;
  const mode = x.mode || ((x.metrics || [])[0] || {}).mode;
  const numeric = contourParams(x.search_space);
  const ctl = new AbortController();

  const importanceEl = h('div', { class: 'chart', testid: 'chart-importance' });
  const contourEl = h('div', { class: 'chart', testid: 'chart-contour' });
  const edfEl = h('div', { class: 'chart', testid: 'chart-edf' });
  const timelineEl = h('div', { class: 'chart', testid: 'chart-timeline' });
  const option = (p) => h('option', { value: p.name, text: p.name });
  const selX = h('select', { testid: 'contour-x', 'aria-label': 'parameter on the x axis', onchange: () => chose() }, numeric.map(option));
  const selY = h('select', { testid: 'contour-y', 'aria-label': 'parameter on the y axis', onchange: () => chose() }, numeric.map(option));

  const el = h('div', { class: 'analysis', testid: 'analysis-section' },
    h('h2', { text: 'Parameter importance' }),
    h('p', { class: 'muted', text: 'How much of the metric\u2019s variation each parameter explains (fANOVA over the completed trials).' }),
    importanceEl,
    h('h2', { text: 'Contour of two parameters' }), contourEl,
    h('h2', { text: 'Empirical distribution (EDF)' }), edfEl,
    h('h2', { text: 'Workers\u2019 timeline' }), timelineEl,
    h('p', { class: 'muted', text: 'The slice plots (each parameter against the metric, a dot per trial) are under \u201cSlice plots\u201d above.' }));

  const importance = createImportanceChart(importanceEl, { onMetric: (name) => askMetric(name) });
  const contour = createContourChart(contourEl, uPlot, { mode, selects: { x: selX, y: selY }, onPick });
  // The EDF and the contour follow the page's metric picker
  // (metric-state.js); the importance chart has its own select.
  let picked = getMetric();
  const edfFor = (m) => (m
    ? createEdfChart(edfEl, uPlot, { metric: m.name, mode: m.mode, onPick, value: (t) => metricValue(t, m) })
    : createEdfChart(edfEl, uPlot, { metric, mode, onPick }));
  let edf = edfFor(picked);
  let lastTrials = null;
  // The surface's ?metric=: none for the (first) objective, the API's default.
  const surfaceMetric = () => (picked && picked.name !== metric ? picked.name : undefined);
  const unsubscribe = subscribe((what) => {
    if (what !== 'metric') return;
    const m = getMetric();
    if (m && picked && m.name === picked.name && m.mode === picked.mode && m.kind === picked.kind) return;
    picked = m;
    edf.destroy();
    edf = edfFor(picked);
    if (lastTrials) edf.update(lastTrials);
    tries.contour = 0;
    loadContour();
  });
  const timeline = createTimelineChart(timelineEl, uPlot, { onPick });
  if (numeric.length < 2) {
    contourEl.replaceChildren(h('p', { class: 'muted', text: 'A contour needs two numeric parameters; this search space has fewer.' }));
  }

  let completed = -1; // the count the last importance and contour are of
  let countsKey = '';
  let trialsVersion = -1;
  let timelineAt = 0;
  let running = false;
  let chosen = false; // the user picked the contour's axes
  let impDoc = null; // the default entries, then the metrics asked for
  const extra = new Map(); // name -> entry of a metric asked for (?metric=)
  const busy = { importance: false, contour: false, timeline: false };
  const again = { importance: null, contour: null, timeline: null };
  const tries = { importance: 0, contour: 0 };

  /** Runs fetch() and then show(answer, error), one of `kind` at a time:
   * asked again while one is in flight, it runs once more after it (the
   * latest fetch and show), so that a change during a request is not lost. */
  async function once(kind, fetch, show) {
    if (ctl.signal.aborted) return;
    if (busy[kind]) {
      again[kind] = [fetch, show];
      return;
    }
    busy[kind] = true;
    try {
      const doc = await fetch(ctl.signal);
      if (!ctl.signal.aborted) show(doc, null);
    } catch (e) {
      if (!ctl.signal.aborted && !(e && e.name === 'AbortError')) show(null, e);
    } finally {
      busy[kind] = false;
    }
    const next = again[kind];
    again[kind] = null;
    if (next) once(kind, ...next);
  }

  // The entries used fewer trials than are completed: computed before the
  // last ones finished (the API refreshes its cache as trials finish).
  const stale = (n) => n < completed && tries.importance < RETRIES;

  function loadImportance(pick) {
    once('importance', (signal) => api.getImportance(id, {}, signal), (doc, err) => {
      if (err) return importance.update(null, err);
      impDoc = doc;
      showImportance(pick);
      const entries = Array.isArray(doc.metrics) ? doc.metrics : [];
      if (entries.some((m) => stale(m.trials || 0))) {
        tries.importance++;
        setTimeout(() => loadImportance(), RETRY_MS);
      }
      if (!chosen && numeric.length >= 2) defaultAxes(entries[0]);
    });
  }

  function showImportance(pick) {
    const metrics = [...((impDoc && impDoc.metrics) || [])];
    for (const [name, entry] of extra) if (!metrics.some((m) => m.name === name)) metrics.push(entry);
    importance.update({ ...(impDoc || {}), metrics }, null, pick);
  }

  function askMetric(name) {
    if (!name) return;
    importance.pending();
    api.getImportance(id, { metric: name }, ctl.signal).then((doc) => {
      const entry = (doc.metrics || [])[0];
      if (entry) extra.set(entry.name, entry);
      showImportance(entry ? entry.name : null);
    }, (e) => {
      if (!ctl.signal.aborted && !(e && e.name === 'AbortError')) importance.note(`${name}: ${e.message}`);
    });
  }

  /** The two most important numeric parameters, once importance is known. */
  function defaultAxes(entry) {
    const order = entry && Array.isArray(entry.importance) ? entry.importance.map((r) => r.param) : [];
    const names = numeric.map((p) => p.name);
    const top = [...order.filter((n) => names.includes(n)), ...names.filter((n) => !order.includes(n))].slice(0, 2);
    if (top.length === 2 && (selX.value !== top[0] || selY.value !== top[1])) {
      selX.value = top[0];
      selY.value = top[1];
      loadContour();
    }
  }

  function chose() {
    chosen = true;
    tries.contour = 0;
    loadContour();
  }

  function loadContour() {
    if (numeric.length < 2) return;
    if (selX.value === selY.value) {
      contour.update(null, new Error('pick two different parameters'));
      return;
    }
    const [x, y, m] = [selX.value, selY.value, surfaceMetric()];
    once('contour', (signal) => api.getSurface(id, { x, y, metric: m }, signal), (doc, err) => {
      // The axes or the metric changed: their request follows.
      if (selX.value !== x || selY.value !== y || surfaceMetric() !== m) return;
      contour.update(doc, err);
      if (doc && (doc.points || []).length < completed && tries.contour < RETRIES) {
        tries.contour++;
        setTimeout(() => loadContour(), RETRY_MS);
      }
    });
  }

  function loadTimeline() {
    timelineAt = performance.now();
    once('timeline', (signal) => api.getTimeline(id, signal), (doc, err) => timeline.update(doc, err));
  }

  if (numeric.length >= 2) {
    selX.value = numeric[0].name;
    selY.value = numeric[1].name;
  }

  return {
    el,
    /** x: the experiment as last polled; data: the page's ExperimentData. */
    update(exp, data) {
      const counts = exp.counts || {};
      const done = counts.completed || 0;
      if (done !== completed) {
        completed = done;
        tries.importance = 0;
        tries.contour = 0;
        loadImportance();
        loadContour();
      }
      const key = JSON.stringify(counts);
      running = (counts.running || 0) > 0;
      if (key !== countsKey || (running && performance.now() - timelineAt > TIMELINE_RUNNING_MS)) {
        countsKey = key;
        loadTimeline();
      }
      if (data.trialsVersion !== trialsVersion) {
        trialsVersion = data.trialsVersion;
        lastTrials = data.trials;
        edf.update(data.trials);
      }
    },
    destroy() {
      unsubscribe();
      ctl.abort();
      importance.destroy();
      contour.destroy();
      edf.destroy();
      timeline.destroy();
    },
  };
}

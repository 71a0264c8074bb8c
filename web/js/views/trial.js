// #/trials/ID — one trial: state, config, error, who stopped or paused it,
// its info (the last values of its reports that were not numbers), the
// warnings about its @rung lines, worker, a gang's nodes and
// members (rank → worker) and where they meet, times, its reports
// (table and chart, fetched incrementally with after_step), under pbt its
// lineage (each exploit: step, donor, what changed) and its log tail.
// Once the trial is final and its last reports are in, polling stops.
import * as api from '../api.js';
import { createTrialChart } from '../charts/trial.js';
import { loadUPlot } from '../charts/uplot.js';
import { h, setAttr, setState, setText } from '../dom.js';
import { DASH, FINAL, configText, int, num, time, duration, warningCount } from '../format.js';
import { DONE, startPoll } from '../poll.js';
import { changes, isPbt, lineageOf } from '../pbt.js';
import { createTagsNotes } from './tags.js';

export function mount(root, { id }) {
  document.title = `Trial ${id} · Rung`;
  let exp = null;
  let attempt = null;
  let lastStep = -1;
  let keys = []; // metric names, in order of first appearance
  let reports = []; // {step, time, metrics}
  let chart = null;
  let chartKeys = '';
  let destroyed = false;
  const workerNames = new Map(); // worker id -> name

  const title = h('h1', { testid: 'trial-title', text: `Trial ${id}` });
  const crumbs = h('p', { class: 'crumbs' }, h('a', { href: '#/' }, 'Experiments'));
  const state = h('span', { testid: 'trial-state' });
  const config = h('div', { class: 'config', testid: 'trial-config' });
  const error = h('pre', { class: 'trial-error', testid: 'trial-error', hidden: true });
  const worker = h('span', { testid: 'trial-worker', text: DASH });
  const times = h('span', { testid: 'trial-times' });
  const best = h('span', { class: 'num', testid: 'trial-best' });
  const rung = h('span', { testid: 'trial-rung' });
  // stopped_by / paused_by (docs/api.md, the trial object): shown when set.
  const stoppedBy = h('span', { testid: 'trial-stopped-by' });
  const pausedBy = h('span', { testid: 'trial-paused-by' });
  const stoppedByFact = [h('dt', { text: 'Stopped by', hidden: true }), h('dd', { hidden: true }, stoppedBy)];
  const pausedByFact = [h('dt', { text: 'Paused by', hidden: true }), h('dd', { hidden: true }, pausedBy)];
  // A gang (docs/api.md, "Gangs"; nodes > 1): how many workers run each
  // attempt, and the members of the current attempt, or of the last one.
  const nodes = h('span', { testid: 'trial-nodes' });
  const nodesFact = [h('dt', { text: 'Nodes', hidden: true }), h('dd', { hidden: true }, nodes)];
  // Its kept folder (docs/api.md, "Artifacts"): a tar to download.
  const artifacts = h('a', { testid: 'trial-artifacts', href: api.artifactsUrl(id),
    download: `trial-${id}-artifacts.tar` });
  const artifactsFact = [h('dt', { text: 'Artifacts', hidden: true }), h('dd', { hidden: true }, artifacts)];
  const gangTitle = h('dt', { text: 'Gang', hidden: true });
  const gangList = h('ol', { class: 'gang', testid: 'trial-gang' });
  const gangMaster = h('span', { class: 'muted', testid: 'trial-gang-master' });
  const gangFact = [gangTitle, h('dd', { hidden: true }, gangList, gangMaster)];
  // info (docs/api.md, the trial object): the last value of each name its
  // reports carried that was not a number, {"phase": "train", "done": true}.
  const info = h('span', { testid: 'trial-info' });
  const infoFact = [h('dt', { text: 'Info', hidden: true }), h('dd', { hidden: true }, info)];
  // warnings: {count, last: [{line, why}]}, the @rung lines rung-worker
  // refused and the first value of each name that was not a number.
  const warnCount = h('p', { class: 'muted', testid: 'trial-warnings-count' });
  const warnList = h('ul', { class: 'warnings', testid: 'trial-warnings' });
  const warnSection = h('section', { class: 'warnings-section', hidden: true },
    h('h2', { text: '@rung line warnings' }), warnCount, warnList);
  // pbt (docs/schedulers.md): the exploits that made this trial's history,
  // oldest first; the experiment page draws the whole population's.
  const lineageNote = h('p', { class: 'muted', testid: 'trial-lineage-note' });
  const lineageBody = h('tbody');
  const lineageSection = h('section', { class: 'lineage-section', testid: 'trial-lineage-section', hidden: true },
    h('h2', { text: 'Lineage' }), lineageNote,
    h('div', { class: 'table-wrap' }, h('table', { class: 'grid', testid: 'trial-lineage' },
      h('thead', null, h('tr', null,
        h('th', { class: 'num', text: 'Step' }),
        h('th', { text: 'Donor' }),
        h('th', { class: 'num', text: 'Donor step' }),
        h('th', { text: 'Changed (from \u2192 to)' }),
        h('th', { text: 'Time' }))),
      lineageBody)));
  const chartEl = h('div', { class: 'chart', testid: 'chart-trial' });
  const headRow = h('tr');
  const tbody = h('tbody');
  const table = h('table', { class: 'grid metrics', testid: 'metrics' }, h('thead', null, headRow), tbody);
  const log = h('pre', { class: 'log', testid: 'trial-log', text: 'no log yet' });
  // Its tags and notes (tags.js), editable by its experiment's owner or an admin.
  const tagsNotes = createTagsNotes('trial', id, { onSaved: (t) => renderTrial(t) });

  root.append(
    h('section', { class: 'page' },
      crumbs,
      h('div', { class: 'title-row' }, title, state),
      tagsNotes.el,
      h('dl', { class: 'facts' },
        h('dt', { text: 'Config' }), h('dd', null, config),
        h('dt', { text: 'Best' }), h('dd', null, best),
        h('dt', { text: 'Worker' }), h('dd', null, worker),
        nodesFact, gangFact, artifactsFact,
        h('dt', { text: 'Times' }), h('dd', null, times),
        h('dt', { text: 'Scheduler' }), h('dd', null, rung),
        stoppedByFact, pausedByFact, infoFact),
      error,
      warnSection,
      lineageSection,
      h('h2', { text: 'Reports' }), chartEl,
      h('div', { class: 'table-wrap metrics-wrap' }, table),
      h('h2', { text: 'Log' }), log));

  function renderTrial(t) {
    setText(title, `Trial #${t.number} (id ${t.id})`);
    document.title = `Trial #${t.number} · Rung`;
    crumbs.replaceChildren(h('a', { href: '#/' }, 'Experiments'), ' / ',
      h('a', { href: `#/experiments/${t.experiment_id}` }, exp && exp.name ? exp.name : `experiment ${t.experiment_id}`),
      ' / ', `trial #${t.number} (id ${t.id})`);
    setState(state, t.state);
    setText(config, configText(t.config));
    tagsNotes.update(t, api.canSteer(exp));
    if (t.error) {
      setText(error, t.error); // text, never markup: errors come from user programs
      error.hidden = false;
    } else {
      setText(error, '');
      error.hidden = true;
    }
    if (t.worker_id) {
      if (!worker.firstChild || worker.firstChild.nodeName !== 'A') worker.replaceChildren(h('a', { href: '#/workers' }));
      setText(worker.firstChild, workerText(t.worker_id));
    } else {
      setText(worker, DASH);
    }
    const start = t.started_at ? Date.parse(t.started_at) : NaN;
    const end = t.ended_at ? Date.parse(t.ended_at) : NaN;
    setText(times, `created ${time(t.created_at)} \u00b7 started ${time(t.started_at)} \u00b7 ended ${time(t.ended_at)}` +
      (Number.isFinite(start) && Number.isFinite(end) ? ` (${duration(end - start)})` : ''));
    setText(best, t.best ? `${num(t.best.value)} at step ${int(t.best.step)}` : DASH);
    const parts = [`attempt ${t.attempt}`];
    if (t.bracket !== undefined && t.bracket !== null) parts.push(`bracket ${t.bracket}`);
    // Given back by its worker (other work wanted the GPU, or its hours ended).
    if (t.preemptions > 0) parts.push(`preempted ${t.preemptions === 1 ? 'once' : `${t.preemptions} times`}`);
    if (t.rung !== undefined && t.rung !== null) parts.push(`${t.state === 'paused' ? 'paused' : 'stopped'} at rung ${num(t.rung)}`);
    setText(rung, parts.join(' \u00b7 '));
    renderGang(t);
    showFact(stoppedByFact, stoppedBy, t.stopped_by);
    const kept = t.artifacts && typeof t.artifacts.size === 'number';
    for (const el of artifactsFact) el.hidden = !kept;
    if (kept) setText(artifacts, `download (${int(t.artifacts.size)} bytes)`);
    showFact(pausedByFact, pausedBy, t.paused_by);
    renderInfo(t.info);
    renderWarnings(t.warnings);
    renderLineage(t);
    const tail = typeof t.log_tail === 'string' && t.log_tail.length ? t.log_tail : null;
    setText(log, tail === null ? 'no log yet' : tail);
    log.classList.toggle('muted', tail === null);
  }

  /** "name (worker 3)" when its name is known, else "worker 3". */
  function workerText(wid) {
    const name = workerNames.get(wid);
    return name ? `${name} (worker ${wid})` : `worker ${wid}`;
  }

  let gangKey = '';
  function renderGang(t) {
    const n = Number.isInteger(t.nodes) ? t.nodes : 1;
    setText(nodes, n > 1 ? `${n} workers run each attempt together` : '');
    for (const el of nodesFact) el.hidden = n <= 1;
    const g = t.gang && Array.isArray(t.gang.members) ? t.gang : null;
    // The members stay after an attempt ended, for inspection: say which.
    setText(gangTitle, t.state === 'running' ? 'Gang' : 'Last gang');
    for (const el of gangFact) el.hidden = !g;
    const members = g ? [...g.members].sort((a, b) => a.rank - b.rank) : [];
    const k = JSON.stringify([members, members.map((m) => workerText(m.worker_id))]);
    if (k !== gangKey) {
      gangKey = k;
      // The workers page lists every worker; it has no page per worker.
      gangList.replaceChildren(...members.map((m) => h('li', { testid: 'trial-gang-member', 'data-rank': m.rank, 'data-worker': m.worker_id },
        `rank ${m.rank} → `, h('a', { href: '#/workers', text: workerText(m.worker_id) }))));
    }
    const addr = g && typeof g.master_addr === 'string' ? g.master_addr : '';
    const host = addr.includes(':') ? `[${addr}]` : addr; // an IPv6 address
    setText(gangMaster, g ? `master ${host}:${g.master_port} (node 0's rendezvous)` : '');
  }

  function showFact(pair, el, value) {
    setText(el, value || '');
    for (const n of pair) n.hidden = !value;
  }

  let lineageKey = '';
  function renderLineage(t) {
    const entries = lineageOf(t);
    lineageSection.hidden = !isPbt(exp) && entries.length === 0;
    const k = JSON.stringify(entries);
    if (k === lineageKey) return;
    lineageKey = k;
    setText(lineageNote, entries.length
      ? `${entries.length === 1 ? 'One exploit' : `${entries.length} exploits`}: at each step the trial went on from the donor's checkpoint with the donor's config, explored.`
      : 'No exploits: this trial kept its own weights and config.');
    const exact = (v) => (v === undefined ? DASH : JSON.stringify(v));
    const short = (v) => (typeof v === 'number' ? num(v) : exact(v));
    lineageBody.replaceChildren(...entries.map((e) => h('tr', { testid: 'trial-lineage-row', 'data-step': e.step, 'data-donor': e.donor, 'data-donor-step': e.donor_step },
      h('td', { class: 'num', text: String(e.step) }),
      h('td', null, h('a', { href: `#/trials/${e.donor}`, text: `trial ${e.donor}` })),
      h('td', { class: 'num', text: String(e.donor_step) }),
      h('td', null, changes(e).map((c, i) => h('span', {
        class: 'pbt-change', 'data-param': c.param, title: `${c.param}: ${exact(c.from)} \u2192 ${exact(c.to)}`,
      }, i ? '; ' : '', `${c.param} ${short(c.from)} \u2192 ${short(c.to)}`))),
      h('td', { text: time(e.time) }))));
  }

  let infoKey = '';
  function renderInfo(o) {
    const entries = o && typeof o === 'object' && !Array.isArray(o) ? Object.entries(o) : [];
    const k = JSON.stringify(entries);
    if (k === infoKey) return;
    infoKey = k;
    for (const el of infoFact) el.hidden = entries.length === 0;
    // Values come from user programs: text nodes only; a string as it is,
    // anything else as its JSON (true, null, [1, 2]).
    const items = [];
    entries.forEach(([key, v], i) => {
      if (i) items.push(' \u00b7 ');
      items.push(h('span', { class: 'info-item', testid: 'trial-info-item', 'data-key': key,
        text: `${key}: ${typeof v === 'string' ? v : JSON.stringify(v)}` }));
    });
    info.replaceChildren(...items);
  }

  let warnKey = '';
  function renderWarnings(w) {
    const n = warningCount({ warnings: w });
    const last = w && Array.isArray(w.last) ? w.last : [];
    const k = JSON.stringify([n, last]);
    if (k === warnKey) return;
    warnKey = k;
    warnSection.hidden = n === 0 && last.length === 0;
    setText(warnCount, n === 1 ? '1 warning' :
      `${n} warnings${last.length && last.length < n ? `; the last ${last.length}:` : ''}`);
    // Lines come from user programs: text nodes only.
    warnList.replaceChildren(...last.map((x) => h('li', { testid: 'trial-warning' },
      h('code', { class: 'warning-line', testid: 'trial-warning-line', text: x && x.line !== undefined ? String(x.line) : '' }),
      h('span', { class: 'warning-why', testid: 'trial-warning-why', text: x && x.why !== undefined ? String(x.why) : '' }))));
  }

  function renderHead() {
    headRow.replaceChildren(h('th', { class: 'num', text: 'step' }), ...keys.map((k) => h('th', { class: 'num', text: k })));
  }

  function rowOf(r) {
    return h('tr', { testid: 'metric-row', 'data-step': r.step, title: time(r.time) },
      h('td', { class: 'num', text: String(r.step) }),
      keys.map((k) => h('td', { class: 'num', text: r.metrics && k in r.metrics ? num(r.metrics[k]) : DASH })));
  }

  function addReports(items) {
    let newKey = false;
    for (const r of items) {
      for (const k of Object.keys(r.metrics || {})) {
        if (!keys.includes(k)) {
          keys.push(k);
          newKey = true;
        }
      }
    }
    if (exp && keys.includes(exp.metric) && keys[0] !== exp.metric) {
      keys = [exp.metric, ...keys.filter((k) => k !== exp.metric)]; // the objective first
      newKey = true;
    }
    reports.push(...items);
    if (newKey) {
      renderHead();
      tbody.replaceChildren(...reports.map(rowOf));
    } else {
      tbody.append(...items.map(rowOf));
    }
  }

  function reset() {
    reports = [];
    keys = [];
    lastStep = -1;
    tbody.replaceChildren();
    renderHead();
  }

  async function renderChart() {
    const uPlot = await loadUPlot();
    if (destroyed) return;
    const k = keys.join('\u0000');
    if (!chart || k !== chartKeys) {
      if (chart) chart.destroy();
      chart = createTrialChart(chartEl, uPlot, { keys, metric: exp ? exp.metric : keys[0] });
      chartKeys = k;
    }
    chart.update(reports);
  }

  renderHead();
  const poller = startPoll('trial', async (signal) => {
    const t = await api.getTrial(id, signal);
    if (!exp) {
      exp = await api.getExperiment(t.experiment_id, signal);
    }
    const wids = [t.worker_id, ...(t.gang && Array.isArray(t.gang.members) ? t.gang.members.map((m) => m.worker_id) : [])];
    const unnamed = wids.filter((w) => w && !workerNames.has(w));
    if (unnamed.length) {
      // Once per worker: its name is nicer than its id.
      const doc = await api.listWorkers(signal);
      for (const w of doc.items || []) workerNames.set(w.id, w.name);
      for (const w of unnamed) if (!workerNames.has(w)) workerNames.set(w, null);
    }
    if (destroyed) return undefined;
    renderTrial(t);
    let more = true;
    while (more) {
      const doc = await api.getMetrics(id, lastStep, signal);
      if (destroyed) return undefined;
      if (doc.attempt !== attempt) {
        const stale = lastStep !== -1; // asked from the old attempt's cursor
        if (attempt !== null) reset(); // a retry starts over
        attempt = doc.attempt;
        if (stale) continue;
      }
      const items = doc.items || [];
      if (items.length) {
        lastStep = items[items.length - 1].step;
        addReports(items);
      }
      more = items.length >= 10000; // server/api_trials.c METRICS_MAX: a full page, read on
    }
    await renderChart();
    setAttr(table, 'data-rows', reports.length);
    // A final trial has nothing more to show: this was its last fetch.
    return FINAL.has(t.state) ? DONE : undefined;
  });

  return () => {
    destroyed = true;
    poller.stop();
    if (chart) chart.destroy();
  };
}

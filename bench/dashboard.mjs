// bench/dashboard: the web dashboard with a large experiment.
//
// It starts a fresh rungd on a fresh database (serving web/ with --web-dir),
// loads one experiment with DASH_TRIALS trials (10,000) and DASH_REPORTS
// (20) reports each, 200,000 metric rows, through the HTTP API as
// DASH_WORKERS (32) concurrent fake workers on keep-alive connections
// (register, lease, report, finish: the pull protocol of docs/api.md), then
// opens the experiment page in headless Debian chromium DASH_RUNS (3) times,
// each time in a fresh browser context (an empty cache), and measures:
//
// - render time: from navigation start (the page's performance.timeOrigin)
//   to the experiment page rendered, defined as: the learning-curves chart
//   [data-testid=chart-curves] has data-series equal to the number of trials
//   (one curve per trial; with more than the page draws, its data-best: the
//   best trials' curves, web/js/views/experiment-data.js), every other chart ([data-testid^=chart-]) has a
//   data-series of at least 1, and the trials table shows its first page of
//   [data-testid=trial-row]s. The time is performance.now() in the page at
//   the first animation frame where all of that holds. The analysis
//   section (importance, contour, EDF, workers' timeline) asks its own
//   endpoints after that and is left out of it; analysis_s says, for
//   information, when all four showed their data.
// - the renderer processes' CPU seconds until then (Chrome DevTools
//   Protocol's SystemInfo.getProcessInfo, before and after), for
//   information: on a shared host the wall-clock time moves with the other
//   processes' load, the CPU the page's work took much less.
// - bytes transferred until then: the sum of encodedDataLength of every
//   response (headers and body as received; Chrome DevTools Protocol's
//   Network.loadingFinished), and, for information, what the page's polling
//   costs per second once rendered (over DASH_IDLE_S seconds).
//
// - interactions, each from the action to the first animation frame that
//   shows its result: hover (the curves name a trial), sort (the table's
//   first row changes), filter (by state), brush (a drag on the parallel
//   coordinates' first axis: the table says "N of M trials, brushed"); and,
//   for information, brush_redraw: until the parallel coordinates have
//   redrawn their lines for that brush (the other charts follow it).
//
// The median run is the result; the last lines are the target lines, named
// by the size (the goal: 1 s up to 50,000 trials, 2 s for 100,000,
// DASH_GOAL_S to set another):
//   target dashboard_render_50k_s: X (goal 1) ok|short
//   target dashboard_hover_ms: X (goal 100) ok|short   (and sort, filter, brush)
//   target dashboard_bytes: N (...)
// DASH_TRACE=1 prints each run's timeline (requests, long tasks);
// DASH_PROFILE=1 a CPU profile's summary of the page until the render (the
// most self time by script and by function; DASH_PROFILE_FILE=F also writes
// the profile, a .cpuprofile Chromium's DevTools opens), or with
// DASH_TRACE_FILE=F a Chromium trace (devtools.timeline, blink, v8) to F
// instead. Both slow the page down: their runs are not the figures.
// Exit status 1 when the load or a page failed. Programs: RUNGD (default
// build/bin/rungd); web/node_modules must hold playwright-core (npm ci).

import fs from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';
import { Rungd, armWatchdog, describePrograms, launchBrowser, sleep, waitFor } from '../tests/browser/harness.mjs';

let TRIALS = Number(process.env.DASH_TRIALS || 10000);
// An existing database (bench/gen_store.py makes one in seconds) served
// instead of loading one through the API: its largest experiment is shown.
const DB = process.env.DASH_DB || '';
const REPORTS = Number(process.env.DASH_REPORTS || 20);
const WORKERS = Number(process.env.DASH_WORKERS || 32);
const RUNS = Number(process.env.DASH_RUNS || 3);
const IDLE_S = Number(process.env.DASH_IDLE_S || 5);
let GOAL_S = Number(process.env.DASH_GOAL_S || 0); // 0: by the size (main)
const TRACE = process.env.DASH_TRACE === '1';
const PROFILE = process.env.DASH_PROFILE === '1';
const ACT_GOAL_MS = 100; // hover, sort, filter and brush, each
const ACTS = ['hover', 'sort', 'filter', 'brush'];
const RENDER_TIMEOUT_MS = Number(process.env.DASH_RENDER_TIMEOUT_S || 60) * 1000;

armWatchdog(Number(process.env.DASH_WATCHDOG_S || 900));

// ---- the load: fake workers on keep-alive connections -----------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: WORKERS + 4 });

function post(base, path, body) {
  const data = Buffer.from(JSON.stringify(body));
  const u = new URL(base + path);
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: u.hostname, port: u.port, path: u.pathname, method: 'POST', agent,
      headers: { 'Content-Type': 'application/json', 'Content-Length': data.length },
      timeout: 60000,
    }, (res) => {
      const chunks = [];
      res.on('data', (c) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        resolve({ status: res.statusCode, json: text ? JSON.parse(text) : null, text });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`POST ${path}: timed out`)));
    req.on('error', reject);
    req.end(data);
  });
}

async function postOk(base, path, body, status = 200) {
  const r = await post(base, path, body);
  if (r.status !== status) throw new Error(`POST ${path}: ${r.status} ${r.text.slice(0, 300)}`);
  return r.json;
}

// Deterministic learning curves: a config's loss falls towards a floor set
// by its distance from a good lr, its depth and its dropout.
function loss(config, step) {
  const floor = 0.08 * (Math.log10(config.lr) + 2.5) ** 2 + 0.03 * config.layers + 0.2 * (config.dropout - 0.2) ** 2;
  return floor + 0.8 * Math.exp(-step / (2 + 4 * config.dropout)) + 0.01 * Math.sin(step * 1.3 + config.layers);
}

async function load(d) {
  const spec = {
    name: 'dashboard-bench',
    metric: 'loss',
    mode: 'min',
    search_space: {
      lr: { type: 'loguniform', low: 1e-5, high: 0.1 },
      layers: { type: 'choice', values: [1, 2, 3, 4] },
      dropout: { type: 'uniform', low: 0, high: 0.5 },
      batch_size: 128,
    },
    searcher: { type: 'random', seed: 1 },
    scheduler: { type: 'fifo' },
    num_samples: TRIALS,
    max_concurrent_trials: 0,
    trainable: { type: 'external' },
  };
  const x = await postOk(d.url, '/api/v1/experiments', spec, 201);
  let leased = 0;
  let reports = 0;
  const t0 = performance.now();
  async function worker(i) {
    const w = await postOk(d.url, '/api/v1/workers', { name: `bench-${i}`, hostname: 'bench', gpus: [], cpus: 1 }, 201);
    for (;;) {
      if (leased >= TRIALS) return;
      const r = await post(d.url, `/api/v1/workers/${w.worker_id}/lease`, { cpus: 1, gpus: [], wait_s: 1 });
      if (r.status === 204) {
        if (leased >= TRIALS) return;
        continue; // the proposer has not caught up yet
      }
      if (r.status !== 200) throw new Error(`lease: ${r.status} ${r.text.slice(0, 300)}`);
      const t = r.json.trial;
      leased++;
      for (let s = 1; s <= REPORTS; s++) {
        await postOk(d.url, `/api/v1/trials/${t.id}/report`, { lease_token: t.lease_token, step: s, metrics: { loss: loss(t.config, s) } });
        reports++;
      }
      await postOk(d.url, `/api/v1/trials/${t.id}/finish`, { lease_token: t.lease_token, status: 'completed' });
    }
  }
  const progress = setInterval(() => {
    const s = (performance.now() - t0) / 1000;
    process.stdout.write(`# load: ${leased} trials leased, ${reports} reports, ${s.toFixed(0)} s\n`);
  }, 10000);
  try {
    await Promise.all(Array.from({ length: WORKERS }, (_, i) => worker(i)));
  } finally {
    clearInterval(progress);
  }
  const doc = await waitFor(async () => {
    const e = await d.experiment(x.id);
    return e.state === 'completed' ? e : null;
  }, { timeout: 30000, what: `experiment ${x.id} to complete` });
  const s = (performance.now() - t0) / 1000;
  if (doc.counts.completed !== TRIALS) throw new Error(`completed ${doc.counts.completed} of ${TRIALS}`);
  return { id: x.id, seconds: s, reports };
}

// The served database's experiment with the most trials: {id, trials,
// reports} (its metric rows are not counted: null).
async function largest(d) {
  const res = await fetch(`${d.url}/api/v1/experiments?limit=1000`);
  const doc = await res.json();
  let best = null;
  for (const x of doc.items || []) {
    const n = Object.values(x.counts || {}).reduce((a, b) => a + b, 0);
    if (!best || n > best.trials) best = { id: x.id, trials: n };
  }
  if (!best) throw new Error(`${DB} holds no experiment`);
  best.reports = null;
  return best;
}

// ---- the page --------------------------------------------------------------

// Runs in the page: the time since navigation start once the experiment
// page is rendered (see the header), else false.
function renderedAt(trials) {
  const curves = document.querySelector('[data-testid="chart-curves"]');
  if (!curves) return false;
  // A large experiment's chart draws only its best trials (data-best).
  const want = curves.dataset.best ? Math.min(trials, Number(curves.dataset.best)) : trials;
  if (curves.dataset.series !== String(want)) return false;
  for (const c of document.querySelectorAll('[data-testid^="chart-"]')) {
    if (c.closest('[hidden]')) continue; // a chart this experiment does not have (several objectives)
    // The analysis section's charts come from endpoints of their own, after
    // the page: timed apart (analysisAt).
    if (c.closest('[data-testid="analysis-section"]')) continue;
    if (!(Number(c.dataset.series) >= 1)) return false;
  }
  if (!document.querySelector('[data-testid="trial-row"]')) return false;
  return performance.now();
}

// Runs in the page: the time since navigation start once the analysis
// section (web/js/views/analysis-section.js) shows its data: importance
// bars, the EDF's steps, the timeline's bars and the contour's dots, else
// false.
function analysisAt() {
  const n = (id, attr) => Number(document.querySelector(`[data-testid="${id}"]`)?.dataset[attr] || 0);
  if (!(n('chart-importance', 'bars') >= 1 && n('chart-edf', 'points') >= 1 && n('chart-timeline', 'bars') >= 1)) return false;
  if (document.querySelector('[data-testid="contour-x"]') && !(n('chart-contour', 'points') >= 1)) return false;
  return performance.now();
}

// Runs in the page: the milliseconds from an action (a change of the table's
// sort or state filter, the pointer moved onto the curves chart, a drag
// along the parallel coordinates' first axis) to the first animation frame
// that shows its result (the table's first row is another trial; the chart
// names the hovered trial; the table says it holds the brushed trials). -1
// when nothing showed within 10 s. 'brush' answers {ms, redrawMs}: redrawMs
// until the parallel coordinates drew the brushed lines.
async function interact(what) {
  const firstRow = () => document.querySelector('[data-testid="trial-row"]')?.dataset.id;
  const info = () => document.querySelector('[data-testid="chart-curves"] .chart-info')?.textContent;
  const frame = () => new Promise((res) => requestAnimationFrame(res));
  if (what === 'brush') {
    const par = document.querySelector('[data-testid="chart-parallel"]');
    const over = document.querySelector('[data-testid="parallel-brush"]');
    const ax = JSON.parse(par.dataset.axes)[0];
    const r = over.getBoundingClientRect();
    const at = (f) => ({ clientX: r.left + ax.x, clientY: r.top + ax.top + f * (ax.bottom - ax.top), bubbles: true, pointerId: 1, button: 0, isPrimary: true });
    over.dispatchEvent(new PointerEvent('pointerdown', at(0.3)));
    for (const f of [0.35, 0.45, 0.55]) over.dispatchEvent(new PointerEvent('pointermove', at(f)));
    await frame();
    const t0 = performance.now();
    over.dispatchEvent(new PointerEvent('pointerup', at(0.6)));
    const shown = () => {
      const b = document.querySelector('[data-testid="brush-info"]');
      return b && !b.hidden && /brushed/.test(b.textContent);
    };
    let ms = -1;
    for (;;) {
      await frame();
      if (shown()) {
        ms = performance.now() - t0;
        break;
      }
      if (performance.now() - t0 > 10000) return { ms: -1, redrawMs: -1 };
    }
    for (;;) {
      if (par.dataset.drawnBrush === par.dataset.brush) return { ms, redrawMs: performance.now() - t0 };
      if (performance.now() - t0 > 10000) return { ms, redrawMs: -1 };
      await frame();
    }
  }
  const before = what === 'hover' ? info() : firstRow();
  const t0 = performance.now();
  if (what === 'hover') {
    // The pointer goes down a third of the way in, a tenth of the height at
    // a time, until it is near a curve; the time is that last move's.
    const over = document.querySelector('[data-testid="chart-curves"] .u-over');
    const r = over.getBoundingClientRect();
    for (let k = 1; k < 10; k++) {
      const at = { clientX: r.left + r.width / 3, clientY: r.top + (k * r.height) / 10, bubbles: true };
      const t1 = performance.now();
      over.dispatchEvent(new MouseEvent('mouseenter', at));
      over.dispatchEvent(new MouseEvent('mousemove', at));
      for (let f = 0; f < 3; f++) {
        await frame();
        if (info() !== before) return performance.now() - t1;
      }
    }
    return -1;
  } else {
    const sel = document.querySelector(`[data-testid="${what === 'sort' ? 'sort' : 'filter-state'}"]`);
    sel.value = what === 'sort' ? 'value' : 'failed';
    sel.dispatchEvent(new Event('change', { bubbles: true }));
  }
  for (;;) {
    await frame();
    const now = what === 'hover' ? info() : firstRow();
    if (now !== undefined && now !== before) return performance.now() - t0;
    if (performance.now() - t0 > 10000) return -1;
  }
}

// DASH_TRACE=1: where a render's time went, from the page's own clocks: each
// request's start, first byte and end (Resource Timing) and the main
// thread's long tasks (> 50 ms), in ms since navigation start.
function timeline(renderMs) {
  const out = [`  timeline (ms; rendered at ${renderMs.toFixed(0)}):`];
  const nav = performance.getEntriesByType('navigation')[0];
  if (nav) out.push(`    document: ${nav.startTime.toFixed(0)} → ${nav.responseEnd.toFixed(0)}, DOMContentLoaded ${nav.domContentLoadedEventEnd.toFixed(0)}`);
  for (const e of performance.getEntriesByType('resource')) {
    if (e.startTime > renderMs) continue;
    const name = e.name.replace(location.origin, '');
    if (!name.startsWith('/api/') && e.duration < 20) continue;
    out.push(`    ${name}: start ${e.startTime.toFixed(0)}, first byte ${e.responseStart.toFixed(0)}, end ${e.responseEnd.toFixed(0)}`);
  }
  for (const [t, d] of window.__longtasks || []) {
    if (t <= renderMs) out.push(`    long task: ${t.toFixed(0)} → ${(t + d).toFixed(0)} (${d.toFixed(0)})`);
  }
  return out.join('\n');
}

// DASH_PROFILE=1: the page's main thread until the render, from a CPU
// profile (Chrome DevTools Protocol's Profiler, 200 µs samples): the
// functions with the most self time, and the time by script.
function profileSummary(profile, base) {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const deltas = profile.timeDeltas;
  for (let i = 0; i < profile.samples.length; i++) {
    const n = byId.get(profile.samples[i]);
    const dt = (deltas[i + 1] ?? 0) / 1000;
    const f = n.callFrame;
    const key = `${f.functionName || '(anonymous)'} ${f.url.replace(base, '')}:${f.lineNumber + 1}`;
    self.set(key, (self.get(key) || 0) + dt);
  }
  const byScript = new Map();
  for (const [k, ms] of self) {
    const script = k.split(' ')[1].replace(/:\d+$/, '') || k.split(' ')[0];
    byScript.set(script, (byScript.get(script) || 0) + ms);
  }
  const top = (m, n) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, ms]) => `    ${ms.toFixed(0).padStart(5)} ms  ${k}`);
  return ['  main thread by script (self ms):', ...top(byScript, 15), '  functions (self ms):', ...top(self, 30)].join('\n');
}

/** The CPU seconds of every renderer process so far. */
async function rendererCpu(bcdp) {
  const info = await bcdp.send('SystemInfo.getProcessInfo');
  return info.processInfo.filter((p) => p.type === 'renderer').reduce((a, p) => a + p.cpuTime, 0);
}

async function measure(browser, url, eid) {
  const context = await browser.newContext({ viewport: { width: 1400, height: 1000 } });
  const page = await context.newPage();
  const bcdp = await browser.newBrowserCDPSession();
  await page.goto('about:blank');
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  if (TRACE) {
    await page.addInitScript(() => {
      window.__longtasks = [];
      new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longtasks.push([e.startTime, e.duration]); })
        .observe({ type: 'longtask', buffered: true });
    });
  }
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.setCacheDisabled', { cacheDisabled: true });
  const urls = new Map();
  const sizes = [];
  cdp.on('Network.responseReceived', (e) => urls.set(e.requestId, e.response.url));
  cdp.on('Network.loadingFinished', (e) => sizes.push({ t: performance.now(), id: e.requestId, bytes: e.encodedDataLength }));
  try {
    const cpu0 = await rendererCpu(bcdp);
    if (PROFILE && process.env.DASH_TRACE_FILE) {
      await browser.startTracing(page, { path: process.env.DASH_TRACE_FILE, categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'v8', 'blink'] });
    } else if (PROFILE) {
      await cdp.send('Profiler.enable');
      await cdp.send('Profiler.setSamplingInterval', { interval: 200 });
      await cdp.send('Profiler.start');
    }
    await page.goto(`${url}/#/experiments/${eid}`, { waitUntil: 'commit' });
    const handle = await page.waitForFunction(renderedAt, TRIALS, { polling: 'raf', timeout: RENDER_TIMEOUT_MS });
    const renderMs = await handle.jsonValue();
    const cpuS = (await rendererCpu(bcdp)) - cpu0;
    if (PROFILE && process.env.DASH_TRACE_FILE) await browser.stopTracing();
    else if (PROFILE) {
      const { profile } = await cdp.send('Profiler.stop');
      if (process.env.DASH_PROFILE_FILE) fs.writeFileSync(process.env.DASH_PROFILE_FILE, JSON.stringify(profile));
      console.log(profileSummary(profile, url));
    }
    const readyAt = performance.now();
    const analysisMs = await (await page.waitForFunction(analysisAt, null, { polling: 'raf', timeout: RENDER_TIMEOUT_MS })).jsonValue();
    const rows = await page.locator('[data-testid="trial-row"]').count();
    if (TRACE) console.log(await page.evaluate(timeline, renderMs));
    await sleep(200); // loadingFinished events of the responses already drawn
    const until = sizes.filter((s) => s.t <= readyAt + 200);
    const bytes = until.reduce((a, s) => a + s.bytes, 0);
    const byUrl = new Map();
    for (const s of until) {
      const u = (urls.get(s.id) || '?').replace(url, '').replace(/\?.*$/, '');
      byUrl.set(u, (byUrl.get(u) || 0) + s.bytes);
    }
    // What the live polling costs once the page is up.
    const idleFrom = performance.now();
    const n0 = sizes.length;
    await sleep(IDLE_S * 1000);
    const idle = sizes.slice(n0).reduce((a, s) => a + s.bytes, 0) / ((performance.now() - idleFrom) / 1000);
    const acts = {};
    for (const what of ['hover', 'sort', 'filter']) acts[what] = await page.evaluate(interact, what);
    // The brush last, on every trial (the filter above is set back).
    await page.evaluate(() => {
      const sel = document.querySelector('[data-testid="filter-state"]');
      sel.value = '';
      sel.dispatchEvent(new Event('change', { bubbles: true }));
    });
    await sleep(1500);
    const b = await page.evaluate(interact, 'brush');
    acts.brush = b.ms;
    acts.brushRedraw = b.redrawMs;
    return { renderMs, analysisMs, cpuS, bytes, requests: until.length, byUrl, idle, rows, errors, acts };
  } finally {
    await context.close();
  }
}

// ---- main ------------------------------------------------------------------

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const kb = (n) => `${(n / 1024).toFixed(0)} KiB`;

/** The render target's name, by the size: dashboard_render_50k_s. */
function renderName() {
  const k = TRIALS / 1000;
  return `dashboard_render_${Number.isInteger(k) ? k : k.toFixed(1)}k_s`;
}

async function main() {
  console.log('== dashboard: the experiment page with a large experiment ==');
  console.log(`# ${describePrograms()}`);
  const d = new Rungd();
  if (DB) fs.copyFileSync(DB, d.db);
  await d.start();
  let failed = false;
  let browser;
  try {
    let l;
    if (DB) {
      l = await largest(d);
      TRIALS = l.trials;
      console.log(`# served ${DB}: experiment ${l.id}, ${TRIALS} trials, ${l.reports} metric rows`);
    } else {
      console.log(`# loading ${TRIALS} trials x ${REPORTS} reports with ${WORKERS} workers into ${d.url}`);
      l = await load(d);
      console.log(`# loaded experiment ${l.id}: ${TRIALS} trials, ${l.reports} metric rows in ${l.seconds.toFixed(1)} s`
        + ` (${(l.reports / l.seconds).toFixed(0)} reports/s)`);
    }
    // The goal by the size: 1 s up to 50,000 trials, then 1 s per 50,000.
    if (!GOAL_S) GOAL_S = Math.max(1, Math.ceil(TRIALS / 50000));
    browser = await launchBrowser();
    const runs = [];
    for (let i = 0; i < RUNS; i++) {
      const r = await measure(browser, d.url, l.id);
      runs.push(r);
      const top = [...r.byUrl.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([u, b]) => `${u} ${kb(b)}`).join(', ');
      console.log(`run ${i + 1}: rendered in ${(r.renderMs / 1000).toFixed(3)} s (renderer CPU ${r.cpuS.toFixed(2)} s,`
        + ` analysis section at ${(r.analysisMs / 1000).toFixed(3)} s,`
        + ` load ${fs.readFileSync('/proc/loadavg', 'utf8').split(' ')[0]}); ${r.requests} responses, ${r.bytes} bytes`
        + ` (${kb(r.bytes)}; largest: ${top}); ${r.rows} trial rows; polling afterwards ${kb(r.idle)}/s;`
        + ` hover ${r.acts.hover.toFixed(0)} ms, sort by value ${r.acts.sort.toFixed(0)} ms, filter ${r.acts.filter.toFixed(0)} ms,`
        + ` brush ${r.acts.brush.toFixed(0)} ms (lines redrawn at ${r.acts.brushRedraw.toFixed(0)} ms)`);
      if (r.errors.length) {
        failed = true;
        console.log(`  page errors: ${r.errors.join(' | ').slice(0, 1000)}`);
      }
    }
    const renderS = median(runs.map((r) => r.renderMs)) / 1000;
    const bytes = median(runs.map((r) => r.bytes));
    const idle = median(runs.map((r) => r.idle));
    console.log(JSON.stringify({
      bench: 'dashboard', trials: TRIALS, metric_rows: l.reports, load_s: DB ? null : Number(l.seconds.toFixed(2)),
      render_s: runs.map((r) => Number((r.renderMs / 1000).toFixed(3))), render_s_median: Number(renderS.toFixed(3)),
      analysis_s: runs.map((r) => Number((r.analysisMs / 1000).toFixed(3))),
      renderer_cpu_s: runs.map((r) => Number(r.cpuS.toFixed(2))),
      hover_ms: runs.map((r) => Math.round(r.acts.hover)), sort_ms: runs.map((r) => Math.round(r.acts.sort)),
      filter_ms: runs.map((r) => Math.round(r.acts.filter)),
      brush_ms: runs.map((r) => Math.round(r.acts.brush)), brush_redraw_ms: runs.map((r) => Math.round(r.acts.brushRedraw)),
      bytes_median: bytes, poll_bytes_per_s: Math.round(idle),
    }));
    console.log(`target ${renderName()}: ${renderS.toFixed(3)} (goal ${GOAL_S}) ${renderS <= GOAL_S ? 'ok' : 'short'}`);
    for (const what of ACTS) {
      const ms = median(runs.map((r) => (r.acts[what] < 0 ? Infinity : r.acts[what])));
      console.log(`target dashboard_${what}_ms: ${ms.toFixed(0)} (goal ${ACT_GOAL_MS}) ${ms <= ACT_GOAL_MS ? 'ok' : 'short'}`);
    }
    console.log(`target dashboard_bytes: ${bytes} (${(bytes / 1048576).toFixed(2)} MiB to the rendered page; info)`);
  } catch (e) {
    failed = true;
    console.log(`FAIL: ${e.stack || e}`);
    console.log(`target ${renderName()}: none (goal ${GOAL_S || 1}) short`);
  } finally {
    if (browser) await browser.close().catch(() => {});
    agent.destroy();
    const rc = await d.stop();
    if (rc !== 0) {
      console.log(`NOTE: rungd exited with ${rc} after SIGTERM\n${d.diagnostics()}`);
    }
  }
  process.exit(failed ? 1 : 0);
}

main();

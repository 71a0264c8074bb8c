// Browser tests of the web dashboard (web/), run by ctest as
// `browser_dashboard`: headless Debian chromium driven by playwright-core,
// against a real rungd (serving web/ with --web-dir) and a real rung-worker.
//
// The test plays a worker itself over the HTTP API (register, lease,
// report, finish, heartbeat), so it decides every number the pages must
// show, and each check compares what a page shows with what the API answers
// to the test's own request at that moment:
//
//   experiments list   state, progress D/T and best value of every experiment
//   experiment page    the count of each trial state, the best value and
//                      config; the trials table's paging, sort and state
//                      filter against the API's own pages; one learning
//                      curve per trial that has reported; the other charts
//   trial page         state, config, error, metric rows, log; an error
//                      holding <script> shown as text, never run
//   live updates       a report sent while the page is open shows up in the
//                      metrics table, the chart and the experiment's curves
//                      without a reload
//   cancel             the page's button (confirm() accepted) cancels the
//                      experiment: the API says canceled
//   failed experiment  one that failed (max_failed_trials 1, its trial failed
//                      over HTTP) is red in the list and on its page with
//                      the API's error and ended_reason; the trials table's
//                      error column (first line, whole error in the title)
//                      and warnings count; the trial page's refused @rung
//                      lines and stopped_by
//   pause and resume   the page's buttons (with "pause running trials too")
//                      change the experiment's state as the API sees it; the
//                      running trial is paused by the user; a refused pause
//                      goes to the error banner
//   workers page       a real rung-worker (--gpus none) alive; a worker with
//                      GPUs whose heartbeat carried util and memory shows them;
//                      each GPU's state (trial N linked, busy with what others
//                      use, spare, waiting) and the next lease outside --hours
//   preempted trial    a trial finished "preempted" shows that state and its
//                      preemptions, and the experiment counts it
//   gang trial         a 2-node trial formed by two HTTP workers: its page
//                      shows its nodes, both members (rank → worker, linked
//                      to the workers page) and where they meet, as the
//                      API's gang says; the experiment page its nodes
//   several objectives two: the Pareto scatter's dots, front and infeasible
//                      ones; three (a constraint, a conditional space): the
//                      front table is the API's pareto (ids, values, the
//                      objectives as columns), the objectives' parallel
//                      coordinates; each per-parameter chart counts the
//                      trials holding its key and the infeasible ones
//
// A screenshot of every page is written to $RUNG_SCREENSHOTS (ctest passes
// <build>/screenshots). The token prompt is in token.test.mjs.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import {
  FakeWorker, REPO_ROOT, Rungd, armWatchdog, describePrograms, launchBrowser, showsNumber,
  startWorker, waitFor,
} from './harness.mjs';

armWatchdog(200); // both files together stay under ctest's TIMEOUT (300 s)

const SHOTS = process.env.RUNG_SCREENSHOTS || path.join(REPO_ROOT, 'build', 'screenshots');
const PYTHON = process.env.RUNG_PYTHON || '/usr/bin/python3';
const CURVE = path.join(REPO_ROOT, 'tests', 'integration', 'curve_trainable.py');
const PAGE_WAIT = 20000; // how long a page may take to show what the API says (it polls ~1 s; slow under the sanitizers)
const XSS = '<script>window.__xss=1</script><img src=x onerror="window.__xss=2">';
const STATES = ['pending', 'running', 'preempted', 'paused', 'completed', 'stopped', 'failed', 'canceled'];
const GPUS = [
  { index: 0, name: 'NVIDIA H100 80GB HBM3', memory_mb: 81559 },
  { index: 1, name: 'NVIDIA H100 80GB HBM3', memory_mb: 81559 },
];
const GPU_BEAT = [
  { index: 0, util: 0.97, memory_used_mb: 40211 },
  { index: 1, util: 0.05, memory_used_mb: 1024 },
];

const tid = (name) => `[data-testid="${name}"]`;

let d; // the daemon
let fake; // the test's own worker, with two GPUs
let real; // a real rung-worker process
let browser;
let page;
const pageErrors = [];
const X = {}; // experiments by role: fifo, asha, real, live
let xssTrial; // the trial that failed with XSS as its error
const running = new Set(); // trial ids the fake worker holds

// ---- data ------------------------------------------------------------------

function lossOf(config, step) {
  const base = 0.1 * (Math.log10(config.lr) + 2.5) ** 2 + 0.05 * config.layers;
  return base + 0.5 * Math.exp(-step / 2) + 0.01 * Math.sin(step + config.layers);
}

const fifoSpec = {
  name: 'browser-fifo',
  metric: 'loss',
  mode: 'min',
  search_space: {
    lr: { type: 'loguniform', low: 1e-4, high: 0.1 },
    layers: { type: 'choice', values: [1, 2, 3] },
    epochs: 10,
  },
  searcher: { type: 'random', seed: 7 },
  scheduler: { type: 'fifo' },
  num_samples: 120,
  max_concurrent_trials: 5,
  resources_per_trial: { cpu: 1, gpu: 1 },
  trainable: { type: 'external' },
};

const ashaSpec = {
  name: 'browser-asha',
  metric: 'acc',
  mode: 'max',
  search_space: { lr: { type: 'loguniform', low: 1e-4, high: 0.1 }, layers: { type: 'randint', low: 1, high: 5 } },
  searcher: { type: 'random', seed: 3 },
  scheduler: { type: 'asha', time_attr: 'step', max_t: 9, grace_period: 1, reduction_factor: 3 },
  num_samples: 24,
  max_concurrent_trials: 1,
  resources_per_trial: { cpu: 1, gpu: 1 },
  trainable: { type: 'external' },
};

async function feedFifo() {
  X.fifo = await d.createExperiment(fifoSpec);
  const eid = X.fifo.id;
  // 40 trials run to their end (every 9th fails; the first failure carries
  // the XSS text), then 5 stay running: 3 with two reports, 2 with none.
  for (let k = 0; k < 45; k++) {
    const t = await fake.leaseOne({ gpus: [0] });
    assert.equal(t.experiment_id, eid, 'the fake worker leased a trial of another experiment');
    const steps = k < 40 ? 1 + (k % 6) : k < 43 ? 2 : 0;
    for (let s = 1; s <= steps; s++) await fake.report(t, s, { loss: lossOf(t.config, s), acc: 1 - lossOf(t.config, s) / 2 });
    if (k >= 40) {
      running.add(t.id);
      continue;
    }
    if (k % 9 === 4) {
      const error = xssTrial ? `RuntimeError: CUDA out of memory at step ${steps}` : XSS;
      await fake.finish(t, 'failed', error);
      if (!xssTrial) xssTrial = t.id;
    } else {
      await fake.finish(t, 'completed');
    }
  }
}

async function feedAsha() {
  X.asha = await d.createExperiment(ashaSpec);
  const eid = X.asha.id;
  for (let k = 0; k < ashaSpec.num_samples; k++) {
    const t = await fake.leaseOne({ gpus: [0] });
    assert.equal(t.experiment_id, eid, 'the fake worker leased a trial of another experiment');
    for (let s = 1; s <= 9; s++) {
      const action = await fake.report(t, s, { acc: 1 - lossOf(t.config, s) / 2 });
      if (action === 'stop') break;
    }
  }
  await waitFor(async () => {
    const x = await d.experiment(eid);
    return x.counts.completed + x.counts.stopped === ashaSpec.num_samples;
  }, { what: 'every asha trial completed or stopped' });
}

async function runReal() {
  X.real = await d.createExperiment({
    name: 'browser-real-worker',
    metric: 'loss',
    mode: 'min',
    search_space: { x: { type: 'uniform', low: 0, high: 1 }, y: { type: 'uniform', low: 0, high: 1 }, max_t: 6 },
    num_samples: 3,
    trainable: { type: 'command', argv: [PYTHON, CURVE], cwd: REPO_ROOT },
  });
  real = startWorker(d, { name: 'real-cpu-worker', cpuSlots: 1 });
  await waitFor(async () => (await d.experiment(X.real.id)).state === 'completed', {
    timeout: 60000,
    interval: 200,
    what: `experiment ${X.real.id} run by the real rung-worker to complete\n${real.stderr().slice(-2000)}`,
  });
}

// ---- page helpers ----------------------------------------------------------

async function go(route) {
  await page.goto(`${d.url}/#${route}`);
}

async function shot(name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

async function textOf(sel, root = page) {
  const t = await root.locator(sel).first().textContent({ timeout: PAGE_WAIT });
  return (t || '').trim();
}

/** Waits until the page's text at sel satisfies pred (or equals it). */
async function waitText(sel, pred, what) {
  const ok = typeof pred === 'function' ? pred : (t) => t === String(pred);
  let last;
  try {
    return await waitFor(async () => {
      last = (await page.locator(sel).first().textContent({ timeout: 1000 }))?.trim();
      return last !== undefined && ok(last) ? last || true : false;
    }, { timeout: PAGE_WAIT, what });
  } catch (e) {
    throw new Error(`${what}: page shows ${JSON.stringify(last)} at ${sel}` + (typeof pred === 'function' ? '' : `, API says ${JSON.stringify(String(pred))}`));
  }
}

async function attr(sel, name) {
  return page.locator(sel).first().getAttribute(name, { timeout: PAGE_WAIT });
}

async function waitAttr(sel, name, pred, what) {
  const ok = typeof pred === 'function' ? pred : (v) => v === String(pred);
  let last;
  try {
    return await waitFor(async () => {
      last = await page.locator(sel).first().getAttribute(name, { timeout: 1000 });
      return last !== null && ok(last) ? last : false;
    }, { timeout: PAGE_WAIT, what });
  } catch {
    throw new Error(`${what}: ${sel} has ${name}=${JSON.stringify(last)}` + (typeof pred === 'function' ? '' : `, want ${JSON.stringify(String(pred))}`));
  }
}

/** data-id of the trial rows now shown, in order. */
function rowIds() {
  return page.$$eval(tid('trial-row'), (rows) => rows.map((r) => r.getAttribute('data-id')));
}

async function waitRows(want, what) {
  const expected = want.map(String);
  let last;
  try {
    await waitFor(async () => {
      last = await rowIds();
      return JSON.stringify(last) === JSON.stringify(expected);
    }, { timeout: PAGE_WAIT, what });
  } catch {
    throw new Error(`${what}: page rows ${JSON.stringify(last)}, API ${JSON.stringify(expected)}`);
  }
}

/** Every metric row shows its step and each reported value (6 digits). */
async function checkMetricRows(items) {
  const rows = await page.$$eval(tid('metric-row'), (trs) => trs.map((tr) => [...tr.children].map((c) => c.textContent.trim())));
  for (const item of items) {
    const cells = rows.find((r) => r.includes(String(item.step)));
    assert.ok(cells, `no metric row for step ${item.step}: ${JSON.stringify(rows)}`);
    for (const [k, v] of Object.entries(item.metrics)) {
      assert.ok(cells.some((c) => showsNumber(c, v)), `metric row of step ${item.step} lacks ${k}=${v}: ${JSON.stringify(cells)}`);
    }
  }
}

const progressOf = (x) => `${x.counts.completed + x.counts.stopped + x.counts.failed + x.counts.canceled}/${x.total_trials}`;

// ---- setup -----------------------------------------------------------------

before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  console.log(`# ${describePrograms()}; screenshots in ${SHOTS}`);
  // Leases long enough that nothing the test holds runs out while it looks.
  d = await new Rungd({ args: ['--lease-s', '600'] }).start();
  fake = await new FakeWorker(d, { name: 'fake-gpu-box', cpus: 32, gpus: GPUS }).register();
  const t0 = Date.now();
  await feedFifo();
  await feedAsha();
  await fake.heartbeat([...running], GPU_BEAT);
  await runReal();
  console.log(`# data in ${Date.now() - t0} ms: experiments ${X.fifo.id} (fifo), ${X.asha.id} (asha), ${X.real.id} (real worker)`);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack : e)));
  page.on('dialog', (dlg) => dlg.accept().catch(() => {})); // cancel's confirm()
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  const problems = [];
  if (real) {
    if (!real.alive()) problems.push(`rung-worker died on its own (${real.proc.exitCode})\n${real.stderr().slice(-2000)}`);
    await real.stop();
  }
  if (d) {
    const died = !d.alive();
    const rc = await d.stop();
    if (died) problems.push(`rungd died on its own\n${d.diagnostics()}`);
    else if (rc !== 0) problems.push(`rungd did not shut down cleanly on SIGTERM (status ${rc})\n${d.diagnostics()}`);
  }
  if (problems.length) throw new Error(problems.join('\n'));
});

// ---- tests -----------------------------------------------------------------

test('experiments list shows the state, progress D/T and best value the API gives', async () => {
  await go('/');
  const { items } = await d.experiments();
  assert.ok(items.length >= 3);
  await page.locator(tid('experiments')).waitFor({ timeout: PAGE_WAIT });
  for (const x of items) {
    const row = `${tid('experiment-row')}[data-id="${x.id}"]`;
    await waitText(`${row} ${tid('exp-name')}`, x.name, `experiment ${x.id} name`);
    await waitText(`${row} ${tid('exp-state')}`, x.state, `experiment ${x.id} state`);
    await waitText(`${row} ${tid('exp-progress')}`, progressOf(x), `experiment ${x.id} progress`);
    if (x.best) {
      await waitText(`${row} ${tid('exp-best')}`, (t) => showsNumber(t, x.best.value), `experiment ${x.id} best ${x.best.value}`);
    } else {
      await waitText(`${row} ${tid('exp-best')}`, '—', `experiment ${x.id} best`);
    }
    await waitText(`${row} ${tid('exp-searcher')}`, (x.searcher && x.searcher.type) || 'random', `experiment ${x.id} searcher`);
    await waitText(`${row} ${tid('exp-scheduler')}`, (x.scheduler && x.scheduler.type) || 'fifo', `experiment ${x.id} scheduler`);
    if (x.metric) await waitText(`${row} ${tid('exp-metric')}`, `${x.metric} (${x.mode})`, `experiment ${x.id} metric`);
    assert.notEqual(await textOf(`${row} ${tid('exp-created')}`), '', `experiment ${x.id} created`);
  }
  assert.equal(await page.locator(tid('experiment-row')).count(), items.length, 'one row per experiment');
  assert.ok(await page.locator(tid('nav-experiments')).count(), 'nav-experiments');
  assert.ok(await page.locator(tid('nav-workers')).count(), 'nav-workers');
  await shot('experiments');
});

async function checkExperimentPage(eid) {
  const x = await d.experiment(eid);
  await waitText(tid('exp-title'), (t) => t.includes(x.name), `experiment ${eid} title has ${x.name}`);
  for (const s of STATES) {
    await waitText(tid(`count-${s}`), String(x.counts[s] ?? 0), `experiment ${eid} count-${s}`);
  }
  assert.ok(x.best, `experiment ${eid} has a best trial`);
  await waitText(tid('best-value'), (t) => showsNumber(t, x.best.value), `experiment ${eid} best-value ${x.best.value}`);
  const config = await textOf(tid('best-config'));
  for (const [k, v] of Object.entries(x.best.config)) {
    assert.ok(config.includes(k), `best-config ${JSON.stringify(config)} lacks ${k}`);
    if (typeof v !== 'number') assert.ok(config.includes(String(v)), `best-config lacks ${k}=${v}`);
  }
  // One learning curve per trial that reported the metric at least once.
  const trials = await d.allTrials(eid);
  let reported = 0;
  for (const t of trials) {
    if (t.step === null && t.best === null) continue;
    const m = await d.metrics(t.id);
    if (m.some((r) => typeof r.metrics[x.metric] === 'number')) reported++;
  }
  await waitAttr(tid('chart-curves'), 'data-series', reported, `experiment ${eid} chart-curves series (trials with reports)`);
  await waitAttr(tid('chart-best'), 'data-series', (v) => Number(v) >= 1, `experiment ${eid} chart-best series`);
  await waitAttr(tid('chart-parallel'), 'data-series', (v) => Number(v) >= 1, `experiment ${eid} chart-parallel series`);
  // A scatter chart for each parameter that varies, none for a constant.
  for (const [k, dom] of Object.entries(x.search_space)) {
    const sel = tid(`chart-scatter-${k}`);
    if (dom && typeof dom === 'object' && typeof dom.type === 'string') {
      await waitAttr(sel, 'data-series', (v) => Number(v) >= 1, `experiment ${eid} chart-scatter-${k}`);
    } else {
      assert.equal(await page.locator(sel).count(), 0, `a scatter chart for the constant ${k}`);
    }
  }
  const csv = await attr(tid('csv'), 'href');
  assert.ok(csv && csv.includes(`/experiments/${eid}/trials.csv`), `csv link ${csv}`);
  return x;
}

test('experiment page: counts per state, best value and charts match the API', async () => {
  for (const [role, x] of Object.entries(X)) {
    await go(`/experiments/${x.id}`);
    const doc = await checkExperimentPage(x.id);
    const cancel = page.locator(tid('cancel')).first();
    assert.equal(await cancel.isDisabled(), !['running', 'paused'].includes(doc.state), `cancel button of a ${doc.state} experiment`);
    await shot(`experiment-${role}`);
  }
});

test('trials table: paging, sort and state filter match the API', async () => {
  const eid = X.fifo.id;
  await go(`/experiments/${eid}`);
  const x = await d.experiment(eid);
  const total = (await d.trials(eid, { limit: 1 })).total;
  assert.ok(total > 100, `fifo experiment has ${total} trials, want more than two pages`);
  const info = (a, b, n) => (t) => t.replace(/\s+/g, ' ') === `${a}–${b} of ${n}`;

  // Number order, page by page.
  let page1 = await d.trials(eid, { sort: 'number', limit: 50, offset: 0 });
  await waitRows(page1.items.map((t) => t.id), 'page 1 by number');
  await waitText(tid('page-info'), info(1, 50, total), `page-info 1–50 of ${total}`);
  for (const t of page1.items) {
    const row = `${tid('trial-row')}[data-id="${t.id}"]`;
    assert.equal(await textOf(`${row} ${tid('trial-state')}`), t.state, `trial ${t.id} state`);
    const value = await textOf(`${row} ${tid('trial-value')}`);
    if (t.best) assert.ok(showsNumber(value, t.best.value) || (t.last && showsNumber(value, t.last[x.metric])), `trial ${t.id} value ${JSON.stringify(value)}, API best ${t.best.value}`);
    else assert.ok(!/\d/.test(value), `trial ${t.id} without a value shows ${JSON.stringify(value)}`);
    const step = await textOf(`${row} ${tid('trial-step')}`);
    if (t.step !== null) assert.equal(step, String(t.step), `trial ${t.id} step`);
    else assert.ok(!/\d/.test(step), `trial ${t.id} without a step shows ${JSON.stringify(step)}`);
  }
  assert.ok(await page.locator(tid('page-prev')).first().isDisabled(), 'page-prev on the first page');
  await page.locator(tid('page-next')).first().click();
  const page2 = await d.trials(eid, { sort: 'number', limit: 50, offset: 50 });
  await waitRows(page2.items.map((t) => t.id), 'page 2 by number');
  await waitText(tid('page-info'), info(51, 100, total), 'page-info of page 2');
  await page.locator(tid('page-next')).first().click();
  const page3 = await d.trials(eid, { sort: 'number', limit: 50, offset: 100 });
  await waitRows(page3.items.map((t) => t.id), 'page 3 by number');
  await waitText(tid('page-info'), info(101, total, total), 'page-info of the last page');
  assert.ok(await page.locator(tid('page-next')).first().isDisabled(), 'page-next on the last page');
  await page.locator(tid('page-prev')).first().click();
  await waitRows(page2.items.map((t) => t.id), 'back to page 2');

  // Best first, as the API sorts.
  await page.locator(tid('sort')).first().selectOption('value');
  const byValue = await d.trials(eid, { sort: 'value', limit: 50, offset: 0 });
  await waitRows(byValue.items.map((t) => t.id), 'sort by value, first page');
  await shot('experiment-fifo-sorted');

  // Worst first: the API's value order reversed among the trials with a
  // value, and the trials without one last, as in the value order (the API
  // itself answers sort=value only).
  await page.locator(tid('sort')).first().selectOption('-value');
  const all = await d.allTrials(eid, { sort: 'value' });
  const worst = [...all.filter((t) => t.best).reverse(), ...all.filter((t) => !t.best)];
  await waitRows(worst.slice(0, 50).map((t) => t.id), 'sort by -value, first page');
  await page.locator(tid('page-next')).first().click();
  await waitRows(worst.slice(50, 100).map((t) => t.id), 'sort by -value, second page');

  // A state filter shows exactly the API's trials in that state.
  await page.locator(tid('sort')).first().selectOption('number');
  for (const state of ['failed', 'running', 'completed', 'pending']) {
    await page.locator(tid('filter-state')).first().selectOption(state);
    const doc = await d.trials(eid, { state, sort: 'number', limit: 50 });
    await waitRows(doc.items.map((t) => t.id), `filter ${state}`);
    const n = doc.total;
    await waitText(tid('page-info'), (t) => (n === 0 ? /\b0\b/.test(t) : info(1, Math.min(50, n), n)(t)), `page-info with filter ${state} (${n})`);
    for (const id of doc.items.map((t) => t.id).slice(0, 10)) {
      assert.equal(await textOf(`${tid('trial-row')}[data-id="${id}"] ${tid('trial-state')}`), state);
    }
  }
  await page.locator(tid('filter-state')).first().selectOption('');
  page1 = await d.trials(eid, { sort: 'number', limit: 50, offset: 0 });
  await waitRows(page1.items.map((t) => t.id), 'no filter again');
});

test('trial page shows the API trial; an error with <script> is text and does not run', async () => {
  await page.goto('about:blank');
  await go(`/trials/${xssTrial}`);
  const t = await d.trial(xssTrial);
  assert.equal(t.error, XSS);
  await waitText(tid('trial-state'), t.state, `trial ${xssTrial} state`);
  await waitText(tid('trial-error'), (s) => s.includes(XSS), 'the error text shown literally');
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'a script in the error ran');
  assert.equal(await page.locator(`${tid('trial-error')} script, ${tid('trial-error')} img`).count(), 0, 'the error became markup');
  await waitText(tid('trial-title'), (s) => s.includes(String(t.number)) || s.includes(String(t.id)), 'trial title names the trial');
  const config = await textOf(tid('trial-config'));
  for (const k of Object.keys(t.config)) assert.ok(config.includes(k), `trial-config lacks ${k}`);
  const m = await d.metrics(xssTrial);
  await waitFor(async () => (await page.locator(tid('metric-row')).count()) === m.length, { what: `${m.length} metric rows` });
  await checkMetricRows(m);
  await waitText(tid('trial-worker'), (s) => s.includes('fake-gpu-box') || s.includes(String(fake.id)), 'trial-worker names the worker');
  assert.notEqual(await textOf(tid('trial-times')), '', 'trial-times');
  await waitAttr(tid('chart-trial'), 'data-series', (v) => Number(v) >= 1, 'chart-trial series');
  await page.waitForTimeout(1500); // a poll or two later, still nothing ran
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'a script in the error ran after a refresh');
  await shot('trial-xss');

  // The experiment pages and the list never run it either.
  await go(`/experiments/${X.fifo.id}`);
  await page.locator(tid('trial-row')).first().waitFor({ timeout: PAGE_WAIT });
  await page.locator(tid('filter-state')).first().selectOption('failed');
  await page.waitForTimeout(1200);
  assert.equal(await page.evaluate(() => window.__xss), undefined, 'a script ran on the experiment page');
  await page.locator(tid('filter-state')).first().selectOption('');
});

test('a new report appears without a reload, and cancel works from the page', async () => {
  X.live = await d.createExperiment({
    name: 'browser-live',
    metric: 'loss',
    mode: 'min',
    search_space: { lr: { type: 'loguniform', low: 1e-4, high: 0.1 }, layers: { type: 'choice', values: [1, 2, 3] } },
    num_samples: 3,
    resources_per_trial: { cpu: 1, gpu: 1 },
    trainable: { type: 'external' },
  });
  const eid = X.live.id;
  const t1 = await fake.leaseOne({ gpus: [1] });
  assert.equal(t1.experiment_id, eid);
  running.add(t1.id);
  await fake.report(t1, 1, { loss: lossOf(t1.config, 1) });
  await fake.report(t1, 2, { loss: lossOf(t1.config, 2) });
  await fake.heartbeat([...running], GPU_BEAT, { [t1.id]: 'epoch 2: loss fell\n<b>not bold</b>' });

  // Trial page: 2 rows, then a third one arrives while the page is open.
  await go(`/trials/${t1.id}`);
  await waitFor(async () => (await page.locator(tid('metric-row')).count()) === 2, { what: '2 metric rows' });
  await waitText(tid('trial-log'), (s) => s.includes('<b>not bold</b>'), 'trial-log shows the log tail as text');
  await page.evaluate(() => { window.__noReload = 1; });
  const before = await attr(tid('chart-trial'), 'data-points');
  await fake.report(t1, 3, { loss: lossOf(t1.config, 3) });
  const m = await d.metrics(t1.id);
  assert.equal(m.length, 3);
  await waitFor(async () => (await page.locator(tid('metric-row')).count()) === 3, { what: 'the third metric row without a reload' });
  await checkMetricRows(m);
  if (before !== null) await waitAttr(tid('chart-trial'), 'data-points', (v) => v !== before, 'chart-trial points grew');
  await waitAttr(tid('chart-trial'), 'data-series', (v) => Number(v) >= 1, 'chart-trial series');
  assert.equal(await page.evaluate(() => window.__noReload), 1, 'the page reloaded');
  await shot('trial-live');

  // Experiment page: a second trial's first report adds a curve.
  await go(`/experiments/${eid}`);
  await waitAttr(tid('chart-curves'), 'data-series', 1, 'one curve');
  await page.evaluate(() => { window.__noReload = 1; });
  const t2 = await fake.leaseOne({ gpus: [1] });
  assert.equal(t2.experiment_id, eid);
  running.add(t2.id);
  await fake.report(t2, 1, { loss: lossOf(t2.config, 1) });
  await waitAttr(tid('chart-curves'), 'data-series', 2, 'a second curve without a reload');
  let x = await d.experiment(eid);
  await waitText(tid('count-running'), x.counts.running, 'count-running');
  await waitText(tid('count-pending'), x.counts.pending, 'count-pending');
  assert.equal(await page.evaluate(() => window.__noReload), 1, 'the page reloaded');
  await shot('experiment-live');

  // Cancel from the page (confirm() is accepted by the dialog handler).
  const cancel = page.locator(tid('cancel')).first();
  assert.equal(await cancel.isDisabled(), false, 'cancel enabled while running');
  await cancel.click();
  x = await waitFor(async () => {
    const doc = await d.experiment(eid);
    return doc.state === 'canceled' ? doc : null;
  }, { what: `experiment ${eid} canceled through the page` });
  assert.ok(x.counts.canceled >= 1, 'the pending trial was canceled');
  await waitText(tid('count-canceled'), x.counts.canceled, 'count-canceled after cancel');
  await waitFor(() => cancel.isDisabled(), { what: 'cancel disabled once canceled' });
  const stop = (await fake.heartbeat([...running], GPU_BEAT)).stop;
  for (const id of [t1.id, t2.id]) assert.ok(stop.includes(id), `trial ${id} told to stop after cancel`);
  await shot('experiment-canceled');

  // The list shows it canceled too.
  await go('/');
  x = await d.experiment(eid);
  const row = `${tid('experiment-row')}[data-id="${eid}"]`;
  await waitText(`${row} ${tid('exp-state')}`, x.state, 'canceled in the list');
  await waitText(`${row} ${tid('exp-progress')}`, progressOf(x), 'progress after cancel');
});

const RED = 'rgb(217, 48, 37)'; // --failed in web/style.css
const RUNNING_BLUE = 'rgb(29, 114, 201)'; // --running
const FAIL_ERROR = 'exit status 1: ValueError: lr must be positive\nTraceback (most recent call last):\n  File "train.py", line 12';
const WARNINGS = {
  count: 3,
  last: [
    { line: '@rung {"loss": 0.5', why: 'not JSON: end of input' },
    { line: '@rung {"loss": "<b>x</b>"}', why: 'loss: not a number' },
  ],
};

const INFO = { phase: '<b>warmup</b>', done: false };

const colorOf = (sel) => page.locator(sel).first().evaluate((el) => getComputedStyle(el).color);

/** A trial's state once pred holds for it. */
function waitTrial(id, pred, what) {
  return waitFor(async () => {
    const t = await d.trial(id);
    return pred(t) ? t : null;
  }, { what });
}

test('a failed experiment is red with its error; trials table error and warnings columns', async () => {
  const x0 = await d.createExperiment({
    name: 'browser-failing',
    metric: 'loss',
    mode: 'min',
    search_space: { lr: { type: 'loguniform', low: 1e-4, high: 0.1 } },
    num_samples: 4,
    max_failed_trials: 1,
    resources_per_trial: { cpu: 1, gpu: 1 }, // the fake worker's GPUs: never the real (CPU) worker's
    trainable: { type: 'external' },
  });
  const eid = x0.id;
  const t1 = await fake.leaseOne({ gpus: [1] });
  const t2 = await fake.leaseOne({ gpus: [1] });
  assert.equal(t1.experiment_id, eid);
  assert.equal(t2.experiment_id, eid);
  await fake.report(t1, 1, { loss: 0.9 });
  await fake.report(t2, 1, { loss: 0.8 });
  // A report of info alone (docs/api.md): what a @rung line held besides numbers.
  await d.api('POST', `/api/v1/trials/${t1.id}/report`, {
    lease_token: t1.lease_token, step: 2, metrics: {}, info: INFO,
  });
  // The worker's finish: failed, with its error and the @rung lines it refused.
  await d.api('POST', `/api/v1/trials/${t1.id}/finish`, {
    lease_token: t1.lease_token, status: 'failed', error: FAIL_ERROR, warnings: WARNINGS,
  });
  let x = await waitFor(async () => {
    const doc = await d.experiment(eid);
    return doc.state === 'failed' ? doc : null;
  }, { what: `experiment ${eid} failed after its first failed trial (max_failed_trials 1)` });
  assert.ok(x.error, 'a failed experiment has an error');
  assert.equal(x.ended_reason, 'max_failed_trials');
  // The other running trial stops at its next report (docs/api.md).
  assert.equal(await fake.report(t2, 2, { loss: 0.7 }), 'stop', 'the running trial of a failed experiment told to stop');
  const stopped = await waitTrial(t2.id, (t) => t.state === 'stopped', `trial ${t2.id} stopped with its experiment`);
  assert.equal(stopped.stopped_by, 'experiment');
  x = await d.experiment(eid); // its counts now that every trial ended

  // The list: red state, the error and why it ended.
  await go('/');
  const row = `${tid('experiment-row')}[data-id="${eid}"]`;
  await waitText(`${row} ${tid('exp-state')}`, 'failed', 'failed in the list');
  assert.equal(await colorOf(`${row} ${tid('exp-state')}`), RED, 'a failed experiment\'s state is red in the list');
  await waitText(`${row} ${tid('exp-error')}`, x.error, 'the experiment\'s error in the list');
  assert.equal(await colorOf(`${row} ${tid('exp-error')}`), RED, 'the error is red in the list');
  await waitText(`${row} ${tid('exp-ended-reason')}`, (s) => s.includes(x.ended_reason), 'ended_reason in the list');
  await waitText(`${row} ${tid('exp-progress')}`, progressOf(x), 'progress of the failed experiment');
  // A completed experiment shows its ended_reason, and no error.
  const done = await d.experiment(X.asha.id);
  const doneRow = `${tid('experiment-row')}[data-id="${done.id}"]`;
  await waitText(`${doneRow} ${tid('exp-ended-reason')}`, (s) => s.includes(done.ended_reason), 'ended_reason of a completed experiment');
  assert.equal(await page.locator(`${doneRow} ${tid('exp-error')}`).isVisible(), false, 'a completed experiment shows no error');
  await shot('experiments-failed');

  // Its page: the header says failed, in red, with the error and reason.
  await go(`/experiments/${eid}`);
  await waitText(tid('exp-state'), 'failed', 'failed on the experiment page');
  assert.equal(await colorOf(tid('exp-state')), RED, 'the state badge is red');
  await waitText(tid('exp-error'), x.error, 'the error on the experiment page');
  await waitText(tid('exp-ended-reason'), x.ended_reason, 'ended_reason on the experiment page');
  for (const s of STATES) await waitText(tid(`count-${s}`), String(x.counts[s] ?? 0), `count-${s} of the failed experiment`);
  assert.equal(await page.locator(tid('pause')).isVisible(), false, 'no Pause on a failed experiment');
  assert.equal(await page.locator(tid('resume')).isVisible(), false, 'no Resume on a failed experiment');
  assert.ok(await page.locator(tid('cancel')).first().isDisabled(), 'no Cancel on a failed experiment');

  // The trials table: the error in one line (its first line and the
  // exception line: error_summary), the whole error in the title, and the
  // count of refused @rung lines (0 when none).
  const trials = await d.allTrials(eid);
  await waitRows(trials.map((t) => t.id), 'the failed experiment\'s trials');
  for (const t of trials) {
    const r = `${tid('trial-row')}[data-id="${t.id}"]`;
    const count = t.warnings ? t.warnings.count : 0;
    await waitText(`${r} ${tid('trial-warnings')}`, String(count), `trial ${t.id} warnings count`);
    if (t.error) {
      await waitText(`${r} ${tid('trial-error')}`, t.error_summary, `trial ${t.id} error in one line`);
      if (t.error.includes('\n')) assert.notEqual(t.error_summary, t.error.split('\n')[0], `trial ${t.id} error_summary has the exception line`);
      assert.equal(await attr(`${r} ${tid('trial-error')}`, 'title'), t.error, `trial ${t.id} error's title is the whole error`);
    } else {
      assert.equal(await textOf(`${r} ${tid('trial-error')}`), '', `trial ${t.id} without an error`);
    }
  }
  const failed = trials.find((t) => t.id === t1.id);
  assert.equal(failed.error, FAIL_ERROR);
  assert.deepEqual(failed.warnings, WARNINGS);
  await shot('experiment-failed');

  // The failed trial's page: the refused lines, each with why, as text.
  await go(`/trials/${t1.id}`);
  await waitText(tid('trial-error'), (s) => s.includes(FAIL_ERROR.split('\n')[1]), 'the trial error');
  await waitFor(async () => (await page.locator(tid('trial-warning')).count()) === WARNINGS.last.length, { what: 'one item per refused line' });
  const shown = await page.$$eval(tid('trial-warning'), (li) => li.map((el) => [
    el.querySelector('[data-testid="trial-warning-line"]').textContent,
    el.querySelector('[data-testid="trial-warning-why"]').textContent]));
  assert.deepEqual(shown, WARNINGS.last.map((w) => [w.line, w.why]), 'refused lines and why');
  assert.equal(await page.locator(`${tid('trial-warnings')} b`).count(), 0, 'a refused line became markup');
  await waitText(tid('trial-warnings-count'), (s) => s.includes(String(WARNINGS.count)), 'the count of refused lines');
  // Its info, a value per name, as text.
  await waitFor(async () => (await page.locator(tid('trial-info-item')).count()) === 2, { what: 'one item per info name' });
  const info = await page.$$eval(tid('trial-info-item'), (els) => els.map((el) => [el.dataset.key, el.textContent]));
  assert.deepEqual(info, [['phase', 'phase: <b>warmup</b>'], ['done', 'done: false']], 'the trial\'s info');
  assert.equal(await page.locator(`${tid('trial-info')} b`).count(), 0, 'an info value became markup');
  await shot('trial-warnings');
  // The trial its experiment stopped says so.
  await go(`/trials/${t2.id}`);
  await waitText(tid('trial-stopped-by'), 'experiment', 'stopped_by of a trial its failed experiment stopped');
});

test('Pause and Resume on the experiment page change its state in the API', async () => {
  const x0 = await d.createExperiment({
    name: 'browser-pause',
    metric: 'loss',
    mode: 'min',
    search_space: { lr: { type: 'loguniform', low: 1e-4, high: 0.1 } },
    num_samples: 3,
    max_concurrent_trials: 1,
    resources_per_trial: { cpu: 1, gpu: 1 },
    trainable: { type: 'external' },
  });
  const eid = x0.id;
  const t = await fake.leaseOne({ gpus: [1] });
  assert.equal(t.experiment_id, eid);
  await fake.report(t, 1, { loss: 0.7 });

  await go(`/experiments/${eid}`);
  await waitText(tid('exp-state'), 'running', 'running before the pause');
  const pause = page.locator(tid('pause')).first();
  const resume = page.locator(tid('resume')).first();
  await pause.waitFor({ state: 'visible', timeout: PAGE_WAIT });
  assert.equal(await resume.isVisible(), false, 'no Resume while running');
  assert.equal(await page.locator(tid('exp-paused-note')).isVisible(), false, 'no paused note while running');

  // A refused pause (the API's error) shows in the error banner.
  const route = `**/api/v1/experiments/${eid}/pause*`;
  await page.route(route, (r) => r.fulfill({
    status: 409,
    contentType: 'application/json',
    body: JSON.stringify({ error: { code: 'conflict', message: `experiment ${eid} refused the pause (test)` } }),
  }));
  await pause.click();
  await waitText(tid('error'), (s) => s.includes('refused the pause (test)'), 'a failed pause in the error banner');
  await page.unroute(route);
  assert.equal((await d.experiment(eid)).state, 'running', 'the refused pause changed nothing');

  // Pause, the running trials too (?running=pause).
  await page.locator(tid('pause-running')).first().check();
  await pause.click();
  let x = await waitFor(async () => {
    const doc = await d.experiment(eid);
    return doc.state === 'paused' ? doc : null;
  }, { what: `experiment ${eid} paused through the page` });
  await waitText(tid('exp-state'), 'paused', 'paused on the page');
  await resume.waitFor({ state: 'visible', timeout: PAGE_WAIT });
  assert.equal(await pause.isVisible(), false, 'no Pause while paused');
  assert.equal(await page.locator(tid('exp-paused-note')).isVisible(), true, 'the paused note');
  assert.equal(await page.locator(tid('error')).isVisible(), false, 'the banner cleared once a pause worked');
  assert.notEqual(await colorOf(tid('exp-state')), RUNNING_BLUE, 'paused looks unlike running');
  // running=pause reached rungd: the running trial's next report is told
  // to stop, and the trial is paused by the user.
  assert.equal(await fake.report(t, 2, { loss: 0.6 }), 'stop', 'the running trial told to stop (paused) at its next report');
  const paused = await waitTrial(t.id, (doc) => doc.state === 'paused', `trial ${t.id} paused with its experiment`);
  assert.equal(paused.paused_by, 'user');
  x = await d.experiment(eid);
  await waitText(tid('count-paused'), String(x.counts.paused), 'count-paused');
  await shot('experiment-paused');

  // The list shows it paused; the trial page says who paused the trial.
  await go('/');
  const row = `${tid('experiment-row')}[data-id="${eid}"]`;
  await waitText(`${row} ${tid('exp-state')}`, 'paused', 'paused in the list');
  assert.equal(await page.locator(`${row} ${tid('exp-error')}`).isVisible(), false, 'a paused experiment shows no error');
  await go(`/trials/${t.id}`);
  await waitText(tid('trial-paused-by'), 'user', 'paused_by on the trial page');

  // Resume.
  await go(`/experiments/${eid}`);
  await resume.waitFor({ state: 'visible', timeout: PAGE_WAIT });
  await resume.click();
  x = await waitFor(async () => {
    const doc = await d.experiment(eid);
    return doc.state === 'running' ? doc : null;
  }, { what: `experiment ${eid} running again through the page` });
  await waitText(tid('exp-state'), 'running', 'running again on the page');
  await pause.waitFor({ state: 'visible', timeout: PAGE_WAIT });
  assert.equal(await resume.isVisible(), false, 'no Resume once running');
  // The paused trial goes back in line first, and resumes from its step.
  const again = await fake.leaseOne({ gpus: [1] });
  assert.equal(again.id, t.id, 'the user-paused trial is leased first after the resume');
  assert.ok(again.resume_step > 0, `it resumes from its checkpoint (resume_step ${again.resume_step})`);
  await shot('experiment-resumed');
  await d.api('POST', `/api/v1/experiments/${eid}/cancel`); // leaves nothing of it to lease
});

test('workers page shows the real worker alive and the GPU worker with its numbers', async () => {
  await fake.heartbeat([...running], GPU_BEAT);
  await go('/workers');
  const { items } = await d.workers();
  assert.equal(items.length, 2, 'two workers registered');
  for (const w of items) {
    const row = `${tid('worker-row')}[data-id="${w.id}"]`;
    await waitText(`${row} ${tid('worker-name')}`, (s) => s.includes(w.name), `worker ${w.id} name`);
    await waitText(`${row} ${tid('worker-alive')}`, w.alive ? 'alive' : 'gone', `worker ${w.id} alive`);
    assert.notEqual(await textOf(`${row} ${tid('worker-seen')}`), '', `worker ${w.id} seen`);
  }
  const realDoc = items.find((w) => w.name === 'real-cpu-worker');
  assert.ok(realDoc && realDoc.alive, 'the real rung-worker is alive in the API');
  const fakeDoc = items.find((w) => w.name === 'fake-gpu-box');
  const row = `${tid('worker-row')}[data-id="${fakeDoc.id}"]`;
  // Each GPU's model, utilization (0.97 as 97%) and memory in use, as the
  // last heartbeat carried them.
  const gpus = (await textOf(`${row} ${tid('worker-gpus')}`)).replace(/[,\u202f\u00a0]/g, '');
  assert.deepEqual(fakeDoc.heartbeat && fakeDoc.heartbeat.gpus, GPU_BEAT, 'the API keeps the heartbeat');
  for (const want of ['H100', '97%', '40211', '5%', '1024']) {
    assert.ok(gpus.includes(want), `worker-gpus ${JSON.stringify(gpus)} lacks ${want}`);
  }
  const runningText = await textOf(`${row} ${tid('worker-running')}`);
  const n = fakeDoc.running_trials.length;
  assert.ok(runningText.includes(String(n)) || fakeDoc.running_trials.every((id) => runningText.includes(String(id))),
    `worker-running ${JSON.stringify(runningText)}, API ${JSON.stringify(fakeDoc.running_trials)}`);
  await shot('workers');
});

test('workers page: each GPU spare, held by a trial, busy or waiting, and the next lease; a preempted trial', async () => {
  // A trial given back by its worker (finish "preempted") waits to resume.
  X.spare = await d.createExperiment({
    name: 'browser-spare', metric: 'loss', mode: 'min',
    search_space: { x: { type: 'uniform', low: 0, high: 1 } },
    num_samples: 1, priority: 10, resources_per_trial: { cpu: 1, gpu: 1 }, trainable: { type: 'external' },
  });
  await d.waitProposed(X.spare.id, 1);
  const t = await fake.leaseOne({ gpus: [1] });
  assert.equal(t.experiment_id, X.spare.id, 'the fake worker leased the spare experiment\'s trial');
  await fake.report(t, 1, { loss: 0.5 });
  const given = await fake.finish(t, 'preempted');
  assert.equal(given.state, 'preempted');
  assert.equal(given.preemptions, 1);
  await go(`/trials/${t.id}`);
  await waitText(tid('trial-state'), 'preempted', 'trial state');
  await waitText(tid('trial-rung'), (s) => s.includes('attempt 1') && s.includes('preempted once'), 'preemptions');
  await go(`/experiments/${X.spare.id}`);
  await waitText(tid('count-preempted'), '1', 'preempted count');
  await shot('trial-preempted');

  // The GPUs as the worker's heartbeat describes them, and its hours.
  const next = new Date(Date.now() + 3 * 3600e3);
  next.setSeconds(0, 0);
  const hhmm = `${String(next.getHours()).padStart(2, '0')}:${String(next.getMinutes()).padStart(2, '0')}`;
  const beat = (gpus) => d.api('POST', `/api/v1/workers/${fake.id}/heartbeat`, {
    trials: [...running], gpus, hours: 'Mon-Fri 19:00-07:00,Sat-Sun', next_lease_at: next.toISOString(),
  });
  const held = [...running][0];
  await beat([
    { index: 0, util: 0.97, memory_used_mb: 40211, state: 'trial', trial_id: held, foreign_mb: 0, foreign_util: 0 },
    { index: 1, util: 0.4, memory_used_mb: 2048, state: 'busy', foreign_mb: 2048, foreign_util: 0.4 },
  ]);
  await go('/workers');
  const row = `${tid('worker-row')}[data-id="${fake.id}"]`;
  const states = async () => page.locator(`${row} ${tid('worker-gpu-state')}`).allTextContents();
  await waitFor(async () => (await states()).length === 2, { timeout: PAGE_WAIT, what: 'two GPU states' });
  assert.deepEqual(await states(), [`trial ${held}`, 'busy: others hold 2048 MiB, use 40%']);
  assert.equal(await page.locator(`${row} ${tid('worker-gpu-state')} a`).first().getAttribute('href'),
    `#/trials/${held}`, 'a held GPU links to its trial');
  await waitText(`${row} ${tid('worker-next-lease')}`, (s) => s.startsWith('next lease') && s.endsWith(hhmm), 'next lease');
  await shot('workers-spare');
  await beat([
    { index: 0, util: 0, memory_used_mb: 0, state: 'spare', foreign_mb: 0, foreign_util: 0 },
    { index: 1, util: 0, memory_used_mb: 0, state: 'waiting', foreign_mb: 0, foreign_util: 0 },
  ]);
  await waitFor(async () => (await states()).join('|') === 'spare|waiting: idle first',
    { timeout: PAGE_WAIT, what: `spare and waiting, not ${JSON.stringify(await states())}` });
  // Allowed again: no next lease shown.
  await d.api('POST', `/api/v1/workers/${fake.id}/heartbeat`, { trials: [...running], gpus: GPU_BEAT, hours: null, next_lease_at: null });
  await waitFor(async () => !(await page.locator(`${row} ${tid('worker-next-lease')}`).isVisible()),
    { timeout: PAGE_WAIT, what: 'the next lease hidden' });
});

test('a gang trial\'s page lists its nodes and members; the experiment page its nodes', async () => {
  // External: the real rung-worker never asks for such trials, so the two
  // workers of the test form the gang alone.
  const x = await d.createExperiment({
    name: 'browser-gang', metric: 'loss', mode: 'min',
    search_space: { x: { type: 'uniform', low: 0, high: 1 } },
    num_samples: 1, priority: 10, resources_per_trial: { cpu: 1, nodes: 2, gang_wait_s: 30 },
    trainable: { type: 'external' },
  });
  await d.waitProposed(x.id, 1);
  const a = await new FakeWorker(d, { name: 'gang-a', cpus: 2 }).register();
  const b = await new FakeWorker(d, { name: 'gang-b', cpus: 2 }).register();
  const at = (port) => ({ advertiseAddr: '127.0.0.1', port });
  // a is held first (rank 0); b's request forms the gang; a's next one gets its place.
  assert.equal(await a.lease({ ...at(29501), waitS: 0.2 }), null, 'the first worker is held');
  const tb = await b.leaseOne({ ...at(29502), waitS: 5 });
  const ta = await a.leaseOne({ ...at(29501), waitS: 5 });
  assert.equal(ta.id, tb.id);
  assert.deepEqual([ta.gang.rank, tb.gang.rank], [0, 1]);
  await a.report(ta, 1, { loss: 0.25 });
  const t = await d.trial(ta.id);
  assert.equal(t.nodes, 2);
  assert.deepEqual(t.gang.members, [{ rank: 0, worker_id: a.id }, { rank: 1, worker_id: b.id }]);

  await go(`/trials/${t.id}`);
  await waitText(tid('trial-nodes'), (s) => s.startsWith('2 '), 'the trial\'s nodes');
  const members = () => page.$$eval(tid('trial-gang-member'), (li) => li.map((el) => ({
    rank: Number(el.dataset.rank), worker_id: Number(el.dataset.worker), text: el.textContent,
    href: el.querySelector('a') && el.querySelector('a').getAttribute('href'),
  })));
  await waitFor(async () => (await members()).length === 2, { timeout: PAGE_WAIT, what: 'two gang members' });
  const shown = await members();
  assert.deepEqual(shown.map((m) => ({ rank: m.rank, worker_id: m.worker_id })), t.gang.members, 'members by rank');
  for (const [m, w] of [[shown[0], a], [shown[1], b]]) {
    assert.ok(m.text.includes(`rank ${m.rank}`) && m.text.includes(w.name) && m.text.includes(`worker ${w.id}`),
      `member ${JSON.stringify(m)} names rank ${m.rank} and ${w.name}`);
    assert.equal(m.href, '#/workers', 'a member links to the workers page');
  }
  await waitText(tid('trial-gang-master'), (s) => s.includes(`${t.gang.master_addr}:${t.gang.master_port}`), 'where the gang meets');
  await shot('trial-gang');

  await go(`/experiments/${x.id}`);
  await waitAttr(tid('exp-resources'), 'data-nodes', '2', 'the experiment\'s nodes');
  await waitText(tid('exp-resources'), (s) => s.startsWith('2 nodes per trial'), 'the experiment\'s resources');
  await shot('experiment-gang');
  // A 1-node trial and experiment say nothing of gangs.
  await go(`/experiments/${X.fifo.id}`);
  await waitAttr(tid('exp-resources'), 'data-nodes', '1', 'a 1-node experiment\'s nodes');
  await go(`/trials/${xssTrial}`);
  await waitText(tid('trial-state'), (await d.trial(xssTrial)).state, 'the 1-node trial');
  assert.equal(await page.locator(tid('trial-nodes')).isVisible(), false, 'no nodes for a 1-node trial');
  assert.equal(await page.locator(tid('trial-gang')).isVisible(), false, 'no gang for a 1-node trial');

  // Once it ended, its page keeps the last gang, called that.
  await a.finish(ta);
  await b.finish(tb);
  await go(`/trials/${t.id}`);
  await waitText(tid('trial-state'), 'completed', 'the gang trial completed');
  assert.equal((await page.$$eval(tid('trial-gang-member'), (li) => li.length)), 2, 'the last gang\'s members');
  assert.ok(await page.getByText('Last gang', { exact: true }).isVisible(), 'the members are the last gang\'s');
});

test('two objectives: the Pareto scatter has every trial, the front and the infeasible ones; a conditional space\'s table has its branch columns', async () => {
  // docs/api.md, "Several objectives and constraints": priority 20, so this
  // worker leases only these trials (the fifo experiment has pending ones).
  const x = await d.createExperiment({
    name: 'browser-pareto', metrics: [{ name: 'loss', mode: 'min' }, { name: 'latency', mode: 'min' }],
    constraints: [{ metric: 'mem', max: 10 }],
    search_space: {
      model: { lr: { type: 'uniform', low: 0, high: 1 }, layers: 2 },
      opt: { type: 'choice', values: [
        { name: 'sgd', momentum: { type: 'uniform', low: 0, high: 0.99 } },
        { name: 'adamw', beta2: { type: 'uniform', low: 0.9, high: 0.999 } }] },
    },
    points_to_evaluate: [{ 'opt.name': 'sgd' }, { 'opt.name': 'adamw' }],
    num_samples: 12, priority: 20, trainable: { type: 'external' },
  });
  await d.waitProposed(x.id, 12);
  const w = await new FakeWorker(d, { name: 'pareto-worker', cpus: 2 }).register();
  for (let k = 0; k < 12; k++) {
    const t = await w.leaseOne({ waitS: 5 });
    assert.equal(t.experiment_id, x.id, 'the pareto worker leased a trial of another experiment');
    const lr = t.config['model.lr'];
    // Every third trial breaks the memory bound.
    await w.report(t, 1, { loss: lr, latency: 1 - lr + 0.1 * (k % 3), mem: k % 3 === 2 ? 20 : 5 });
    await w.finish(t, 'completed');
  }
  await waitFor(async () => (await d.experiment(x.id)).state === 'completed', { what: 'the pareto experiment completed' });
  const doc = await d.experiment(x.id);
  const trials = await d.allTrials(x.id);
  const infeasible = trials.filter((t) => t.feasible === false);
  assert.equal(infeasible.length, 4);
  assert.ok(doc.pareto.length >= 1);
  // The list names both objectives (it read " ()" before).
  await go('/');
  await waitText(`${tid('experiment-row')}[data-id="${x.id}"] ${tid('exp-metric')}`,
    'loss (min), latency (min)', 'the pareto experiment\'s objectives in the list');
  await go(`/experiments/${x.id}`);
  await waitAttr(tid('chart-pareto'), 'data-points', '12', 'the pareto scatter has a dot per trial');
  assert.equal(await attr(tid('chart-pareto'), 'data-front'), String(doc.pareto.length), 'the front');
  assert.equal(await attr(tid('chart-pareto'), 'data-infeasible'), '4', 'the infeasible dots');
  // The trials table: columns from the flattened config keys, in spec
  // order; a branch's cells empty where a trial took the other one.
  await waitRows([...trials].sort((a, b) => a.number - b.number).map((t) => t.id), 'the pareto experiment\'s rows');
  const head = await page.$$eval(`${tid('trials')} thead th.param`, (th) => th.map((e) => e.textContent));
  assert.deepEqual(head, ['model.lr', 'opt.name', 'opt.momentum', 'opt.beta2']);
  // A column per objective, each cell the trial's value of it (the API's values).
  const objHead = await page.$$eval(`${tid('trials')} thead th.objective`, (th) => th.map((e) => e.textContent));
  assert.deepEqual(objHead, ['loss (min)', 'latency (min)']);
  const objCells = await page.$$eval(tid('trial-row'), (tr) => tr.map((r) => [Number(r.dataset.id),
    [...r.querySelectorAll('[data-testid="trial-objective"]')].map((e) => [e.dataset.name, e.textContent])]));
  for (const [id, cells] of objCells) {
    const t = trials.find((u) => u.id === id);
    assert.deepEqual(cells.map((c) => c[0]), ['loss', 'latency']);
    for (const [name, text] of cells) assert.ok(showsNumber(text, t.values[name]), `trial ${id} ${name}: ${text} vs ${t.values[name]}`);
  }
  const rows = await page.$$eval(tid('trial-row'), (tr) => tr.map((r) => ({
    id: Number(r.dataset.id),
    params: [...r.querySelectorAll('td.param')].map((e) => e.textContent),
    infeasible: r.classList.contains('infeasible'),
  })));
  const byId = new Map(trials.map((t) => [t.id, t]));
  for (const r of rows) {
    const t = byId.get(r.id);
    const sgd = t.config['opt.name'] === 'sgd';
    assert.equal(r.params[1], t.config['opt.name']);
    assert.equal(r.params[2] === '', !sgd, `momentum cell of trial ${r.id}`);
    assert.equal(r.params[3] === '', sgd, `beta2 cell of trial ${r.id}`);
    assert.equal(r.infeasible, t.feasible === false, `infeasible mark of trial ${r.id}`);
  }
  await shot('experiment-pareto');
});

test('three objectives: the front table is the API\'s pareto, the objectives\' parallel coordinates and the per-parameter charts count each key\'s trials and mark the infeasible ones', async () => {
  // priority 30: this worker leases only these trials (docs/api.md, "Sharing workers").
  const metrics = [{ name: 'loss', mode: 'min' }, { name: 'latency', mode: 'min' }, { name: 'acc', mode: 'max' }];
  const x = await d.createExperiment({
    name: 'browser-pareto3', metrics,
    constraints: [{ metric: 'mem', max: 10 }],
    search_space: {
      model: { lr: { type: 'uniform', low: 0, high: 1 }, layers: 2 },
      opt: { type: 'choice', values: [
        { name: 'sgd', momentum: { type: 'uniform', low: 0, high: 0.99 } },
        { name: 'adamw', beta2: { type: 'uniform', low: 0.9, high: 0.999 } }] },
      act: { type: 'choice', values: ['relu', 'tanh'] },
    },
    points_to_evaluate: [{ 'opt.name': 'sgd' }, { 'opt.name': 'adamw' }],
    num_samples: 14, priority: 30, trainable: { type: 'external' },
  });
  await d.waitProposed(x.id, 14);
  const w = await new FakeWorker(d, { name: 'pareto3-worker', cpus: 2 }).register();
  for (let k = 0; k < 14; k++) {
    const t = await w.leaseOne({ waitS: 5 });
    assert.equal(t.experiment_id, x.id, 'the pareto3 worker leased a trial of another experiment');
    const lr = t.config['model.lr'];
    const acc = t.config['opt.name'] === 'sgd' ? t.config['opt.momentum'] : 10 * (t.config['opt.beta2'] - 0.9);
    if (k === 13) {
      // A last report without latency: no value, so in no chart.
      await w.report(t, 1, { loss: lr, acc, mem: 5 });
    } else {
      // Every third trial breaks the memory bound.
      await w.report(t, 1, { loss: lr, latency: 1 - lr + 0.1 * (k % 3), acc, mem: k % 3 === 2 ? 20 : 5 });
    }
    await w.finish(t, 'completed');
  }
  await waitFor(async () => (await d.experiment(x.id)).state === 'completed', { what: 'the pareto3 experiment completed' });
  const doc = await d.experiment(x.id);
  const trials = await d.allTrials(x.id);
  const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
  const infeasible = new Set(trials.filter((t) => t.feasible === false).map((t) => t.id));
  assert.ok(infeasible.size >= 4, `infeasible trials ${infeasible.size}`);
  assert.ok(doc.pareto.length >= 1, 'the API has a front');
  for (const p of doc.pareto) assert.ok(!infeasible.has(p.trial_id), `infeasible trial ${p.trial_id} on the API's front`);
  await go(`/experiments/${x.id}`);

  // The front's table: the API's pareto, in its order, a column per objective.
  const wantIds = doc.pareto.map((p) => String(p.trial_id));
  let lastIds;
  await waitFor(async () => {
    lastIds = await page.$$eval(tid('pareto-row'), (tr) => tr.map((r) => r.dataset.id));
    return JSON.stringify(lastIds) === JSON.stringify(wantIds);
  }, { timeout: PAGE_WAIT, what: `front rows ${JSON.stringify(wantIds)} (page: ${JSON.stringify(lastIds)})` });
  const cols = await page.$$eval(`${tid('pareto-table')} thead th.objective`, (th) => th.map((e) => e.dataset.objective));
  assert.deepEqual(cols, metrics.map((m) => m.name), 'the front table\'s objective columns');
  const cells = await page.$$eval(tid('pareto-row'), (tr) => tr.map((r) => [...r.querySelectorAll('td.objective')].map((c) => c.dataset.value)));
  doc.pareto.forEach((p, i) => {
    assert.deepEqual(cells[i].map(Number), metrics.map((m) => p.values[m.name]), `front row of trial ${p.trial_id}`);
  });
  for (const id of lastIds) assert.ok(!infeasible.has(Number(id)), `infeasible trial ${id} in the front table`);

  // Parallel coordinates over the objectives: every trial with all three
  // values, the infeasible ones marked.
  const valued = trials.filter((t) => t.values && metrics.every((m) => isNum(t.values[m.name])));
  assert.equal(valued.length, 13);
  await waitAttr(tid('chart-objectives'), 'data-series', valued.length, 'the objectives\' lines');
  assert.equal(await attr(tid('chart-objectives'), 'data-infeasible'), String(valued.filter((t) => infeasible.has(t.id)).length),
    'the objectives\' infeasible lines');

  // The per-parameter charts: flattened keys in spec order; each counts the
  // trials with a value (the first objective's best) that hold its key.
  const withValue = trials.filter((t) => t.best && isNum(t.best.value));
  const params = ['model.lr', 'opt.name', 'opt.momentum', 'opt.beta2', 'act'];
  const charts = await page.$$eval('[data-testid^="chart-scatter-"]', (els) => els.map((e) => e.dataset.testid));
  assert.deepEqual(charts, params.map((p) => `chart-scatter-${p}`), 'a scatter chart per flattened parameter');
  const want = {};
  for (const p of params) {
    const holds = withValue.filter((t) => p in t.config);
    want[p] = holds.length;
    await waitAttr(tid(`chart-scatter-${p}`), 'data-points', holds.length, `chart-scatter-${p} points`);
    assert.equal(await attr(tid(`chart-scatter-${p}`), 'data-infeasible'), String(holds.filter((t) => infeasible.has(t.id)).length),
      `chart-scatter-${p} infeasible points`);
  }
  assert.equal(want['model.lr'], withValue.length);
  assert.ok(want['opt.momentum'] > 0 && want['opt.beta2'] > 0, 'both branches were taken');
  assert.equal(want['opt.momentum'] + want['opt.beta2'], withValue.length, 'a trial holds one branch\'s parameter');
  await waitAttr(tid('chart-parallel'), 'data-series', withValue.length, 'the parameters\' lines');
  assert.equal(await attr(tid('chart-parallel'), 'data-infeasible'), String(withValue.filter((t) => infeasible.has(t.id)).length),
    'the parameters\' infeasible lines');
  assert.deepEqual(JSON.parse(await attr(tid('chart-parallel'), 'data-axis-points')), { ...want, loss: withValue.length },
    'the lines with a value on each axis');
  await shot('experiment-pareto3');
});

test('an unknown experiment shows the error banner', async () => {
  await go('/experiments/987654');
  await waitText(tid('error'), (s) => s.length > 0, 'error banner text');
  await shot('error');
});

test('no uncaught errors in the pages', () => {
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

// Browser test of the experiment page's analysis section
// (web/js/views/analysis-section.js), run by ctest as `browser_analysis`: a
// real rungd and two real rung-workers (one CPU slot each, so the timeline
// has two rows) run a quick bayes experiment over five parameters of which
// two matter (lr, on a log scale, and a; the other three barely move the
// loss) while headless chromium opens its page, which follows the run by
// polling. Once it completed, each check compares what the page
// shows with the API's answers and the trials:
//
//   importance  the bars' order is the API's (GET .../importance) for the
//               objective, and for a reported metric typed into the box
//               (?metric=aux)
//   contour     its dots are the completed trials (ids, x and y from their
//               configs, as GET .../surface lists them), its model ("gp"
//               under bayes) and the fixed values are the API's
//   EDF         one step per trial with a value, in value order, shares
//               non-decreasing to 1
//   timeline    a row per worker (named as the API names them), a bar per
//               attempt of GET .../timeline, no two bars of a row's lane
//               overlapping, each row's idle time its span less its busy time
//   slices      the per-parameter scatters are titled as slice plots
//
// Screenshots: analysis.png (the page) and analysis-section.png in
// $RUNG_SCREENSHOTS.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, Rungd, armWatchdog, describePrograms, launchBrowser, startWorker, waitFor } from './harness.mjs';

armWatchdog(80); // under this file's ctest TIMEOUT (120 s)

const SHOTS = process.env.RUNG_SCREENSHOTS || path.join(REPO_ROOT, 'build', 'screenshots');
const PYTHON = process.env.RUNG_PYTHON || '/usr/bin/python3';
const PAGE_WAIT = 15000;
const tid = (name) => `[data-testid="${name}"]`;

// The loss: lr and a matter, b, c and d hardly (a hundredth of their
// range); `aux` is a second reported metric that depends on b only. A short
// sleep, so that both workers lease while the other runs.
const TRAINABLE = `
import json, math, os, time
c = json.loads(os.environ["RUNG_CONFIG"])
loss = (math.log10(c["lr"]) + 2.5) ** 2 + 4 * (c["a"] - 0.3) ** 2 + 0.01 * (c["b"] + c["c"] + c["d"])
time.sleep(0.1)
print("@rung " + json.dumps({"step": 1, "loss": loss, "aux": (c["b"] - 0.5) ** 2 + 0.001 * c["a"]}), flush=True)
`;

const N = 12;
const spec = {
  name: 'analysis-charts',
  metric: 'loss',
  mode: 'min',
  num_samples: N,
  search_space: {
    lr: { type: 'loguniform', low: 1e-4, high: 1e-1 },
    a: { type: 'uniform', low: 0, high: 1 },
    b: { type: 'uniform', low: 0, high: 1 },
    c: { type: 'uniform', low: 0, high: 1 },
    d: { type: 'uniform', low: 0, high: 1 },
  },
  searcher: { type: 'bayes', seed: 4, n_initial: 6 },
  trainable: { type: 'command', argv: [PYTHON, '-c', TRAINABLE], cwd: REPO_ROOT },
};

let d;
const workers = [];
let browser;
let page;
const pageErrors = [];
let exp;
let trials;

before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  console.log(`# ${describePrograms()}; screenshots in ${SHOTS}`);
  d = await new Rungd().start();
  exp = await d.createExperiment(spec);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
  page.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack : e)));
  // The workers start as the page loads (each takes seconds on a loaded
  // host): the page follows the rest of the run by polling.
  const t0 = Date.now();
  workers.push(startWorker(d, { name: 'analysis-w1', cpuSlots: 1 }), startWorker(d, { name: 'analysis-w2', cpuSlots: 1 }));
  await page.goto(`${d.url}/#/experiments/${exp.id}`);
  await page.locator(tid('analysis-section')).waitFor({ timeout: PAGE_WAIT });
  await waitFor(async () => (await d.experiment(exp.id)).state === 'completed', {
    timeout: 45000,
    interval: 200,
    what: `experiment ${exp.id} to complete\n${workers.map((w) => w.stderr().slice(-1000)).join('\n')}`,
  });
  exp = await d.experiment(exp.id);
  trials = await d.allTrials(exp.id);
  console.log(`# ${N} trials on 2 workers in ${Date.now() - t0} ms`);
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  const problems = [];
  for (const w of workers) {
    if (!w.alive()) problems.push(`rung-worker ${w.name} died on its own (${w.proc.exitCode})\n${w.stderr().slice(-2000)}`);
  }
  await Promise.all(workers.map((w) => w.stop()));
  if (d) {
    const died = !d.alive();
    const rc = await d.stop();
    if (died) problems.push(`rungd died on its own\n${d.diagnostics()}`);
    else if (rc !== 0) problems.push(`rungd did not shut down cleanly on SIGTERM (status ${rc})\n${d.diagnostics()}`);
  }
  if (problems.length) throw new Error(problems.join('\n'));
});

const attr = (testid, name) => page.locator(tid(testid)).first().getAttribute(name, { timeout: PAGE_WAIT });
const json = async (testid, name) => JSON.parse((await attr(testid, name)) || 'null');

/** Waits until got() equals want() (both re-read each time); the
 * assertion's diff otherwise. */
async function settle(got, want, what) {
  let g;
  let w;
  try {
    await waitFor(async () => {
      [g, w] = await Promise.all([got(), want()]);
      return JSON.stringify(g) === JSON.stringify(w);
    }, { timeout: PAGE_WAIT, interval: 250, what });
  } catch {
    assert.deepEqual(g, w, what);
  }
  return g;
}

/** Hovers the mark of trial `id` in chart `testid` (its data-px: [id,
 * ..., left, top] in CSS px of the plot area), checks that the info line
 * names it, clicks it and checks that its page opened; then goes back. */
async function hoverAndOpen(testid, id) {
  const px = (await json(testid, 'data-px')).find((p) => p[0] === id);
  assert.ok(px, `${testid}: trial ${id} has a mark`);
  const [left, top] = px.slice(-2);
  const over = page.locator(`${tid(testid)} .u-over`);
  await over.hover({ position: { x: left, y: top } });
  await waitFor(async () => (await page.locator(`${tid(testid)} .chart-info`).textContent()).includes(`trial id ${id}`),
    { timeout: PAGE_WAIT, what: `${testid}: hovering trial ${id} names it` });
  await over.click({ position: { x: left, y: top } });
  await waitFor(async () => page.url().endsWith(`#/trials/${id}`), { timeout: PAGE_WAIT, what: `${testid}: a click opens trial ${id}` });
  await page.goBack();
  await page.locator(tid('analysis-section')).waitFor({ timeout: PAGE_WAIT });
}

const completed = () => trials.filter((t) => t.state === 'completed' && t.best && typeof t.best.value === 'number');

test('importance: the bars in the API order, for the objective and for a metric asked for', async () => {
  // The API refreshes its cache as trials finish: its entry is of every
  // completed trial in the end.
  const fresh = async (q = '') => waitFor(async () => {
    const doc = await d.api('GET', `/api/v1/experiments/${exp.id}/importance${q}`);
    return doc.metrics[0].trials === completed().length && doc;
  }, { timeout: PAGE_WAIT, what: `importance${q} of all ${completed().length} completed trials` });
  const doc = await fresh();
  assert.deepEqual(doc.metrics.map((m) => m.name), ['loss']);
  const bars = () => page.$$eval(tid('importance-bar'), (els) => els.map((e) => e.dataset.param));
  const apiOrder = async () => (await fresh()).metrics[0].importance.map((r) => r.param);
  const order = await settle(bars, apiOrder, 'the importance bars in the API order');
  assert.equal(order.length, 5, 'a bar per parameter');
  const shown = await page.$$eval(tid('importance-bar'), (els) => els.map((e) => Number(e.dataset.importance)));
  for (let i = 1; i < shown.length; i++) assert.ok(shown[i] <= shown[i - 1], 'most important first');
  assert.equal(await attr('chart-importance', 'data-metric'), 'loss');

  // A reported metric that is no objective: ?metric=aux.
  await page.locator(tid('importance-other')).fill('aux');
  await page.locator(tid('importance-other')).press('Enter');
  const auxOrder = async () => (await fresh('?metric=aux')).metrics[0].importance.map((r) => r.param);
  await settle(async () => ((await attr('chart-importance', 'data-metric')) === 'aux' ? bars() : null), auxOrder,
    'the bars of ?metric=aux in the API order');
  // A metric no trial reported: the API's error in the status line, the
  // bars kept.
  const refused = await d.request('GET', `/api/v1/experiments/${exp.id}/importance?metric=nosuch`);
  assert.equal(refused.status, 400);
  await page.locator(tid('importance-other')).fill('nosuch');
  await page.locator(tid('importance-other')).press('Enter');
  await waitFor(async () => (await page.locator(tid('importance-status')).textContent()).includes(refused.json.error.message),
    { timeout: PAGE_WAIT, what: 'the refusal of ?metric=nosuch shown' });
  assert.equal(await page.locator(tid('importance-bar')).count(), 5, 'the bars kept');
  await page.locator(tid('importance-metric')).selectOption('loss');
  await settle(bars, apiOrder, 'back to the objective');
});

test('contour: the completed trials as dots, the model and the fixed values the API says', async () => {
  const x = await page.locator(tid('contour-x')).inputValue();
  const y = await page.locator(tid('contour-y')).inputValue();
  assert.notEqual(x, y);
  const want = completed().map((t) => [t.id, t.config[x], t.config[y]]).sort((p, q) => p[0] - q[0]);
  const dots = async () => (await json('chart-contour', 'data-drawn') || []).sort((p, q) => p[0] - q[0]);
  await settle(dots, async () => want, `the contour's dots (${x}, ${y}) are the completed trials`);
  const api = await d.api('GET', `/api/v1/experiments/${exp.id}/surface?x=${encodeURIComponent(x)}&y=${encodeURIComponent(y)}`);
  assert.deepEqual(api.points.map((p) => [p[3], p[0], p[1]]).sort((p, q) => p[0] - q[0]), want, 'the API lists the same');
  assert.equal(api.model, 'gp', 'a bayes experiment: the GP');
  assert.equal(await attr('chart-contour', 'data-model'), api.model);
  assert.equal(await attr('chart-contour', 'data-points'), String(want.length));
  const text = await page.locator(tid('contour-model')).textContent();
  assert.match(text, /GP's posterior mean of loss/);
  for (const k of Object.keys(api.fixed)) assert.ok(text.includes(`${k} = `), `the fixed value of ${k} named: ${text}`);
  assert.equal(Object.keys(api.fixed).sort().join(), ['lr', 'a', 'b', 'c', 'd'].filter((p) => p !== x && p !== y).sort().join());

  // Hovering a dot names its trial, a click opens it: the best one (on
  // top of the others where they crowd).
  await hoverAndOpen('chart-contour', exp.best.trial_id);

  // Another pair: the dots follow.
  await page.locator(tid('contour-y')).selectOption(x === 'd' || y === 'd' ? 'c' : 'd');
  const y2 = await page.locator(tid('contour-y')).inputValue();
  const want2 = completed().map((t) => [t.id, t.config[x], t.config[y2]]).sort((p, q) => p[0] - q[0]);
  await settle(dots, async () => want2, `the dots of (${x}, ${y2})`);
});

test('EDF: a step per trial with a value, non-decreasing to 1', async () => {
  const withValue = trials.filter((t) => t.best && typeof t.best.value === 'number');
  const want = withValue.map((t) => [t.id, t.best.value]).sort((p, q) => p[1] - q[1] || p[0] - q[0]);
  const got = await settle(async () => (await json('chart-edf', 'data-drawn') || []).map(([i, v]) => [i, v]), async () => want,
    'the EDF steps are the trials with a value, by value');
  const shares = (await json('chart-edf', 'data-drawn')).map((s) => s[2]);
  for (let i = 1; i < shares.length; i++) assert.ok(shares[i] >= shares[i - 1], 'non-decreasing');
  assert.equal(shares[shares.length - 1], 1);
  assert.equal(await attr('chart-edf', 'data-points'), String(got.length));

  // The page's metric picker drives the EDF and the contour too: aux's
  // value in each trial's last report, and the surface of ?metric=aux.
  await page.locator(tid('metric-picker')).selectOption('metric:aux');
  const wantAux = trials.filter((t) => t.last && typeof t.last.aux === 'number')
    .map((t) => [t.id, t.last.aux]).sort((p, q) => p[1] - q[1] || p[0] - q[0]);
  assert.ok(wantAux.length > 0, 'trials reported aux');
  await settle(async () => (await json('chart-edf', 'data-drawn') || []).map(([i, v]) => [i, v]), async () => wantAux,
    'the EDF steps are the trials\' aux values');
  await settle(async () => attr('chart-contour', 'data-metric'), async () => 'aux', 'the contour is of aux');
  await page.locator(tid('metric-picker')).selectOption('objective:loss');
  await settle(async () => attr('chart-contour', 'data-metric'), async () => 'loss', 'the contour is of loss again');
});

test('timeline: a row per worker, a bar per attempt, none overlapping another in a row', async () => {
  const doc = await d.api('GET', `/api/v1/experiments/${exp.id}/timeline`);
  assert.equal(doc.items.length, trials.length, 'an attempt per trial (none was retried)');
  const key = (p, q) => p[3] - q[3] || p[0] - q[0];
  const want = doc.items.map((it) => it.slice(0, 6)).sort(key);
  await settle(async () => (await json('chart-timeline', 'data-drawn') || []).map((b) => b.slice(0, 6)).sort(key),
    async () => want, 'the bars are the API\'s attempts');
  const bars = (await json('chart-timeline', 'data-drawn')).sort(key);
  const rows = await page.$$eval(tid('timeline-row'), (trs) => trs.map((r) => ({
    worker: r.dataset.worker, name: r.dataset.name, bars: Number(r.dataset.bars), idle: Number(r.dataset.idleS),
  })));
  assert.deepEqual(rows.map((r) => r.name).sort(), ['analysis-w1', 'analysis-w2'], 'a row per worker, by name');
  for (const r of rows) {
    assert.equal(doc.workers[r.worker], r.name, `worker ${r.worker} named as the API names it`);
    const mine = bars.filter((b) => String(b[2]) === r.worker);
    assert.equal(r.bars, mine.length, `${r.name}: its bars`);
    // rung-worker frees a slot when its program exits and sends the finish
    // from the trial's own sender thread (worker/trial_send.c), so its next
    // lease may reach rungd before the last trial's end: such bars get lanes
    // of their own, and within a lane no bar starts before the last ended.
    const lanes = new Map();
    for (const b of mine) {
      const prev = lanes.get(b[6]);
      if (prev) assert.ok(b[3] >= prev[4], `${r.name} lane ${b[6]}: trial ${b[0]} starts after trial ${prev[0]} ended`);
      lanes.set(b[6], b);
    }
    // Idle: its span (first start to last end) less the time some bar of it ran.
    let busy = 0;
    let [from, to] = [mine[0][3], mine[0][4]];
    for (const b of mine.slice(1)) {
      if (b[3] > to) {
        busy += to - from;
        [from, to] = [b[3], b[4]];
      } else to = Math.max(to, b[4]);
    }
    busy += to - from;
    const span = Math.max(...mine.map((b) => b[4])) - mine[0][3];
    assert.ok(Math.abs(r.idle - (span - busy) / 1000) < 1e-6, `${r.name}: idle ${r.idle} s, its gaps ${(span - busy) / 1000} s`);
  }
  assert.equal(await attr('chart-timeline', 'data-bars'), String(want.length));
  assert.match(await page.locator(tid('timeline-idle')).textContent(), /idle \d+(\.\d+)?%/);
  // The longest attempt: the widest bar to hover and click.
  const longest = bars.reduce((p, q) => (q[4] - q[3] > p[4] - p[3] ? q : p));
  await hoverAndOpen('chart-timeline', longest[0]);
});

test('slices: the per-parameter scatters are the slice plots; screenshots; no page errors', async () => {
  await page.getByRole('heading', { name: /^Slice plots/ }).waitFor({ timeout: PAGE_WAIT });
  for (const p of Object.keys(spec.search_space)) {
    assert.equal(await attr(`chart-scatter-${p}`, 'data-points'), String(completed().length), `slice of ${p}`);
  }
  await page.screenshot({ path: path.join(SHOTS, 'analysis.png'), fullPage: true });
  await page.locator(tid('analysis-section')).screenshot({ path: path.join(SHOTS, 'analysis-section.png') });
  assert.deepEqual(pageErrors, []);
});

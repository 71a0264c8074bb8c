// Browser test of the experiment page's interactions (issue 39), run by
// ctest as `browser_interact`: a real rungd and a real rung-worker (2 CPU
// slots) run tests/browser/metrics_trainable.py, which reports `loss` (the
// objective) and `reward` (mostly below zero) at every step, under ASHA,
// while headless chromium has the experiment's page open. Each check
// compares what the page drew with what the API answers:
//
//   empty chart       before any report the learning curves draw no "rung"
//                     marker (data-rungs-drawn 0), once curves are there
//                     they do
//   step ticks        the step axis's ticks are whole numbers
//   metric picker     picking `reward`: each scatter's dots are the trials'
//                     last reward (trials.csv's metric:reward column) and
//                     the curves are each trial's reported rewards (its
//                     /metrics); the best-so-far chart follows
//   log axis          "log y" with reward (values < 0): every chart stays
//                     linear and says "linear: values ≤ 0"; with loss (> 0)
//                     the axes are log and say nothing
//   metric column     the table's added `reward` column holds each row's
//                     last reward as the API's trial object has it
//   brushing          a drag on the x axis, then one on the reward axis:
//                     the table holds exactly the trials whose x and reward
//                     are in the ranges (data-brush) by the API's trials,
//                     says "N of M trials, brushed", the scatters highlight
//                     those N; a click outside a range clears it; the clear
//                     button brings every trial back
//
// Screenshots: interact-*.png in $RUNG_SCREENSHOTS.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, Rungd, armWatchdog, describePrograms, launchBrowser, startWorker, waitFor } from './harness.mjs';

armWatchdog(100); // under this file's ctest TIMEOUT (120 s)

const SHOTS = process.env.RUNG_SCREENSHOTS || path.join(REPO_ROOT, 'build', 'screenshots');
const PYTHON = process.env.RUNG_PYTHON || '/usr/bin/python3';
const PAGE_WAIT = 20000;
const tid = (name) => `[data-testid="${name}"]`;

const spec = {
  name: 'interact',
  metric: 'loss',
  mode: 'min',
  num_samples: 14,
  max_concurrent_trials: 2,
  search_space: {
    x: { type: 'uniform', low: 0, high: 1 },
    y: { type: 'loguniform', low: 0.001, high: 1 },
    max_t: 6,
  },
  searcher: { type: 'random', seed: 5 },
  scheduler: { type: 'asha', time_attr: 'step', max_t: 6, grace_period: 1, reduction_factor: 3 },
  trainable: { type: 'command', argv: [PYTHON, path.join(REPO_ROOT, 'tests', 'browser', 'metrics_trainable.py')], cwd: REPO_ROOT },
};

let d;
let worker;
let browser;
let page;
const pageErrors = [];
let exp;
let trials; // the API's trial objects, every one
let csv; // trials.csv: {id -> {column -> cell}}

function parseCsv(text) {
  const lines = text.trim().split('\n');
  const head = lines[0].split(',');
  const out = new Map();
  for (const l of lines.slice(1)) {
    const cells = l.split(',');
    const row = Object.fromEntries(head.map((h, i) => [h, cells[i]]));
    out.set(Number(row.id), row);
  }
  return out;
}

const attr = async (sel, name) => page.locator(sel).first().getAttribute(name, { timeout: PAGE_WAIT });
const json = async (sel, name) => JSON.parse((await attr(sel, name)) || 'null');

async function shot(name) {
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });
}

before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  console.log(`# ${describePrograms()}; screenshots in ${SHOTS}`);
  d = await new Rungd().start();
  exp = await d.createExperiment(spec);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack : e)));
  await page.goto(`${d.url}/#/experiments/${exp.id}`);
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  const problems = [];
  if (worker) {
    if (!worker.alive()) problems.push(`rung-worker died on its own (${worker.proc.exitCode})\n${worker.stderr().slice(-2000)}`);
    await worker.stop();
  }
  if (d) {
    const died = !d.alive();
    const rc = await d.stop();
    if (died) problems.push(`rungd died on its own\n${d.diagnostics()}`);
    else if (rc !== 0) problems.push(`rungd exited with ${rc} after SIGTERM\n${d.diagnostics()}`);
  }
  assert.deepEqual(pageErrors, [], 'errors thrown in the page');
  assert.deepEqual(problems, []);
});

test('an empty chart draws no rung marker; with curves the rungs are drawn', async () => {
  // Nothing has run yet: the ASHA experiment's chart is empty.
  await waitFor(async () => (await attr(tid('chart-curves'), 'data-rungs-drawn')) === '0', {
    timeout: PAGE_WAIT, what: 'the empty curves chart to be drawn without rungs',
  });
  assert.equal(await attr(tid('chart-curves'), 'data-series'), '0');
  await shot('interact-empty');
  worker = startWorker(d, { name: 'interact-worker', cpuSlots: 2 });
  await waitFor(async () => (await d.experiment(exp.id)).state === 'completed', {
    timeout: 60000, interval: 200, what: `experiment ${exp.id} to complete\n${worker?.stderr().slice(-2000)}`,
  });
  trials = await d.allTrials(exp.id);
  const r = await d.request('GET', `/api/v1/experiments/${exp.id}/trials.csv`);
  assert.equal(r.status, 200);
  csv = parseCsv(r.text);
  // A fresh page: everything read at once.
  await page.reload();
  const withCurves = trials.filter((t) => t.step !== null).length;
  await waitFor(async () => (await attr(tid('chart-curves'), 'data-series')) === String(withCurves), {
    timeout: PAGE_WAIT, what: `${withCurves} curves`,
  });
  await waitFor(async () => Number(await attr(tid('chart-curves'), 'data-rungs-drawn')) > 0, {
    timeout: PAGE_WAIT, what: 'the rungs over the curves',
  });
});

test('the step axis has whole-number ticks', async () => {
  const ticks = await json(tid('chart-curves'), 'data-x-ticks');
  assert.ok(ticks.length >= 2, `ticks ${JSON.stringify(ticks)}`);
  for (const v of ticks) assert.ok(Number.isInteger(v), `step tick ${v} of ${JSON.stringify(ticks)}`);
  const labels = await json(tid('chart-best'), 'data-y-ticks');
  for (let i = 1; i < labels.length; i++) assert.notEqual(labels[i], labels[i - 1], `best-so-far labels ${labels}`);
});

test('picking another metric draws its values in the scatters and the curves', async () => {
  const picker = page.locator(tid('metric-picker'));
  const options = await picker.locator('option').evaluateAll((os) => os.map((o) => o.value));
  assert.deepEqual(options, ['objective:loss', 'metric:reward'], 'the objective, then each reported metric that is not one');
  await picker.selectOption('metric:reward');
  // Each scatter: a dot per trial with a reward, at its last reward.
  const want = [...csv.values()].filter((row) => row['metric:reward'] !== '' && Number.isFinite(Number(row['metric:reward'])))
    .map((row) => [Number(row.id), Number(row['metric:reward'])]).sort((a, b) => a[0] - b[0]);
  assert.ok(want.length >= 10 && want.some(([, v]) => v < 0), 'most trials report a negative reward');
  for (const p of ['x', 'y']) {
    const got = await waitFor(async () => {
      const v = await json(tid(`chart-scatter-${p}`), 'data-values');
      return v && v.length === want.length && v.every(([, y]) => y < 0.5) ? v : null;
    }, { timeout: PAGE_WAIT, what: `the ${p} scatter of reward` });
    assert.deepEqual([...got].sort((a, b) => a[0] - b[0]), want, `scatter ${p}`);
  }
  // The curves: each trial's reported rewards, as its metrics rows hold them.
  const curves = await waitFor(async () => {
    const v = await json(tid('chart-curves'), 'data-values');
    return v && Object.values(v).every((vs) => vs.every((y) => y < 0.5)) && Object.keys(v).length === want.length ? v : null;
  }, { timeout: PAGE_WAIT, what: 'the curves of reward' });
  for (const t of trials) {
    const rows = await d.metrics(t.id);
    const rewards = rows.filter((m) => typeof m.metrics.reward === 'number').map((m) => m.metrics.reward);
    if (!rewards.length) continue;
    const drawn = curves[t.id];
    assert.ok(drawn, `trial ${t.id}'s curve`);
    assert.equal(drawn.length, rewards.length, `trial ${t.id}'s reports`);
    drawn.forEach((v, i) => assert.ok(Math.abs(v - rewards[i]) <= 1e-8 * Math.max(1, Math.abs(rewards[i])), `trial ${t.id} step ${i}: ${v} vs ${rewards[i]}`));
  }
  assert.equal(await attr(tid('chart-best'), 'data-points'), String(want.length));
  await shot('interact-reward');
});

test('a log axis is never given a value <= 0: linear, and the note says so', async () => {
  await page.locator(tid('metric-log')).check();
  for (const c of ['chart-curves', 'chart-best', 'chart-scatter-x']) {
    await waitFor(async () => (await attr(tid(c), 'data-y-scale')) === 'linear', { timeout: PAGE_WAIT, what: `${c} linear` });
    const note = page.locator(`${tid(c)} ${tid('scale-note')}`);
    await note.waitFor({ state: 'visible', timeout: PAGE_WAIT });
    assert.equal((await note.textContent()).trim(), 'linear: values \u2264 0');
  }
  await shot('interact-linear-note');
  // loss is > 0 everywhere: log axes, no note.
  await page.locator(tid('metric-picker')).selectOption('objective:loss');
  for (const c of ['chart-curves', 'chart-best', 'chart-scatter-x']) {
    await waitFor(async () => (await attr(tid(c), 'data-y-scale')) === 'log', { timeout: PAGE_WAIT, what: `${c} log` });
    assert.equal(await page.locator(`${tid(c)} ${tid('scale-note')}`).isVisible(), false);
  }
  await page.locator(tid('metric-log')).uncheck();
});

test('the table\'s added metric column holds each trial\'s last value', async () => {
  await page.locator(tid('table-metrics')).selectOption('reward');
  const byId = new Map(trials.map((t) => [t.id, t]));
  const cells = await waitFor(async () => {
    const got = await page.locator(`${tid('trial-row')}`).evaluateAll((rows) => rows.map((r) => {
      const c = r.querySelector('[data-testid="trial-metric"][data-name="reward"]');
      return c ? [Number(r.dataset.id), c.dataset.value ?? null, c.textContent] : null;
    }));
    return got.length === trials.length && got.every(Boolean) ? got : null;
  }, { timeout: PAGE_WAIT, what: 'a reward cell in every row' });
  for (const [id, value] of cells) {
    const last = byId.get(id).last;
    if (!last || last.reward === undefined) assert.equal(value, null, `trial ${id}`);
    else assert.equal(Number(value), last.reward, `trial ${id}'s reward`);
  }
});

/** Drags along axis `name` of the parallel coordinates from fraction f0 to
 * f1 of its height (0: top). */
async function brushAxis(name, f0, f1) {
  const axes = await json(tid('chart-parallel'), 'data-axes');
  const ax = axes.find((a) => a.name === name);
  assert.ok(ax, `axis ${name} in ${JSON.stringify(axes)}`);
  const box = await page.locator(tid('parallel-brush')).boundingBox();
  const x = box.x + ax.x;
  const y = (f) => box.y + ax.top + f * (ax.bottom - ax.top);
  await page.mouse.move(x, y(f0));
  await page.mouse.down();
  await page.mouse.move(x, y(f1), { steps: 6 });
  await page.mouse.up();
}

async function tableIds() {
  return (await page.locator(tid('trial-row')).evaluateAll((rows) => rows.map((r) => Number(r.dataset.id)))).sort((a, b) => a - b);
}

test('brushing the parallel coordinates filters the table to the trials in range', async () => {
  await page.locator(tid('metric-picker')).selectOption('metric:reward');
  await waitFor(async () => (await json(tid('chart-scatter-x'), 'data-values'))?.every(([, v]) => v < 0.5), {
    timeout: PAGE_WAIT, what: 'the charts of reward',
  });
  await page.locator(tid('chart-parallel')).scrollIntoViewIfNeeded();
  await brushAxis('x', 0.15, 0.75);
  const inRange = (brush) => trials.filter((t) => {
    const r = t.last ? t.last.reward : undefined;
    if (typeof r !== 'number') return false; // no line: not brushable
    return Object.entries(brush).every(([axis, [lo, hi]]) => {
      const v = axis === 'reward' ? r : t.config[axis];
      return v >= lo && v <= hi;
    });
  }).map((t) => t.id).sort((a, b) => a - b);
  let brush = await waitFor(async () => {
    const b = await json(tid('chart-parallel'), 'data-brush');
    return b && b.x ? b : null;
  }, { timeout: PAGE_WAIT, what: 'a brush on x' });
  let want = inRange(brush);
  assert.ok(want.length > 0 && want.length < trials.length, `the x range ${brush.x} holds some trials: ${want}`);
  await waitFor(async () => JSON.stringify(await tableIds()) === JSON.stringify(want), {
    timeout: PAGE_WAIT, what: `the table to hold ${want}`,
  });
  assert.equal((await page.locator(tid('brush-text')).textContent()).trim(), `${want.length} of ${trials.length} trials, brushed`);
  // A second axis: both ranges hold.
  await brushAxis('reward', 0.05, 0.6);
  brush = await waitFor(async () => {
    const b = await json(tid('chart-parallel'), 'data-brush');
    return b && b.x && b.reward ? b : null;
  }, { timeout: PAGE_WAIT, what: 'a brush on x and reward' });
  want = inRange(brush);
  await waitFor(async () => JSON.stringify(await tableIds()) === JSON.stringify(want), {
    timeout: PAGE_WAIT, what: `the table to hold ${want} (x and reward)`,
  });
  assert.equal(await attr(tid('chart-parallel'), 'data-brushed'), String(want.length));
  await waitFor(async () => (await attr(tid('chart-scatter-x'), 'data-highlighted')) === String(want.length), {
    timeout: PAGE_WAIT, what: 'the scatter to highlight the brushed trials',
  });
  await waitFor(async () => (await attr(tid('chart-curves'), 'data-highlighted')) === String(want.length), {
    timeout: PAGE_WAIT, what: 'the curves to highlight the brushed trials',
  });
  await shot('interact-brushed');
  // A click on the reward axis outside its range clears that range.
  const axes = await json(tid('chart-parallel'), 'data-axes');
  const rw = axes.find((a) => a.name === 'reward');
  const box = await page.locator(tid('parallel-brush')).boundingBox();
  await page.mouse.click(box.x + rw.x, box.y + rw.bottom - 2);
  brush = await waitFor(async () => {
    const b = await json(tid('chart-parallel'), 'data-brush');
    return b && b.x && !b.reward ? b : null;
  }, { timeout: PAGE_WAIT, what: 'the reward range cleared' });
  want = inRange(brush);
  await waitFor(async () => JSON.stringify(await tableIds()) === JSON.stringify(want), {
    timeout: PAGE_WAIT, what: `the table to hold ${want} (x only)`,
  });
  // The clear button: every trial again.
  await page.locator(tid('brush-clear')).click();
  const all = trials.map((t) => t.id).sort((a, b) => a - b);
  await waitFor(async () => JSON.stringify(await tableIds()) === JSON.stringify(all), {
    timeout: PAGE_WAIT, what: 'every trial back in the table',
  });
  assert.equal(await page.locator(tid('brush-info')).isVisible(), false);
  assert.deepEqual(await json(tid('chart-parallel'), 'data-brush'), {});
});

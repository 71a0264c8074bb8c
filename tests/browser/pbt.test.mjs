// Browser test of the experiment page's Population Based Training section
// (web/js/views/pbt-section.js), run by ctest as `browser_pbt`: a real rungd
// and a real rung-worker with 2 CPU slots run the PBT paper's toy problem
// (examples/trainables/pbt_toy.py, two members, synch) to its end while
// headless chromium has the experiment's page open (so the page follows the
// exploits by polling); then each check compares what the page drew with
// what the test computes on its own from the API's answers (the trials'
// `lineage` and reports), once on that page and once more after a reload
// (which reads every trial at once):
//
//   families        one row (and one colour, all distinct) per member
//   curves          one curve per trial; every stretch between exploits
//                   drawn with the reports it holds and in the colour of its
//                   family: the trial's own before its first exploit, after
//                   an exploit at step s from donor D the family of D's
//                   stretch holding step s, recursively
//   schedules       a chart per parameter of hyperparam_mutations with a
//                   series per trial: each piece's value (lineage[0].from,
//                   then each exploit's config from its step on), its steps
//                   and family colour; the best trial named
//   lineage table   the best trial's exploits (step, donor) in order and the
//                   parameters each changed; the same for the other trial
//                   picked in the select
//   trial pages     each trial's own page lists its exploits the same way,
//                   with the donor's step and a link to the donor
//
// The charts say what their last draw stroked in data-drawn (JSON).
// Screenshot: experiment-pbt.png in $RUNG_SCREENSHOTS.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, Rungd, armWatchdog, describePrograms, launchBrowser, startWorker, waitFor } from './harness.mjs';

armWatchdog(110); // under this file's ctest TIMEOUT (150 s)

const SHOTS = process.env.RUNG_SCREENSHOTS || path.join(REPO_ROOT, 'build', 'screenshots');
const PYTHON = process.env.RUNG_PYTHON || '/usr/bin/python3';
const PAGE_WAIT = 20000;
const tid = (name) => `[data-testid="${name}"]`;

const spec = {
  name: 'pbt-toy',
  metric: 'q',
  mode: 'max',
  num_samples: 2,
  search_space: {
    h_0: { type: 'uniform', low: 0, high: 1 },
    h_1: { type: 'uniform', low: 0, high: 1 },
    lr: 0.005,
    interval: 4,
    steps: 80,
    sleep_s: 0.02, // a run of 2 to 3 s: the open page polls through it
    seed: 1,
  },
  points_to_evaluate: [{ h_0: 1.0, h_1: 0.0 }, { h_0: 0.0, h_1: 1.0 }],
  scheduler: {
    type: 'pbt',
    perturbation_interval: 4,
    synch: true,
    hyperparam_mutations: { h_0: { type: 'uniform', low: 0, high: 1 }, h_1: { type: 'uniform', low: 0, high: 1 } },
  },
  trainable: { type: 'command', argv: [PYTHON, path.join(REPO_ROOT, 'examples', 'trainables', 'pbt_toy.py')], cwd: REPO_ROOT },
};

let d;
let worker;
let browser;
let page;
const pageErrors = [];
let exp; // the experiment, completed
let trials; // its trials (with lineage)
const steps = new Map(); // trial id -> its reported steps, ascending
const byId = new Map();

// ---- the test's own PBT bookkeeping (not web/js/pbt.js) --------------------

/** The exploit of trial `id` that governs step s: the last one at a step
 * before s, or null (s is in its first stretch). */
function governing(id, s) {
  let e = null;
  for (const x of byId.get(id).lineage) if (x.step < s) e = x;
  return e;
}

/** The family (an original member's id) of trial id's report at step s. */
function familyAt(id, s, depth = 0) {
  assert.ok(depth < 1000, 'a cycle in the lineage');
  const e = governing(id, s);
  return e ? familyAt(e.donor, e.donor_step, depth + 1) : id;
}

/** Which stretch of trial id step s is in: how many exploits came before it. */
const stretch = (id, s) => byId.get(id).lineage.filter((x) => x.step < s).length;

// ---- setup ------------------------------------------------------------------

before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  console.log(`# ${describePrograms()}; screenshots in ${SHOTS}`);
  d = await new Rungd().start();
  exp = await d.createExperiment(spec);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack : e)));
  await page.goto(`${d.url}/#/experiments/${exp.id}`);
  await page.locator(tid('pbt-section')).waitFor({ timeout: PAGE_WAIT });
  worker = startWorker(d, { name: 'pbt-worker', cpuSlots: 2 });
  const t0 = Date.now();
  await waitFor(async () => (await d.experiment(exp.id)).state === 'completed', {
    timeout: 60000,
    interval: 200,
    what: `pbt experiment ${exp.id} to complete\n${worker.stderr().slice(-2000)}`,
  });
  exp = await d.experiment(exp.id);
  trials = await d.allTrials(exp.id);
  for (const t of trials) {
    byId.set(t.id, t);
    steps.set(t.id, (await d.metrics(t.id)).filter((r) => typeof r.metrics.q === 'number').map((r) => r.step).sort((a, b) => a - b));
  }
  const exploits = trials.reduce((n, t) => n + t.lineage.length, 0);
  // How many stretches inherit a family other than their direct donor's: the
  // cases where only the recursion through the donor's lineage is right.
  let indirect = 0;
  for (const t of trials) for (const e of t.lineage) if (familyAt(e.donor, e.donor_step) !== e.donor) indirect++;
  console.log(`# experiment ${exp.id} done in ${Date.now() - t0} ms: ${exploits} exploits, ${indirect} of them inherit a family not the donor's own`);
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
    else if (rc !== 0) problems.push(`rungd did not shut down cleanly on SIGTERM (status ${rc})\n${d.diagnostics()}`);
  }
  if (problems.length) throw new Error(problems.join('\n'));
});

async function drawn(testid) {
  return JSON.parse(await page.locator(tid(testid)).first().getAttribute('data-drawn', { timeout: PAGE_WAIT }) || '[]');
}

/** What chart `testid` stroked, once it is `want` without the colours (a
 * draw follows an update within a frame); the assertion's diff otherwise. */
async function waitDrawn(testid, want, what) {
  const strip = (list) => list.map(({ color, ...rest }) => rest);
  let got = [];
  try {
    await waitFor(async () => {
      got = await drawn(testid);
      return JSON.stringify(strip(got)) === JSON.stringify(want);
    }, { timeout: PAGE_WAIT, what });
  } catch {
    assert.deepEqual(strip(got), want, what);
  }
  return got;
}

/** The families table: family id -> colour. */
async function familyColours() {
  const rows = await page.$$eval(tid('pbt-family-row'), (trs) => trs.map((r) => [Number(r.dataset.family), r.dataset.color]));
  return new Map(rows);
}

// ---- checks -----------------------------------------------------------------

async function checkSection() {
  await page.locator(tid('pbt-section')).waitFor({ timeout: PAGE_WAIT });
  // The section's curves stand for the generic ones.
  assert.equal(await page.locator(tid('chart-curves')).isVisible(), false, 'the generic learning curves shown as well');
  await waitFor(async () => (await page.locator(tid('pbt-family-row')).count()) === trials.length,
    { timeout: PAGE_WAIT, what: `${trials.length} family rows` });
  const colours = await familyColours();
  assert.deepEqual([...colours.keys()].sort((a, b) => a - b), trials.map((t) => t.id).sort((a, b) => a - b), 'one family per member');
  assert.equal(new Set(colours.values()).size, trials.length, 'a colour per family');
}

async function checkCurves() {
  const total = [...steps.values()].reduce((n, s) => n + s.length, 0);
  await waitFor(async () => (await page.locator(tid('chart-pbt-curves')).getAttribute('data-points')) === String(total),
    { timeout: PAGE_WAIT, what: `${total} points in chart-pbt-curves` });
  assert.equal(await page.locator(tid('chart-pbt-curves')).getAttribute('data-series'), String(trials.length), 'one curve per trial');
  const want = [];
  for (const t of [...trials].sort((a, b) => a.id - b.id)) {
    const groups = new Map();
    for (const s of steps.get(t.id)) {
      const k = stretch(t.id, s);
      if (!groups.has(k)) groups.set(k, []);
      groups.get(k).push(s);
    }
    for (const [k, ss] of groups) {
      const families = new Set(ss.map((s) => familyAt(t.id, s)));
      assert.equal(families.size, 1, `trial ${t.id}'s stretch ${k} in one family`);
      want.push({ trial: t.id, segment: k, family: [...families][0], first: ss[0], last: ss[ss.length - 1], points: ss.length });
    }
  }
  const got = await waitDrawn('chart-pbt-curves', want, 'the stretches drawn and their families');
  const colours = await familyColours();
  for (const g of got) assert.equal(g.color, colours.get(g.family), `trial ${g.trial} stretch ${g.segment}: colour of family ${g.family}`);
}

async function checkSchedules() {
  const params = Object.keys(spec.scheduler.hyperparam_mutations);
  const charts = await page.$$eval('[data-testid^="chart-pbt-schedule-"]', (els) => els.map((e) => e.dataset.testid));
  assert.deepEqual(charts, params.map((p) => `chart-pbt-schedule-${p}`));
  const colours = await familyColours();
  for (const p of params) {
    const want = [];
    for (const t of [...trials].sort((a, b) => a.id - b.id)) {
      const last = steps.get(t.id)[steps.get(t.id).length - 1];
      const L = t.lineage;
      for (let k = 0; k <= L.length; k++) {
        const start = k === 0 ? 0 : L[k - 1].step;
        want.push({
          trial: t.id,
          segment: k,
          family: k === 0 ? t.id : familyAt(L[k - 1].donor, L[k - 1].donor_step),
          start,
          end: Math.max(start, k < L.length ? L[k].step : last),
          value: k === 0 ? (L.length ? L[0].from[p] : t.config[p]) : L[k - 1].config[p],
        });
      }
      assert.equal(want[want.length - 1].value, t.config[p], `trial ${t.id}'s last ${p} is its config's`);
    }
    const got = await waitDrawn(`chart-pbt-schedule-${p}`, want, `${p}: the pieces drawn`);
    for (const g of got) assert.equal(g.color, colours.get(g.family), `${p}: trial ${g.trial} piece ${g.segment} colour`);
    assert.equal(await page.locator(tid(`chart-pbt-schedule-${p}`)).getAttribute('data-series'), String(trials.length), `${p}: a series per trial`);
  }
  assert.equal(await page.locator(tid('pbt-schedule-best')).getAttribute('data-trial'), String(exp.best.trial_id), 'the best trial named');
}

async function lineageRows() {
  return page.$$eval(tid('pbt-lineage-row'), (trs) => trs.map((r) => ({
    step: Number(r.dataset.step),
    donor: Number(r.dataset.donor),
    changed: [...r.querySelectorAll('[data-param]')].map((s) => s.dataset.param),
  })));
}

function wantRows(t) {
  return t.lineage.map((e) => ({
    step: e.step,
    donor: e.donor,
    changed: Object.keys(e.config).filter((k) => JSON.stringify(e.config[k]) !== JSON.stringify(e.from[k])),
  }));
}

async function waitLineage(t, what) {
  let last;
  await waitFor(async () => {
    last = await lineageRows();
    return (await page.locator(tid('pbt-lineage')).getAttribute('data-trial')) === String(t.id) &&
      JSON.stringify(last) === JSON.stringify(wantRows(t));
  }, { timeout: PAGE_WAIT, what: `${what}: ${JSON.stringify(wantRows(t))} (page: ${JSON.stringify(last)})` });
  assert.equal(await page.locator(tid('pbt-lineage-empty')).isVisible(), t.lineage.length === 0, `${what}: the "no exploits" note`);
}

async function checkLineage(shotName) {
  const best = byId.get(exp.best.trial_id);
  assert.ok(best, 'the best trial is one of the experiment\'s');
  await page.locator(tid('pbt-lineage-trial')).selectOption('best');
  await waitLineage(best, `the best trial ${best.id}'s lineage`);
  if (shotName) await page.screenshot({ path: path.join(SHOTS, `${shotName}.png`), fullPage: true });
  for (const t of trials.filter((x) => x.id !== best.id)) {
    await page.locator(tid('pbt-lineage-trial')).selectOption(String(t.id));
    await waitLineage(t, `trial ${t.id}'s lineage, picked`);
  }
}

// ---- tests ------------------------------------------------------------------

test('the pbt experiment ran: every step reported, some trial exploited another', () => {
  assert.equal(trials.length, spec.num_samples);
  assert.ok(trials.some((t) => t.lineage.length > 0), 'no trial exploited another');
  for (const t of trials) {
    assert.deepEqual(steps.get(t.id), Array.from({ length: spec.search_space.steps }, (_, i) => i + 1), `trial ${t.id}'s steps`);
  }
});

for (const pass of ['on the page open during the run', 'after a reload']) {
  test(`${pass}: the families, one per member, each its own colour`, async () => {
    if (pass === 'after a reload') await page.reload();
    await checkSection();
  });
  test(`${pass}: a curve per trial, each stretch between exploits in its family's colour`, checkCurves);
  test(`${pass}: a schedule chart per mutated parameter, a series per trial, each piece's value and family`, checkSchedules);
  test(`${pass}: the lineage table lists the best trial's exploits, and another trial's when picked`,
    () => checkLineage(pass === 'after a reload' ? 'experiment-pbt' : null));
}

test('each trial\'s own page lists its exploits: step, donor (a link to it), donor step, what changed', async () => {
  for (const t of trials) {
    await page.goto(`${d.url}/#/trials/${t.id}`);
    // This trial's page, drawn: its title, and the lineage section shown
    // with its note (a trial without exploits has no rows to wait for).
    await waitFor(async () => (await page.locator(tid('trial-title')).textContent()).includes(`(id ${t.id})`)
      && await page.locator(tid('trial-lineage-section')).isVisible()
      && (await page.locator(tid('trial-lineage-note')).textContent()) !== '',
    { timeout: PAGE_WAIT, what: `trial ${t.id}'s page with its lineage section` });
    let last;
    await waitFor(async () => {
      last = await page.$$eval(tid('trial-lineage-row'), (trs) => trs.map((r) => ({
        step: Number(r.dataset.step),
        donor: Number(r.dataset.donor),
        donor_step: Number(r.dataset.donorStep),
        href: r.querySelector('a').getAttribute('href'),
        changed: [...r.querySelectorAll('[data-param]')].map((x) => x.dataset.param),
      })));
      return JSON.stringify(last) === JSON.stringify(t.lineage.map((e, k) => ({
        ...wantRows(t)[k], donor_step: e.donor_step, href: `#/trials/${e.donor}`,
      })).map(({ step, donor, donor_step, href, changed }) => ({ step, donor, donor_step, href, changed })));
    }, { timeout: PAGE_WAIT, what: `trial ${t.id}'s page: its lineage ${JSON.stringify(t.lineage)} (page: ${JSON.stringify(last)})` });
    assert.ok(await page.locator(tid('trial-lineage-section')).isVisible(), `trial ${t.id}: the lineage section shows`);
    const note = await page.locator(tid('trial-lineage-note')).textContent();
    assert.match(note, t.lineage.length ? /exploit/ : /No exploits/, `trial ${t.id}: the note`);
  }
});

test('no uncaught errors in the page', () => {
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

// Browser test of comparing, tags and notes and the spec panel (web/js/views/
// compare.js, tags.js, spec-panel.js, js/picks.js), run by ctest as
// `browser_compare`: a real rungd (with a token, so that users and roles
// exist) and a real rung-worker (2 CPU slots) run two small experiments of
// tests/integration/curve_trainable.py with different specs; headless
// chromium, logged in as rungd's own token (an admin), then
//
//   compare trials       three trials picked with the trials table's
//                        checkboxes: the compare page's diff lists exactly
//                        the parameters whose values differ among their
//                        configs (as the test computes from the API's
//                        trials), each cell the trial's value; the equal
//                        ones under "same"; its overlay has one curve per
//                        trial with the reports GET /trials/{id}/metrics
//                        answers; state and best value per trial
//   compare experiments  both picked in the list: the spec diff lists
//                        exactly the key paths whose values differ between
//                        the effective specs (GET /experiments/{id}/spec);
//                        one best-so-far line each, the test's own running
//                        best over the API's trials in number order
//   spec panel           "as submitted" is the body the test posted,
//                        "with defaults" the API's effective spec
//   tags and notes       a tag and a note added on the experiment page and
//                        on a trial page are what the API then holds (a
//                        tag with a comma is refused in the banner); the
//                        tag's chip in the list leads to #/?tag=T, which
//                        lists exactly the experiments GET /experiments?tag=T
//                        answers (the other one not)
//   viewer               a read-only user sees the tags and notes but no
//                        control to edit them
//
// Screenshots: compare-trials.png, compare-experiments.png,
// experiment-spec-tags.png, experiments-tagged.png in $RUNG_SCREENSHOTS.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, Rungd, armWatchdog, describePrograms, launchBrowser, startWorker, waitFor } from './harness.mjs';

armWatchdog(80); // under this file's ctest TIMEOUT (120 s)

const SHOTS = process.env.RUNG_SCREENSHOTS || path.join(REPO_ROOT, 'build', 'screenshots');
const PYTHON = process.env.RUNG_PYTHON || '/usr/bin/python3';
const CURVE = path.join(REPO_ROOT, 'tests', 'integration', 'curve_trainable.py');
const TOKEN = 'compare-test-token-7a2e';
const PAGE_WAIT = 20000;
const tid = (name) => `[data-testid="${name}"]`;

// Two specs that differ in some keys (num_samples, a domain's bounds, a
// constant, the searcher's seed, a parameter only one has) and agree on
// others (metric, mode, trainable, layers).
const specA = {
  name: 'compare-a',
  metric: 'loss',
  mode: 'min',
  search_space: {
    x: { type: 'uniform', low: 0, high: 1 },
    y: { type: 'uniform', low: 0, high: 1 },
    layers: { type: 'choice', values: [1, 2] },
    opt: 'sgd',
    max_t: 4,
  },
  searcher: { type: 'random', seed: 11 },
  num_samples: 6,
  trainable: { type: 'command', argv: [PYTHON, CURVE], cwd: REPO_ROOT },
};
const specB = {
  name: 'compare-b',
  metric: 'loss',
  mode: 'min',
  search_space: {
    x: { type: 'uniform', low: 0, high: 0.5 },
    y: { type: 'uniform', low: 0, high: 1 },
    layers: { type: 'choice', values: [1, 2] },
    max_t: 3,
    wd: 0.01,
  },
  searcher: { type: 'random', seed: 5 },
  num_samples: 3,
  trainable: { type: 'command', argv: [PYTHON, CURVE], cwd: REPO_ROOT },
};

let d;
let worker;
let browser;
let page;
const pageErrors = [];
let A;
let B;

// ---- the test's own bookkeeping (not web/js/compare-model.js) --------------

/** JSON with sorted keys, so that equal values compare equal. */
function canon(v) {
  if (v === undefined) return '<absent>';
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canon).join(',')}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canon(v[k])}`).join(',')}}`;
}

/** The keys of `objs` whose values are not all equal (absent counts). */
function differing(objs) {
  const keys = new Set(objs.flatMap((o) => Object.keys(o)));
  return [...keys].filter((k) => new Set(objs.map((o) => canon(o[k]))).size > 1).sort();
}

/** A spec's leaves as dotted paths: objects are walked, arrays, empty
 * objects and scalars are leaves (web/README.md, "Compare"). */
function leaves(obj, prefix = '', out = {}) {
  for (const [k, v] of Object.entries(obj)) {
    const p = prefix ? `${prefix}.${k}` : k;
    if (v !== null && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length) leaves(v, p, out);
    else out[p] = v;
  }
  return out;
}

// ---- setup -----------------------------------------------------------------

async function login(p, token, route) {
  await p.goto(`${d.url}/#${route}`);
  await p.locator(tid('token-input')).first().fill(token);
  await p.locator(tid('token-save')).first().click();
}

async function newPage(token, route) {
  const p = await browser.newPage({ viewport: { width: 1300, height: 1000 } });
  p.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack : e)));
  await login(p, token, route);
  return p;
}

before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  console.log(`# ${describePrograms()}; screenshots in ${SHOTS}`);
  d = await new Rungd({ token: TOKEN }).start();
  A = await d.createExperiment(specA);
  B = await d.createExperiment(specB);
  const t0 = Date.now();
  worker = startWorker(d, { name: 'compare-worker', cpuSlots: 2 });
  // The browser starts and logs in while the worker runs the trials.
  const opened = (async () => {
    browser = await launchBrowser();
    page = await newPage(TOKEN, `/experiments/${A.id}`);
  })();
  for (const x of [A, B]) {
    await waitFor(async () => (await d.experiment(x.id)).state === 'completed', {
      timeout: 30000,
      interval: 200,
      what: `experiment ${x.id} to complete\n${worker.stderr().slice(-2000)}`,
    });
  }
  console.log(`# both experiments completed in ${Date.now() - t0} ms`);
  await opened;
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

/** The data-X attribute of every element matching testid, in page order. */
function attrs(testid, name, p = page) {
  return p.$$eval(tid(testid), (els, n) => els.map((e) => e.getAttribute(n)), name);
}

// ---- compare trials --------------------------------------------------------

test('three trials picked in the table: the diff and the overlay are the API\'s', async () => {
  const trials = await d.allTrials(A.id);
  // Three trials that share `layers` (six trials, two values: some three
  // do), so that the diff has a searched parameter that is the same too.
  const byLayers = new Map();
  for (const t of trials) byLayers.set(t.config.layers, [...(byLayers.get(t.config.layers) || []), t]);
  const three = [...byLayers.values()].find((g) => g.length >= 3).slice(0, 3);
  await page.locator(tid('trial-row')).first().waitFor({ timeout: PAGE_WAIT });
  for (const t of three) await page.locator(`${tid('trial-row')}[data-id="${t.id}"] ${tid('trial-pick')}`).check();
  const button = page.locator(tid('compare-trials'));
  assert.equal((await button.textContent()).trim(), 'Compare (3)');
  await button.click();
  await waitFor(async () => page.evaluate(() => window.location.hash), { what: 'the compare address' });
  assert.equal(await page.evaluate(() => window.location.hash), `#/compare?trials=${three.map((t) => t.id).join(',')}`);

  // The diff: exactly the differing parameters, each cell the trial's value.
  const configs = three.map((t) => t.config);
  const want = differing(configs);
  assert.ok(want.includes('x') && !want.includes('layers') && !want.includes('opt'), `diff ${want}`);
  await page.locator(tid('compare-diff-row')).first().waitFor({ timeout: PAGE_WAIT });
  assert.deepEqual((await attrs('compare-diff-row', 'data-param')).sort(), want);
  for (const k of want) {
    const cells = page.locator(`${tid('compare-diff-row')}[data-param="${k}"] ${tid('compare-value')}`);
    assert.deepEqual(await cells.evaluateAll((els) => els.map((e) => [Number(e.dataset.trial), JSON.parse(e.dataset.value)])),
      three.map((t) => [t.id, t.config[k]]), `the values of ${k}`);
  }
  const same = Object.keys(configs[0]).filter((k) => !want.includes(k)).sort();
  assert.deepEqual((await attrs('compare-diff-same-row', 'data-param')).sort(), same, 'the parameters equal in all');
  assert.equal(await page.locator(tid('compare-same')).getAttribute('open'), null, '"same" starts folded');

  // State and best value per trial, as the API says.
  for (const t of three) {
    const api = await d.trial(t.id);
    assert.equal((await page.locator(`${tid('compare-state')}[data-trial="${t.id}"]`).textContent()).trim(), api.state);
    assert.equal(Number(await page.locator(`${tid('compare-best')}[data-trial="${t.id}"]`).getAttribute('data-value')), api.best.value);
  }

  // The overlay: one curve per trial, its steps and values the API's reports.
  assert.equal(await page.locator(tid('compare-metric')).inputValue(), 'loss');
  const chart = page.locator(tid('compare-chart'));
  await waitFor(async () => (await chart.getAttribute('data-series')) === '3' && (await chart.getAttribute('data-drawn')),
    { timeout: PAGE_WAIT, what: 'three curves drawn' });
  const drawn = JSON.parse(await chart.getAttribute('data-drawn'));
  const wantLines = [];
  for (const t of [...three].sort((a, b) => a.id - b.id)) {
    const reports = (await d.metrics(t.id)).filter((r) => typeof r.metrics.loss === 'number');
    wantLines.push({ trial: t.id, x: reports.map((r) => r.step), y: reports.map((r) => r.metrics.loss) });
  }
  assert.deepEqual(drawn.map(({ trial, x, y }) => ({ trial, x, y })), wantLines);
  await page.screenshot({ path: path.join(SHOTS, 'compare-trials.png'), fullPage: true });
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

// ---- compare experiments ---------------------------------------------------

test('two experiments picked in the list: the spec diff and best-so-far lines', async () => {
  await page.goto(`${d.url}/#/`);
  await page.locator(tid('experiment-row')).first().waitFor({ timeout: PAGE_WAIT });
  for (const x of [A, B]) await page.locator(`${tid('experiment-row')}[data-id="${x.id}"] ${tid('exp-pick')}`).check();
  await page.locator(tid('compare-experiments')).click();
  await waitFor(async () => (await page.evaluate(() => window.location.hash)) === `#/compare?experiments=${A.id},${B.id}`,
    { what: 'the compare address' });

  const specs = await Promise.all([A, B].map((x) => d.api('GET', `/api/v1/experiments/${x.id}/spec`)));
  const want = differing(specs.map((s) => leaves(s.effective)));
  for (const k of ['num_samples', 'search_space.x.high', 'search_space.opt', 'search_space.wd', 'searcher.seed', 'name']) {
    assert.ok(want.includes(k), `${k} among the differing keys ${want}`);
  }
  await page.locator(tid('compare-spec-row')).first().waitFor({ timeout: PAGE_WAIT });
  assert.deepEqual((await attrs('compare-spec-row', 'data-key')).sort(), want);
  const cells = await page.locator(`${tid('compare-spec-row')}[data-key="search_space.x.high"] ${tid('compare-value')}`)
    .evaluateAll((els) => els.map((e) => JSON.parse(e.dataset.value)));
  assert.deepEqual(cells, [specA.search_space.x.high, specB.search_space.x.high]);

  // Best so far by trial number: the test's own running minimum.
  const chart = page.locator(tid('compare-chart'));
  await waitFor(async () => (await chart.getAttribute('data-series')) === '2' && (await chart.getAttribute('data-drawn')),
    { timeout: PAGE_WAIT, what: 'two best-so-far lines' });
  const drawn = JSON.parse(await chart.getAttribute('data-drawn'));
  for (const x of [A, B]) {
    const ts = (await d.allTrials(x.id)).filter((t) => t.best).sort((a, b) => a.number - b.number);
    let run = Infinity;
    const y = ts.map((t) => (run = Math.min(run, t.best.value)));
    const line = drawn.find((l) => l.trial === x.id);
    assert.ok(line, `a line for experiment ${x.id}`);
    assert.deepEqual({ x: line.x, y: line.y }, { x: ts.map((t) => t.number), y }, `experiment ${x.id}'s best so far`);
  }
  await page.screenshot({ path: path.join(SHOTS, 'compare-experiments.png'), fullPage: true });
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

// ---- spec panel, tags and notes ---------------------------------------------

test('the spec panel shows the spec as submitted and with defaults', async () => {
  await page.goto(`${d.url}/#/experiments/${A.id}`);
  const panel = page.locator(tid('spec-panel'));
  await panel.locator('summary').click();
  const pre = page.locator(tid('spec-json'));
  await waitFor(async () => (await pre.textContent()).length > 0, { timeout: PAGE_WAIT, what: 'the spec shown' });
  assert.deepEqual(JSON.parse(await pre.textContent()), specA, 'as submitted: the body the test posted');
  await page.locator(tid('spec-tab-effective')).click();
  const spec = await d.api('GET', `/api/v1/experiments/${A.id}/spec`);
  await waitFor(async () => (await pre.getAttribute('data-view')) === 'effective', { what: 'the effective tab' });
  assert.deepEqual(JSON.parse(await pre.textContent()), spec.effective, 'with defaults: the API\'s effective spec');
  assert.notDeepEqual(spec.effective, specA, 'the defaults add something');
});

test('a tag and a note added on the pages are the API\'s; the tag filters the list', async () => {
  const note = 'lr sweep <b>not bold</b>\nsecond line';
  await page.locator(tid('meta-edit')).click();
  // A tag the API would refuse (docs/api.md: no commas): the banner says so.
  await page.locator(tid('tag-input')).fill('a,b');
  await page.locator(tid('tag-add')).click();
  await page.locator(tid('error')).waitFor({ state: 'visible', timeout: PAGE_WAIT });
  assert.match(await page.locator(tid('error')).textContent(), /comma/);
  await page.locator(tid('tag-input')).fill('winner');
  await page.locator(tid('tag-add')).click();
  await page.locator(tid('error')).waitFor({ state: 'hidden', timeout: PAGE_WAIT });
  // One more, removed again before saving.
  await page.locator(tid('tag-input')).fill('drop-me');
  await page.locator(tid('tag-add')).click();
  await page.locator(`${tid('tag-remove')}[data-tag="drop-me"]`).click();
  await page.locator(tid('notes-input')).fill(note);
  await page.locator(tid('meta-save')).click();
  await waitFor(async () => {
    const x = await d.experiment(A.id);
    return JSON.stringify(x.tags) === '["winner"]' && x.notes === note;
  }, { timeout: PAGE_WAIT, what: 'the experiment\'s tag and notes in the API' });
  await waitFor(async () => JSON.stringify(await attrs('tag-chip', 'data-tag')) === '["winner"]', { what: 'the chip shown' });
  assert.equal(await page.locator(tid('exp-notes')).textContent(), note, 'the notes, as text');
  // The effective spec follows (tags and notes are spec fields).
  await waitFor(async () => JSON.parse(await page.locator(tid('spec-json')).textContent()).tags?.[0] === 'winner',
    { timeout: PAGE_WAIT, what: 'the spec panel read again' });
  await page.screenshot({ path: path.join(SHOTS, 'experiment-spec-tags.png'), fullPage: true });

  // A trial's own tag and note.
  const trial = (await d.allTrials(A.id))[0];
  await page.goto(`${d.url}/#/trials/${trial.id}`);
  await page.locator(tid('meta-edit')).click();
  await page.locator(tid('tag-input')).fill('keep');
  await page.locator(tid('tag-input')).press('Enter');
  await page.locator(tid('notes-input')).fill('rerun with more steps');
  await page.locator(tid('meta-save')).click();
  await waitFor(async () => {
    const t = await d.trial(trial.id);
    return JSON.stringify(t.tags) === '["keep"]' && t.notes === 'rerun with more steps';
  }, { timeout: PAGE_WAIT, what: 'the trial\'s tag and notes in the API' });

  // The list: the tag's chip leads to #/?tag=winner, listing what the API lists.
  await page.goto(`${d.url}/#/`);
  const chip = page.locator(`${tid('experiment-row')}[data-id="${A.id}"] ${tid('tag-chip')}[data-tag="winner"]`);
  await chip.click();
  await waitFor(async () => (await page.evaluate(() => window.location.hash)) === '#/?tag=winner', { what: '#/?tag=winner' });
  const tagged = (await d.api('GET', '/api/v1/experiments?tag=winner')).items.map((x) => x.id);
  assert.deepEqual(tagged, [A.id]);
  await waitFor(async () => JSON.stringify(await attrs('experiment-row', 'data-id')) === JSON.stringify(tagged.map(String)),
    { timeout: PAGE_WAIT, what: 'only the tagged experiments listed' });
  await page.locator(tid('tag-filter')).waitFor();
  await page.screenshot({ path: path.join(SHOTS, 'experiments-tagged.png'), fullPage: true });
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

test('a viewer sees tags and notes but no control to edit them', async () => {
  const r = await d.request('POST', '/api/v1/users', { name: 'vera', role: 'viewer' });
  assert.equal(r.status, 201, r.text);
  const viewer = await newPage(r.json.token, `/experiments/${A.id}`);
  try {
    await waitFor(async () => JSON.stringify(await attrs('tag-chip', 'data-tag', viewer)) === '["winner"]',
      { timeout: PAGE_WAIT, what: 'the viewer sees the tag' });
    assert.equal(await viewer.locator(tid('exp-notes')).isVisible(), true);
    assert.equal(await viewer.locator(tid('meta-edit')).isVisible(), false, 'an edit button for a viewer');
    assert.equal(await viewer.locator(tid('meta-form')).isVisible(), false);
    const trial = (await d.allTrials(A.id))[0];
    await viewer.goto(`${d.url}/#/trials/${trial.id}`);
    await waitFor(async () => JSON.stringify(await attrs('tag-chip', 'data-tag', viewer)) === '["keep"]',
      { timeout: PAGE_WAIT, what: 'the viewer sees the trial\'s tag' });
    assert.equal(await viewer.locator(tid('meta-edit')).isVisible(), false, 'an edit button on the trial page for a viewer');
  } finally {
    await viewer.close();
  }
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

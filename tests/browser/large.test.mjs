// Browser test of the experiment page with more trials than it draws curves
// for (web/js/views/experiment-data.js, CURVES_BEST = 1,000), run by ctest
// as part of `browser_dashboard`. The store is made by bench/gen_store.py
// (one finished experiment of 2,500 trials with 5 reports each, written
// with SQLite in a second: loading it through the API would take minutes)
// and served by a real rungd. The checks, each against the API:
//
//   curves   the chart draws 1,000 curves, says it shows "the 1,000 best of
//            2,500", and its points are those of GET .../curves?best=1000,
//            whose trials are the 1,000 with the lowest best value in the
//            trials listing (ties to the lower id)
//   others   the parallel coordinates hold every trial, and from 2,000
//            lines on draw them as counted pixels (web/js/charts/
//            parallel.js strokeBands): the plot is painted, in the
//            colour band of the best trials too; the table's first page
//            is there

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, Rungd, armWatchdog, launchBrowser, rungdPath, tempDir } from './harness.mjs';

armWatchdog(120);

const PYTHON = process.env.RUNG_PYTHON || '/usr/bin/python3';
const TRIALS = 2500; // above parallel.js PIXEL_LINES_FROM (2,000)
const SHOWN = 1000; // web/js/views/experiment-data.js CURVES_BEST
const tid = (name) => `[data-testid="${name}"]`;

let d;
let browser;
let page;
let eid;
const pageErrors = [];

before(async () => {
  const cache = tempDir('rung-large-');
  const gen = spawnSync(PYTHON, [path.join(REPO_ROOT, 'bench', 'gen_store.py'), '--rungd', rungdPath(),
    '--cache-dir', cache, '--experiments', '1', '--trials', String(TRIALS), '--reports', '5',
    '--running', '0', '--canceled-every', '0'], { encoding: 'utf8', timeout: 60000 });
  assert.equal(gen.status, 0, `gen_store.py failed:\n${gen.stdout}\n${gen.stderr}`);
  d = new Rungd();
  fs.copyFileSync(path.join(cache, 'store.db'), d.db);
  await d.start();
  const list = await d.api('GET', '/api/v1/experiments');
  assert.equal(list.items.length, 1);
  eid = list.items[0].id;
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on('pageerror', (e) => pageErrors.push(String(e && e.stack ? e.stack : e)));
  await page.goto(`${d.url}/#/experiments/${eid}`);
  await page.waitForFunction((n) => document.querySelector('[data-testid="chart-curves"]')?.dataset.series === String(n),
    SHOWN, { timeout: 30000 });
});

after(async () => {
  if (browser) await browser.close();
  if (d) await d.stop();
});

test('a large experiment: the curves of its 1,000 best trials, said so; the other charts and the table hold all', async () => {
  const exp = await d.api('GET', `/api/v1/experiments/${eid}`);
  assert.equal(exp.mode, 'min');
  const trials = await d.allTrials(eid);
  assert.equal(trials.length, TRIALS);
  const ranked = trials.filter((t) => t.best && typeof t.best.value === 'number')
    .sort((a, b) => a.best.value - b.best.value || a.id - b.id);
  assert.ok(ranked.length > SHOWN, `${ranked.length} trials with a value`);
  const want = new Set(ranked.slice(0, SHOWN).map((t) => t.id));

  const best = await d.api('GET', `/api/v1/experiments/${eid}/curves?best=${SHOWN}`);
  assert.equal(best.best, SHOWN);
  assert.equal(best.ranked, ranked.length);
  assert.deepEqual(new Set(best.items.map((it) => it[0])), want);

  const curves = page.locator(tid('chart-curves'));
  assert.equal(await curves.getAttribute('data-series'), String(SHOWN));
  assert.equal(await curves.getAttribute('data-best'), String(SHOWN));
  assert.equal(Number(await curves.getAttribute('data-points')), best.items.length);
  const note = await page.locator(tid('curves-subset')).textContent();
  assert.match(note, new RegExp(`1,000 best of ${ranked.length.toLocaleString('en-US')} trials`));
  assert.ok(await page.locator(tid('curves-subset')).isVisible());

  assert.equal(await page.locator(tid('chart-parallel')).getAttribute('data-series'), String(TRIALS));
  // The lines' pixels: the share of the plot (between the first and last
  // axis, PAD in parallel.js) that is painted, and the pixels whose
  // colour is nearest the warmest band's (the best trials, RAMP[7]).
  const paint = await page.evaluate(() => {
    const c = document.querySelector('[data-testid="chart-parallel"] canvas');
    const ctx = c.getContext('2d');
    const dpr = c.width / c.clientWidth;
    const x0 = Math.ceil(45 * dpr);
    const x1 = Math.floor(c.width - 65 * dpr);
    const y0 = Math.ceil(40 * dpr);
    const y1 = Math.floor(c.height - 30 * dpr);
    const d = ctx.getImageData(x0, y0, x1 - x0, y1 - y0).data;
    let painted = 0;
    let warm = 0;
    for (let o = 0; o < d.length; o += 4) {
      if (d[o + 3] === 0) continue;
      painted++;
      if (d[o] > 180 && d[o + 2] < 120) warm++; // #d6604d, the best band
    }
    return { painted: painted / (d.length / 4), warm };
  });
  assert.ok(paint.painted > 0.3, `parallel coordinates: ${(paint.painted * 100).toFixed(1)}% of the plot painted`);
  assert.ok(paint.warm > 100, `parallel coordinates: ${paint.warm} pixels of the best band's colour`);
  assert.ok(await page.locator(tid('trial-row')).count() > 0);
  assert.deepEqual(pageErrors, []);
});

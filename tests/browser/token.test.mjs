// Browser test of the dashboard against a rungd run with --token: the page
// asks for the token (every /api/v1 request answers 401 without it), and once
// the right one is entered it shows the experiments the API lists.
// Screenshots: token-prompt.png, token-experiments.png in $RUNG_SCREENSHOTS.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, Rungd, armWatchdog, launchBrowser, waitFor } from './harness.mjs';

armWatchdog(60); // both files together stay under ctest's TIMEOUT (300 s)

const SHOTS = process.env.RUNG_SCREENSHOTS || path.join(REPO_ROOT, 'build', 'screenshots');
const TOKEN = 'browser-test-token-5f1c';
const tid = (name) => `[data-testid="${name}"]`;

let d;
let browser;
const pageErrors = [];

before(async () => {
  fs.mkdirSync(SHOTS, { recursive: true });
  d = await new Rungd({ token: TOKEN }).start();
  for (const name of ['token-one', 'token-two']) {
    await d.createExperiment({
      name,
      metric: 'loss',
      mode: 'min',
      search_space: { x: { type: 'uniform', low: 0, high: 1 } },
      num_samples: 2,
      trainable: { type: 'external' },
    });
  }
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (d) {
    const died = !d.alive();
    const rc = await d.stop();
    if (died) throw new Error(`rungd died on its own\n${d.diagnostics()}`);
    if (rc !== 0) throw new Error(`rungd did not shut down cleanly (status ${rc})\n${d.diagnostics()}`);
  }
});

test('without a token the API says 401; the page asks for the token', async () => {
  const r = await d.request('GET', '/api/v1/experiments', undefined, { token: null });
  assert.equal(r.status, 401);
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  try {
    await page.goto(`${d.url}/#/`);
    await page.locator(tid('token-input')).first().waitFor({ timeout: 10000 });
    assert.equal(await page.locator(tid('experiment-row')).count(), 0, 'experiments shown without a token');
    await page.screenshot({ path: path.join(SHOTS, 'token-prompt.png'), fullPage: true });

    // The right token: the experiments appear, as the API lists them.
    await page.locator(tid('token-input')).first().fill(TOKEN);
    await page.locator(tid('token-save')).first().click();
    const { items } = await d.experiments();
    await waitFor(async () => (await page.locator(tid('experiment-row')).count()) === items.length, {
      what: `${items.length} experiment rows after entering the token`,
    });
    for (const x of items) {
      const name = await page.locator(`${tid('experiment-row')}[data-id="${x.id}"] ${tid('exp-name')}`).first().textContent();
      assert.equal(name.trim(), x.name);
    }
    assert.equal(await page.locator(tid('token-input')).count() === 0
      || !(await page.locator(tid('token-input')).first().isVisible()), true, 'the prompt is gone');
    await page.screenshot({ path: path.join(SHOTS, 'token-experiments.png'), fullPage: true });
  } finally {
    await page.close();
  }
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

// Browser test of the dashboard against a rungd run with --token: the page
// asks for a token (every /api/v1 request answers 401 without it); the token
// entered becomes a session cookie the page's scripts cannot read (HttpOnly,
// SameSite=Strict; docs/api.md, "Sessions"), nothing of it is stored, and
// the experiments the API lists appear. A viewer sees no buttons it may not
// use, a member sees them on their own experiment only; the events page
// shows who did what; logout brings the prompt back.
// Screenshots: token-prompt.png, token-experiments.png, events.png in
// $RUNG_SCREENSHOTS.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT, Rungd, armWatchdog, launchBrowser, waitFor } from './harness.mjs';

armWatchdog(90); // both files together stay under ctest's TIMEOUT (300 s)

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
    // The token is kept nowhere a script reads: not in storage, and the
    // session's cookie is HttpOnly.
    const stored = await page.evaluate(() => JSON.stringify([{ ...localStorage }, { ...sessionStorage }, document.cookie]));
    assert.ok(!stored.includes(TOKEN), `the token is stored: ${stored}`);
    const cookies = await page.context().cookies();
    const session = cookies.find((c) => c.name === 'rung_session');
    assert.ok(session, 'no session cookie');
    assert.equal(session.httpOnly, true);
    assert.equal(session.sameSite, 'Strict');
    await waitFor(async () => (await page.locator(tid('user-name')).first().textContent()) === 'bootstrap (admin)',
      { what: 'the user shown in the top bar' });
    // Logout: the prompt is back and the API answers 401 to the page.
    await page.locator(tid('logout')).first().click();
    await page.locator(tid('token-input')).first().waitFor({ state: 'visible', timeout: 10000 });
    const after = await page.evaluate(async () => (await fetch('/api/v1/experiments')).status);
    assert.equal(after, 401);
  } finally {
    await page.close();
  }
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

/** A user of `role` and their first token. */
async function addUser(name, role) {
  const r = await d.request('POST', '/api/v1/users', { name, role });
  assert.equal(r.status, 201, r.text);
  return r.json.token;
}

/** A new page logged in with token, on experiment id's page. */
async function loggedIn(token, id) {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  await page.goto(`${d.url}/#/experiments/${id}`);
  await page.locator(tid('token-input')).first().fill(token);
  await page.locator(tid('token-save')).first().click();
  await page.locator(tid('exp-title')).first().waitFor({ timeout: 10000 });
  return page;
}

test('buttons follow the role: a viewer has none, a member only on their own', async () => {
  const viewer = await addUser('vic', 'viewer');
  const member = await addUser('meg', 'member');
  const mine = await d.request('POST', '/api/v1/experiments', {
    name: 'megs', metric: 'loss', mode: 'min', num_samples: 1,
    search_space: { x: { type: 'uniform', low: 0, high: 1 } }, trainable: { type: 'external' },
  }, { token: member });
  assert.equal(mine.status, 201);
  const { items } = await d.experiments();
  const others = items.find((x) => x.name === 'token-one');
  const cases = [[viewer, others.id, false], [member, others.id, false], [member, mine.json.id, true]];
  for (const [token, id, steer] of cases) {
    const page = await loggedIn(token, id);
    try {
      await waitFor(async () => (await page.locator(tid('cancel')).first().isVisible()) === steer,
        { what: `cancel ${steer ? 'shown' : 'hidden'} on experiment ${id}` });
      assert.equal(await page.locator(tid('pause')).first().isVisible(), steer);
      // The API refuses anyway: a viewer's pause with the session's csrf is 403.
      if (!steer) {
        const status = await page.evaluate(async (x) => {
          const s = await (await fetch('/api/v1/session')).json();
          const r = await fetch(`/api/v1/experiments/${x}/pause`, { method: 'POST', headers: { 'X-CSRF-Token': s.csrf } });
          return r.status;
        }, id);
        assert.equal(status, 403);
      }
    } finally {
      await page.close();
    }
  }
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

test('the events page shows who did what, newest first', async () => {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.on('pageerror', (e) => pageErrors.push(String(e)));
  try {
    await page.goto(`${d.url}/#/events`);
    await page.locator(tid('token-input')).first().fill(TOKEN);
    await page.locator(tid('token-save')).first().click();
    await waitFor(async () => (await page.locator(tid('event-row')).count()) > 0, { what: 'event rows' });
    const r = await d.request('GET', '/api/v1/events?limit=1000');
    const events = r.json.items;
    await waitFor(async () => (await page.locator(tid('event-row')).count()) === events.length,
      { what: `${events.length} event rows` });
    const first = await page.locator(tid('event-row')).first();
    const last = events[events.length - 1];
    assert.equal(await first.getAttribute('data-id'), String(last.id));
    assert.equal((await first.locator(tid('event-kind')).textContent()).trim(), last.kind);
    const kinds = await page.locator(tid('event-kind')).allTextContents();
    assert.ok(kinds.includes('experiment.submitted') && kinds.includes('user.added'), kinds.join(' '));
    await page.screenshot({ path: path.join(SHOTS, 'events.png'), fullPage: true });
  } finally {
    await page.close();
  }
  assert.deepEqual(pageErrors, [], 'uncaught exceptions in the page');
});

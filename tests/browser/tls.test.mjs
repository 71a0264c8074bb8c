// The dashboard over HTTPS (docs/operations.md, "TLS"): rungd serves its
// own certificate (a CA and certificate made here with openssl), Chromium
// loads the page, logs in, submits through the API with the session's csrf
// token and shows the experiment; the session cookie is Secure. The CA is
// not in Chromium's store, so the context accepts it as ignoreHTTPSErrors
// does; Node checks separately that the served chain verifies against the
// CA made here, and that another CA refuses it.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { Rungd, armWatchdog, launchBrowser, tempDir, waitFor } from './harness.mjs';

armWatchdog(60);

const TOKEN = 'browser-tls-token-8a1d';
const tid = (name) => `[data-testid="${name}"]`;
let d;
let browser;
let pki;

function openssl(...args) {
  execFileSync('openssl', args, { cwd: pki, stdio: 'ignore' });
}

function makeCa(name) {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`,
    '-days', '2', '-subj', `/CN=${name}`);
}

before(async () => {
  pki = tempDir('rung-browser-tls-');
  makeCa('ca');
  makeCa('other');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'srv.key', '-out', 'srv.csr', '-subj', '/CN=localhost');
  fs.writeFileSync(path.join(pki, 'ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  openssl('x509', '-req', '-in', 'srv.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
    '-out', 'srv.pem', '-days', '2', '-extfile', 'ext.cnf');
  d = await new Rungd({
    token: TOKEN,
    args: ['--tls-cert', path.join(pki, 'srv.pem'), '--tls-key', path.join(pki, 'srv.key')],
  }).start();
  browser = await launchBrowser();
});

after(async () => {
  if (browser) await browser.close().catch(() => {});
  if (d) await d.stop();
});

/** Whether a TLS connection to rungd verifies against the CA file. */
function verifies(caFile) {
  const u = new URL(d.url);
  return new Promise((resolve) => {
    const s = tls.connect({ host: u.hostname, port: Number(u.port), ca: fs.readFileSync(path.join(pki, caFile)), servername: 'localhost' });
    s.on('secureConnect', () => { resolve(s.authorized); s.end(); });
    s.on('error', () => resolve(false));
  });
}

test('the dashboard works over HTTPS with a Secure session cookie', async () => {
  assert.ok(d.url.startsWith('https://'), d.url);
  assert.equal(await verifies('ca.pem'), true);
  assert.equal(await verifies('other.pem'), false);
  const context = await browser.newContext({ ignoreHTTPSErrors: true, viewport: { width: 1200, height: 800 } });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  try {
    await page.goto(`${d.url}/#/`);
    await page.locator(tid('token-input')).first().fill(TOKEN);
    await page.locator(tid('token-save')).first().click();
    await waitFor(async () => (await page.locator(tid('user-name')).first().textContent()) === 'bootstrap (admin)',
      { what: 'logged in' });
    const status = await page.evaluate(async () => {
      const s = await (await fetch('/api/v1/session')).json();
      const r = await fetch('/api/v1/experiments', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf },
        body: JSON.stringify({ name: 'over-https', metric: 'loss', mode: 'min', num_samples: 1,
          search_space: { x: { type: 'uniform', low: 0, high: 1 } }, trainable: { type: 'external' } }),
      });
      return r.status;
    });
    assert.equal(status, 201);
    await waitFor(async () => (await page.locator(tid('experiment-row')).count()) === 1, { what: 'the experiment row' });
    const cookie = (await context.cookies()).find((c) => c.name === 'rung_session');
    assert.ok(cookie && cookie.secure && cookie.httpOnly && cookie.sameSite === 'Strict', JSON.stringify(cookie));
  } finally {
    await context.close();
  }
  assert.deepEqual(errors, []);
});

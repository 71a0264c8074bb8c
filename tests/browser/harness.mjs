// Harness for Rung's browser tests and for bench/dashboard.mjs.
//
// Like tests/integration/rungd_harness.py, it starts a real `rungd --port 0`
// on a database in a temporary folder (with --web-dir pointing at the
// repository's web/), reads "listening on http(s)://HOST:PORT" from its stdout,
// and talks to it over real HTTP on loopback. It adds:
//
// - `Rungd`: one daemon process; `api()` for JSON requests that must answer
//   a given status; shortcuts for the docs/api.md objects.
// - `FakeWorker`: the pull protocol of docs/api.md (register, lease, heartbeat,
//   report, finish) spoken by the test itself, so that it decides every
//   number the dashboard must show.
// - `startWorker()`: a real rung-worker process (--gpus none).
// - `launchBrowser()`: Debian's chromium, headless, driven by playwright-core
//   from web/node_modules (installed by `npm ci` in web/; it never downloads
//   a browser of its own).
// - `waitFor()`: bounded polling; every wait here is bounded, and a
//   watchdog kills every process this harness started and exits non-zero
//   when a run takes longer than RUNG_TEST_WATCHDOG_S (below ctest's TIMEOUT).
//
// Programs come from the environment as in tests/integration: RUNGD,
// RUNG_WORKER (default: beside rungd), RUNG_CLI. Child processes get
// SIGKILL when this process dies (setpriv --pdeathsig), so a runner killed
// by a timeout leaves no daemon behind.

import { spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const WEB_DIR = path.join(REPO_ROOT, 'web');
export const CHROMIUM = process.env.RUNG_CHROMIUM || '/usr/bin/chromium';

const START_TIMEOUT_MS = 15000; // rungd must print its address within this
const STOP_TIMEOUT_MS = 10000; // and exit within this after SIGTERM
const HTTP_TIMEOUT_MS = 20000; // one HTTP request (a lease long poll adds wait_s)
const LISTEN_RE = /listening on (https?):\/\/(\[[^\]]+\]|[^:/\s]+):(\d+)/;

const live = new Set(); // child processes that may still run
const tmpdirs = new Set();

function killAll() {
  for (const child of live) {
    try {
      if (child.rungGroup) process.kill(-child.pid, 'SIGKILL');
      else child.kill('SIGKILL');
    } catch {
      /* gone already */
    }
  }
  live.clear();
  if (!process.env.RUNG_KEEP_TMP) {
    for (const dir of tmpdirs) fs.rmSync(dir, { recursive: true, force: true });
  }
  tmpdirs.clear();
}
process.on('exit', killAll);
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    killAll();
    process.exit(sig === 'SIGINT' ? 130 : 143);
  });
}

/** Arms a watchdog that kills what we started and exits 3 after `seconds`. */
export function armWatchdog(defaultSeconds = 240) {
  const seconds = Number(process.env.RUNG_TEST_WATCHDOG_S) || defaultSeconds;
  const t = setTimeout(() => {
    process.stderr.write(`\nbrowser harness: run exceeded ${seconds} s; killing daemons\n`);
    killAll();
    process.exit(3);
  }, seconds * 1000);
  t.unref();
  return t;
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

/** promise's value, or `fallback` once ms have passed; the timer never
 * outlives the race (a pending one would keep the process alive). */
export function within(promise, ms, fallback = null) {
  let timer;
  const t = new Promise((r) => {
    timer = setTimeout(() => r(fallback), ms);
  });
  return Promise.race([promise, t]).finally(() => clearTimeout(timer));
}

/** Calls fn until it returns something truthy and returns that; throws an
 * Error naming `what` (and the last value) after timeoutMs. */
export async function waitFor(fn, { timeout = 10000, interval = 100, what = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  let lastErr;
  for (;;) {
    try {
      last = await fn();
      lastErr = undefined;
      if (last) return last;
    } catch (e) {
      lastErr = e;
    }
    if (Date.now() >= deadline) {
      const detail = lastErr ? `error: ${lastErr.message}` : `last: ${JSON.stringify(last)}`;
      throw new Error(`timed out after ${(timeout / 1000).toFixed(1)} s waiting for ${what} (${detail})`);
    }
    await sleep(interval);
  }
}

export function tempDir(prefix = 'rung-browser-') {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tmpdirs.add(dir);
  return dir;
}

function program(name, envVar) {
  let p = process.env[envVar] || '';
  if (!p && envVar !== 'RUNGD' && process.env.RUNGD) p = path.join(path.dirname(process.env.RUNGD), name);
  if (!p) p = path.join(REPO_ROOT, 'build', 'bin', name);
  p = path.resolve(p);
  try {
    fs.accessSync(p, fs.constants.X_OK);
  } catch {
    throw new Error(`${name} not found or not executable: ${p} (set ${envVar})`);
  }
  return p;
}

export const rungdPath = () => program('rungd', 'RUNGD');
export const workerPath = () => program('rung-worker', 'RUNG_WORKER');

// Children get SIGKILL when we die; setpriv is util-linux, always on Debian.
const SETPRIV = fs.existsSync('/usr/bin/setpriv') ? '/usr/bin/setpriv' : null;

function spawnChild(argv, opts) {
  const [cmd, args] = SETPRIV
    ? [SETPRIV, ['--pdeathsig', 'KILL', '--', ...argv]]
    : [argv[0], argv.slice(1)];
  const child = spawn(cmd, args, opts);
  child.rungGroup = !!opts.detached;
  live.add(child);
  child.on('exit', () => live.delete(child));
  return child;
}

/** The playwright-core module installed in web/node_modules by `npm ci`. */
export function playwright() {
  try {
    return createRequire(path.join(WEB_DIR, 'package.json'))('playwright-core');
  } catch (e) {
    throw new Error(`playwright-core not found in web/node_modules (run: cd web && npm ci): ${e.message}`);
  }
}

/** Headless Debian chromium. */
export async function launchBrowser() {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`chromium not found at ${CHROMIUM} (apt-get install chromium)`);
  const { chromium } = playwright();
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
}

export class HttpError extends Error {}

/** One rungd on an ephemeral loopback port. */
export class Rungd {
  constructor({ args = [], token = null, webDir = WEB_DIR, dir = null } = {}) {
    this.dir = dir || tempDir();
    this.db = path.join(this.dir, 'rung.db');
    this.args = args;
    this.token = token;
    this.webDir = webDir;
    this.url = null;
    this.stdout = '';
    this.logPath = path.join(this.dir, 'rungd.log');
    this.stopping = false;
  }

  command() {
    const c = [rungdPath(), '--port', '0', '--db', this.db, '--web-dir', this.webDir, ...this.args];
    if (this.token) c.push('--token', this.token);
    return c;
  }

  async start() {
    const env = { ...process.env };
    delete env.RUNG_TOKEN;
    const log = fs.openSync(this.logPath, 'w');
    this.proc = spawnChild(this.command(), { cwd: this.dir, env, stdio: ['ignore', 'pipe', log] });
    fs.closeSync(log);
    this.proc.stdout.setEncoding('utf8');
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, sig) => resolve(code ?? sig)));
    const listening = new Promise((resolve) => {
      this.proc.stdout.on('data', (chunk) => {
        this.stdout += chunk; // keep draining, so a chatty daemon never blocks
        const m = LISTEN_RE.exec(this.stdout);
        if (m && !this.url) {
          let host = m[2].replace(/^\[|\]$/g, '');
          if (host === '0.0.0.0' || host === '::' || host === '') host = '127.0.0.1';
          this.url = `${m[1]}://${host.includes(':') ? `[${host}]` : host}:${m[3]}`;
          resolve(true);
        }
      });
      this.exited.then(() => resolve(false));
    });
    const ok = await within(listening, START_TIMEOUT_MS, false);
    if (!ok) {
      this.proc.kill('SIGKILL');
      throw new Error(`rungd did not print 'listening on' within ${START_TIMEOUT_MS / 1000} s\n${this.diagnostics()}`);
    }
    return this;
  }

  alive() {
    return this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** SIGTERM, SIGKILL after STOP_TIMEOUT_MS; the SIGTERM's exit status or null. */
  async stop() {
    if (!this.proc || !this.alive()) return this.proc ? this.proc.exitCode : 0;
    this.stopping = true;
    this.proc.kill('SIGTERM');
    const rc = await within(this.exited, STOP_TIMEOUT_MS, null);
    if (rc === null) {
      this.proc.kill('SIGKILL');
      await this.exited;
    }
    return rc;
  }

  diagnostics() {
    let err = '';
    try {
      err = fs.readFileSync(this.logPath, 'utf8').split('\n').slice(-30).join('\n');
    } catch {
      /* none */
    }
    return `rungd (${this.alive() ? 'running' : 'exited'}) ${this.command().join(' ')}\n--- stdout ---\n${this.stdout.slice(-2000)}\n--- stderr ---\n${err}`;
  }

  /** {status, json, text} of one request. */
  async request(method, p, body, { token, timeout = HTTP_TIMEOUT_MS } = {}) {
    const headers = { Accept: 'application/json' };
    const tok = token === undefined ? this.token : token;
    if (tok) headers.Authorization = `Bearer ${tok}`;
    let data;
    if (body !== undefined) {
      data = JSON.stringify(body);
      headers['Content-Type'] = 'application/json';
    }
    let resp;
    try {
      resp = await fetch(this.url + p, { method, headers, body: data, signal: AbortSignal.timeout(timeout) });
    } catch (e) {
      throw new HttpError(`${method} ${p} failed: ${e.message}\n${this.diagnostics()}`);
    }
    const text = await resp.text();
    let json = null;
    try {
      json = text ? JSON.parse(text) : null;
    } catch {
      /* not JSON */
    }
    return { status: resp.status, json, text };
  }

  /** Parsed JSON of a request that must answer `status`. */
  async api(method, p, body, status = 200, opts = {}) {
    const r = await this.request(method, p, body, opts);
    if (r.status !== status) throw new HttpError(`${method} ${p}: expected ${status}, got ${r.status}: ${r.text.slice(0, 500)}`);
    return r.json;
  }

  createExperiment(spec) {
    return this.api('POST', '/api/v1/experiments', spec, 201);
  }
  experiment(id) {
    return this.api('GET', `/api/v1/experiments/${id}`);
  }
  experiments() {
    return this.api('GET', '/api/v1/experiments?limit=1000');
  }
  trial(id) {
    return this.api('GET', `/api/v1/trials/${id}`);
  }
  async metrics(id) {
    return (await this.api('GET', `/api/v1/trials/${id}/metrics`)).items;
  }
  workers() {
    return this.api('GET', '/api/v1/workers');
  }
  /** One page of trials as the API answers it; query is an object. */
  trials(eid, query = {}) {
    const qs = new URLSearchParams(query).toString();
    return this.api('GET', `/api/v1/experiments/${eid}/trials${qs ? `?${qs}` : ''}`);
  }
  /** Every trial of an experiment, following the paging. */
  async allTrials(eid, query = {}) {
    const items = [];
    for (;;) {
      const doc = await this.trials(eid, { ...query, limit: 1000, offset: items.length });
      items.push(...doc.items);
      if (!doc.items.length || items.length >= doc.total) return items;
    }
  }
  /** Waits until the proposer has created n trials of experiment eid. */
  waitProposed(eid, n, timeout = 15000) {
    return waitFor(async () => (await this.trials(eid, { limit: 1 })).total >= n, {
      timeout,
      what: `${n} trials of experiment ${eid} to exist`,
    });
  }
}

/** A worker speaking the pull protocol over HTTP, driven by the test. */
export class FakeWorker {
  constructor(daemon, { name = 'fake-worker', cpus = 16, gpus = [] } = {}) {
    this.d = daemon;
    this.name = name;
    this.cpus = cpus;
    this.gpus = gpus; // [{index, name, memory_mb}]
  }

  async register() {
    const doc = await this.d.api('POST', '/api/v1/workers', {
      name: this.name,
      hostname: os.hostname(),
      gpus: this.gpus,
      cpus: this.cpus,
    }, 201);
    this.id = doc.worker_id;
    return this;
  }

  /** A leased trial (with lease_token), or null on 204. advertiseAddr and
   * port: where gang members reach this worker (docs/api.md, "Gangs");
   * without them it never joins a gang. */
  async lease({ cpus = 1, gpus = [], waitS = 5, advertiseAddr, port } = {}) {
    const body = { cpus, gpus, wait_s: waitS };
    if (advertiseAddr !== undefined) Object.assign(body, { advertise_addr: advertiseAddr, port });
    const r = await this.d.request('POST', `/api/v1/workers/${this.id}/lease`, body, {
      timeout: HTTP_TIMEOUT_MS + waitS * 1000,
    });
    if (r.status === 204) return null;
    if (r.status !== 200 || !r.json || !r.json.trial) throw new HttpError(`lease answered ${r.status}: ${r.text.slice(0, 300)}`);
    return r.json.trial;
  }

  async leaseOne(opts) {
    const t = await this.lease(opts);
    if (!t) throw new Error(`worker ${this.name}: no trial leased`);
    return t;
  }

  /** The action ("continue"|"stop") of a report that must answer 200. */
  async report(trial, step, metrics) {
    const doc = await this.d.api('POST', `/api/v1/trials/${trial.id}/report`, {
      lease_token: trial.lease_token,
      step,
      metrics,
    });
    return doc.action;
  }

  finish(trial, status = 'completed', error) {
    const body = { lease_token: trial.lease_token, status };
    if (error !== undefined) body.error = error;
    return this.d.api('POST', `/api/v1/trials/${trial.id}/finish`, body);
  }

  heartbeat(trialIds = [], gpus, logs) {
    const body = { trials: trialIds };
    if (gpus) body.gpus = gpus;
    if (logs) body.logs = logs;
    return this.d.api('POST', `/api/v1/workers/${this.id}/heartbeat`, body);
  }
}

/** A real rung-worker process (CPU slots only) in its own process group. */
export function startWorker(daemon, { name = 'real-worker', cpuSlots = 1, extra = [] } = {}) {
  const dir = tempDir('rung-browser-worker-');
  const env = { ...process.env };
  delete env.RUNG_TOKEN;
  delete env.RUNG_SERVER;
  const out = fs.openSync(path.join(dir, 'worker.out'), 'w');
  const err = fs.openSync(path.join(dir, 'worker.err'), 'w');
  const argv = [workerPath(), '--server', daemon.url, '--name', name, '--gpus', 'none',
    '--cpu-slots', String(cpuSlots), '--workdir', path.join(dir, 'work'), ...extra];
  if (daemon.token) argv.push('--token', daemon.token);
  const proc = spawnChild(argv, { cwd: REPO_ROOT, env, stdio: ['ignore', out, err], detached: true });
  fs.closeSync(out);
  fs.closeSync(err);
  const exited = new Promise((resolve) => proc.on('exit', (code, sig) => resolve(code ?? sig)));
  return {
    name,
    proc,
    stderr: () => fs.readFileSync(path.join(dir, 'worker.err'), 'utf8'),
    alive: () => proc.exitCode === null && proc.signalCode === null,
    async stop() {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      proc.kill('SIGTERM');
      const rc = await within(exited, 5000, null);
      if (rc === null) {
        try {
          process.kill(-proc.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
        await exited;
      }
      return rc;
    },
  };
}

/** True when s shows v with at most `digits` significant digits, rounded
 * correctly (e.g. "0.123457" or "1.23457e-5" for 0.0000123456789). */
export function showsNumber(s, v, digits = 6) {
  if (typeof v !== 'number') return false;
  const text = String(s).trim().replace(/\u2212/g, '-').replace(/,/g, '');
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) return false;
  const mantissa = text.replace(/^[-+]/, '').replace(/[eE].*$/, '').replace('.', '').replace(/^0+/, '');
  if (mantissa.replace(/0+$/, '').length > digits) return false;
  return Number(text) === Number(v.toPrecision(digits)) || Math.abs(Number(text) - v) <= Math.abs(v) * 5 * 10 ** -digits;
}

/** Which program is where, for the log of a run. */
export function describePrograms() {
  const node = process.version;
  let chromium = '';
  try {
    chromium = spawnSync(CHROMIUM, ['--version'], { encoding: 'utf8', timeout: 10000 }).stdout.trim();
  } catch {
    /* shown as empty */
  }
  return `node ${node}; ${chromium || 'chromium ?'}; rungd ${rungdPath()}`;
}

// The dashboard's only caller of fetch: every request to rungd's REST API
// (docs/api.md) goes through request(), and every failure comes out as ApiError.
// The one exception is index.html's inline script, which asks for an
// experiment page's first data before the modules are in: request() takes
// those Responses (takeEarly) and reads them as its own.

const BASE = '/api/v1';

/** An API failure: the HTTP status (0 when rungd could not be reached), the
 * API's error code, message and field. */
export class ApiError extends Error {
  constructor(status, code, message, field = null) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

// The session (docs/api.md, "Sessions"): the page never keeps a token. A
// token typed once goes to POST /session, which answers an HttpOnly cookie
// (sent by the browser with every later request, unreadable by scripts)
// and the CSRF token that every change must carry. `me` is who the
// requests act as (GET /whoami), for the buttons a role may use.
let csrf = '';
let me = null;

/** Who the page acts as: {name, role} (null before it is known). */
export function whoAmI() {
  return me;
}

/** Whether `me` may steer experiment x (docs/api.md, "Roles per route"):
 * admins all, members their own; unknown (not asked yet) counts as yes,
 * and the API refuses anyway. */
export function canSteer(x) {
  if (!me) return true;
  return me.role === 'admin' || (me.role === 'member' && x && x.owner === me.name);
}

/** Learns who the page is (its session's csrf token too) and tells the
 * page; quiet when it is not logged in (the 401 shows the prompt). */
export async function refreshSession() {
  try {
    me = await request('GET', '/whoami');
  } catch {
    me = null;
  }
  try {
    const s = await request('GET', '/session');
    csrf = s.csrf;
  } catch {
    csrf = '';
  }
  window.dispatchEvent(new Event('rung:session'));
  return me;
}

/** Logs in with a token: the session's cookie and csrf token replace it.
 * Then every poller tries again at once. */
export async function login(token) {
  const resp = await fetch(url('/session'), {
    method: 'POST',
    headers: { Accept: 'application/json', Authorization: `Bearer ${token}` },
    cache: 'no-store',
  });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const err = body && body.error ? body.error : {};
    throw new ApiError(resp.status, err.code || `http_${resp.status}`, err.message || `HTTP ${resp.status}`);
  }
  csrf = body.csrf;
  me = { name: body.name, role: body.role };
  window.dispatchEvent(new Event('rung:session'));
  window.dispatchEvent(new Event('rung:token'));
  return me;
}

/** Ends the session: the cookie is cleared; the page asks for a token. */
export async function logout() {
  try {
    await request('DELETE', '/session');
  } finally {
    csrf = '';
    me = null;
    window.dispatchEvent(new Event('rung:session'));
    window.dispatchEvent(new Event('rung:unauthorized'));
  }
}

function url(path, query) {
  let u = BASE + path;
  if (query) {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) {
      if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    }
    const s = q.toString();
    if (s) u += `?${s}`;
  }
  return u;
}

/** The Response promise index.html's inline script started for this GET
 * (the same URL and headers, the session's cookie sent by the browser),
 * once; null when there is none. */
function takeEarly(method, u) {
  const early = window.rungEarly;
  const key = u.slice(BASE.length);
  if (!early || method !== 'GET' || !early[key]) return null;
  const p = early[key];
  delete early[key];
  return p;
}

/** Drops the early requests not taken (another page was opened first). */
export function dropEarly() {
  window.rungEarly = null;
}

/** p, or an AbortError as soon as signal aborts. */
function abortable(p, signal) {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(new DOMException('aborted', 'AbortError'));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new DOMException('aborted', 'AbortError'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

async function request(method, path, { query, signal, as = 'json', body } = {}) {
  const headers = { Accept: as === 'json' ? 'application/json' : '*/*' };
  if (method !== 'GET' && csrf) headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const data = body === undefined ? undefined : JSON.stringify(body);
  const u = url(path, query);
  const early = takeEarly(method, u);
  let resp;
  try {
    resp = await (early ? abortable(early, signal) : fetch(u, { method, headers, body: data, signal, cache: 'no-store' }));
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(0, 'unreachable', `cannot reach rungd: ${e && e.message ? e.message : e}`);
  }
  if (!resp.ok) {
    let body = null;
    try {
      body = await resp.json();
    } catch {
      /* not the API's error shape */
    }
    const err = body && body.error ? body.error : {};
    if (resp.status === 401) window.dispatchEvent(new Event('rung:unauthorized'));
    throw new ApiError(
      resp.status,
      err.code || `http_${resp.status}`,
      err.message || `${method} ${path}: HTTP ${resp.status}`,
      err.field || null,
    );
  }
  if (resp.status === 204) return null;
  if (as === 'blob') return resp.blob();
  if (as === 'text') return resp.text();
  try {
    return await resp.json();
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new ApiError(resp.status, 'bad_json', `${method} ${path}: the answer is not JSON`);
  }
}

/** A page of experiments, newest first; tag: only those tagged so. */
export function listExperiments({ limit, offset, tag } = {}, signal) {
  return request('GET', '/experiments', { query: { limit, offset, tag }, signal });
}

export function getExperiment(id, signal) {
  return request('GET', `/experiments/${id}`, { signal });
}

/** {submitted, effective}: the spec as POSTed (null for experiments
 * stored before rungd kept it) and with its defaults. */
export function getSpec(id, signal) {
  return request('GET', `/experiments/${id}/spec`, { signal });
}

/** PATCH /experiments/{id} with `change` ({tags, notes}, ...); answers the
 * experiment object. */
export function patchExperiment(id, change) {
  return request('PATCH', `/experiments/${id}`, { body: change });
}

export function cancelExperiment(id) {
  return request('POST', `/experiments/${id}/cancel`);
}

/** Pauses a running experiment (nothing new is leased); pauseRunning also
 * pauses its running trials (?running=pause), to resume from their
 * checkpoints. Answers the experiment object. */
export function pauseExperiment(id, { pauseRunning = false } = {}) {
  return request('POST', `/experiments/${id}/pause`, { query: { running: pauseRunning ? 'pause' : undefined } });
}

/** Resumes a paused experiment; answers the experiment object. */
export function resumeExperiment(id) {
  return request('POST', `/experiments/${id}/resume`);
}

/** One page of an experiment's trials; sort is "number" or "value" (best
 * first), state one trial state or "" for all. */
export function listTrials(id, { state, sort, limit, offset } = {}, signal) {
  return request('GET', `/experiments/${id}/trials`, { query: { state, sort, limit, offset }, signal });
}

/** The experiment's metric values from a cursor, or the best trials' whole
 * curves when it has more than `best` (see views/experiment-data.js);
 * metric: another reported metric's (docs/api.md, "curves"). */
export function getCurves(id, { after, generation, limit, best, metric } = {}, signal) {
  return request('GET', `/experiments/${id}/curves`, { query: { after, generation, limit, best, metric }, signal });
}

export function csvUrl(id) {
  return url(`/experiments/${id}/trials.csv`);
}

export function artifactsUrl(trialId) {
  return url(`/trials/${trialId}/artifacts`);
}

/** trials.csv as text: the compact way to read every trial at once. */
export function getCsvText(id, signal) {
  return request('GET', `/experiments/${id}/trials.csv`, { as: 'text', signal });
}

export function getTrial(id, signal) {
  return request('GET', `/trials/${id}`, { signal });
}

/** PATCH /trials/{id} with `change` ({tags, notes}); answers the trial. */
export function patchTrial(id, change) {
  return request('PATCH', `/trials/${id}`, { body: change });
}

/** Reports of the trial's current attempt with step > afterStep. */
export function getMetrics(id, afterStep, signal) {
  return request('GET', `/trials/${id}/metrics`, { query: { after_step: afterStep }, signal });
}

export function listWorkers(signal) {
  return request('GET', '/workers', { signal });
}

/** The event log, oldest first after `after` (docs/api.md, "Events"). */
export function listEvents({ after, experiment, kind, limit } = {}, signal) {
  return request('GET', '/events', { query: { after, experiment, kind, limit }, signal });
}

/** Each parameter's importance per objective and constraint, or for the
 * reported metric `metric` (docs/api.md, GET /experiments/{id}/importance). */
export function getImportance(id, { metric } = {}, signal) {
  return request('GET', `/experiments/${id}/importance`, { query: { metric }, signal });
}

/** The metric over a grid of two numeric parameters x and y, and the
 * trials there (docs/api.md, GET /experiments/{id}/surface). */
export function getSurface(id, { x, y, metric, n } = {}, signal) {
  return request('GET', `/experiments/${id}/surface`, { query: { x, y, metric, n }, signal });
}

/** Every leased attempt with its worker and times (docs/api.md, GET
 * /experiments/{id}/timeline). */
export function getTimeline(id, signal) {
  return request('GET', `/experiments/${id}/timeline`, { signal });
}

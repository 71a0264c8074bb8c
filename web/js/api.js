// The dashboard's only caller of fetch: every request to rungd's REST API
// (docs/api.md) goes through request(), and every failure comes out as ApiError.
// The one exception is index.html's inline script, which asks for an
// experiment page's first data before the modules are in: request() takes
// those Responses (takeEarly) and reads them as its own.

const BASE = '/api/v1';
const TOKEN_KEY = 'rung.token';

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

export function getToken() {
  try {
    return localStorage.getItem(TOKEN_KEY) || '';
  } catch {
    return '';
  }
}

/** Stores the bearer token and tells every poller to try again now. */
export function setToken(token) {
  try {
    if (token) localStorage.setItem(TOKEN_KEY, token);
    else localStorage.removeItem(TOKEN_KEY);
  } catch {
    /* private mode: the token lives only as long as this page */
  }
  memoryToken = token;
  window.dispatchEvent(new Event('rung:token'));
}
let memoryToken = '';

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
 * (the same URL and headers, the token read from the same place), once;
 * null when there is none. */
function takeEarly(method, u, token) {
  const early = window.rungEarly;
  const key = u.slice(BASE.length);
  if (!early || method !== 'GET' || !early[key] || token !== getToken()) return null;
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

async function request(method, path, { query, signal, as = 'json' } = {}) {
  const headers = { Accept: as === 'json' ? 'application/json' : '*/*' };
  const token = getToken() || memoryToken;
  if (token) headers.Authorization = `Bearer ${token}`;
  const u = url(path, query);
  const early = takeEarly(method, u, token);
  let resp;
  try {
    resp = await (early ? abortable(early, signal) : fetch(u, { method, headers, signal, cache: 'no-store' }));
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

export function listExperiments({ limit, offset } = {}, signal) {
  return request('GET', '/experiments', { query: { limit, offset }, signal });
}

export function getExperiment(id, signal) {
  return request('GET', `/experiments/${id}`, { signal });
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
 * curves when it has more than `best` (see views/experiment-data.js). */
export function getCurves(id, { after, generation, limit, best } = {}, signal) {
  return request('GET', `/experiments/${id}/curves`, { query: { after, generation, limit, best }, signal });
}

export function csvUrl(id) {
  return url(`/experiments/${id}/trials.csv`);
}

export function artifactsUrl(trialId) {
  return url(`/trials/${trialId}/artifacts`);
}

/** A trial's kept artifacts (a tar) as a Blob, for a download that carries the token. */
export function getArtifacts(trialId) {
  return request('GET', `/trials/${trialId}/artifacts`, { as: 'blob' });
}

/** trials.csv as a Blob, for downloads that must carry the token. */
export function getCsv(id) {
  return request('GET', `/experiments/${id}/trials.csv`, { as: 'blob' });
}

/** trials.csv as text: the compact way to read every trial at once. */
export function getCsvText(id, signal) {
  return request('GET', `/experiments/${id}/trials.csv`, { as: 'text', signal });
}

export function getTrial(id, signal) {
  return request('GET', `/trials/${id}`, { signal });
}

/** Reports of the trial's current attempt with step > afterStep. */
export function getMetrics(id, afterStep, signal) {
  return request('GET', `/trials/${id}/metrics`, { query: { after_step: afterStep }, signal });
}

export function listWorkers(signal) {
  return request('GET', '/workers', { signal });
}

export function hasToken() {
  return Boolean(getToken() || memoryToken);
}

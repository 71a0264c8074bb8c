// Live updates: runs a view's tick about once a second while the tab is
// visible, pauses while it is hidden, and backs off exponentially (up to
// 30 s) while ticks fail, with the error in the banner until one succeeds.
import { clearError, reportError } from './shell.js';

/** Returned by a tick when there is nothing left to watch. */
export const DONE = Symbol('done');

const INTERVAL_MS = 1000;
const MAX_DELAY_MS = 30000;

/**
 * Starts polling: tick(signal) runs now, then again INTERVAL_MS after it
 * settles (or after the number of ms it returns; DONE stops). `source` names
 * its errors in the banner. Returns {stop, kick}: kick runs a tick now (after
 * the one in flight), e.g. when the user changes a filter.
 */
export function startPoll(source, tick, { interval = INTERVAL_MS, maxDelay = MAX_DELAY_MS } = {}) {
  let timer = null;
  let running = false;
  let again = false;
  let stopped = false;
  let done = false;
  let delay = interval;
  let ctrl = null;

  const visible = () => document.visibilityState !== 'hidden';

  function schedule(ms) {
    clearTimeout(timer);
    timer = null;
    if (stopped || done || !visible()) return; // visibilitychange resumes
    timer = setTimeout(run, Math.max(0, ms));
  }

  async function run() {
    timer = null;
    if (stopped || done) return;
    if (!visible()) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    ctrl = new AbortController();
    let next = interval;
    try {
      const r = await tick(ctrl.signal);
      if (stopped) return;
      clearError(source);
      delay = interval;
      if (r === DONE) done = true;
      else if (typeof r === 'number') next = r;
    } catch (e) {
      if (stopped || (e && e.name === 'AbortError')) return;
      reportError(source, e);
      delay = Math.min(maxDelay, delay * 2);
      next = delay;
    } finally {
      running = false;
    }
    if (again) {
      again = false;
      done = false;
      next = 0;
    }
    schedule(next);
  }

  function onVisibility() {
    if (visible()) {
      if (!running && !timer) run();
    } else {
      clearTimeout(timer); // paused until the tab shows again
      timer = null;
    }
  }

  function kick() {
    if (stopped) return;
    delay = interval;
    done = false;
    if (running) {
      again = true;
      return;
    }
    clearTimeout(timer);
    timer = null;
    run();
  }

  document.addEventListener('visibilitychange', onVisibility);
  window.addEventListener('rung:token', kick);
  run();

  return {
    kick,
    stop() {
      stopped = true;
      clearTimeout(timer);
      if (ctrl) ctrl.abort();
      document.removeEventListener('visibilitychange', onVisibility);
      window.removeEventListener('rung:token', kick);
      clearError(source);
    },
  };
}

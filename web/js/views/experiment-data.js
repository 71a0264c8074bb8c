// What the experiment page's charts draw, kept up to date incrementally:
//
// - curves: every reported value of the metric, from GET .../curves with a
//   cursor, so each poll brings only new points; when rungd restarted (the
//   generation changed) or the cursor is not where we left off, everything
//   is dropped and rebuilt. Only each trial's latest attempt is kept. An
//   experiment with more than CURVES_BEST trials that have a value answers
//   with the whole curves of its CURVES_BEST best instead (a million points
//   take seconds to send and read, and a chart of them shows no more):
//   those replace the map, at most every BEST_REFRESH_MS. With another
//   metric picked (views/metric-state.js) they are that metric's curves
//   (?metric=NAME; the best trials still ranked by the objective): picking
//   one drops what is held and reads it from the start.
// - trials: id -> trial object (number, state, config, best). Loaded once
//   from trials.csv (one compact request; JSON pages of 1,000 if its header
//   is not the expected one). Afterwards only trials that can still change
//   are asked for: the running ones, the paused ones when the counts moved,
//   and one by one those that left these states or reported while we held
//   them as pending. A trial seen in a final state is never fetched again.
//   Under the pbt scheduler the first listing is read as JSON pages: the
//   charts need every trial's `lineage`, which trials.csv does not hold.
import * as api from '../api.js';
import { trialsFromCsv } from '../csv.js';
import { FINAL, countTotal } from '../format.js';
import { isPbt } from '../pbt.js';

const PAGE = 1000; // docs/api.md: lists give at most 1,000 at once
const CURVES_PAGE = 250000; // server/api_experiments.c CURVES_MAX
export const CURVES_BEST = 1000; // curves drawn at most: the best trials'
const BEST_REFRESH_MS = 15000; // the best trials' curves are read again after this
const SINGLE_PER_TICK = 200; // single-trial fetches per poll; the rest wait
const PARALLEL = 6; // requests at once (a browser opens 6 per host)

async function pooled(items, n, fn) {
  let next = 0;
  const workers = Array.from({ length: Math.min(n, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      await fn(items[i]);
    }
  });
  await Promise.all(workers);
}

export class ExperimentData {
  constructor(id) {
    this.id = id;
    this.generation = null;
    this.cursor = 0;
    this.curves = new Map(); // trial id -> {attempt, steps: [], values: []}
    this.trials = new Map(); // trial id -> trial object
    this.loaded = false; // the first full listing is in
    this.countsSig = ''; // the counts when the paused trials were last listed
    this.suspects = new Set(); // trial ids to fetch one by one
    this.curvesVersion = 0;
    this.curvesBest = null; // {best, ranked} while only the best trials' curves are held
    this.bestReadAt = 0; // performance.now() of the last read of them
    this.trialsVersion = 0;
    this.curvesMetric = null; // the reported metric the curves are of; null: the objective
    this.metricNames = new Set(); // every reported metric's name (trials.csv's metric:<name>, trials' last)
  }

  /** The curves of the reported metric `name` from now on (null: the
   * experiment's objective); what is held is dropped when it changes. */
  setCurvesMetric(name) {
    if ((name || null) === this.curvesMetric) return;
    this.curvesMetric = name || null;
    this.curves.clear();
    this.generation = null;
    this.cursor = 0;
    this.curvesBest = null;
    this.bestReadAt = 0;
    this.curvesVersion++;
  }

  /** Starts reading trials.csv, before the experiment is in, for the first
   * syncTrials. */
  prefetch(signal) {
    if (this.loaded || this.csv) return;
    this.csv = api.getCsvText(this.id, signal);
    this.csv.catch(() => {}); // awaited in syncTrials
  }

  /** Fetches the curve points that came since the last call. */
  async syncCurves(signal) {
    if (this.curvesBest && performance.now() - this.bestReadAt < BEST_REFRESH_MS) return;
    for (;;) {
      const metric = this.curvesMetric;
      const doc = await api.getCurves(this.id, {
        after: this.generation === null ? 0 : this.cursor,
        generation: this.generation === null ? 0 : this.generation,
        limit: CURVES_PAGE,
        best: CURVES_BEST,
        metric: metric || undefined,
      }, signal);
      if (metric !== this.curvesMetric) return; // another metric was picked meanwhile: the next poll reads it
      const best = doc.best ? { best: doc.best, ranked: doc.ranked } : null;
      if (!best && this.curvesBest) {
        // Fewer trials than before (never in practice): all from the start.
        this.curvesBest = null;
        this.generation = null;
        continue;
      }
      this.curvesBest = best;
      if (best) this.bestReadAt = performance.now();
      if (best || doc.generation !== this.generation || doc.from !== this.cursor) {
        // The best trials' whole curves, a restarted rungd or a lost
        // cursor: what we hold is replaced.
        this.curves.clear();
        this.generation = doc.generation;
        this.curvesVersion++;
      }
      const items = doc.items || [];
      for (const [tid, attempt, step, value] of items) {
        let c = this.curves.get(tid);
        if (!c || attempt > c.attempt) {
          c = { attempt, steps: [], values: [] };
          this.curves.set(tid, c);
        } else if (attempt < c.attempt) {
          continue; // an earlier attempt's late point
        }
        c.steps.push(step);
        c.values.push(value);
        const t = this.trials.get(tid);
        if (!t || !FINAL.has(t.state)) this.suspects.add(tid);
      }
      if (items.length) this.curvesVersion++;
      this.cursor = doc.next;
      if (best || items.length < CURVES_PAGE) return;
    }
  }

  #store(t) {
    this.trials.set(t.id, t);
    if (t.last) for (const k of Object.keys(t.last)) this.metricNames.add(k);
    this.suspects.delete(t.id);
  }

  /** All pages of a trials listing (state "" = every trial). */
  async #listAll(state, total, signal) {
    const pages = Math.max(1, Math.ceil(total / PAGE));
    const offsets = Array.from({ length: pages }, (_, i) => i * PAGE);
    const out = [];
    await pooled(offsets, PARALLEL, async (offset) => {
      const doc = await api.listTrials(this.id, { state, sort: 'number', limit: PAGE, offset }, signal);
      out.push(doc);
    });
    const items = out.flatMap((d) => d.items || []);
    const actual = out.reduce((m, d) => Math.max(m, d.total || 0), 0);
    if (actual > pages * PAGE) {
      // More came while we asked: read the rest in order.
      for (let offset = pages * PAGE; offset < actual; offset += PAGE) {
        const doc = await api.listTrials(this.id, { state, sort: 'number', limit: PAGE, offset }, signal);
        items.push(...(doc.items || []));
      }
    }
    return items;
  }

  /** Brings the trial objects up to date for the experiment `x` just read. */
  async syncTrials(x, signal) {
    const counts = x.counts || {};
    if (!this.loaded) {
      // A failed request fails this poll (the next one asks again); a CSV
      // whose header is not the expected one is read as JSON pages instead,
      // and so is a pbt experiment (a prefetched CSV is left unread).
      let items = null;
      if (!isPbt(x)) items = trialsFromCsv(await (this.csv || api.getCsvText(this.id, signal)), x.search_space);
      this.csv = null;
      if (items) {
        // trials.csv names every reported metric in its header: the
        // trials' `last` need not be walked for them.
        for (const name of items.metricNames) this.metricNames.add(name);
        for (const t of items) {
          this.trials.set(t.id, t);
          this.suspects.delete(t.id);
        }
      } else {
        items = await this.#listAll('', countTotal(counts), signal);
        for (const t of items) this.#store(t);
      }
      this.loaded = true;
      this.trialsVersion++;
      return;
    }
    // Running trials change with every report: their list is read each
    // time. Paused and preempted ones do not change while they wait, so
    // theirs is read only when the counts moved. A trial we hold in such a state that is not
    // listed any more has changed state and is fetched on its own.
    const sig = JSON.stringify(counts);
    const states = ['running'];
    if (sig !== this.countsSig) states.push('paused', 'preempted');
    this.countsSig = sig;
    for (const t of this.trials.values()) {
      if (states.includes(t.state)) this.suspects.add(t.id);
    }
    let changed = false;
    for (const state of states) {
      if (!counts[state]) continue;
      for (const t of await this.#listAll(state, counts[state], signal)) {
        const old = this.trials.get(t.id);
        if (!old || old.state !== t.state || old.step !== t.step ||
            JSON.stringify(old.best) !== JSON.stringify(t.best) ||
            (old.lineage || []).length !== (t.lineage || []).length) changed = true;
        this.#store(t);
      }
    }
    const single = [...this.suspects].slice(0, SINGLE_PER_TICK);
    await pooled(single, PARALLEL, async (tid) => {
      try {
        this.#store(await api.getTrial(tid, signal));
        changed = true;
      } catch (e) {
        if (e && e.status === 404) this.suspects.delete(tid);
        else throw e;
      }
    });
    if (changed) this.trialsVersion++;
  }

  /** Trials left to fetch one by one (the next poll comes sooner then). */
  get backlog() {
    return this.suspects.size;
  }
}

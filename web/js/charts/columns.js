// The trials with a value as columns of numbers, built once per change of
// the trials and shared by the charts that draw every trial (scatter per
// parameter, parallel coordinates): with 50,000 trials, walking the trial
// objects and building an array per point in each chart cost more than
// drawing them (web/README.md).
import { isNum } from '../format.js';
import { metricValue } from '../views/metric-state.js';
import { axisValue, robustRange } from './uplot.js';

export class TrialColumns {
  /** trials: Map id -> trial; the rows are those with a finite value and a
   * config, in the Map's order: the best value, or with `metric` (the
   * picked one, views/metric-state.js) that metric's value. */
  constructor(trials, metric = null) {
    const rows = [];
    const values = [];
    if (metric) {
      for (const t of trials.values()) {
        const v = metricValue(t, metric);
        if (v !== null && t.config) {
          rows.push(t);
          values.push(v);
        }
      }
    } else {
      for (const t of trials.values()) {
        if (t.best && isNum(t.best.value) && t.config) {
          rows.push(t);
          values.push(t.best.value);
        }
      }
    }
    const n = rows.length;
    this.n = n;
    this.trials = rows;
    this.metric = metric;
    this.id = new Float64Array(n);
    this.value = Float64Array.from(values);
    this.infeasible = new Uint8Array(n);
    let bad = 0;
    for (let i = 0; i < n; i++) {
      const t = rows[i];
      this.id[i] = t.id;
      if (t.feasible === false) {
        this.infeasible[i] = 1;
        bad++;
      }
    }
    this.infeasibleCount = bad;
    this.params = new Map();
    this.range = null;
  }

  /** Each row's position on an axis of the parameter `name` (axisKind;
   * axisValue), NaN where it has none. */
  param(name, axis) {
    const key = `${name}\u0000${axis.kind}`;
    let col = this.params.get(key);
    if (!col) {
      col = new Float64Array(this.n);
      for (let i = 0; i < this.n; i++) {
        const x = axisValue(axis, this.trials[i].config[name]);
        col[i] = x === null ? NaN : x;
      }
      this.params.set(key, col);
    }
    return col;
  }

  /** robustRange of every row's value. */
  valueRange() {
    if (!this.range) this.range = robustRange([this.value]);
    return this.range;
  }
}

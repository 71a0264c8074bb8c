// The trials with a value as columns of numbers, built once per change of
// the trials and shared by the charts that draw every trial (scatter per
// parameter, parallel coordinates): with 50,000 trials, walking the trial
// objects and building an array per point in each chart cost more than
// drawing them (web/README.md).
import { isNum } from '../format.js';
import { axisValue, robustRange } from './uplot.js';

export class TrialColumns {
  /** trials: Map id -> trial; the rows are those with a finite best value
   * and a config, in the Map's order. */
  constructor(trials) {
    const rows = [];
    for (const t of trials.values()) {
      if (t.best && isNum(t.best.value) && t.config) rows.push(t);
    }
    const n = rows.length;
    this.n = n;
    this.trials = rows;
    this.id = new Float64Array(n);
    this.value = new Float64Array(n);
    this.infeasible = new Uint8Array(n);
    let bad = 0;
    for (let i = 0; i < n; i++) {
      const t = rows[i];
      this.id[i] = t.id;
      this.value[i] = t.best.value;
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

// Empirical distribution function of the metric (the first objective, or
// the one the page's metric picker chose) over
// the trials with a value, as optuna's plot_edf draws it: at each value v
// the share of those trials whose value is at most v, a step line rising
// by 1/n at each trial. It shows at a glance how much of a search landed
// near the best. The trials are the page's (trials.csv): a failed trial
// with no value has no step (counted in the caption); infeasible trials
// (constraints) are left out of the line, which is of the feasible ones,
// and a dashed grey line counts every trial with a value.
//
// For tests: data-points counts the line's steps, data-infeasible the
// trials left out, data-drawn (JSON) the steps as [trial_id, value, share].
import { h, setText } from '../dom.js';
import { isNum, num } from '../format.js';
import { ACCENT, chartWidth, onWidth, paddedRange, showMissing, tickValues } from './uplot.js';
import { clipped, plotFrame } from './linechart.js';

const HEIGHT = 240;
const GREY = '#9ca3af';

/** The EDF of points [{id, value}] with a finite value: [{id, value,
 * share}] sorted by value (ties by id), share = (k + 1) / n, so it never
 * decreases and ends at 1. Pure: tested in node. */
export function edfSteps(points) {
  const pts = points.filter((p) => isNum(p.value)).sort((a, b) => a.value - b.value || a.id - b.id);
  const n = pts.length;
  return pts.map((p, k) => ({ id: p.id, value: p.value, share: (k + 1) / n }));
}

/** A trial's best value of the objective: the EDF's value by default. */
const bestValue = (t) => (t.best ? t.best.value : null);

/** trials: Map id -> trial ({best: {value}, feasible, state}); value(t):
 * the trial's value of the metric drawn (the best value of the objective
 * unless the page's metric picker chose another: metricValue in
 * views/metric-state.js). The trials the EDF is of: {feasible: [{id,
 * value}], all: [{id, value}], infeasible, noValue (finished without a
 * value)}. Pure. */
export function edfInput(trials, value = bestValue) {
  const feasible = [];
  const all = [];
  let infeasible = 0;
  let noValue = 0;
  for (const t of trials.values()) {
    const v = value(t);
    if (!isNum(v)) {
      if (t.state === 'completed' || t.state === 'stopped' || t.state === 'failed') noValue++;
      continue;
    }
    all.push({ id: t.id, value: v });
    if (t.feasible === false) infeasible++;
    else feasible.push({ id: t.id, value: v });
  }
  return { feasible, all, infeasible, noValue };
}

export function createEdfChart(el, uPlot, { metric, mode, onPick, value }) {
  if (!uPlot) {
    showMissing(el);
    return { update() {}, destroy() {} };
  }
  const plot = h('div', { class: 'chart-plot' });
  const caption = h('p', { class: 'muted', testid: 'edf-caption' });
  const info = h('div', { class: 'chart-info' });
  el.replaceChildren(caption, plot, info);
  Object.assign(el.dataset, { points: '0', infeasible: '0', drawn: '[]' });
  let steps = [];
  let allSteps = [];
  let xr = [0, 1];
  let hot = null;
  let u = null;

  // A step line: flat at each share until the next value, vertical at it.
  function trace(ctx, f, list) {
    if (!list.length) return;
    const p = new Path2D();
    p.moveTo(f.X(list[0].value), f.Y(0));
    let prev = 0;
    for (const s of list) {
      const x = f.X(s.value);
      p.lineTo(x, f.Y(prev));
      p.lineTo(x, f.Y(s.share));
      prev = s.share;
    }
    p.lineTo(f.left + f.width, f.Y(1));
    ctx.stroke(p);
  }

  function draw(self) {
    const f = plotFrame(self);
    if (!f) return;
    clipped(self, (ctx) => {
      if (allSteps.length !== steps.length) {
        ctx.setLineDash([5 * f.dpr, 4 * f.dpr]);
        ctx.strokeStyle = GREY;
        ctx.lineWidth = 1.5 * f.dpr;
        trace(ctx, f, allSteps);
        ctx.setLineDash([]);
      }
      ctx.strokeStyle = ACCENT;
      ctx.lineWidth = 2 * f.dpr;
      trace(ctx, f, steps);
      if (hot) {
        ctx.fillStyle = ACCENT;
        const r = 4 * f.dpr;
        ctx.fillRect(f.X(hot.value) - r, f.Y(hot.share) - r, 2 * r, 2 * r);
      }
    });
  }

  function nearest(self) {
    const left = self.cursor.left;
    if (left === null || left < 0 || !steps.length) return null;
    const v = self.posToVal(left, 'x');
    // The last step at or before the cursor's value (the share there).
    let lo = -1;
    for (let k = 0; k < steps.length && steps[k].value <= v; k++) lo = k;
    return lo < 0 ? null : steps[lo];
  }

  function make() {
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: { time: false, range: (s, min, max) => paddedRange(false)(s, xr[0], xr[1]) }, y: { range: () => [0, 1.02] } },
      axes: [{ label: metric, values: tickValues }, { label: 'share of trials \u2264 value', size: 60, values: tickValues }],
      series: [{}, { stroke: 'transparent', paths: () => null, points: { show: false } }],
      hooks: {
        draw: [draw],
        setCursor: [(self) => {
          const next = nearest(self);
          if (next) setText(info, `${metric} \u2264 ${num(next.value)}: ${Math.round(next.share * steps.length)} of ${steps.length} trials (${num(next.share * 100)}%); trial id ${next.id} at that value`);
          if (next !== hot) {
            hot = next;
            plot.style.cursor = next ? 'pointer' : '';
            self.redraw(false);
          }
        }],
      },
    }, [[xr[0], xr[1]], [null, null]], plot);
    u.over.addEventListener('click', () => {
      if (hot && onPick) onPick(hot.id);
    });
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT });
  });

  return {
    /** trials: Map id -> trial. */
    update(trials) {
      const input = edfInput(trials, value);
      steps = edfSteps(input.feasible);
      allSteps = edfSteps(input.all);
      hot = null;
      const vals = allSteps.map((s) => s.value);
      xr = vals.length ? [vals[0], vals[vals.length - 1]] : [0, 1];
      Object.assign(el.dataset, {
        points: String(steps.length),
        infeasible: String(input.infeasible),
        drawn: JSON.stringify(steps.map((s) => [s.id, s.value, s.share])),
      });
      const better = mode === 'max' ? 'higher is better: the best trials are at the right' : 'lower is better: the best trials are at the left';
      setText(caption, [
        `${steps.length} trial${steps.length === 1 ? '' : 's'} with a value of ${metric} (${better})`,
        input.infeasible ? `${input.infeasible} infeasible left out (dashed grey: every trial with a value)` : null,
        input.noValue ? `${input.noValue} finished without a value` : null,
      ].filter(Boolean).join('; '));
      if (!u) make();
      else u.setData([[xr[0], xr[1]], [null, null]]);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

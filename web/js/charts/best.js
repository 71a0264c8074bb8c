// Optimization history: every trial's best value against its number (dots)
// and the best value so far (a stepped line), as optuna-dashboard draws it;
// of the picked metric (views/metric-state.js: a reported metric's last
// value, better as its mode says), on a log y axis when asked for and every
// value is > 0, else linear with a note (logOrLinear).
import { h, setText } from '../dom.js';
import { metricValue } from '../views/metric-state.js';
import {
  ACCENT, BEST, INT_INCRS, chartWidth, distinctTicks, dotsHook, intSplits, logOrLinear, logRange, logSplits, logTicks, onWidth,
  paddedRange, robustRange, showMissing, tickValues,
} from './uplot.js';

const HEIGHT = 260;

/**
 * uPlot paths for the best-so-far series: the line uPlot's
 * stepped({align: 1}) draws, with a vertex only where the value changes.
 * 50,000 trials have a few dozen improvements, and a path of 100,000
 * collinear segments costs time to build and more to stroke.
 */
function bestPath(u, si, i0, i1) {
  const xs = u.data[0];
  const ys = u.data[si];
  const X = (v) => u.valToPos(v, 'x', true);
  const Y = (v) => u.valToPos(v, 'y', true);
  const stroke = new Path2D();
  let prev = null;
  let last = -1;
  for (let i = i0; i <= i1; i++) {
    const y = ys[i];
    if (y === null || y === undefined) continue;
    if (prev === null) stroke.moveTo(X(xs[i]), Y(y));
    else if (y !== prev) {
      const x = X(xs[i]);
      stroke.lineTo(x, Y(prev));
      stroke.lineTo(x, Y(y));
    }
    prev = y;
    last = i;
  }
  if (last >= 0) stroke.lineTo(X(xs[last]), Y(prev));
  return { stroke, fill: null, clip: null, band: null, gaps: null, flags: 0 };
}

/** metric: the picked metric ({name, kind, mode, single}, metric-state.js),
 * or its name with mode (the objective). */
export function createBestChart(el, uPlot, { metric, mode }) {
  if (!uPlot) {
    showMissing(el);
    return { update() {}, destroy() {} };
  }
  const m = typeof metric === 'string' ? { name: metric, kind: 'objective', single: true, mode } : metric;
  const plot = h('div', { class: 'chart-plot' });
  const note = h('div', { class: 'chart-note', testid: 'scale-note', hidden: true });
  el.replaceChildren(note, plot);
  el.dataset.series = '0';
  let yr = [0, 1];
  let u = null;
  let ylog = false;
  const dots = dotsHook([[1, `${ACCENT}99`, 4]]);
  const better = m.mode === 'max' ? (a, b) => a > b : (a, b) => a < b;

  /** The y axis's labels, kept in data-y-ticks (JSON) for tests. */
  function yTicks(self, splits) {
    const labels = distinctTicks(splits);
    el.dataset.yTicks = JSON.stringify(labels);
    return labels;
  }

  function make(data) {
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false, range: paddedRange(false) }, y: { ...(ylog ? { distr: 3, log: 10 } : {}), range: () => yr } },
      axes: [
        { label: 'trial number', incrs: INT_INCRS, splits: intSplits, values: tickValues },
        ylog ? { label: m.name, size: 60, splits: logSplits, values: logTicks } : { label: m.name, size: 60, values: yTicks },
      ],
      series: [
        { label: 'trial' },
        { label: m.name, stroke: ACCENT, paths: () => null, points: { show: false } },
        { label: 'best so far', stroke: BEST, width: 2, paths: bestPath, points: { show: false } },
      ],
      hooks: { drawSeries: [(self, si) => { if (si === 1) dots(self); }] },
    }, data, plot);
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT }); // not at the first call: same size
  });

  return {
    /** trials: Map id -> trial; uses number and the metric's value; log:
     * a log y axis asked for. */
    update(trials, { log = false } = {}) {
      // Columns, not a [number, value] pair per trial: 50,000 pairs and a
      // sort by comparator cost more than the drawing. The trials come in
      // number order (trials.csv), so the sort is skipped when they are.
      let xs = [];
      let ys = [];
      let sorted = true;
      for (const t of trials.values()) {
        const v = metricValue(t, m);
        if (v === null) continue;
        if (xs.length && t.number < xs[xs.length - 1]) sorted = false;
        xs.push(t.number);
        ys.push(v);
      }
      if (!sorted) {
        const order = xs.map((_, i) => i).sort((a, b) => xs[a] - xs[b]);
        xs = order.map((i) => xs[i]);
        ys = order.map((i) => ys[i]);
      }
      const n = xs.length;
      const run = new Array(n);
      let cur = null;
      for (let i = 0; i < n; i++) {
        if (cur === null || better(ys[i], cur)) cur = ys[i];
        run[i] = cur;
      }
      const pts = xs;
      const scale = logOrLinear([ys], log);
      yr = scale.log ? logRange([ys]) : robustRange([ys]);
      el.dataset.series = pts.length ? '2' : '0';
      el.dataset.points = String(pts.length);
      el.dataset.yScale = scale.log ? 'log' : 'linear';
      setText(note, scale.note);
      note.hidden = !scale.note;
      const data = [xs, ys, run];
      if (u && scale.log !== ylog) {
        u.destroy();
        u = null;
      }
      ylog = scale.log;
      if (!u) make(data);
      else u.setData(data);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

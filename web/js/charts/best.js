// Optimization history: every trial's best value against its number (dots)
// and the best value so far (a stepped line), as optuna-dashboard draws it.
import { h } from '../dom.js';
import { isNum } from '../format.js';
import { ACCENT, BEST, chartWidth, dotsHook, onWidth, paddedRange, robustRange, showMissing, tick } from './uplot.js';

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

export function createBestChart(el, uPlot, { metric, mode }) {
  if (!uPlot) {
    showMissing(el);
    return { update() {}, destroy() {} };
  }
  const plot = h('div', { class: 'chart-plot' });
  el.replaceChildren(plot);
  el.dataset.series = '0';
  let yr = [0, 1];
  let u = null;
  const dots = dotsHook([[1, `${ACCENT}99`, 4]]);
  const better = mode === 'max' ? (a, b) => a > b : (a, b) => a < b;

  function make(data) {
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      cursor: { drag: { x: true, y: false } },
      scales: { x: { time: false, range: paddedRange(false) }, y: { range: () => yr } },
      axes: [
        { label: 'trial number', incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000] },
        { label: metric, size: 60, values: (s, splits) => splits.map(tick) },
      ],
      series: [
        { label: 'trial' },
        { label: metric, stroke: ACCENT, paths: () => null, points: { show: false } },
        { label: 'best so far', stroke: BEST, width: 2, paths: bestPath, points: { show: false } },
      ],
      hooks: { drawSeries: [(self, si) => { if (si === 1) dots(self); }] },
    }, data, plot);
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT }); // not at the first call: same size
  });

  return {
    /** trials: Map id -> trial; uses number and best.value. */
    update(trials) {
      const pts = [];
      for (const t of trials.values()) {
        if (t.best && isNum(t.best.value)) pts.push([t.number, t.best.value]);
      }
      pts.sort((a, b) => a[0] - b[0]);
      const xs = new Array(pts.length);
      const ys = new Array(pts.length);
      const run = new Array(pts.length);
      let cur = null;
      for (let i = 0; i < pts.length; i++) {
        xs[i] = pts[i][0];
        ys[i] = pts[i][1];
        if (cur === null || better(ys[i], cur)) cur = ys[i];
        run[i] = cur;
      }
      yr = robustRange([ys]);
      el.dataset.series = pts.length ? '2' : '0';
      el.dataset.points = String(pts.length);
      const data = [xs, ys, run];
      if (!u) make(data);
      else u.setData(data);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

// One parameter against the metric: a dot per trial with a value that holds
// the parameter (a trial that took another branch of a conditional space has
// none and is left out), on a log axis for log domains and with the choices'
// labels for categorical ones. Infeasible trials (constraints) are hollow
// grey squares. data-points counts the dots, data-infeasible the hollow ones.
import { h } from '../dom.js';
import { isNum } from '../format.js';
import { ACCENT, BEST, axisKind, axisValue, chartWidth, decadesOnly, dotsHook, logTicks, paddedRange, jitter, onWidth, robustRange, showMissing, tick } from './uplot.js';

const HEIGHT = 220;
const GREY = '#9ca3af';

/** param: {name, domain} from the search space. */
export function createScatterChart(el, uPlot, { param, metric }) {
  if (!uPlot) {
    showMissing(el);
    return { update() {}, destroy() {} };
  }
  const axis = axisKind(param.domain);
  const plot = h('div', { class: 'chart-plot' });
  el.replaceChildren(h('div', { class: 'chart-caption', text: `${param.name} (${param.domain.type})` }), plot);
  Object.assign(el.dataset, { series: '0', points: '0', infeasible: '0' });
  let yr = [0, 1];
  let u = null;

  const xScale = { time: false };
  const xAxis = { label: param.name };
  if (axis.kind === 'log') {
    xScale.distr = 3;
    xScale.log = 10;
    xScale.range = paddedRange(true);
    xAxis.values = logTicks;
    xAxis.filter = decadesOnly;
  } else if (axis.kind === 'cat') {
    const n = axis.cats.length;
    xScale.range = () => [-0.6, Math.max(n, 1) - 0.4];
    xAxis.splits = () => axis.cats.map((_, i) => i);
    xAxis.values = (s, splits) => splits.map((v) => axis.cats[v] ?? '');
  } else {
    xScale.range = paddedRange(false);
    xAxis.values = (s, splits) => splits.map(tick);
  }

  function make(data) {
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: xScale, y: { range: () => yr } },
      axes: [xAxis, { label: metric, size: 60, values: (s, splits) => splits.map(tick) }],
      series: [
        {},
        { stroke: ACCENT, paths: () => null, points: { show: false } },
        { stroke: BEST, paths: () => null, points: { show: false } },
        { stroke: GREY, paths: () => null, points: { show: false } },
      ],
      hooks: { draw: [dotsHook([[3, GREY, 5, true], [1, `${ACCENT}99`, 4], [2, BEST, 8]])] },
    }, data, plot);
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT }); // not at the first call: same size
  });

  return {
    update(trials, bestId) {
      const pts = [];
      for (const t of trials.values()) {
        if (!t.best || !isNum(t.best.value) || !t.config) continue;
        let x = axisValue(axis, t.config[param.name]);
        if (x === null) continue;
        if (axis.kind === 'cat') x += jitter(t.id) * 0.5;
        // 1: a trial, 2: the best, 3: infeasible (never the best).
        pts.push([x, t.best.value, t.id === bestId ? 2 : t.feasible === false ? 3 : 1]);
      }
      pts.sort((a, b) => a[0] - b[0]);
      const xs = pts.map((p) => p[0]);
      const col = (k) => pts.map((p) => (p[2] === k ? p[1] : null));
      yr = robustRange([pts.map((p) => p[1])]);
      Object.assign(el.dataset, {
        series: pts.length ? '1' : '0',
        points: String(pts.length),
        infeasible: String(pts.filter((p) => p[2] === 3).length),
      });
      const data = [xs, col(1), col(2), col(3)];
      if (!u) make(data);
      else u.setData(data);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

// One parameter against the metric: a dot per trial with a value that holds
// the parameter (a trial that took another branch of a conditional space has
// none and is left out), on a log axis for log domains and with the choices'
// labels for categorical ones. Infeasible trials (constraints) are hollow
// grey squares. data-points counts the dots, data-infeasible the hollow ones.
// The metric is the picked one (views/metric-state.js; the caller's
// TrialColumns hold its values); a log y axis when asked for and every
// value is > 0, else linear with a note (logOrLinear). With trials brushed
// on the parallel coordinates the others are pale (data-highlighted counts
// the rest); data-values (JSON: [trial id, value] of each dot, while there
// are at most 500) is for tests.
//
// The dots are kept out of uPlot (its data is only the x range) and drawn
// by dotsHook from typed arrays built from the shared TrialColumns
// (columns.js): uPlot would want them sorted by x and walk them at every
// draw.
import { h, setText } from '../dom.js';
import { TrialColumns } from './columns.js';
import {
  ACCENT, BEST, axisKind, chartWidth, decadesOnly, dotsHook, logOrLinear, logRange, logTicks, paddedRange, jitter,
  logSplits, onWidth, robustRange, showMissing, tickValues,
} from './uplot.js';

const HEIGHT = 220;
const GREY = '#9ca3af';
const PALE = '#d1d5db';

/** param: {name, domain} from the search space. */
export function createScatterChart(el, uPlot, { param, metric }) {
  if (!uPlot) {
    showMissing(el);
    return { update() {}, destroy() {} };
  }
  const axis = axisKind(param.domain);
  const plot = h('div', { class: 'chart-plot' });
  const note = h('div', { class: 'chart-note', testid: 'scale-note', hidden: true });
  el.replaceChildren(h('div', { class: 'chart-caption', text: `${param.name} (${param.domain.type})` }), note, plot);
  Object.assign(el.dataset, { series: '0', points: '0', infeasible: '0' });
  let yr = [0, 1];
  let u = null;
  let ylog = false;
  // The dots by series (1: a trial, 2: the best, 3: infeasible, 4: not
  // brushed): {xs, ys, n}.
  let dots = [null, null, null, null, null];

  const xScale = { time: false };
  const xAxis = { label: param.name };
  if (axis.kind === 'log') {
    xScale.distr = 3;
    xScale.log = 10;
    xScale.range = paddedRange(true);
    xAxis.splits = logSplits;
    xAxis.values = logTicks;
    xAxis.filter = decadesOnly;
  } else if (axis.kind === 'cat') {
    const n = axis.cats.length;
    xScale.range = () => [-0.6, Math.max(n, 1) - 0.4];
    xAxis.splits = () => axis.cats.map((_, i) => i);
    xAxis.values = (s, splits) => splits.map((v) => axis.cats[v] ?? '');
  } else {
    xScale.range = paddedRange(false);
    xAxis.values = tickValues;
  }

  function make(data) {
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: xScale, y: { ...(ylog ? { distr: 3, log: 10 } : {}), range: () => yr } },
      axes: [xAxis, ylog ? { label: metric, size: 60, splits: logSplits, values: logTicks } : { label: metric, size: 60, values: tickValues }],
      series: [
        {},
        { stroke: ACCENT, paths: () => null, points: { show: false } },
        { stroke: BEST, paths: () => null, points: { show: false } },
        { stroke: GREY, paths: () => null, points: { show: false } },
        { stroke: PALE, paths: () => null, points: { show: false } },
      ],
      hooks: { draw: [dotsHook([[4, `${PALE}aa`, 4], [3, GREY, 5, true], [1, `${ACCENT}99`, 4], [2, BEST, 8]], (self, si) => dots[si])] },
    }, data, plot);
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT }); // not at the first call: same size
  });

  return {
    /** trials: Map id -> trial; bestId: the best trial's id; cols: their
     * TrialColumns when the caller shares them between charts (of the
     * picked metric); log: a log y axis asked for; brushed: a Set of the
     * brushed trial ids, or null. */
    update(trials, bestId, cols = new TrialColumns(trials), { log = false, brushed = null } = {}) {
      const px = cols.param(param.name, axis);
      const n = cols.n;
      const kinds = new Uint8Array(n); // 0: no dot, else the series
      const sizes = [0, 0, 0, 0, 0];
      let xmin = Infinity;
      let xmax = -Infinity;
      for (let i = 0; i < n; i++) {
        const x = px[i];
        if (x !== x) continue; // no value on this axis (another branch)
        // 1: a trial, 2: the best, 3: infeasible (never the best), 4: not brushed.
        const k = brushed && !brushed.has(cols.id[i]) ? 4 : cols.id[i] === bestId ? 2 : cols.infeasible[i] ? 3 : 1;
        kinds[i] = k;
        sizes[k]++;
        if (x < xmin) xmin = x;
        if (x > xmax) xmax = x;
      }
      const count = sizes[1] + sizes[2] + sizes[3] + sizes[4];
      const next = sizes.map((m) => ({ xs: new Float64Array(m), ys: new Float64Array(m), n: 0 }));
      for (let i = 0; i < n; i++) {
        const k = kinds[i];
        if (k === 0) continue;
        const d = next[k];
        d.xs[d.n] = axis.kind === 'cat' ? px[i] + jitter(cols.id[i]) * 0.5 : px[i];
        d.ys[d.n++] = cols.value[i];
      }
      dots = next;
      const ys = [next[1].ys, next[2].ys, next[3].ys, next[4].ys];
      const scale = logOrLinear(ys, log);
      yr = scale.log ? logRange(ys) : count === n ? cols.valueRange() : robustRange(ys);
      Object.assign(el.dataset, {
        series: count ? '1' : '0',
        points: String(count),
        infeasible: String(sizes[3]),
        highlighted: String(count - sizes[4]),
        yScale: scale.log ? 'log' : 'linear',
      });
      if (count <= 500) {
        const vals = [];
        for (let i = 0; i < n; i++) if (kinds[i]) vals.push([cols.id[i], cols.value[i]]);
        el.dataset.values = JSON.stringify(vals);
      } else {
        delete el.dataset.values;
      }
      setText(note, scale.note);
      note.hidden = !scale.note;
      // uPlot sees only the x extent (its scale's range adds the margin).
      const data = count ? [[xmin, xmax], [null, null], [null, null], [null, null], [null, null]] : [[], [], [], [], []];
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

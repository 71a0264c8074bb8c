// One trial's reports: each metric against step; the objective on the left
// axis, the other metrics on the right one.
import { h } from '../dom.js';
import { isNum } from '../format.js';
import { BEST, PALETTE, chartWidth, onWidth, showMissing, tickValues, INT_INCRS, intSplits } from './uplot.js';

const HEIGHT = 280;

/** keys: metric names; metric: the experiment's objective. */
export function createTrialChart(el, uPlot, { keys, metric }) {
  if (!uPlot) {
    showMissing(el);
    return { update() {}, destroy() {} };
  }
  const plot = h('div', { class: 'chart-plot' });
  el.replaceChildren(plot);
  el.dataset.series = '0';
  let u = null;
  const others = keys.filter((k) => k !== metric);

  function make(data) {
    const series = [{ label: 'step' }];
    keys.forEach((k, i) => {
      const main = k === metric;
      series.push({
        label: k,
        scale: main ? 'y' : 'y2',
        stroke: main ? BEST : PALETTE[i % PALETTE.length],
        width: main ? 2 : 1.25,
        spanGaps: true,
        points: { show: data[0].length < 60 },
        value: (s, v) => (v === null ? '\u2014' : String(Number(v.toPrecision(6)))),
      });
    });
    const axes = [
      { label: 'step', values: tickValues, incrs: INT_INCRS, splits: intSplits },
      { scale: 'y', label: keys.includes(metric) ? metric : '', size: 60, values: tickValues },
    ];
    if (others.length) {
      axes.push({ scale: 'y2', side: 1, label: others.length === 1 ? others[0] : 'other metrics', size: 60,
        grid: { show: false }, values: tickValues });
    }
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      scales: { x: { time: false }, y: {}, y2: {} },
      axes,
      series,
    }, data, plot);
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT }); // not at the first call: same size
  });

  return {
    /** reports: [{step, metrics}] in step order. */
    update(reports) {
      const data = [reports.map((r) => r.step)];
      for (const k of keys) {
        data.push(reports.map((r) => (r.metrics && isNum(r.metrics[k]) ? r.metrics[k] : null)));
      }
      el.dataset.series = String(reports.length ? keys.length : 0);
      el.dataset.points = String(reports.length);
      if (!u) make(data);
      else u.setData(data);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

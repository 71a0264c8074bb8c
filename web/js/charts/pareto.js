// Two objectives (docs/api.md, "Several objectives and constraints"): each
// trial with values for both as a dot, the experiment's `pareto` (the
// non-dominated feasible trials) in the best colour and joined by a step
// line, infeasible trials as hollow grey rings. Clicking a dot opens its
// trial.
import { h } from '../dom.js';
import { isNum } from '../format.js';
import { ACCENT, BEST, chartWidth, onWidth, paddedRange, showMissing, tick, tickValues } from './uplot.js';

const HEIGHT = 320;
const GREY = '#9ca3af';
const PICK_PX = 8; // how near (CSS px) a click must be to a dot to open its trial

/** metrics: the experiment's `metrics` (the first two are drawn); onPick(trial id). */
export function createParetoChart(el, uPlot, { metrics, onPick }) {
  if (!uPlot) {
    showMissing(el);
    return { update() {}, destroy() {} };
  }
  const [mx, my] = metrics;
  const plot = h('div', { class: 'chart-plot' });
  const caption = h('div', { class: 'chart-caption',
    text: `${mx.name} (${mx.mode}) against ${my.name} (${my.mode}); the Pareto front in orange, infeasible trials hollow grey` });
  el.replaceChildren(caption, plot);
  Object.assign(el.dataset, { series: '0', points: '0', front: '0', infeasible: '0' });
  let u = null;
  let ids = []; // trial id of each point, in data order

  // Dots by hand (as dotsHook): filled for feasible, rings for infeasible.
  function draw(self) {
    const ctx = self.ctx;
    const dpr = self.pxRatio || window.devicePixelRatio || 1;
    const { left, top, width, height } = self.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    const xs = self.data[0];
    const pos = (i, si) => [self.valToPos(xs[i], 'x', true), self.valToPos(self.data[si][i], 'y', true)];
    // The front as a step line, in x order.
    const front = [];
    for (let i = 0; i < xs.length; i++) if (self.data[2][i] !== null) front.push(pos(i, 2));
    front.sort((a, b) => a[0] - b[0]);
    if (front.length > 1) {
      ctx.strokeStyle = `${BEST}88`;
      ctx.lineWidth = dpr;
      ctx.beginPath();
      front.forEach(([px, py], k) => (k ? ctx.lineTo(px, py) : ctx.moveTo(px, py)));
      ctx.stroke();
    }
    for (const [si, color, size, hollow] of [[1, `${ACCENT}aa`, 6, false], [3, GREY, 7, true], [2, BEST, 9, false]]) {
      const r = (size * dpr) / 2;
      for (let i = 0; i < xs.length; i++) {
        if (self.data[si][i] === null) continue;
        const [px, py] = pos(i, si);
        ctx.beginPath();
        ctx.arc(px, py, r, 0, 2 * Math.PI);
        if (hollow) {
          ctx.strokeStyle = color;
          ctx.lineWidth = 1.5 * dpr;
          ctx.stroke();
        } else {
          ctx.fillStyle = color;
          ctx.fill();
        }
      }
    }
    ctx.restore();
  }

  function nearest(self) {
    const { left, top } = self.cursor;
    if (left === undefined || left < 0) return -1;
    let best = -1;
    let bestD = PICK_PX * PICK_PX;
    for (let i = 0; i < ids.length; i++) {
      const y = self.data[1][i] ?? self.data[2][i] ?? self.data[3][i];
      const dx = self.valToPos(self.data[0][i], 'x') - left;
      const dy = self.valToPos(y, 'y') - top;
      if (dx * dx + dy * dy <= bestD) {
        bestD = dx * dx + dy * dy;
        best = i;
      }
    }
    return best;
  }

  function make(data) {
    const none = { paths: () => null, points: { show: false } };
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: { time: false, range: paddedRange(false) }, y: { range: paddedRange(false) } },
      axes: [{ label: mx.name, values: tickValues },
        { label: my.name, size: 60, values: tickValues }],
      series: [{}, { ...none, stroke: ACCENT }, { ...none, stroke: BEST }, { ...none, stroke: GREY }],
      hooks: {
        draw: [draw],
        setCursor: [(self) => {
          const i = nearest(self);
          self.over.style.cursor = i >= 0 ? 'pointer' : '';
          self.over.title = i >= 0 ? `trial ${ids[i]}: ${mx.name} ${tick(self.data[0][i])}` : '';
        }],
        ready: [(self) => self.over.addEventListener('click', () => {
          const i = nearest(self);
          if (i >= 0 && onPick) onPick(ids[i]);
        })],
      },
    }, data, plot);
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT });
  });

  return {
    /** trials: id -> trial object (with `values` and `feasible`); pareto:
     * the experiment's front, [{trial_id, ...}]. */
    update(trials, pareto) {
      const onFront = new Set((pareto || []).map((p) => p.trial_id));
      const pts = [];
      for (const t of trials.values()) {
        const v = t.values || {};
        if (!isNum(v[mx.name]) || !isNum(v[my.name])) continue;
        const kind = t.feasible === false ? 3 : onFront.has(t.id) ? 2 : 1;
        pts.push([v[mx.name], v[my.name], kind, t.id]);
      }
      pts.sort((a, b) => a[0] - b[0]);
      ids = pts.map((p) => p[3]);
      const col = (k) => pts.map((p) => (p[2] === k ? p[1] : null));
      const data = [pts.map((p) => p[0]), col(1), col(2), col(3)];
      Object.assign(el.dataset, {
        series: pts.length ? '1' : '0',
        points: String(pts.length),
        front: String(pts.filter((p) => p[2] === 2).length),
        infeasible: String(pts.filter((p) => p[2] === 3).length),
      });
      if (!u) make(data);
      else u.setData(data);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

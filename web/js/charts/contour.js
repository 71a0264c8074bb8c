// Contour of the metric over two numeric parameters (GET
// /experiments/{id}/surface, docs/api.md): the endpoint's n x n grid of z
// (the GP's posterior mean under the bayes searcher, the other parameters
// held at the best trial's values; otherwise an interpolation of the
// trials' values) painted as filled bands of equal width, the trials that
// made it as dots on top. Log parameters get log axes (the grid's values
// are spaced evenly in log then). A cell is painted from halfway to its
// neighbour on each side, so the bands meet without gaps. Hovering a dot
// names its trial, a click opens it.
//
// For tests: data-points counts the dots, data-drawn (JSON) lists them as
// [trial_id, x, y] in the order of the API's points, data-px the same dots
// as [trial_id, left, top] in CSS px of the plot area (uPlot's .u-over),
// data-model says "gp" or "interpolation", data-levels the band boundaries.
import { h, setText } from '../dom.js';
import { isNum, num } from '../format.js';
import { chartWidth, decadesOnly, logSplits, logTicks, onWidth, showMissing, tickValues } from './uplot.js';

const HEIGHT = 360;
const LEVELS = 10;
// Viridis' stops (dark purple to yellow), interpolated linearly between them.
const RAMP = [[68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [110, 206, 88], [181, 222, 43], [253, 231, 37]];

/** k + 1 boundaries of k equal bands from the smallest to the largest
 * finite value of the grid z (an array of rows; null is undefined), or []
 * when it holds none. A flat grid gets one band around its value. Pure. */
export function contourLevels(z, k = LEVELS) {
  let lo = Infinity;
  let hi = -Infinity;
  for (const row of z || []) {
    for (const v of row || []) {
      if (!isNum(v)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (lo > hi) return [];
  if (lo === hi) {
    const d = Math.abs(lo) * 0.05 || 0.5;
    return [lo - d, hi + d];
  }
  return Array.from({ length: k + 1 }, (_, i) => (i === k ? hi : lo + ((hi - lo) * i) / k));
}

/** The band of v among levels (0 .. levels.length - 2), or -1 for an
 * undefined value. The top boundary belongs to the last band. Pure. */
export function bandOf(v, levels) {
  if (!isNum(v) || levels.length < 2) return -1;
  const last = levels.length - 2;
  if (v <= levels[0]) return 0;
  if (v >= levels[last + 1]) return last;
  let lo = 0;
  let hi = last + 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (v >= levels[mid]) lo = mid;
    else hi = mid;
  }
  return lo;
}

/** The edges of the cells centred on `values` (ascending): halfway between
 * neighbours (geometrically on a log axis), the ends half a step out;
 * values.length + 1 numbers. Pure. */
export function cellEdges(values, log) {
  const n = values.length;
  if (n === 0) return [];
  const f = log ? Math.log10 : (v) => v;
  const g = log ? (v) => 10 ** v : (v) => v;
  const t = values.map(f);
  if (n === 1) {
    const d = log ? 0.5 : Math.abs(t[0]) * 0.05 || 0.5;
    return [g(t[0] - d), g(t[0] + d)];
  }
  const edges = [g(t[0] - (t[1] - t[0]) / 2)];
  for (let i = 0; i + 1 < n; i++) edges.push(g((t[i] + t[i + 1]) / 2));
  edges.push(g(t[n - 1] + (t[n - 1] - t[n - 2]) / 2));
  return edges;
}

/** The colour of band b of `bands`, the better end bright: mode "max"
 * runs dark to bright with the value, "min" the other way. */
export function bandColor(b, bands, mode) {
  let t = bands > 1 ? b / (bands - 1) : 0.5;
  if (mode !== 'max') t = 1 - t;
  const x = t * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const w = x - i;
  const c = RAMP[i].map((v, k) => Math.round(v + (RAMP[i + 1][k] - v) * w));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/** params: the numeric parameters [{name, domain}]; onPick(trialId). The
 * section owns the selects (select: {x, y} elements) and the requests.
 * Returns {update(doc, error), destroy()}. */
export function createContourChart(el, uPlot, { mode, selects, onPick }) {
  const model = h('p', { class: 'muted', testid: 'contour-model' });
  const legend = h('p', { class: 'muted', testid: 'contour-legend' });
  const info = h('div', { class: 'chart-info' });
  const plot = h('div', { class: 'chart-plot' });
  el.replaceChildren(h('div', { class: 'toolbar' }, h('label', null, 'x ', selects.x), h('label', null, 'y ', selects.y)),
    model, plot, legend, info);
  Object.assign(el.dataset, { points: '0', drawn: '[]', model: '', metric: '' });
  if (!uPlot) {
    plot.append(h('p', { class: 'chart-missing', text: 'charts need `npm ci` in web/' }));
    return { update() {}, destroy() {} };
  }
  let u = null;
  let doc = null;
  let grid = null; // {xe, ye, levels, bands}
  let hot = null;
  let axesKey = '';
  let recorded = false; // data-px written for this answer

  function draw(self) {
    if (!doc || !grid) return;
    const ctx = self.ctx;
    const { left, top, width, height } = self.bbox;
    const dpr = self.pxRatio || window.devicePixelRatio || 1;
    const X = (v) => self.valToPos(v, 'x', true);
    const Y = (v) => self.valToPos(v, 'y', true);
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    const { xe, ye, levels } = grid;
    const bands = levels.length - 1;
    const z = doc.z || [];
    for (let i = 0; i < z.length; i++) {
      const row = z[i] || [];
      const y0 = Y(ye[i]);
      const y1 = Y(ye[i + 1]);
      for (let j = 0; j < row.length; j++) {
        const b = bandOf(row[j], levels);
        if (b < 0) continue; // undefined: the card's background shows
        ctx.fillStyle = bandColor(b, bands, mode);
        const x0 = X(xe[j]);
        const x1 = X(xe[j + 1]);
        // One pixel more each way: antialiased edges would leave seams.
        ctx.fillRect(Math.floor(x0), Math.floor(Math.min(y0, y1)), Math.ceil(x1 - x0) + 1, Math.ceil(Math.abs(y1 - y0)) + 1);
      }
    }
    const r = 3.5 * dpr;
    if (!recorded) {
      // Where each dot is, in CSS px of the plot area (uPlot's .u-over),
      // once per answer: tests hover and click them.
      recorded = true;
      const at = (v, axis) => Math.round(self.valToPos(v, axis) * 10) / 10;
      el.dataset.px = JSON.stringify((doc.points || []).map((p) => [p[3], at(p[0], 'x'), at(p[1], 'y')]));
    }
    for (const p of doc.points || []) {
      const hotOne = hot && hot.id === p[3];
      ctx.fillStyle = hotOne ? '#e8590c' : '#ffffff';
      ctx.strokeStyle = '#111827';
      ctx.lineWidth = 1.2 * dpr;
      ctx.beginPath();
      ctx.arc(X(p[0]), Y(p[1]), hotOne ? r * 1.6 : r, 0, 2 * Math.PI);
      ctx.fill();
      ctx.stroke();
    }
    ctx.restore();
  }

  function nearest(self) {
    const { left, top } = self.cursor;
    if (left === null || left < 0 || !doc) return null;
    let best = null;
    let bestD = 12 * 12; // CSS px
    for (const p of doc.points || []) {
      const dx = self.valToPos(p[0], 'x') - left;
      const dy = self.valToPos(p[1], 'y') - top;
      const d = dx * dx + dy * dy;
      if (d < bestD) {
        bestD = d;
        best = { id: p[3], x: p[0], y: p[1], value: p[2] };
      }
    }
    return best;
  }

  function cellText(self) {
    const { left, top } = self.cursor;
    if (left === null || left < 0 || !grid) return '';
    const xv = self.posToVal(left, 'x');
    const yv = self.posToVal(top, 'y');
    const j = grid.xe.findIndex((e, k) => k > 0 && xv <= e) - 1;
    const i = grid.ye.findIndex((e, k) => k > 0 && yv <= e) - 1;
    const v = i >= 0 && j >= 0 ? ((doc.z || [])[i] || [])[j] : null;
    return `${doc.x.param} ${num(xv)}, ${doc.y.param} ${num(yv)}: ${doc.model === 'gp' ? 'GP mean' : 'interpolated'} ${doc.metric} ${isNum(v) ? num(v) : 'undefined'}`;
  }

  function axis(which) {
    const side = doc[which];
    const log = !!side.log;
    const edges = () => (which === 'x' ? grid.xe : grid.ye);
    const scale = { time: false, range: () => (grid ? [edges()[0], edges()[edges().length - 1]] : [1, 10]) };
    const ax = { label: side.param };
    if (log) {
      Object.assign(scale, { distr: 3, log: 10 });
      Object.assign(ax, { splits: logSplits, values: logTicks, filter: decadesOnly });
    } else ax.values = tickValues;
    return { scale, ax };
  }

  function make() {
    const xa = axis('x');
    const ya = axis('y');
    ya.ax.size = 60;
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: xa.scale, y: ya.scale },
      axes: [xa.ax, ya.ax],
      series: [{}, { stroke: 'transparent', paths: () => null, points: { show: false } }],
      hooks: {
        draw: [draw],
        setCursor: [(self) => {
          const next = nearest(self);
          setText(info, next
            ? `trial id ${next.id}: ${doc.x.param} ${num(next.x)}, ${doc.y.param} ${num(next.y)}, ${doc.metric} ${num(next.value)} (click to open)`
            : cellText(self));
          if ((next ? next.id : null) !== (hot ? hot.id : null)) {
            hot = next;
            plot.style.cursor = next ? 'pointer' : '';
            self.redraw(false);
          }
        }],
      },
    }, [[grid.xe[0], grid.xe[grid.xe.length - 1]], [null, null]], plot);
    u.over.addEventListener('click', () => {
      if (hot && onPick) onPick(hot.id);
    });
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) {
      recorded = false; // the dots move
      u.setSize({ width: w, height: HEIGHT });
    }
  });

  return {
    /** doc: the endpoint's answer, or null with error (an ApiError). */
    update(next, error) {
      if (error || !next) {
        doc = null;
        grid = null;
        setText(model, error ? `contour not available: ${error.message}` : 'computing\u2026');
        setText(legend, '');
        Object.assign(el.dataset, { points: '0', drawn: '[]', model: '', metric: '' });
        if (u) u.redraw(false);
        return;
      }
      doc = next;
      hot = null;
      recorded = false;
      const levels = contourLevels(doc.z);
      grid = { xe: cellEdges(doc.x.values || [], doc.x.log), ye: cellEdges(doc.y.values || [], doc.y.log), levels };
      const pts = doc.points || [];
      Object.assign(el.dataset, {
        points: String(pts.length),
        drawn: JSON.stringify(pts.map((p) => [p[3], p[0], p[1]])),
        model: doc.model,
        metric: doc.metric || '',
        levels: JSON.stringify(levels),
      });
      const fixed = Object.entries(doc.fixed || {});
      setText(model, doc.model === 'gp'
        ? `The GP's posterior mean of ${doc.metric} (the bayes searcher's model of the completed trials)` +
          (fixed.length ? `, the other parameters held at the best trial's values: ${fixed.map(([k, v]) => `${k} = ${typeof v === 'number' ? num(v) : JSON.stringify(v)}`).join(', ')}.` : '.')
        : `An interpolation of the completed trials' ${doc.metric} over ${doc.x.param} and ${doc.y.param} (the other parameters vary: this is not a model).`);
      setText(legend, levels.length
        ? `${levels.length - 1} bands of ${doc.metric} from ${num(levels[0])} to ${num(levels[levels.length - 1])}; the better end is bright. Dots: ${pts.length} completed trials.`
        : `No defined value of ${doc.metric} on this grid. Dots: ${pts.length} completed trials.`);
      // New axes (another parameter, or log against linear): a new plot.
      const key = `${doc.x.param}/${doc.x.log}/${doc.y.param}/${doc.y.log}`;
      if (u && key !== axesKey) {
        u.destroy();
        u = null;
      }
      axesKey = key;
      if (!u) make();
      else u.setData([[grid.xe[0], grid.xe[grid.xe.length - 1]], [null, null]]);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

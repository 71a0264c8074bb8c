// Parallel coordinates, drawn on a canvas of our own (uPlot has no such
// plot), in two forms:
//
// - parameters: an axis per parameter (flattened dotted paths, docs/api.md
//   "Nested and conditional spaces") and one for the metric; one polyline
//   per trial with a value, coloured by its value (better = warmer), the
//   best trial on top in bold.
// - objectives (three or four objectives): an axis per objective, each
//   turned so that better is up; one polyline per trial with a value for
//   every objective, the Pareto front's trials in the best colour and bold.
//
// Infeasible trials (constraints) are dashed grey lines under the others.
// An axis some trials have no value on (a branch parameter, for the trials
// that took another branch) gets an "n/a" mark below its foot, and those
// trials' lines pass through it: a line is never broken. data-series counts
// the lines, data-infeasible the dashed ones, data-axis-points (JSON: axis
// name -> count) the lines with a value on each axis.
//
// Brushing: a drag along an axis selects a range of it (several axes AND
// together); a click on an axis outside its range clears that range. The
// lines outside the selection are drawn pale under the others; the ranges
// are drawn on a canvas over the chart's (so a drag redraws only that), and
// onBrush(ids) hears the selected trials' ids (a Set; null when nothing is
// brushed) once the mouse is released. For tests: data-brush (JSON: axis
// name -> [lo, hi] in the axis's values; a categorical axis's in its
// choices' positions 0, 1, ...), data-brushed (how many lines are
// selected) and data-axes (JSON: [{name, x, top, bottom}] in CSS pixels of
// the canvas).
//
// The lines are held as columns (typed arrays: each line's value on each
// axis, its id, metric and whether it is infeasible), from the shared
// TrialColumns (columns.js) for the parameters' form: 50,000 lines of
// objects cost more to build and walk than to stroke.
import { h } from '../dom.js';
import { isNum } from '../format.js';
import { TrialColumns } from './columns.js';
import { ACCENT, BEST, axisKind, chartWidth, onWidth, robustRange, tick } from './uplot.js';

const HEIGHT = 300;
const PAD = { left: 40, right: 60, top: 34, bottom: 26 };
const NA_GAP = 34; // px between an axis's foot and its "n/a" mark (below the foot's label)
const BUCKETS = 8; // colour bands: one canvas path each, fast for 10,000 lines
const GREY = '#9ca3af';
const PALE = '#d1d5db'; // lines outside a brushed selection
const AXIS_HIT = 14; // px either side of an axis where a drag brushes it
const DRAG_MIN = 3; // px of movement that make a drag of a click
// From this many lines on, the bands are drawn into the canvas's pixels
// (strokeBands): rastering 50,000 antialiased polylines took the canvas
// half a second, on the page's main thread.
const PIXEL_LINES_FROM = 2000;

// From worse (cool) to better (warm).
const RAMP = ['#3b4cc0', '#5a78d9', '#7b9ff9', '#9ebeff', '#c0d4f5', '#f2cbb7', '#f49a7b', '#d6604d'];

/** [r, g, b] of '#rrggbb'. */
function rgb(c) {
  const v = parseInt(c.slice(1, 7), 16);
  return [v >> 16, (v >> 8) & 255, v & 255];
}

/** How many of the ascending values are below v (strict) or at most v. */
function countBelow(sorted, v, strict) {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (sorted[mid] < v || (!strict && sorted[mid] === v)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Adds w to count (W pixels a row) along one line segment, column by
 * column from x0 to x1 (the segment ends at column xe), in 16.16 fixed
 * point; a steep segment joins each column's pixel to the previous one's
 * vertically, so it has no gaps.
 */
function countSegment(count, W, x0, x1, xe, ya, yb, w) {
  let f = Math.round(ya * 65536) + 32768;
  const step = xe > x0 ? Math.round(((yb - ya) / (xe - x0)) * 65536) : 0;
  if (step <= 65536 && step >= -65536) {
    for (let x = x0; x < x1; x++) {
      count[(f >> 16) * W + x] += w;
      f += step;
    }
  } else {
    let prev = f >> 16;
    for (let x = x0; x < x1; x++) {
      const y = f >> 16;
      const lo = prev < y ? prev : y;
      const hi = prev < y ? y : prev;
      for (let yy = lo; yy <= hi; yy++) count[yy * W + x] += w;
      prev = y;
      f += step;
    }
  }
}

/** Blends colour (r, g, b) at alpha aOf[n] over each RGBA pixel of d where
 * n = count[p] > 0 lines pass. */
function blendCounts(d, count, aOf, r, g, b) {
  for (let p = 0, o = 0; p < count.length; p++, o += 4) {
    const n = count[p];
    if (n === 0) continue;
    const a = aOf[n];
    const da = d[o + 3] / 255;
    const oa = a + da * (1 - a);
    const keep = (da * (1 - a)) / oa;
    const s = a / oa;
    d[o] = r * s + d[o] * keep;
    d[o + 1] = g * s + d[o + 1] * keep;
    d[o + 2] = b * s + d[o + 2] * keep;
    d[o + 3] = oa * 255;
  }
}

/**
 * Strokes each line k with band[k] >= 0 (its vertices: (xs[i], ys[A * k +
 * i]) in CSS px) as ctx.stroke of one path per band does, in band order,
 * each line 1 px wide in colours[band] at `alpha`, blended over the lines
 * under it, but without antialiasing: a band's lines are counted per pixel
 * and n lines over a pixel are one blend of alpha 1 - (1 - alpha)^n, so
 * each pixel is written once per band. One band at a time, so that the
 * counts (about 60 million increments for 50,000 lines) stay in cache.
 * discrete[i]: whether the lines take few positions on both axes i and
 * i + 1 (then few distinct segments, each drawn once with its weight).
 * The loops are small top-level functions over typed arrays: written as
 * closures inside this one, V8 (node 20) ran 50,000 lines 1.5 times
 * slower and now and then spent 30-100 ms on one band's blend; in the page
 * the chart's update took a median of 300 ms against 328 (web/README.md).
 */
function strokeBands(ctx, canvas, dpr, xs, ys, A, band, colours, alpha, discrete) {
  const W = canvas.width;
  const H = canvas.height;
  const N = band.length;
  // The lines by band (a counting sort).
  const start = new Int32Array(colours.length + 1);
  for (let k = 0; k < N; k++) if (band[k] >= 0) start[band[k] + 1]++;
  for (let b = 0; b < colours.length; b++) start[b + 1] += start[b];
  const order = new Int32Array(start[colours.length]);
  const at = start.slice();
  for (let k = 0; k < N; k++) if (band[k] >= 0) order[at[band[k]]++] = k;
  // A pixel holds at most one point of each line: 16 bits suffice below
  // 65,535 lines.
  const count = order.length < 65535 ? new Uint16Array(W * H) : new Uint32Array(W * H);
  const X = xs.map((x) => Math.round(x * dpr));
  const aOf = new Float64Array(order.length + 1); // 1 - (1 - alpha)^n
  for (let n = 1, keep = 1; n <= order.length; n++) {
    keep *= 1 - alpha;
    aOf[n] = 1 - keep;
  }
  const yAt = (y) => Math.min(H - 1, Math.max(0, y * dpr));
  const img = ctx.getImageData(0, 0, W, H);
  for (let b = 0; b < colours.length; b++) {
    if (start[b + 1] === start[b]) continue;
    count.fill(0);
    // Segment by segment (the axis's column belongs to the segment that
    // starts there).
    for (let i = 0; i + 1 < A; i++) {
      const x0 = Math.max(0, X[i]);
      const xe = X[i + 1];
      const x1 = Math.min(W, xe + (i + 2 === A ? 1 : 0));
      if (discrete[i]) {
        // Between two categorical axes the lines take a few distinct
        // segments: each is drawn once with its number of lines.
        const same = new Map();
        for (let j = start[b]; j < start[b + 1]; j++) {
          const o = A * order[j];
          const ya = yAt(ys[o + i]);
          const yb = yAt(ys[o + i + 1]);
          const key = ya * 1e6 + yb;
          const e = same.get(key);
          if (e) e[2]++;
          else same.set(key, [ya, yb, 1]);
        }
        for (const [ya, yb, w] of same.values()) countSegment(count, W, x0, x1, xe, ya, yb, w);
      } else {
        for (let j = start[b]; j < start[b + 1]; j++) {
          const o = A * order[j];
          countSegment(count, W, x0, x1, xe, yAt(ys[o + i]), yAt(ys[o + i + 1]), 1);
        }
      }
    }
    const [r, g, bl] = rgb(colours[b]);
    blendCounts(img.data, count, aOf, r, g, bl);
  }
  ctx.putImageData(img, 0, 0);
}

/**
 * params ({name, domain}), metric and mode: the parameters' form; or
 * objectives (the experiment's `metrics`): the objectives' form.
 */
export function createParallelChart(el, { params = [], metric, mode, objectives = null, onBrush = null }) {
  const canvas = h('canvas', { class: 'parallel', role: 'img', 'aria-label': 'parallel coordinates' });
  const overlay = h('canvas', { class: 'parallel-brush', testid: 'parallel-brush' });
  el.replaceChildren(h('div', { class: 'parallel-wrap' }, canvas, overlay));
  Object.assign(el.dataset, { series: '0', infeasible: '0', axisPoints: '{}', brush: '{}' });
  // Each axis: {name, kind: 'log'|'linear'|'cat'|'metric', cats, flip (better up for a min objective)}.
  const axes = objectives
    ? objectives.map((m) => ({ name: m.name, label: `${m.name} (${m.mode})`, kind: 'metric', flip: m.mode === 'min' }))
    : [
      ...params.map((p) => ({ name: p.name, label: p.name, ...axisKind(p.domain) })),
      { name: metric, label: metric, kind: 'metric' },
    ];
  const A = axes.length;
  // The lines: n of them; vals[A * k + i] is line k's value on axis i (NaN:
  // none), axisRanges[i] the range of axis i when known from elsewhere.
  let rows = { n: 0, vals: new Float64Array(0), id: new Float64Array(0), value: new Float64Array(0), infeasible: new Uint8Array(0), axisRanges: [] };
  let bestId = null;
  let front = new Set();
  let width = 0;
  // Brushed ranges: axis name -> [lo, hi] in the axis's drawn units (log10
  // of the value on a log axis); the geometry of the last draw.
  const brush = new Map();
  let geo = null; // {xs, ranges, plotH, dpr}
  let drag = null; // {i, y0, y1} while the mouse is down on axis i

  function axisRange(ax, i) {
    if (ax.kind === 'cat') return [-0.5, Math.max(ax.cats.length, 1) - 0.5];
    if (rows.axisRanges[i]) return rows.axisRanges[i];
    const { n, vals } = rows;
    if (ax.kind === 'metric') {
      const vs = [];
      for (let k = 0; k < n; k++) {
        if (vals[A * k + i] === vals[A * k + i]) vs.push(vals[A * k + i]);
      }
      return robustRange([vs]);
    }
    let lo = Infinity;
    let hi = -Infinity;
    for (let k = 0; k < n; k++) {
      const v = vals[A * k + i];
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (!Number.isFinite(lo)) return [0, 1];
    if (ax.kind === 'log') {
      lo = Math.log10(lo);
      hi = Math.log10(hi);
    }
    if (hi === lo) return [lo - 1, hi + 1];
    return [lo, hi];
  }

  function draw() {
    width = chartWidth(el);
    const dpr = window.devicePixelRatio || 1;
    canvas.width = Math.floor(width * dpr);
    canvas.height = Math.floor(HEIGHT * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${HEIGHT}px`;
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, HEIGHT);
    const { n: N, vals, id, value, infeasible } = rows;
    // An "n/a" mark below the axes' feet when some line has no value on one.
    const na = axes.map((_, i) => {
      for (let k = 0; k < N; k++) if (vals[A * k + i] !== vals[A * k + i]) return true;
      return false;
    });
    const anyNa = na.some(Boolean);
    const plotW = width - PAD.left - PAD.right;
    const plotH = HEIGHT - PAD.top - PAD.bottom - (anyNa ? NA_GAP : 0);
    const naY = PAD.top + plotH + NA_GAP;
    const xs = axes.map((_, i) => PAD.left + (A === 1 ? plotW / 2 : (plotW * i) / (A - 1)));
    const ranges = axes.map(axisRange);
    const ypos = (i, v) => {
      if (v === null || v !== v) return naY;
      const ax = axes[i];
      const [lo, hi] = ranges[i];
      const t = ax.kind === 'log' ? Math.log10(v) : v;
      let f = Math.max(-0.02, Math.min(1.02, (t - lo) / (hi - lo || 1)));
      if (ax.flip) f = 1 - f;
      return PAD.top + plotH * (1 - f);
    };
    // Every line's y on every axis, once (ypos, unrolled per axis).
    const ys = new Float32Array(A * N);
    for (let i = 0; i < A; i++) {
      const log = axes[i].kind === 'log';
      const flip = !!axes[i].flip;
      const [lo, hi] = ranges[i];
      const span = hi - lo || 1;
      for (let k = 0, o = i; k < N; k++, o += A) {
        const v = vals[o];
        if (v !== v) {
          ys[o] = naY;
          continue;
        }
        let f = ((log ? Math.log10(v) : v) - lo) / span;
        f = f < -0.02 ? -0.02 : f > 1.02 ? 1.02 : f;
        ys[o] = PAD.top + plotH * (flip ? f : 1 - f);
      }
    }
    function trace(path, k) {
      const o = A * k;
      path.moveTo(xs[0], ys[o]);
      for (let i = 1; i < A; i++) path.lineTo(xs[i], ys[o + i]);
    }
    // Infeasible lines first, dashed grey, under the others.
    const grey = new Path2D();
    let okCount = 0;
    for (let k = 0; k < N; k++) {
      if (infeasible[k]) trace(grey, k);
      else okCount++;
    }
    const alpha = Math.max(0.06, Math.min(0.8, 8 / Math.sqrt(Math.max(N, 1))));
    ctx.lineWidth = 1;
    ctx.globalAlpha = Math.max(alpha, 0.3);
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = GREY;
    ctx.stroke(grey);
    ctx.setLineDash([]);
    const bold = [];
    // Each feasible line's band (colour), -1 for the bold ones.
    const band = new Int8Array(N).fill(-1);
    let colours;
    // With a brush, the lines outside it are one pale band under the rest.
    const inBrush = brush.size ? selected() : null;
    if (objectives) {
      // The front on top, in the best colour; the others in one colour.
      colours = [ACCENT];
      for (let k = 0; k < N; k++) {
        if (infeasible[k]) continue;
        if (front.has(id[k])) bold.push(k);
        else band[k] = 0;
      }
    } else {
      // Colour by rank of the metric, worse first (robust to outliers and
      // to scale): a line's rank is how many feasible lines are worse, so
      // equal values share a band; the sorted values give it by bisection.
      colours = RAMP;
      const sorted = new Float64Array(okCount);
      for (let k = 0, j = 0; k < N; k++) if (!infeasible[k]) sorted[j++] = value[k];
      sorted.sort();
      for (let k = 0; k < N; k++) {
        if (infeasible[k]) continue;
        if (id[k] === bestId) {
          bold.push(k);
          continue;
        }
        const rank = mode === 'max' ? countBelow(sorted, value[k], true) : okCount - countBelow(sorted, value[k], false);
        band[k] = Math.min(BUCKETS - 1, Math.floor((rank * BUCKETS) / Math.max(okCount, 1)));
      }
    }
    if (inBrush) {
      colours = [PALE, ...colours];
      for (let k = 0; k < N; k++) {
        if (infeasible[k]) continue;
        if (!inBrush[k]) band[k] = 0;
        else if (band[k] >= 0) band[k]++;
      }
      for (let j = bold.length - 1; j >= 0; j--) {
        if (!inBrush[bold[j]]) {
          band[bold[j]] = 0;
          bold.splice(j, 1);
        }
      }
    }
    ctx.globalAlpha = alpha;
    if (okCount - bold.length >= PIXEL_LINES_FROM) {
      // Segments between two axes on which the lines take a few positions
      // (categories, a choice of numbers; "n/a" is one more).
      const few = axes.map((_, i) => {
        const seen = new Set();
        for (let k = 0; k < N && seen.size <= 64; k++) seen.add(ys[A * k + i]);
        return seen.size <= 64;
      });
      const discrete = few.slice(1).map((f, i) => f && few[i]);
      strokeBands(ctx, canvas, dpr, xs, ys, A, band, colours, alpha, discrete);
    } else {
      const paths = colours.map(() => new Path2D());
      for (let k = 0; k < N; k++) if (band[k] >= 0) trace(paths[band[k]], k);
      paths.forEach((p, b) => {
        ctx.strokeStyle = colours[b];
        ctx.stroke(p);
      });
    }
    ctx.globalAlpha = 1;
    if (bold.length) {
      const p = new Path2D();
      for (const k of bold) trace(p, k);
      ctx.strokeStyle = BEST;
      ctx.lineWidth = objectives ? 2 : 3;
      ctx.stroke(p);
    }
    // Axes with their names and ends (better up for an objective: its
    // best end is at the top).
    ctx.strokeStyle = '#4b5563';
    ctx.fillStyle = '#1f2937';
    ctx.lineWidth = 1;
    ctx.font = '12px system-ui, sans-serif';
    ctx.textAlign = 'center';
    axes.forEach((ax, i) => {
      const x = Math.round(xs[i]) + 0.5;
      ctx.beginPath();
      ctx.moveTo(x, PAD.top);
      ctx.lineTo(x, PAD.top + plotH);
      ctx.stroke();
      ctx.font = 'bold 12px system-ui, sans-serif';
      ctx.fillText(ax.label, x, 14);
      ctx.font = '11px system-ui, sans-serif';
      if (ax.kind === 'cat') {
        ax.cats.forEach((c, j) => {
          const y = ypos(i, j);
          ctx.textAlign = 'left';
          ctx.fillText(String(c).slice(0, 12), x + 4, y + 4);
          ctx.textAlign = 'center';
        });
      } else {
        const [lo, hi] = ranges[i];
        const label = (v) => tick(ax.kind === 'log' ? 10 ** v : v);
        ctx.fillText(label(ax.flip ? lo : hi), x, PAD.top - 6);
        ctx.fillText(label(ax.flip ? hi : lo), x, PAD.top + plotH + 16);
      }
      if (na[i]) {
        ctx.beginPath();
        ctx.arc(x, naY, 3, 0, 2 * Math.PI);
        ctx.fill();
        ctx.textAlign = 'left';
        ctx.fillText('n/a', x + 6, naY + 4);
        ctx.textAlign = 'center';
      }
    });
    geo = { xs, ranges, plotH, dpr };
    el.dataset.drawnBrush = JSON.stringify(brushValues()); // the brush these lines were drawn for
    el.dataset.axes = JSON.stringify(axes.map((ax, i) => ({ name: ax.name, x: xs[i], top: PAD.top, bottom: PAD.top + plotH })));
    drawBrush();
  }

  // ---- brushing ----

  /** Axis i's drawn units at the canvas's CSS y (clamped to the axis). */
  function unitAt(i, y) {
    const [lo, hi] = geo.ranges[i];
    let f = (PAD.top + geo.plotH - y) / geo.plotH;
    f = Math.max(0, Math.min(1, f));
    if (axes[i].flip) f = 1 - f;
    return lo + f * (hi - lo);
  }

  /** The CSS y of axis i's drawn units u. */
  function yOf(i, u) {
    const [lo, hi] = geo.ranges[i];
    let f = (u - lo) / (hi - lo || 1);
    if (axes[i].flip) f = 1 - f;
    return PAD.top + geo.plotH * (1 - f);
  }

  /** Per line, 1 when its value on every brushed axis is in the range. */
  function selected() {
    const { n, vals } = rows;
    const inside = new Uint8Array(n).fill(1);
    axes.forEach((ax, i) => {
      const r = brush.get(ax.name);
      if (!r) return;
      const log = ax.kind === 'log';
      for (let k = 0, o = i; k < n; k++, o += A) {
        if (!inside[k]) continue;
        const v = vals[o];
        const u = log ? Math.log10(v) : v;
        if (!(u >= r[0] && u <= r[1])) inside[k] = 0; // NaN (no value on it) is outside
      }
    });
    return inside;
  }

  /** The ranges in the axes' own values: {name: [lo, hi]}. */
  function brushValues() {
    const out = {};
    for (const ax of axes) {
      const r = brush.get(ax.name);
      if (r) out[ax.name] = ax.kind === 'log' ? [10 ** r[0], 10 ** r[1]] : [r[0], r[1]];
    }
    return out;
  }

  function drawBrush() {
    const dpr = window.devicePixelRatio || 1;
    overlay.width = canvas.width;
    overlay.height = canvas.height;
    overlay.style.width = canvas.style.width;
    overlay.style.height = canvas.style.height;
    const ctx = overlay.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, width, HEIGHT);
    if (!geo) return;
    const box = (i, ya, yb) => {
      const top = Math.min(ya, yb);
      ctx.fillStyle = 'rgba(232, 89, 12, 0.18)';
      ctx.strokeStyle = '#e8590c';
      ctx.lineWidth = 1;
      ctx.fillRect(geo.xs[i] - 8, top, 16, Math.abs(yb - ya));
      ctx.strokeRect(geo.xs[i] - 8 + 0.5, top + 0.5, 15, Math.abs(yb - ya));
    };
    axes.forEach((ax, i) => {
      const r = brush.get(ax.name);
      if (r && !(drag && drag.i === i && drag.moved)) box(i, yOf(i, r[0]), yOf(i, r[1]));
    });
    if (drag && drag.moved) box(drag.i, drag.y0, drag.y1);
  }

  /** The selection changed: data-brush, the listener at once, the lines
   * at the next frame (after the listener's table has been painted). */
  function commit() {
    const sel = brush.size ? selected() : null;
    let count = rows.n;
    if (sel) {
      count = 0;
      for (let k = 0; k < sel.length; k++) count += sel[k];
    }
    el.dataset.brush = JSON.stringify(brushValues());
    el.dataset.brushed = String(count);
    drawBrush();
    if (onBrush) onBrush(sel ? idsOf(sel) : null);
    requestAnimationFrame(() => setTimeout(draw, 0));
  }

  function idsOf(sel) {
    const ids = new Set();
    for (let k = 0; k < sel.length; k++) if (sel[k]) ids.add(rows.id[k]);
    return ids;
  }

  function pointAt(e) {
    const r = overlay.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  overlay.addEventListener('pointerdown', (e) => {
    if (!geo || e.button !== 0) return;
    const [x, y] = pointAt(e);
    let i = -1;
    let best = AXIS_HIT;
    geo.xs.forEach((ax, j) => {
      if (Math.abs(ax - x) <= best && axes[j].kind !== undefined) {
        best = Math.abs(ax - x);
        i = j;
      }
    });
    if (i < 0 || y < PAD.top - 8 || y > PAD.top + geo.plotH + 8) return;
    drag = { i, y0: y, y1: y, moved: false };
    try {
      overlay.setPointerCapture(e.pointerId);
    } catch {
      /* a pointer that is not active (a synthetic event): no capture */
    }
    e.preventDefault();
  });
  overlay.addEventListener('pointermove', (e) => {
    if (!drag) return;
    const y = Math.max(PAD.top, Math.min(PAD.top + geo.plotH, pointAt(e)[1]));
    drag.y1 = y;
    if (Math.abs(y - drag.y0) >= DRAG_MIN) drag.moved = true;
    if (drag.moved) drawBrush();
  });
  const end = (e) => {
    if (!drag) return;
    const d = drag;
    drag = null;
    const name = axes[d.i].name;
    if (d.moved) {
      const a = unitAt(d.i, Math.max(PAD.top, Math.min(PAD.top + geo.plotH, d.y0)));
      const b = unitAt(d.i, d.y1);
      brush.set(name, [Math.min(a, b), Math.max(a, b)]);
      commit();
    } else if (brush.has(name) && e.type === 'pointerup') {
      // A click on the axis outside its range clears it.
      const u = unitAt(d.i, d.y0);
      const r = brush.get(name);
      if (u < r[0] || u > r[1]) {
        brush.delete(name);
        commit();
      } else {
        drawBrush();
      }
    } else {
      drawBrush();
    }
  };
  overlay.addEventListener('pointerup', end);
  overlay.addEventListener('pointercancel', end);

  const stopWidth = onWidth(el, (w) => {
    if (w !== width) draw();
  });

  return {
    /** Clears every brushed range (the listener hears null). */
    clearBrush() {
      if (!brush.size) return;
      brush.clear();
      commit();
    },
    /** Sets axis name's range [lo, hi] in its values (tests, bench). */
    setBrush(name, lo, hi) {
      const ax = axes.find((a) => a.name === name);
      if (!ax) return;
      const f = (v) => (ax.kind === 'log' ? Math.log10(v) : v);
      brush.set(name, [Math.min(f(lo), f(hi)), Math.max(f(lo), f(hi))]);
      commit();
    },
    /** The brushed trials' ids (a Set), or null when nothing is brushed. */
    brushed() {
      return brush.size ? idsOf(selected()) : null;
    },
    /** trials: Map id -> trial; best: the best trial's id; pareto: the
     * experiment's front ([{trial_id}], the objectives' form). */
    update(trials, best, pareto, cols = null) {
      bestId = best;
      front = new Set((pareto || []).map((p) => p.trial_id));
      if (objectives) {
        const lines = [];
        for (const t of trials.values()) {
          if (!t.config) continue;
          const vs = axes.map((ax) => (t.values && isNum(t.values[ax.name]) ? t.values[ax.name] : null));
          if (vs.some((v) => v === null)) continue; // drawn once every objective has a value
          lines.push([t, vs]);
        }
        const n = lines.length;
        rows = { n, vals: new Float64Array(A * n), id: new Float64Array(n), value: new Float64Array(n), infeasible: new Uint8Array(n), axisRanges: [] };
        lines.forEach(([t, vs], k) => {
          vs.forEach((v, i) => { rows.vals[A * k + i] = v; });
          rows.id[k] = t.id;
          rows.value[k] = vs[0];
          rows.infeasible[k] = t.feasible === false ? 1 : 0;
        });
      } else {
        const c = cols || new TrialColumns(trials);
        const n = c.n;
        const vals = new Float64Array(A * n);
        params.forEach((p, i) => {
          const col = c.param(p.name, axes[i]);
          for (let k = 0; k < n; k++) vals[A * k + i] = col[k];
        });
        for (let k = 0; k < n; k++) vals[A * k + A - 1] = c.value[k];
        // The metric's axis: the same range as every chart of the values.
        const axisRanges = [];
        axisRanges[A - 1] = c.valueRange();
        rows = { n, vals, id: c.id, value: c.value, infeasible: c.infeasible, axisRanges };
      }
      const { n, vals } = rows;
      const counts = {};
      let bad = 0;
      for (let k = 0; k < n; k++) bad += rows.infeasible[k];
      axes.forEach((ax, i) => {
        let m = 0;
        for (let k = 0; k < n; k++) if (vals[A * k + i] === vals[A * k + i]) m++;
        counts[ax.name] = m;
      });
      Object.assign(el.dataset, {
        series: String(n),
        infeasible: String(bad),
        axisPoints: JSON.stringify(counts),
      });
      if (brush.size) {
        const sel = selected();
        let c = 0;
        for (let k = 0; k < sel.length; k++) c += sel[k];
        el.dataset.brushed = String(c);
      } else {
        el.dataset.brushed = String(n);
      }
      draw();
    },
    destroy() {
      stopWidth();
    },
  };
}

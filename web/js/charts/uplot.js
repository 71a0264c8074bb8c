// uPlot, loaded on demand through index.html's import map, and what the
// charts share: the missing-package message, sizing, robust ranges, colours.
import { h } from '../dom.js';
import { spaceParams } from '../format.js';

let loading = null;

/** uPlot's constructor, or null when web/node_modules is missing. */
export function loadUPlot() {
  if (!loading) loading = import('uplot').then((m) => m.default, () => null);
  return loading;
}

export const NO_CHARTS = 'charts need `npm ci` in web/';

/** Puts the missing-package message where a chart would be. */
export function showMissing(el) {
  el.replaceChildren(h('p', { class: 'chart-missing', text: NO_CHARTS }));
  el.dataset.series = '0';
}

/** Calls fn(width) when the width of el's content box changes. */
export function onWidth(el, fn) {
  let last = 0;
  const ro = new ResizeObserver((entries) => {
    const w = Math.floor(entries[entries.length - 1].contentRect.width);
    if (w > 0 && w !== last) {
      last = w;
      fn(w);
    }
  });
  ro.observe(el);
  return () => ro.disconnect();
}

/** The width of el's content box (its width less its padding). */
export function chartWidth(el) {
  const cs = getComputedStyle(el);
  const w = el.clientWidth - parseFloat(cs.paddingLeft || '0') - parseFloat(cs.paddingRight || '0');
  return Math.max(200, Math.floor(w || 600));
}

/**
 * [lo, hi] of the finite values in `arrays` (a list of arrays of numbers or nulls),
 * leaving out far outliers (a diverged trial's 1e30 would flatten every
 * other curve): the bounds are the 1st and 99th percentile of a sample
 * widened by 3 interquantile ranges, clamped to the real extremes, and
 * padded by 5%.
 */
export function robustRange(arrays) {
  let n = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (const a of arrays) {
    for (let i = 0; i < a.length; i++) {
      const v = a[i];
      if (v === null || !Number.isFinite(v)) continue;
      n++;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  }
  if (n === 0) return [0, 1];
  if (n >= 50) [lo, hi] = trimOutliers(arrays, n, lo, hi); // too few values to call any an outlier
  if (hi <= lo) {
    const d = Math.abs(lo) * 0.05 || 0.5;
    return [lo - d, hi + d];
  }
  const pad = (hi - lo) * 0.05;
  return [lo - pad, hi + pad];
}

function trimOutliers(arrays, n, lo, hi) {
  const stride = Math.max(1, Math.floor(n / 4096));
  const sample = [];
  let k = 0;
  for (const a of arrays) {
    for (let i = 0; i < a.length; i++) {
      const v = a[i];
      if (v === null || !Number.isFinite(v)) continue;
      if (k++ % stride === 0) sample.push(v);
    }
  }
  sample.sort((a, b) => a - b);
  const q = (p) => sample[Math.round(p * (sample.length - 1))];
  const q01 = q(0.01);
  const q99 = q(0.99);
  const spread = Math.max(q99 - q01, Math.abs(q99) * 1e-9, 1e-12);
  return [Math.max(lo, q01 - 3 * spread), Math.min(hi, q99 + 3 * spread)];
}

/** Distinct colours for a few series; many share ACCENT with transparency. */
export const PALETTE = ['#1f77b4', '#2ca02c', '#9467bd', '#8c564b', '#e377c2', '#17becf',
  '#bcbd22', '#7f7f7f', '#d62728', '#3b5ba5', '#5f9e6e', '#b55d60'];
export const ACCENT = '#2f6fb3';
export const BEST = '#e8590c';

/** Log scale for these search-space domains (sampler/space.c's names). */
export const LOG_DOMAINS = new Set(['loguniform', 'qloguniform', 'lograndint']);

/** The parameters a chart shows: the search space's typed domains (a plain
 * value is a constant and has nothing to plot), flattened as the configs
 * name them (docs/api.md, "Nested and conditional spaces"): dotted paths in
 * spec order, a branch's constant (`opt.name`) as a choice of its values. */
export function searchParams(space) {
  return spaceParams(space);
}

/** How a parameter's values map onto an axis: {kind: 'log'|'linear'|'cat',
 * cats (for 'cat'): the values in order}. */
export function axisKind(domain) {
  if (LOG_DOMAINS.has(domain.type)) return { kind: 'log' };
  if (domain.type === 'choice' || domain.type === 'grid') {
    const values = Array.isArray(domain.values) ? domain.values : [];
    if (values.length && values.every((v) => typeof v === 'number')) return { kind: 'linear' };
    return { kind: 'cat', cats: values.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))) };
  }
  return { kind: 'linear' };
}

/** A config value's position on an axis of that kind, or null. */
export function axisValue(axis, v) {
  if (axis.kind === 'cat') {
    const key = typeof v === 'string' ? v : JSON.stringify(v);
    const i = axis.cats.indexOf(key);
    return i < 0 ? null : i;
  }
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v !== 'number' || !Number.isFinite(v)) return null;
  if (axis.kind === 'log' && v <= 0) return null;
  return v;
}

/** A stable pseudo-random offset in [-0.5, 0.5) for a trial id (jitter of
 * categorical points, so that equal values do not hide each other). */
export function jitter(id) {
  let x = (id * 2654435761) >>> 0;
  x ^= x >>> 15;
  return (x % 1000) / 1000 - 0.5;
}

function mantissa(v) {
  const m = v / 10 ** Math.floor(Math.log10(v) + 1e-9);
  return Math.round(m * 1000) / 1000;
}

// Mantissas of logSplits' ticks.
const UNITS = [1, 2, 3, 4, 5, 6, 7, 8, 9];
const TENTHS = Array.from({ length: 90 }, (_, i) => i + 10); // 10 ... 99, a power lower

/** The splits of a log axis (uPlot's `splits`): 1 to 9 times each power of
 * ten within [min, max], or only the powers of ten over more than 12
 * decades, at most 400 in all. uPlot's own log splits (1.6) never end on
 * about 2% of ordinary ranges, those whose low end is just under a power
 * of ten (0.000957 to 0.0863 is one), nor on an infinite one: the page
 * then threw "RangeError: Invalid array length" from a scatter's axis
 * (github.com/leeoniya/uPlot/issues/1098, fixed after 1.6.32, the newest
 * release on npm). These always end. */
export function logSplits(u, axisIdx, min, max) {
  if (!(min > 0) || !(max >= min) || !Number.isFinite(max)) return [];
  const first = Math.floor(Math.log10(min));
  const last = Math.ceil(Math.log10(max));
  const steps = (mults, shift) => {
    const out = [];
    for (let e = first - shift; e <= last && out.length < 400; e++) {
      for (const m of mults) {
        const v = Number(`${m}e${e}`); // 3e-5, not 3 * 10 ** -5 = 0.000030000000000000004
        if (v >= min && v <= max) out.push(v);
      }
    }
    return out;
  };
  if (last - first > 12) return steps([1], 0);
  const out = steps(UNITS, 0);
  // Within a tenth of a decade (0.0407 to 0.0494): 4.1e-2, 4.2e-2, ...
  return out.length >= 2 ? out : steps(TENTHS, 1);
}

/** For a log axis: grid lines only at powers of ten when there are many. */
export function decadesOnly(u, splits) {
  if (splits.length <= 10) return splits;
  const decades = splits.map((v) => (mantissa(v) === 1 ? v : null));
  if (decades.some((v) => v !== null)) return decades;
  // Inside one decade (logSplits' tenths): every k-th, at most 10.
  const k = Math.ceil(splits.length / 10);
  return splits.map((v, i) => (i % k === 0 ? v : null));
}

/** Labels of a log axis that do not overlap: powers of ten, and 2 and 5
 * times them when the axis spans less than two decades. */
export function logTicks(u, splits) {
  const lo = splits[0];
  const hi = splits[splits.length - 1];
  const few = hi / lo < 100;
  const labels = splits.map((v) => {
    if (v === null) return '';
    const m = mantissa(v);
    return m === 1 || (few && (m === 2 || m === 5)) ? tick(v) : '';
  });
  // A range inside one decade may hold none of those: then label each.
  return labels.some((l) => l !== '') ? labels : splits.map((v) => (v === null ? '' : tick(v)));
}

/** An x range with a margin, so that dots at the ends are not cut in half;
 * multiplicative on a log scale. */
export function paddedRange(log) {
  return (u, min, max) => {
    // No data yet (null or ±Infinity), or a value a log axis cannot place:
    // uPlot's log splits would loop without end on such a range.
    if (!Number.isFinite(min) || !Number.isFinite(max) || (log && (min <= 0 || max <= 0))) {
      return log ? [1, 10] : [0, 1];
    }
    if (log) {
      const f = max > min ? (max / min) ** 0.04 : 1.5;
      // max / min may overflow (a denormal min): then no margin.
      return min / f > 0 && Number.isFinite(max * f) ? [min / f, max * f] : [min, max];
    }
    const d = max > min ? (max - min) * 0.04 : Math.abs(min) * 0.1 || 1;
    return Number.isFinite(min - d) && Number.isFinite(max + d) ? [min - d, max + d] : [min, max];
  };
}

/** Compact tick labels: `digits` significant digits (4 by default). */
export function tick(v, digits = 4) {
  if (v === null || v === undefined) return '';
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e5 || a < 1e-3)) return v.toExponential(Math.max(1, digits - 3)).replace('e+', 'e');
  return String(Number(v.toPrecision(digits)));
}

/** The labels of an axis's ticks (uPlot's `values`): tick() with the fewest
 * digits, from 4, that keep consecutive labels apart, so that a narrow
 * range never reads "1.189, 1.189, 1.189" (the PBT toy's best so far,
 * issue 39); a null split (a hidden one) gets ''. */
export function distinctTicks(splits) {
  for (let digits = 4; digits <= 17; digits++) {
    const labels = splits.map((v) => tick(v, digits));
    let ok = true;
    for (let i = 1; i < labels.length && ok; i++) {
      if (labels[i] !== '' && labels[i] === labels[i - 1] && splits[i] !== splits[i - 1]) ok = false;
    }
    if (ok) return labels;
  }
  return splits.map((v) => tick(v, 17));
}

/** uPlot's `values` for a linear axis: distinctTicks. */
export const tickValues = (u, splits) => distinctTicks(splits);

/** Steps between ticks of an axis of whole numbers (steps, trial numbers):
 * uPlot picks the first that leaves room, and never a fraction. */
export const INT_INCRS = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000,
  1e4, 2e4, 2.5e4, 5e4, 1e5, 2e5, 2.5e5, 5e5, 1e6, 2e6, 5e6, 1e7, 1e8, 1e9];

/** uPlot's `splits` of an axis of whole numbers: the multiples of the
 * increment uPlot found (rounded up to a whole number, at least 1) inside
 * [min, max]; at most 1,000. On a range narrower than one (a single step)
 * it is that step alone. */
export function intSplits(u, axisIdx, min, max, incr) {
  if (!Number.isFinite(min) || !Number.isFinite(max) || max < min) return [];
  const k = Math.max(1, Math.ceil(Number.isFinite(incr) ? incr - 1e-9 : 1));
  const out = [];
  for (let v = Math.ceil(min / k) * k + 0; v <= max && out.length < 1000; v += k) out.push(v);
  return out;
}

export const LINEAR_NOTE = 'linear: values \u2264 0';

/**
 * Whether a chart of these values (arrays or typed arrays of numbers,
 * null or NaN for none) can have the log y axis it was asked for (wantLog):
 * {log, note}. A log axis cannot place a value <= 0, so any such value
 * makes it linear, with the note LINEAR_NOTE shown on the chart.
 */
export function logOrLinear(arrays, wantLog) {
  if (!wantLog) return { log: false, note: '' };
  for (const a of arrays) {
    for (let i = 0; i < a.length; i++) {
      const v = a[i];
      if (v !== null && v !== undefined && v <= 0) return { log: false, note: LINEAR_NOTE };
    }
  }
  return { log: true, note: '' };
}

/** robustRange of the values' logarithms, as values again (for a log
 * axis: every value > 0). */
export function logRange(arrays) {
  const logs = arrays.map((a) => Array.from(a, (v) => (v === null || !(v > 0) ? null : Math.log10(v))));
  const [lo, hi] = robustRange(logs);
  return [10 ** lo, 10 ** hi];
}

/** [r, g, b, a (0..1)] of '#rgb', '#rrggbb' or '#rrggbbaa'; null otherwise. */
function hexColor(c) {
  let m = /^#([0-9a-f]{6})([0-9a-f]{2})?$/i.exec(c);
  if (m) {
    const v = parseInt(m[1], 16);
    return [v >> 16, (v >> 8) & 255, v & 255, m[2] ? parseInt(m[2], 16) / 255 : 1];
  }
  m = /^#([0-9a-f])([0-9a-f])([0-9a-f])$/i.exec(c);
  return m ? [m[1], m[2], m[3]].map((d) => parseInt(d + d, 16)).concat(1) : null;
}

// From this many dots of one series on, dotsHook writes their pixels itself:
// 50,000 fillRect calls take about 50 ms a chart, the pixels a few.
const PIXEL_DOTS_FROM = 2000;

/** Paints solid squares of side `side` (device px) with top-left corners
 * (corners[2k], corners[2k + 1]), k < count, into `img` (ImageData of the
 * region at ox, oy), each blended over what is there with the colour's
 * alpha, as fillRect would. Blending n squares of one colour and alpha a
 * over a pixel is one blend of alpha 1 - (1 - a)^n, so the squares are
 * counted per pixel first and each covered pixel is written once. */
function blendSquares(img, ox, oy, corners, count, side, rgba) {
  const [r, g, b, a] = rgba;
  const { width, height, data } = img;
  const cover = new Uint16Array(width * height);
  let most = 0;
  for (let k = 0; k < 2 * count; k += 2) {
    const x0 = Math.max(0, corners[k] - ox);
    const y0 = Math.max(0, corners[k + 1] - oy);
    const x1 = Math.min(width, corners[k] - ox + side);
    const y1 = Math.min(height, corners[k + 1] - oy + side);
    for (let y = y0; y < y1; y++) {
      const row = y * width;
      for (let x = x0; x < x1; x++) {
        const c = cover[row + x] + 1;
        if (c < 65535) cover[row + x] = c; // beyond that the pixel is the colour
        if (c > most) most = c;
      }
    }
  }
  const keepOf = new Float64Array(most + 1); // (1 - a)^n
  keepOf[0] = 1;
  for (let n = 1; n <= most; n++) keepOf[n] = keepOf[n - 1] * (1 - a);
  for (let i = 0, o = 0; i < cover.length; i++, o += 4) {
    const n = cover[i];
    if (n === 0) continue;
    const src = 1 - keepOf[n]; // the n squares' alpha together
    const da = data[o + 3] / 255;
    const oa = src + da * keepOf[n];
    const keep = (da * keepOf[n]) / oa;
    data[o] = r * (src / oa) + data[o] * keep;
    data[o + 1] = g * (src / oa) + data[o + 1] * keep;
    data[o + 2] = b * (src / oa) + data[o + 2] * keep;
    data[o + 3] = oa * 255;
  }
}

/** A series' points as uPlot holds them: x from data[0], y from data[si]. */
function seriesPoints(u, si) {
  return u.data[si] ? { xs: u.data[0], ys: u.data[si], n: u.data[0].length } : null;
}

/**
 * A uPlot draw hook that paints series as square dots with fillRect: a path
 * of 10,000 stroked arcs per chart takes long to raster, squares do not.
 * A solid series of PIXEL_DOTS_FROM dots or more is written into the
 * canvas's pixels instead (blendSquares), at whole-pixel corners.
 * specs: [[seriesIdx, colour, size in CSS px, hollow], ...], drawn in that
 * order; hollow ones are outlined squares. points(u, seriesIdx): {xs, ys,
 * n} (arrays or typed arrays; a y that is null or NaN has no dot), by
 * default the series' data in uPlot; a chart of many dots keeps them out
 * of uPlot, which would otherwise walk them at each draw (scatter.js).
 */
export function dotsHook(specs, points = seriesPoints) {
  return (u) => {
    const ctx = u.ctx;
    const dpr = u.pxRatio || window.devicePixelRatio || 1;
    const { left, top, width, height } = u.bbox;
    // Scale to canvas pixels by hand (uPlot's valToPos per dot is slower).
    const sx = u.scales.x;
    const sy = u.scales.y;
    if (sx.min === null || sy.min === null) return;
    const log = sx.distr === 3;
    const ylog = sy.distr === 3;
    const x0 = log ? Math.log10(sx.min) : sx.min;
    const kx = width / ((log ? Math.log10(sx.max) : sx.max) - x0 || 1);
    const y0 = ylog ? Math.log10(sy.min) : sy.min;
    const ky = height / ((ylog ? Math.log10(sy.max) : sy.max) - y0 || 1);
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    for (const [si, color, size, hollow] of specs) {
      const pts = points(u, si);
      if (!pts || (u.series[si] && u.series[si].show === false)) continue;
      const { xs, ys, n } = pts;
      const r = (size * dpr) / 2;
      const rgba = hollow ? null : hexColor(color);
      if (rgba && n >= PIXEL_DOTS_FROM) {
        const corners = new Int32Array(2 * n);
        let count = 0;
        for (let i = 0; i < n; i++) {
          const y = ys[i];
          if (y === null || y === undefined || y !== y) continue;
          const px = left + ((log ? Math.log10(xs[i]) : xs[i]) - x0) * kx;
          const py = top + height - ((ylog ? Math.log10(y) : y) - y0) * ky;
          corners[2 * count] = Math.round(px - r);
          corners[2 * count + 1] = Math.round(py - r);
          count++;
        }
        if (count >= PIXEL_DOTS_FROM) {
          const ox = Math.floor(left);
          const oy = Math.floor(top);
          const img = ctx.getImageData(ox, oy, Math.ceil(width), Math.ceil(height));
          blendSquares(img, ox, oy, corners, count, Math.max(1, Math.round(2 * r)), rgba);
          ctx.putImageData(img, ox, oy);
          continue;
        }
      }
      ctx.fillStyle = color;
      ctx.strokeStyle = color;
      ctx.lineWidth = 1.5 * dpr;
      for (let i = 0; i < n; i++) {
        const y = ys[i];
        if (y === null || y === undefined || y !== y) continue;
        const px = left + ((log ? Math.log10(xs[i]) : xs[i]) - x0) * kx;
        const py = top + height - ((ylog ? Math.log10(y) : y) - y0) * ky;
        if (hollow) ctx.strokeRect(px - r, py - r, 2 * r, 2 * r);
        else ctx.fillRect(px - r, py - r, 2 * r, 2 * r);
      }
    }
    ctx.restore();
  };
}

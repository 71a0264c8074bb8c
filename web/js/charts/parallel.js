// Parallel coordinates of the parameters and the metric, drawn on a canvas
// of our own (uPlot has no such plot): one polyline per trial with a value,
// coloured by its value (better = warmer), the best trial on top in bold.
import { h } from '../dom.js';
import { isNum } from '../format.js';
import { BEST, axisKind, axisValue, chartWidth, onWidth, robustRange, tick } from './uplot.js';

const HEIGHT = 300;
const PAD = { left: 40, right: 60, top: 34, bottom: 26 };
const BUCKETS = 8; // colour bands: one canvas path each, fast for 10,000 lines

// From worse (cool) to better (warm).
const RAMP = ['#3b4cc0', '#5a78d9', '#7b9ff9', '#9ebeff', '#c0d4f5', '#f2cbb7', '#f49a7b', '#d6604d'];

export function createParallelChart(el, { params, metric, mode }) {
  const canvas = h('canvas', { class: 'parallel', role: 'img', 'aria-label': 'parallel coordinates' });
  el.replaceChildren(canvas);
  el.dataset.series = '0';
  const axes = [
    ...params.map((p) => ({ name: p.name, ...axisKind(p.domain) })),
    { name: metric, kind: 'metric' },
  ];
  let rows = []; // {id, vals: [...], value}
  let bestId = null;
  let width = 0;

  function axisRange(ax, i) {
    if (ax.kind === 'cat') return [-0.5, Math.max(ax.cats.length, 1) - 0.5];
    const vs = rows.map((r) => r.vals[i]).filter((v) => v !== null);
    if (ax.kind === 'metric') return robustRange([vs]);
    let lo = Infinity;
    let hi = -Infinity;
    for (const v of vs) {
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
    const n = axes.length;
    const plotW = width - PAD.left - PAD.right;
    const plotH = HEIGHT - PAD.top - PAD.bottom;
    const xs = axes.map((_, i) => PAD.left + (n === 1 ? plotW / 2 : (plotW * i) / (n - 1)));
    const ranges = axes.map(axisRange);
    const ypos = (i, v) => {
      if (v === null) return null;
      const ax = axes[i];
      const [lo, hi] = ranges[i];
      const t = ax.kind === 'log' ? Math.log10(v) : v;
      const f = Math.max(-0.02, Math.min(1.02, (t - lo) / (hi - lo || 1)));
      return PAD.top + plotH * (1 - f);
    };
    // Colour by rank of the metric: robust to outliers and to scale.
    const order = rows.map((r, k) => k).sort((a, b) => {
      const d = rows[a].value - rows[b].value;
      return mode === 'max' ? d : -d; // worse first, so better lines end on top
    });
    const paths = RAMP.map(() => new Path2D());
    let bestRow = null;
    order.forEach((k, rank) => {
      const r = rows[k];
      if (r.id === bestId) {
        bestRow = r;
        return;
      }
      const path = paths[Math.min(BUCKETS - 1, Math.floor((rank * BUCKETS) / Math.max(order.length, 1)))];
      trace(path, r);
    });
    function trace(path, r) {
      let pen = false;
      for (let i = 0; i < n; i++) {
        const y = ypos(i, r.vals[i]);
        if (y === null) {
          pen = false;
          continue;
        }
        if (pen) path.lineTo(xs[i], y);
        else {
          path.moveTo(xs[i], y);
          pen = true;
        }
      }
    }
    const alpha = Math.max(0.06, Math.min(0.8, 8 / Math.sqrt(Math.max(rows.length, 1))));
    ctx.lineWidth = 1;
    ctx.globalAlpha = alpha;
    paths.forEach((p, b) => {
      ctx.strokeStyle = RAMP[b];
      ctx.stroke(p);
    });
    ctx.globalAlpha = 1;
    if (bestRow) {
      const p = new Path2D();
      trace(p, bestRow);
      ctx.strokeStyle = BEST;
      ctx.lineWidth = 3;
      ctx.stroke(p);
    }
    // Axes with their names and ends.
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
      ctx.fillText(ax.name, x, 14);
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
        ctx.fillText(label(hi), x, PAD.top - 6);
        ctx.fillText(label(lo), x, PAD.top + plotH + 16);
      }
    });
  }

  const stopWidth = onWidth(el, (w) => {
    if (w !== width) draw();
  });

  return {
    /** trials: Map id -> trial; bestId: the best trial's id. */
    update(trials, best) {
      bestId = best;
      const next = [];
      for (const t of trials.values()) {
        if (!t.best || !isNum(t.best.value) || !t.config) continue;
        const vals = axes.map((ax) => (ax.kind === 'metric' ? t.best.value : axisValue(ax, t.config[ax.name])));
        next.push({ id: t.id, vals, value: t.best.value });
      }
      rows = next;
      el.dataset.series = String(rows.length);
      draw();
    },
    destroy() {
      stopWidth();
    },
  };
}

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
import { h } from '../dom.js';
import { isNum } from '../format.js';
import { ACCENT, BEST, axisKind, axisValue, chartWidth, onWidth, robustRange, tick } from './uplot.js';

const HEIGHT = 300;
const PAD = { left: 40, right: 60, top: 34, bottom: 26 };
const NA_GAP = 34; // px between an axis's foot and its "n/a" mark (below the foot's label)
const BUCKETS = 8; // colour bands: one canvas path each, fast for 10,000 lines
const GREY = '#9ca3af';

// From worse (cool) to better (warm).
const RAMP = ['#3b4cc0', '#5a78d9', '#7b9ff9', '#9ebeff', '#c0d4f5', '#f2cbb7', '#f49a7b', '#d6604d'];

/**
 * params ({name, domain}), metric and mode: the parameters' form; or
 * objectives (the experiment's `metrics`): the objectives' form.
 */
export function createParallelChart(el, { params = [], metric, mode, objectives = null }) {
  const canvas = h('canvas', { class: 'parallel', role: 'img', 'aria-label': 'parallel coordinates' });
  el.replaceChildren(canvas);
  Object.assign(el.dataset, { series: '0', infeasible: '0', axisPoints: '{}' });
  // Each axis: {name, kind: 'log'|'linear'|'cat'|'metric', cats, flip (better up for a min objective), get(trial)}.
  const axes = objectives
    ? objectives.map((m) => ({ name: m.name, label: `${m.name} (${m.mode})`, kind: 'metric', flip: m.mode === 'min',
      get: (t) => (t.values && isNum(t.values[m.name]) ? t.values[m.name] : null) }))
    : [
      ...params.map((p) => {
        const ax = { name: p.name, label: p.name, ...axisKind(p.domain) };
        ax.get = (t) => axisValue(ax, t.config[p.name]);
        return ax;
      }),
      { name: metric, label: metric, kind: 'metric', get: (t) => t.best.value },
    ];
  let rows = []; // {id, vals: [...] (null: no value on that axis), value, infeasible}
  let bestId = null;
  let front = new Set();
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
    // An "n/a" mark below the axes' feet when some line has no value on one.
    const na = axes.map((_, i) => rows.some((r) => r.vals[i] === null));
    const anyNa = na.some(Boolean);
    const plotW = width - PAD.left - PAD.right;
    const plotH = HEIGHT - PAD.top - PAD.bottom - (anyNa ? NA_GAP : 0);
    const naY = PAD.top + plotH + NA_GAP;
    const xs = axes.map((_, i) => PAD.left + (n === 1 ? plotW / 2 : (plotW * i) / (n - 1)));
    const ranges = axes.map(axisRange);
    const ypos = (i, v) => {
      if (v === null) return naY;
      const ax = axes[i];
      const [lo, hi] = ranges[i];
      const t = ax.kind === 'log' ? Math.log10(v) : v;
      let f = Math.max(-0.02, Math.min(1.02, (t - lo) / (hi - lo || 1)));
      if (ax.flip) f = 1 - f;
      return PAD.top + plotH * (1 - f);
    };
    function trace(path, r) {
      for (let i = 0; i < n; i++) {
        const y = ypos(i, r.vals[i]);
        if (i) path.lineTo(xs[i], y);
        else path.moveTo(xs[i], y);
      }
    }
    // Infeasible lines first, dashed grey, under the others.
    const grey = new Path2D();
    const ok = [];
    for (const r of rows) {
      if (r.infeasible) trace(grey, r);
      else ok.push(r);
    }
    const alpha = Math.max(0.06, Math.min(0.8, 8 / Math.sqrt(Math.max(rows.length, 1))));
    ctx.lineWidth = 1;
    ctx.globalAlpha = Math.max(alpha, 0.3);
    ctx.setLineDash([4, 3]);
    ctx.strokeStyle = GREY;
    ctx.stroke(grey);
    ctx.setLineDash([]);
    const bold = [];
    if (objectives) {
      // The front on top, in the best colour; the others in one colour.
      const rest = new Path2D();
      for (const r of ok) {
        if (front.has(r.id)) bold.push(r);
        else trace(rest, r);
      }
      ctx.globalAlpha = alpha;
      ctx.strokeStyle = ACCENT;
      ctx.stroke(rest);
    } else {
      // Colour by rank of the metric: robust to outliers and to scale.
      const order = ok.map((r, k) => k).sort((a, b) => {
        const d = ok[a].value - ok[b].value;
        return mode === 'max' ? d : -d; // worse first, so better lines end on top
      });
      const paths = RAMP.map(() => new Path2D());
      order.forEach((k, rank) => {
        const r = ok[k];
        if (r.id === bestId) {
          bold.push(r);
          return;
        }
        trace(paths[Math.min(BUCKETS - 1, Math.floor((rank * BUCKETS) / Math.max(order.length, 1)))], r);
      });
      ctx.globalAlpha = alpha;
      paths.forEach((p, b) => {
        ctx.strokeStyle = RAMP[b];
        ctx.stroke(p);
      });
    }
    ctx.globalAlpha = 1;
    if (bold.length) {
      const p = new Path2D();
      for (const r of bold) trace(p, r);
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
  }

  const stopWidth = onWidth(el, (w) => {
    if (w !== width) draw();
  });

  return {
    /** trials: Map id -> trial; best: the best trial's id; pareto: the
     * experiment's front ([{trial_id}], the objectives' form). */
    update(trials, best, pareto) {
      bestId = best;
      front = new Set((pareto || []).map((p) => p.trial_id));
      const next = [];
      for (const t of trials.values()) {
        if (!t.config) continue;
        if (objectives) {
          const vals = axes.map((ax) => ax.get(t));
          if (vals.some((v) => v === null)) continue; // drawn once every objective has a value
          next.push({ id: t.id, vals, value: vals[0], infeasible: t.feasible === false });
        } else {
          if (!t.best || !isNum(t.best.value)) continue;
          next.push({ id: t.id, vals: axes.map((ax) => ax.get(t)), value: t.best.value, infeasible: t.feasible === false });
        }
      }
      rows = next;
      const counts = {};
      axes.forEach((ax, i) => {
        counts[ax.name] = rows.filter((r) => r.vals[i] !== null).length;
      });
      Object.assign(el.dataset, {
        series: String(rows.length),
        infeasible: String(rows.filter((r) => r.infeasible).length),
        axisPoints: JSON.stringify(counts),
      });
      draw();
    },
    destroy() {
      stopWidth();
    },
  };
}

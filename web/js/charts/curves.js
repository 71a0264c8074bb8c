// Learning curves: the experiment's metric against step for every trial, in
// one uPlot whose draw hook paints the curves itself: a few as coloured
// lines, many as one hairline path per style, from DENSITY_FROM on as a
// density image (density.js), so 10,000 trials cost about what one series
// does (and of a larger experiment only its best trials' curves come:
// experiment-data.js, CURVES_BEST). The best trial is drawn bold on top, stopped/failed/canceled ones
// faded; ASHA rungs are dashed vertical lines (only over curves: an empty
// chart has none; data-rungs-drawn counts them). Hovering names the nearest
// trial; a click opens it. The metric is the picked one (views/metric-
// state.js); a log y axis when asked for and every value is > 0, else
// linear with a note (logOrLinear). With trials brushed on the parallel
// coordinates, the others are faded (data-highlighted counts the rest).
import { h, setText } from '../dom.js';
import { num } from '../format.js';
import { densityImage } from './density.js';
import { clipped, createLineChart, plotFrame, traceCurve } from './linechart.js';
import { ACCENT, BEST, PALETTE, logOrLinear, logRange, robustRange } from './uplot.js';

const HEIGHT = 320;
const FADED = new Set(['stopped', 'failed', 'canceled']);
const HOVER_PX = 10; // the nearest point counts within this many CSS pixels
const DENSITY_FROM = 300; // from this many curves on, a density image (density.js)

/**
 * el: the container (data-testid=chart-curves); opts: {metric (its name),
 * rungs (milestones on the step axis), onPick(trialId)}.
 */
export function createCurvesChart(el, uPlot, opts) {
  const subsetNote = h('div', { class: 'chart-info', testid: 'curves-subset', hidden: true });
  const scaleNote = h('div', { class: 'chart-note', testid: 'scale-note', hidden: true });
  const chart = createLineChart(el, uPlot, {
    height: HEIGHT,
    infoText: 'hover a curve to see its trial; click to open it',
    before: scaleNote,
    after: subsetNote,
    zoomX: true,
    yLabel: opts.metric,
    draw,
    nearest,
    describe: (hit) => `${hit.line.label} \u00b7 step ${hit.line.steps[hit.i]} \u00b7 ${opts.metric} ${num(hit.line.values[hit.i])}`,
    onPick: opts.onPick,
  });
  if (!chart) return { update() {}, destroy() {} };
  el.dataset.series = '0';

  let lines = []; // {id, label, steps, values, style: 'best'|'faded'|'normal', color}
  let version = 0; // bumped by update(): the density image is redrawn then
  let cached = { key: '', image: null };

  function draw(self) {
    const f = plotFrame(self);
    if (!f) return;
    const { left, top, width, height, sx, sy, kx, X, Y, dpr } = f;
    const hovered = chart.hovered();
    clipped(self, (ctx) => {
      // Rungs first, under the curves.
      ctx.setLineDash([4 * dpr, 4 * dpr]);
      ctx.lineWidth = dpr;
      ctx.strokeStyle = '#a0a7b4';
      ctx.fillStyle = '#6b7280';
      ctx.font = `${11 * dpr}px system-ui, sans-serif`;
      // Rungs mark where curves are cut: none over an empty chart.
      let rungsDrawn = 0;
      (lines.length ? opts.rungs || [] : []).forEach((m, k) => {
        if (m < sx.min || m > sx.max) return;
        rungsDrawn++;
        const x = Math.round(X(m)) + 0.5;
        ctx.beginPath();
        ctx.moveTo(x, top);
        ctx.lineTo(x, top + height);
        ctx.stroke();
        const label = `rung ${k}`;
        const w = ctx.measureText(label).width;
        ctx.fillText(label, x + 3 * dpr + w > left + width ? x - 3 * dpr - w : x + 3 * dpr, top + 12 * dpr);
      });
      ctx.setLineDash([]);
      if (el.dataset.rungsDrawn !== String(rungsDrawn)) el.dataset.rungsDrawn = String(rungsDrawn);
      const trace = (path, line) => traceCurve(path, line.steps, line.values, X, Y, dpr);
      if (lines.length >= DENSITY_FROM) {
        // Recomputed only when the data, the scales or the size changed (not
        // for a hover).
        const w = Math.round(width);
        const hh = Math.round(height);
        const key = `${version}|${sx.min}|${sx.max}|${sy.min}|${sy.max}|${w}|${hh}`;
        if (cached.key !== key) {
          const x0 = sx.min;
          cached = {
            key,
            image: densityImage(lines, w, hh, (v) => (v - x0) * kx, (v) => Y(v) - top, cached.image),
          };
        }
        ctx.drawImage(cached.image, left, top);
      } else {
        const many = lines.length > PALETTE.length;
        const alpha = many ? Math.max(0.05, Math.min(0.6, 3 / Math.sqrt(lines.length))) : 0.9;
        for (const [style, a] of [['faded', 0.45], ['normal', 0.9]]) {
          if (many) {
            const path = new Path2D();
            for (const line of lines) if (line.style === style) trace(path, line);
            ctx.globalAlpha = style === 'faded' ? alpha * 0.5 : alpha;
            ctx.strokeStyle = style === 'faded' ? '#9aa3af' : ACCENT;
            ctx.lineWidth = 1; // a hairline: the fast path of canvas strokes
            ctx.stroke(path);
          } else {
            for (const line of lines) {
              if (line.style !== style) continue;
              ctx.globalAlpha = a;
              ctx.strokeStyle = line.color;
              ctx.lineWidth = 1.5 * dpr;
              ctx.stroke(trace(new Path2D(), line));
            }
          }
        }
      }
      ctx.globalAlpha = 1;
      for (const line of lines) {
        if (line.style !== 'best' && line !== hovered) continue;
        ctx.strokeStyle = line.style === 'best' ? BEST : '#111827';
        ctx.lineWidth = (line.style === 'best' ? 3 : 2) * dpr;
        ctx.stroke(trace(new Path2D(), line));
      }
    });
  }

  /** The curve passing nearest the cursor (vertically, at its x), within
   * HOVER_PX, and its report closest to the cursor: {line, i} or null. */
  function nearest(self) {
    const { left: cl, top: ct } = self.cursor;
    if (cl === null || cl < 0 || ct === null || ct < 0) return null;
    const f = plotFrame(self);
    if (!f) return null;
    const { left, top, X, Y, dpr } = f;
    const px = left + cl * dpr;
    const py = top + ct * dpr;
    const r = HOVER_PX * dpr;
    let best = null;
    let bestD = r;
    for (const line of lines) {
      const { steps, values } = line;
      for (let i = 0; i < steps.length; i++) {
        const v = values[i];
        if (v === null) continue;
        const x0 = X(steps[i]);
        const y0 = Y(v);
        const j = i + 1;
        if (j < steps.length && values[j] !== null) {
          const x1 = X(steps[j]);
          if (x0 <= px && px <= x1 && x1 > x0) {
            const y = y0 + ((Y(values[j]) - y0) * (px - x0)) / (x1 - x0);
            const d = Math.abs(y - py);
            if (d < bestD) {
              bestD = d;
              best = { line, i: px - x0 < x1 - px ? i : j };
            }
            continue;
          }
        }
        const d = Math.hypot(x0 - px, y0 - py);
        if (d < bestD) {
          bestD = d;
          best = { line, i };
        }
      }
    }
    return best;
  }

  return {
    /** curves: Map id -> {steps, values}; trials: Map id -> trial (for
     * state and number); bestId: the best trial's id; subset: {best,
     * ranked} when curves holds only the best trials' (experiment-data.js),
     * else null; log: a log y axis asked for; brushed: a Set of the trial
     * ids brushed, or null. */
    update(curves, trials, bestId, subset = null, { log = false, brushed = null } = {}) {
      subsetNote.hidden = !subset;
      if (subset) {
        setText(subsetNote, `the curves of the ${subset.best.toLocaleString('en-US')} best of ` +
          `${subset.ranked.toLocaleString('en-US')} trials with a value (the table and the other charts hold every trial)`);
        el.dataset.best = String(subset.best);
      } else {
        delete el.dataset.best;
      }
      const next = [];
      let xmin = Infinity;
      let xmax = -Infinity;
      const all = [];
      for (const [id, c] of curves) {
        if (!c.values.some((v) => v !== null)) continue; // only non-finite values: nothing to draw
        const t = trials.get(id);
        const out = brushed && !brushed.has(id);
        const style = out ? 'faded' : id === bestId ? 'best' : t && FADED.has(t.state) ? 'faded' : 'normal';
        const label = t ? `trial #${t.number} (id ${id}${t.state ? `, ${t.state}` : ''})` : `trial id ${id}`;
        next.push({ id, label, steps: c.steps, values: c.values, style, color: PALETTE[next.length % PALETTE.length] });
        const st = c.steps;
        for (let i = 0; i < st.length; i++) {
          if (st[i] < xmin) xmin = st[i];
          if (st[i] > xmax) xmax = st[i];
        }
        all.push(c.values);
      }
      lines = next;
      version++;
      chart.rehover((hit) => {
        const line = lines.find((l) => l.id === hit.line.id);
        return line ? { line, i: 0 } : null;
      });
      el.dataset.series = String(lines.length);
      el.dataset.points = String(lines.reduce((n, l) => n + l.steps.length, 0));
      el.dataset.highlighted = String(brushed ? lines.filter((l) => brushed.has(l.id)).length : lines.length);
      // The values drawn: data-values (JSON, trial id -> its values) for
      // tests, only while few (it is text).
      if (lines.length <= 200) el.dataset.values = JSON.stringify(Object.fromEntries(lines.map((l) => [l.id, l.values])));
      else delete el.dataset.values;
      const scale = logOrLinear(all, log);
      el.dataset.yScale = scale.log ? 'log' : 'linear';
      setText(scaleNote, scale.note);
      scaleNote.hidden = !scale.note;
      if (lines.length === 0) {
        xmin = 0;
        xmax = 1;
      } else if (xmin === xmax) {
        xmin -= 1;
        xmax += 1;
      }
      chart.setRanges([xmin, xmax], scale.log ? logRange(all) : robustRange(all), scale.log);
    },
    destroy() {
      chart.destroy();
    },
  };
}

/** ASHA's milestones on the time_attr axis: grace_period·rf^k up to max_t
 * (every bracket's rungs are among them), or [] for other schedulers. */
export function ashaRungs(scheduler) {
  if (!scheduler || (scheduler.type !== 'asha' && scheduler.type !== 'hyperband')) return [];
  const gp = Number(scheduler.grace_period ?? 1);
  const rf = Number(scheduler.reduction_factor ?? 4);
  const maxT = Number(scheduler.max_t ?? 100);
  if (!(gp > 0) || !(rf > 1) || !(maxT >= gp)) return [];
  const K = Math.floor(Math.log(maxT / gp) / Math.log(rf) + 1e-9);
  const out = [];
  for (let k = 0; k <= K && k < 64; k++) out.push(gp * rf ** k);
  return out;
}

// Population Based Training: one mutated parameter's schedule, its value
// against step for every trial as a step function (web/js/pbt.js
// schedule()), each piece in the colour of its segment's family; the best
// trial bold over a dark outline, on top. A log domain gets a log axis, a
// choice of other things than numbers a categorical one. Hovering names the
// trial and its value there, a click opens it. data-series counts the
// trials drawn; data-drawn (JSON) lists what the last draw stroked, one item
// per piece: {trial, segment, family, color, start, end, value}.
import { h } from '../dom.js';
import { configValue } from '../format.js';
import { schedule } from '../pbt.js';
import { clipped, createLineChart, strokeFamilies } from './linechart.js';
import { axisKind, axisValue, logSplits, logTicks, tickValues } from './uplot.js';

const HEIGHT = 220;
const HOVER_PX = 8;

/** param: the parameter's name; domain: its hyperparam_mutations domain
 * ({type, ...}; a list is a choice of its values). */
export function createScheduleChart(el, uPlot, { param, domain, onPick }) {
  const dom = Array.isArray(domain) ? { type: 'choice', values: domain } : domain || { type: 'uniform' };
  const caption = h('div', { class: 'chart-caption', text: `${param} (${dom.type})` });
  const axis = axisKind(dom);
  const yScale = {};
  const yAxis = { label: param, size: 60, values: tickValues };
  if (axis.kind === 'log') {
    yScale.distr = 3;
    yScale.log = 10;
    yAxis.splits = logSplits;
    yAxis.values = logTicks;
  } else if (axis.kind === 'cat') {
    yAxis.splits = () => axis.cats.map((_, i) => i);
    yAxis.values = (s, splits) => splits.map((v) => axis.cats[v] ?? '');
    yAxis.size = 80;
  }
  const chart = createLineChart(el, uPlot, {
    height: HEIGHT,
    before: caption,
    yAxis,
    yScale,
    draw,
    nearest,
    describe: (hit) => {
      const p = hit.piece;
      return `${hit.line.label} \u00b7 ${param} = ${configValue(p.value)} on steps ${p.start + 1}\u2013${p.end} \u00b7 family ${p.familyLabel}`;
    },
    onPick,
  });
  if (!chart) return { update() {}, destroy() {} };
  Object.assign(el.dataset, { series: '0', drawn: '[]' });

  let lines = []; // {id, label, best, pieces: [{segment, family, color, start, end, value, y}]}

  function draw(self) {
    // valToPos, not plotFrame's linear X and Y: the y axis may be a log one.
    const X = (v) => self.valToPos(v, 'x', true); // canvas pixels
    const Y = (v) => self.valToPos(v, 'y', true);
    const dpr = self.pxRatio || window.devicePixelRatio || 1;
    const path = (line, k) => {
      // Piece k: the jump from the previous piece's value at its start, then
      // the value until its end.
      const p = line.pieces[k];
      const out = new Path2D();
      if (p.y === null) return out;
      const prev = k > 0 ? line.pieces[k - 1] : null;
      if (prev && prev.y !== null) {
        out.moveTo(X(p.start), Y(prev.y));
        out.lineTo(X(p.start), Y(p.y));
      } else {
        out.moveTo(X(p.start), Y(p.y));
      }
      out.lineTo(Math.max(X(p.end), X(p.start) + dpr), Y(p.y));
      return out;
    };
    const drawn = [];
    clipped(self, (ctx) => {
      strokeFamilies(ctx, lines, chart.hovered(), dpr,
        (line) => line.pieces.map((p, k) => ({ piece: p, color: p.color, path: path(line, k) })),
        (line, { piece: p }) => drawn.push({ trial: line.id, segment: p.segment, family: p.family, color: p.color,
          start: p.start, end: p.end, value: p.value }));
    });
    return drawn;
  }

  /** The horizontal piece nearest the cursor, within HOVER_PX. */
  function nearest(self) {
    const { left: cl, top: ct } = self.cursor;
    if (cl === null || cl < 0 || ct === null || ct < 0) return null;
    let best = null;
    let bestD = HOVER_PX;
    for (const line of lines) {
      for (const p of line.pieces) {
        if (p.y === null) continue;
        const x0 = self.valToPos(p.start, 'x');
        const x1 = self.valToPos(p.end, 'x');
        if (cl < x0 - HOVER_PX || cl > x1 + HOVER_PX) continue;
        const d = Math.abs(self.valToPos(p.y, 'y') - ct);
        if (d < bestD || (d === bestD && line.best)) {
          bestD = d;
          best = { line, piece: p };
        }
      }
    }
    return best;
  }

  return {
    /** trials: Map id -> trial; ends: Map id -> the last step it reached;
     * fams: pbt.js familyTable; colors: Map family id -> colour; bestId. */
    update(trials, ends, fams, colors, bestId) {
      const next = [];
      let xmax = 1;
      let lo = Infinity;
      let hi = -Infinity;
      const famLabel = (f) => {
        const t = trials.get(f);
        return t ? `#${t.number}` : `id ${f}`;
      };
      for (const [id, t] of trials) {
        const pieces = schedule(t, param, fams.get(id), ends.get(id)).map((p) => {
          const y = axisValue(axis, p.value);
          if (y !== null) {
            if (y < lo) lo = y;
            if (y > hi) hi = y;
          }
          if (p.end > xmax) xmax = p.end;
          return { ...p, y, color: colors.get(p.family) || '#9ca3af', familyLabel: famLabel(p.family) };
        });
        next.push({ id, label: `trial #${t.number} (id ${id})`, best: id === bestId, pieces });
      }
      next.sort((a, b) => a.id - b.id);
      lines = next;
      chart.rehover((hit) => {
        const line = lines.find((l) => l.id === hit.line.id);
        return line ? { line, piece: line.pieces[0] } : null;
      });
      let yr;
      if (axis.kind === 'cat') yr = [-0.5, Math.max(axis.cats.length, 1) - 0.5];
      else if (!Number.isFinite(lo)) yr = axis.kind === 'log' ? [1, 10] : [0, 1];
      else if (axis.kind === 'log') yr = hi > lo ? [lo / (hi / lo) ** 0.05, hi * (hi / lo) ** 0.05] : [lo / 2, hi * 2];
      else {
        const pad = hi > lo ? (hi - lo) * 0.06 : Math.abs(lo) * 0.1 || 0.5;
        yr = [lo - pad, hi + pad];
      }
      el.dataset.series = String(lines.length);
      chart.setRanges([0, xmax], yr);
    },
    destroy() {
      chart.destroy();
    },
  };
}

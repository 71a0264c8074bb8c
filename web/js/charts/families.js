// Population Based Training: the population's learning curves coloured by
// family (web/js/pbt.js): each trial's curve is cut at its exploits and
// every piece takes the colour of the family it belongs to, so a member that
// took another's weights goes on in that member's colour. The best trial is
// drawn bold over a dark outline; hovering names the trial, its segment and
// family, a click opens it. data-series counts the curves, data-points the
// reports; data-drawn (JSON) lists what the last draw stroked, one item per
// segment: {trial, segment, family, color, first, last, points}.
import { num } from '../format.js';
import { curveSegments } from '../pbt.js';
import { clipped, createLineChart, plotFrame, strokeFamilies, traceCurve } from './linechart.js';
import { robustRange } from './uplot.js';

const HEIGHT = 320;
const HOVER_PX = 10;

/** el: the container (data-testid=chart-pbt-curves); opts: {metric,
 * onPick(trialId)}. */
export function createFamilyCurvesChart(el, uPlot, opts) {
  const chart = createLineChart(el, uPlot, {
    height: HEIGHT,
    infoText: 'hover a curve to see its trial and family; click to open it',
    zoomX: true,
    yLabel: opts.metric,
    draw,
    nearest,
    describe: (hit) => `${hit.line.label} \u00b7 segment ${hit.part.segment}, family ${hit.part.familyLabel} \u00b7 ` +
      `step ${hit.part.steps[hit.i]} \u00b7 ${opts.metric} ${num(hit.part.values[hit.i])}`,
    onPick: opts.onPick,
  });
  if (!chart) return { update() {}, destroy() {} };
  Object.assign(el.dataset, { series: '0', points: '0', drawn: '[]' });

  // {id, label, best, parts: [{segment, family, familyLabel, color, steps, values, first, last, points}]}
  let lines = [];

  function draw(self) {
    const f = plotFrame(self);
    if (!f) return undefined;
    const { X, Y, dpr } = f;
    const drawn = [];
    clipped(self, (ctx) => {
      strokeFamilies(ctx, lines, chart.hovered(), dpr,
        (line) => line.parts.map((part) => ({ part, color: part.color, path: traceCurve(new Path2D(), part.steps, part.values, X, Y, dpr) })),
        (line, { part }) => drawn.push({ trial: line.id, segment: part.segment, family: part.family, color: part.color,
          first: part.first, last: part.last, points: part.points }));
    });
    return drawn;
  }

  /** The curve passing nearest the cursor, within HOVER_PX: {line, part, i}. */
  function nearest(self) {
    const { left: cl, top: ct } = self.cursor;
    if (cl === null || cl < 0 || ct === null || ct < 0) return null;
    const f = plotFrame(self);
    if (!f) return null;
    const { left, top, X, Y, dpr } = f;
    const px = left + cl * dpr;
    const py = top + ct * dpr;
    let best = null;
    let bestD = HOVER_PX * dpr;
    for (const line of lines) {
      for (const part of line.parts) {
        for (let i = part.joined ? 1 : 0; i < part.steps.length; i++) {
          if (part.values[i] === null) continue;
          const d = Math.hypot(X(part.steps[i]) - px, Y(part.values[i]) - py);
          if (d < bestD) {
            bestD = d;
            best = { line, part, i };
          }
        }
      }
    }
    return best;
  }

  return {
    /** curves: Map id -> {steps, values}; trials: Map id -> trial; fams:
     * pbt.js familyTable; colors: Map family id -> colour; bestId. */
    update(curves, trials, fams, colors, bestId) {
      const next = [];
      const all = [];
      let xmin = Infinity;
      let xmax = -Infinity;
      let points = 0;
      const famLabel = (f) => {
        const t = trials.get(f);
        return t ? `#${t.number}` : `id ${f}`;
      };
      for (const [id, c] of curves) {
        if (!c.values.some((v) => v !== null)) continue;
        const t = trials.get(id) || { id, lineage: [] };
        const parts = curveSegments(t, c, fams.get(id)).map((p) => ({
          ...p, color: colors.get(p.family) || '#9ca3af', familyLabel: famLabel(p.family),
        }));
        const label = t.number !== undefined ? `trial #${t.number} (id ${id}${t.state ? `, ${t.state}` : ''})` : `trial id ${id}`;
        next.push({ id, label, best: id === bestId, parts });
        for (const s of c.steps) {
          if (s < xmin) xmin = s;
          if (s > xmax) xmax = s;
        }
        points += c.steps.length;
        all.push(c.values);
      }
      next.sort((a, b) => a.id - b.id);
      lines = next;
      chart.rehover((hit) => {
        const line = lines.find((l) => l.id === hit.line.id);
        return line ? { line, part: line.parts[0], i: 0 } : null;
      });
      el.dataset.series = String(lines.length);
      el.dataset.points = String(points);
      if (lines.length === 0) {
        xmin = 0;
        xmax = 1;
      } else if (xmin === xmax) {
        xmin -= 1;
        xmax += 1;
      }
      chart.setRanges([xmin, xmax], robustRange(all));
    },
    destroy() {
      chart.destroy();
    },
  };
}

// The compare page's overlay (views/compare.js): a few named lines in
// distinct colours on one chart, over linechart.js's scaffolding: the
// picked trials' curves of one metric against step, or the picked
// experiments' best value so far against trial number or time (`stepped`:
// the value holds until the next point). Hovering names the nearest line
// and point; a click opens its page. For tests, data-series counts the
// lines and data-drawn (JSON) lists what the last draw stroked: one item
// per line, {trial: the line's id (an experiment's, in the experiments'
// chart), segment: 0, color, x: [...], y: [...]} (null y: a gap).
import { num } from '../format.js';
import { clipped, createLineChart, plotFrame } from './linechart.js';
import { PALETTE, robustRange, tick } from './uplot.js';

const HEIGHT = 320;
const HOVER_PX = 10;

/** The colour of the i-th line of an overlay (the compare table's swatches too). */
export function overlayColor(i) {
  return PALETTE[i % PALETTE.length];
}

/**
 * el: the container; uPlot: its constructor (null: the missing-package
 * message); opts: {xLabel, yLabel, stepped, onPick(id, event)}.
 * Returns {update(lines), destroy()}; lines: [{id, label, color, x, y}].
 */
export function createOverlayChart(el, uPlot, opts) {
  let lines = [];
  const chart = createLineChart(el, uPlot, {
    height: HEIGHT,
    infoText: 'hover a line to see its values; click to open it',
    zoomX: true,
    xLabel: opts.xLabel,
    yLabel: opts.yLabel,
    draw,
    nearest,
    describe: (hit) => `${hit.line.label} \u00b7 ${opts.xLabel} ${tick(hit.line.x[hit.i])} \u00b7 ${opts.yLabel} ${num(hit.line.y[hit.i])}`,
    onPick: opts.onPick,
  });
  el.dataset.series = '0';
  if (!chart) return { update() {}, destroy() {} };

  /** The line's path: straight segments, or steps (horizontal, then up or
   * down at the next point) when stepped; a null value is a gap. */
  function trace(line, X, Y, dpr) {
    const path = new Path2D();
    let pen = false;
    let prevY = 0;
    const { x, y } = line;
    for (let i = 0; i < x.length; i++) {
      if (y[i] === null) {
        pen = false;
        continue;
      }
      const px = X(x[i]);
      const py = Y(y[i]);
      if (!pen) {
        path.moveTo(px, py);
        if (x.length === 1) path.lineTo(px + 2 * dpr, py); // a lone point still shows
        pen = true;
      } else {
        if (opts.stepped) path.lineTo(px, prevY);
        path.lineTo(px, py);
      }
      prevY = py;
    }
    return path;
  }

  function draw(self) {
    const f = plotFrame(self);
    if (!f) return null;
    const { X, Y, dpr } = f;
    const hot = chart.hovered();
    const drawn = [];
    clipped(self, (ctx) => {
      for (const line of [...lines.filter((l) => l !== hot), ...(hot ? [hot] : [])]) {
        ctx.strokeStyle = line.color;
        ctx.globalAlpha = 0.95;
        ctx.lineWidth = (line === hot ? 3 : 2) * dpr;
        ctx.stroke(trace(line, X, Y, dpr));
        drawn.push({ trial: line.id, segment: 0, color: line.color, x: line.x, y: line.y });
      }
      ctx.globalAlpha = 1;
    });
    return drawn;
  }

  /** The point nearest the cursor within HOVER_PX: {line, i} or null. */
  function nearest(self) {
    const { left: cl, top: ct } = self.cursor;
    if (cl === null || cl < 0 || ct === null || ct < 0) return null;
    const f = plotFrame(self);
    if (!f) return null;
    const px = f.left + cl * f.dpr;
    const py = f.top + ct * f.dpr;
    let best = null;
    let bestD = HOVER_PX * f.dpr;
    for (const line of lines) {
      for (let i = 0; i < line.x.length; i++) {
        if (line.y[i] === null) continue;
        const d = Math.hypot(f.X(line.x[i]) - px, f.Y(line.y[i]) - py);
        if (d < bestD) {
          bestD = d;
          best = { line, i };
        }
      }
    }
    return best;
  }

  return {
    update(next) {
      lines = next;
      chart.rehover((hit) => {
        const line = lines.find((l) => l.id === hit.line.id);
        return line && line.x.length ? { line, i: 0 } : null;
      });
      let xmin = Infinity;
      let xmax = -Infinity;
      for (const l of lines) {
        for (const v of l.x) {
          if (v < xmin) xmin = v;
          if (v > xmax) xmax = v;
        }
      }
      if (!(xmin <= xmax)) [xmin, xmax] = [0, 1];
      else if (xmin === xmax) [xmin, xmax] = [xmin - 1, xmax + 1];
      el.dataset.series = String(lines.length);
      el.dataset.points = String(lines.reduce((n, l) => n + l.x.length, 0));
      chart.setRanges([xmin, xmax], robustRange(lines.map((l) => l.y)));
    },
    destroy() {
      chart.destroy();
    },
  };
}

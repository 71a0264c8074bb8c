// The scaffolding of the charts that draw their own lines over uPlot's axes
// (curves.js, families.js, schedule.js): one uPlot with the step on x, a
// hidden series and no legend; the chart's draw hook, its list of what it
// drew recorded in data-drawn once per data change; the hovered line found
// at most once a frame, named below the plot, and redrawn on top when it
// changes; a click that opens its trial; the width following the container;
// where x zooms, a drag to zoom and a double click back. Each chart keeps
// only what it draws and how it finds the line under the cursor.
import { h, setText } from '../dom.js';
import { INT_INCRS, chartWidth, distinctTicks, intSplits, logSplits, logTicks, onWidth, showMissing, tickValues } from './uplot.js';

const OUTLINE = '#111827';

/**
 * el: the container; uPlot: its constructor, or null when web/node_modules
 * is missing (then the missing-package message, with `before` above it,
 * and null is returned). spec: {
 *   height, infoText (the line below the plot before any hover),
 *   before, after: elements above the plot and below the info line,
 *   zoomX: a drag zooms the x axis and a double click resets it,
 *   xLabel: the x axis' name ('step' by default),
 *   yLabel (with the default y axis), yAxis, yScale (uPlot's, merged over
 *   {range: the chart's y range}); the default y axis is a log one while
 *   setRanges says so,
 *   draw(self): paints; may return the list of what it drew (data-drawn,
 *   sorted by trial and segment),
 *   nearest(self): the hit under the cursor, {line, ...}, or null,
 *   describe(hit): the info line of a hit,
 *   onPick(trialId) }.
 * The step axis has whole-number ticks only (INT_INCRS, intSplits).
 * Returns {plot, hovered(), rehover(fn), setRanges(xr, yr, log), destroy()}.
 */
export function createLineChart(el, uPlot, spec) {
  if (!uPlot) {
    showMissing(el);
    if (spec.before) el.prepend(spec.before);
    return null;
  }
  const plot = h('div', { class: 'chart-plot' });
  const info = h('div', { class: 'chart-info', text: spec.infoText || '' });
  el.replaceChildren(...(spec.before ? [spec.before] : []), plot, info, ...(spec.after ? [spec.after] : []));

  let xr = [0, 1];
  let yr = [0, 1];
  let hit = null; // the last nearest(): {line, ...}
  let u = null;
  let zoomed = false;
  let pending = false;
  let version = 0; // bumped by setRanges(): data-drawn is recorded again then
  let recorded = -1;
  let ylog = false; // the default y axis is a log one (setRanges)

  function draw(self) {
    const drawn = spec.draw(self);
    if (drawn && recorded !== version) {
      recorded = version;
      drawn.sort((a, b) => a.trial - b.trial || a.segment - b.segment);
      el.dataset.drawn = JSON.stringify(drawn);
    }
  }

  function onCursor(self) {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const next = spec.nearest(self);
      if (next) setText(info, spec.describe(next));
      const was = hit ? hit.line : null;
      hit = next;
      if ((next ? next.line : null) !== was) {
        plot.style.cursor = next ? 'pointer' : '';
        self.redraw(false);
      }
    });
  }

  /** The step axis's labels; its splits in data-x-ticks (JSON) for tests. */
  function stepTicks(self, splits) {
    const s = JSON.stringify(splits);
    if (el.dataset.xTicks !== s) el.dataset.xTicks = s;
    return distinctTicks(splits);
  }

  function make() {
    const x = spec.zoomX
      // An explicit min/max is a drag zoom (or the data's own extremes).
      ? { time: false, range: (self, min, max) => (min === null || max === null || min >= max ? xr : [min, max]) }
      : { time: false, range: () => xr };
    u = new uPlot({
      width: chartWidth(el),
      height: spec.height,
      legend: { show: false },
      cursor: { points: { show: false }, drag: spec.zoomX ? { x: true, y: false, setScale: true } : { x: false, y: false } },
      scales: { x, y: { ...(spec.yScale || {}), ...(ylog ? { distr: 3, log: 10 } : {}), range: () => yr } },
      axes: [
        { label: spec.xLabel || 'step', values: stepTicks, incrs: INT_INCRS, splits: intSplits },
        spec.yAxis || (ylog
          ? { label: spec.yLabel, size: 60, splits: logSplits, values: logTicks }
          : { label: spec.yLabel, size: 60, values: tickValues }),
      ],
      series: [{}, { label: spec.yLabel, stroke: 'transparent', paths: () => null, points: { show: false } }],
      hooks: {
        draw: [draw],
        setCursor: [onCursor],
        setSelect: spec.zoomX ? [() => { zoomed = true; }] : [],
      },
    }, [[xr[0], xr[1]], [null, null]], plot);
    u.over.addEventListener('click', (ev) => {
      if (hit && spec.onPick) spec.onPick(hit.line.id, ev); // ev: a shift-click picks (picks.js)
    });
    if (spec.zoomX) {
      u.over.addEventListener('dblclick', () => {
        zoomed = false; // uPlot's own double click resets the x scale
      });
    }
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: spec.height }); // not at the first call: same size
  });

  return {
    plot,
    /** The hovered line, or null. */
    hovered() {
      return hit ? hit.line : null;
    },
    /** After new data: the hit of the hovered line among the new lines
     * (fn(hit) gives it, or null). */
    rehover(fn) {
      if (hit) hit = fn(hit);
    },
    /** New data drawn on the x range xr and y range yr (a zoomed x axis
     * stays zoomed); log: the default y axis is a log one (every value
     * drawn > 0: logOrLinear in uplot.js), made anew when that changes. */
    setRanges(nextX, nextY, log = false) {
      xr = nextX;
      yr = nextY;
      version++;
      if (u && log !== ylog) {
        u.destroy();
        u = null;
        zoomed = false;
      }
      ylog = log;
      if (!u) make();
      else u.setData([[xr[0], xr[1]], [null, null]], !zoomed);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

/** What draw hooks need of uPlot's geometry: the canvas, the plot box (canvas
 * pixels), the device pixel ratio and the scales' X(v), Y(v) in canvas
 * pixels (x linear, y linear or log); null before the scales have a range. */
export function plotFrame(self) {
  const { left, top, width, height } = self.bbox;
  const sx = self.scales.x;
  const sy = self.scales.y;
  if (sx.min === null || sy.min === null) return null;
  const kx = width / (sx.max - sx.min || 1);
  // A log y axis (distr 3): positions by the values' logarithms.
  const ylog = sy.distr === 3;
  const y0 = ylog ? Math.log10(sy.min) : sy.min;
  const ky = height / ((ylog ? Math.log10(sy.max) : sy.max) - y0 || 1);
  return {
    ctx: self.ctx, left, top, width, height, sx, sy, kx, ky, ylog,
    dpr: self.pxRatio || window.devicePixelRatio || 1,
    X: (v) => left + (v - sx.min) * kx,
    Y: ylog ? (v) => top + height - (Math.log10(v) - y0) * ky : (v) => top + height - (v - y0) * ky,
  };
}

/** Runs paint(ctx) with the canvas clipped to the plot box. */
export function clipped(self, paint) {
  const ctx = self.ctx;
  const { left, top, width, height } = self.bbox;
  ctx.save();
  ctx.beginPath();
  ctx.rect(left, top, width, height);
  ctx.clip();
  paint(ctx);
  ctx.restore();
}

/** Adds a curve's reports (steps, values; null is a gap) to path through
 * X and Y; a lone report still shows as a short dash. */
export function traceCurve(path, steps, values, X, Y, dpr) {
  let pen = false;
  for (let i = 0; i < steps.length; i++) {
    const v = values[i];
    if (v === null) {
      pen = false;
      continue;
    }
    const x = X(steps[i]);
    const y = Y(v);
    if (pen) path.lineTo(x, y);
    else {
      path.moveTo(x, y);
      if (steps.length === 1) path.lineTo(x + dpr, y);
      pen = true;
    }
  }
  return path;
}

/** The pieces of the population's lines in their families' colours
 * (families.js, schedule.js): the others first, then the best, then the
 * hovered one (hot) on top, a bold one over a dark outline. lines: {best,
 * ...}; pieces(line): [{path, color}], each stroked and then passed to
 * drawn(line, piece, k). */
export function strokeFamilies(ctx, lines, hot, dpr, pieces, drawn) {
  const order = [...lines.filter((l) => !l.best && l !== hot), ...lines.filter((l) => l.best && l !== hot), ...(hot ? [hot] : [])];
  for (const line of order) {
    const bold = line.best || line === hot;
    const list = pieces(line);
    if (bold) {
      ctx.globalAlpha = line === hot ? 0.8 : 0.5;
      ctx.strokeStyle = OUTLINE;
      ctx.lineWidth = (line.best ? 5 : 4) * dpr;
      for (const p of list) ctx.stroke(p.path);
    }
    list.forEach((p, k) => {
      ctx.globalAlpha = bold ? 1 : 0.85;
      ctx.strokeStyle = p.color;
      ctx.lineWidth = (line.best ? 3 : bold ? 2.5 : 1.5) * dpr;
      ctx.stroke(p.path);
      drawn(line, p, k);
    });
  }
}

// Population Based Training: the population's learning curves coloured by
// family (web/js/pbt.js): each trial's curve is cut at its exploits and
// every piece takes the colour of the family it belongs to, so a member that
// took another's weights goes on in that member's colour. The best trial is
// drawn bold over a dark outline; hovering names the trial, its segment and
// family, a click opens it. data-series counts the curves, data-points the
// reports; data-drawn (JSON) lists what the last draw stroked, one item per
// segment: {trial, segment, family, color, first, last, points}.
import { h, setText } from '../dom.js';
import { num } from '../format.js';
import { curveSegments } from '../pbt.js';
import { chartWidth, onWidth, robustRange, showMissing, tick } from './uplot.js';

const HEIGHT = 320;
const HOVER_PX = 10;
const OUTLINE = '#111827';

/** el: the container (data-testid=chart-pbt-curves); opts: {metric,
 * onPick(trialId)}. */
export function createFamilyCurvesChart(el, uPlot, opts) {
  if (!uPlot) {
    showMissing(el);
    return { update() {}, destroy() {} };
  }
  const plot = h('div', { class: 'chart-plot' });
  const info = h('div', { class: 'chart-info', text: 'hover a curve to see its trial and family; click to open it' });
  el.replaceChildren(plot, info);
  Object.assign(el.dataset, { series: '0', points: '0', drawn: '[]' });

  // {id, label, best, parts: [{segment, family, familyLabel, color, steps, values, first, last, points}]}
  let lines = [];
  let xr = [0, 1];
  let yr = [0, 1];
  let hovered = null; // {line, part, i}
  let u = null;
  let zoomed = false;
  let pending = false;
  let version = 0;
  let recorded = -1;

  function draw(self) {
    const ctx = self.ctx;
    const { left, top, width, height } = self.bbox;
    const sx = self.scales.x;
    const sy = self.scales.y;
    if (sx.min === null || sy.min === null) return;
    const kx = width / (sx.max - sx.min || 1);
    const ky = height / (sy.max - sy.min || 1);
    const X = (v) => left + (v - sx.min) * kx;
    const Y = (v) => top + height - (v - sy.min) * ky;
    const dpr = self.pxRatio || window.devicePixelRatio || 1;
    const trace = (part) => {
      const path = new Path2D();
      let pen = false;
      for (let i = 0; i < part.steps.length; i++) {
        const v = part.values[i];
        if (v === null) {
          pen = false;
          continue;
        }
        const x = X(part.steps[i]);
        const y = Y(v);
        if (pen) path.lineTo(x, y);
        else {
          path.moveTo(x, y);
          if (part.steps.length === 1) path.lineTo(x + dpr, y); // a lone point still shows
          pen = true;
        }
      }
      return path;
    };
    const drawn = [];
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    const hot = hovered ? hovered.line : null;
    // The others first, then the best, then the hovered one on top.
    const order = [...lines.filter((l) => !l.best && l !== hot), ...lines.filter((l) => l.best && l !== hot), ...(hot ? [hot] : [])];
    for (const line of order) {
      const bold = line.best || line === hot;
      if (bold) {
        ctx.globalAlpha = line === hot ? 0.8 : 0.5;
        ctx.strokeStyle = OUTLINE;
        ctx.lineWidth = (line.best ? 5 : 4) * dpr;
        for (const part of line.parts) ctx.stroke(trace(part));
      }
      for (const part of line.parts) {
        ctx.globalAlpha = bold ? 1 : 0.85;
        ctx.strokeStyle = part.color;
        ctx.lineWidth = (line.best ? 3 : bold ? 2.5 : 1.5) * dpr;
        ctx.stroke(trace(part));
        drawn.push({ trial: line.id, segment: part.segment, family: part.family, color: part.color,
          first: part.first, last: part.last, points: part.points });
      }
    }
    ctx.restore();
    if (recorded !== version) {
      recorded = version;
      drawn.sort((a, b) => a.trial - b.trial || a.segment - b.segment);
      el.dataset.drawn = JSON.stringify(drawn);
    }
  }

  /** The curve passing nearest the cursor, within HOVER_PX: {line, part, i}. */
  function nearest(self) {
    const { left: cl, top: ct } = self.cursor;
    if (cl === null || cl < 0 || ct === null || ct < 0) return null;
    const dpr = self.pxRatio || window.devicePixelRatio || 1;
    const { left, top, width, height } = self.bbox;
    const sx = self.scales.x;
    const sy = self.scales.y;
    const kx = width / (sx.max - sx.min || 1);
    const ky = height / (sy.max - sy.min || 1);
    const px = left + cl * dpr;
    const py = top + ct * dpr;
    const X = (v) => left + (v - sx.min) * kx;
    const Y = (v) => top + height - (v - sy.min) * ky;
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

  function onCursor(self) {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const hit = nearest(self);
      if (hit) {
        setText(info, `${hit.line.label} \u00b7 segment ${hit.part.segment}, family ${hit.part.familyLabel} \u00b7 ` +
          `step ${hit.part.steps[hit.i]} \u00b7 ${opts.metric} ${num(hit.part.values[hit.i])}`);
      }
      const was = hovered ? hovered.line : null;
      hovered = hit;
      if ((hit ? hit.line : null) !== was) {
        plot.style.cursor = hit ? 'pointer' : '';
        self.redraw(false);
      }
    });
  }

  function make() {
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      legend: { show: false },
      cursor: { points: { show: false }, drag: { x: true, y: false, setScale: true } },
      scales: {
        x: { time: false, range: (self, min, max) => (min === null || max === null || min >= max ? xr : [min, max]) },
        y: { range: () => yr },
      },
      axes: [
        { label: 'step', values: (s, splits) => splits.map(tick) },
        { label: opts.metric, size: 60, values: (s, splits) => splits.map(tick) },
      ],
      series: [{}, { label: opts.metric, stroke: 'transparent', paths: () => null, points: { show: false } }],
      hooks: {
        draw: [draw],
        setCursor: [onCursor],
        setSelect: [() => { zoomed = true; }],
      },
    }, [[xr[0], xr[1]], [null, null]], plot);
    u.over.addEventListener('click', () => {
      if (hovered && opts.onPick) opts.onPick(hovered.line.id);
    });
    u.over.addEventListener('dblclick', () => {
      zoomed = false;
    });
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT });
  });

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
      version++;
      if (hovered) {
        const line = lines.find((l) => l.id === hovered.line.id);
        hovered = line ? { line, part: line.parts[0], i: 0 } : null;
      }
      el.dataset.series = String(lines.length);
      el.dataset.points = String(points);
      if (lines.length === 0) {
        xmin = 0;
        xmax = 1;
      } else if (xmin === xmax) {
        xmin -= 1;
        xmax += 1;
      }
      xr = [xmin, xmax];
      yr = robustRange(all);
      if (!u) make();
      else u.setData([[xr[0], xr[1]], [null, null]], !zoomed);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

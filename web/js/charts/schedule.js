// Population Based Training: one mutated parameter's schedule, its value
// against step for every trial as a step function (web/js/pbt.js
// schedule()), each piece in the colour of its segment's family; the best
// trial bold over a dark outline, on top. A log domain gets a log axis, a
// choice of other things than numbers a categorical one. Hovering names the
// trial and its value there, a click opens it. data-series counts the
// trials drawn; data-drawn (JSON) lists what the last draw stroked, one item
// per piece: {trial, segment, family, color, start, end, value}.
import { h, setText } from '../dom.js';
import { configValue } from '../format.js';
import { schedule } from '../pbt.js';
import { axisKind, axisValue, chartWidth, logSplits, logTicks, onWidth, showMissing, tick } from './uplot.js';

const HEIGHT = 220;
const HOVER_PX = 8;
const OUTLINE = '#111827';

/** param: the parameter's name; domain: its hyperparam_mutations domain
 * ({type, ...}; a list is a choice of its values). */
export function createScheduleChart(el, uPlot, { param, domain, onPick }) {
  const dom = Array.isArray(domain) ? { type: 'choice', values: domain } : domain || { type: 'uniform' };
  const caption = h('div', { class: 'chart-caption', text: `${param} (${dom.type})` });
  if (!uPlot) {
    showMissing(el);
    el.prepend(caption);
    return { update() {}, destroy() {} };
  }
  const axis = axisKind(dom);
  const plot = h('div', { class: 'chart-plot' });
  const info = h('div', { class: 'chart-info' });
  el.replaceChildren(caption, plot, info);
  Object.assign(el.dataset, { series: '0', drawn: '[]' });

  let lines = []; // {id, label, best, pieces: [{segment, family, color, start, end, value, y}]}
  let xr = [0, 1];
  let yr = [0, 1];
  let hovered = null; // {line, piece}
  let u = null;
  let pending = false;
  let version = 0;
  let recorded = -1;

  function draw(self) {
    const ctx = self.ctx;
    const { left, top, width, height } = self.bbox;
    const X = (v) => self.valToPos(v, 'x', true); // canvas pixels
    const Y = (v) => self.valToPos(v, 'y', true);
    const dpr = self.pxRatio || window.devicePixelRatio || 1;
    const drawn = [];
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    const hot = hovered ? hovered.line : null;
    const order = [...lines.filter((l) => !l.best && l !== hot), ...lines.filter((l) => l.best && l !== hot), ...(hot ? [hot] : [])];
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
    for (const line of order) {
      const bold = line.best || line === hot;
      if (bold) {
        ctx.globalAlpha = line === hot ? 0.8 : 0.5;
        ctx.strokeStyle = OUTLINE;
        ctx.lineWidth = (line.best ? 5 : 4) * dpr;
        line.pieces.forEach((_, k) => ctx.stroke(path(line, k)));
      }
      line.pieces.forEach((p, k) => {
        ctx.globalAlpha = bold ? 1 : 0.85;
        ctx.strokeStyle = p.color;
        ctx.lineWidth = (line.best ? 3 : bold ? 2.5 : 1.5) * dpr;
        ctx.stroke(path(line, k));
        drawn.push({ trial: line.id, segment: p.segment, family: p.family, color: p.color, start: p.start, end: p.end, value: p.value });
      });
    }
    ctx.restore();
    if (recorded !== version) {
      recorded = version;
      drawn.sort((a, b) => a.trial - b.trial || a.segment - b.segment);
      el.dataset.drawn = JSON.stringify(drawn);
    }
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

  function onCursor(self) {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      const hit = nearest(self);
      if (hit) {
        const p = hit.piece;
        setText(info, `${hit.line.label} \u00b7 ${param} = ${configValue(p.value)} on steps ${p.start + 1}\u2013${p.end} \u00b7 family ${p.familyLabel}`);
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
    const yScale = { range: () => yr };
    const yAxis = { label: param, size: 60, values: (s, splits) => splits.map(tick) };
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
    u = new uPlot({
      width: chartWidth(el),
      height: HEIGHT,
      legend: { show: false },
      cursor: { points: { show: false }, drag: { x: false, y: false } },
      scales: { x: { time: false, range: () => xr }, y: yScale },
      axes: [{ label: 'step', values: (s, splits) => splits.map(tick) }, yAxis],
      series: [{}, { stroke: 'transparent', paths: () => null, points: { show: false } }],
      hooks: { draw: [draw], setCursor: [onCursor] },
    }, [[xr[0], xr[1]], [null, null]], plot);
    u.over.addEventListener('click', () => {
      if (hovered && onPick) onPick(hovered.line.id);
    });
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) u.setSize({ width: w, height: HEIGHT });
  });

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
      version++;
      if (hovered) {
        const line = lines.find((l) => l.id === hovered.line.id);
        hovered = line ? { line, piece: line.pieces[0] } : null;
      }
      if (axis.kind === 'cat') yr = [-0.5, Math.max(axis.cats.length, 1) - 0.5];
      else if (!Number.isFinite(lo)) yr = axis.kind === 'log' ? [1, 10] : [0, 1];
      else if (axis.kind === 'log') yr = hi > lo ? [lo / (hi / lo) ** 0.05, hi * (hi / lo) ** 0.05] : [lo / 2, hi * 2];
      else {
        const pad = hi > lo ? (hi - lo) * 0.06 : Math.abs(lo) * 0.1 || 0.5;
        yr = [lo - pad, hi + pad];
      }
      xr = [0, xmax];
      el.dataset.series = String(lines.length);
      if (!u) make();
      else u.setData([[xr[0], xr[1]], [null, null]]);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

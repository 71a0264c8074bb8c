// The workers' timeline (GET /experiments/{id}/timeline, docs/api.md): a
// Gantt chart with a row per worker (its name) and a bar per attempt that
// was leased, from its start to its end (to now while it runs), coloured by
// its state as everywhere on the dashboard (style.css: completed green,
// stopped amber, failed red, running blue). The gaps in a row are the
// worker's idle time for this experiment: between its first start and its
// last end, the time no attempt of it ran. A worker with several slots may
// run attempts at once: they get lanes of their own within its row, so that
// no bar hides another. Hovering a bar names the trial, attempt and times;
// a click opens the trial.
//
// For tests: the chart's data-bars counts the bars, data-drawn (JSON) lists
// them as [trial_id, attempt, worker_id, start_ms, end_ms, state, lane],
// data-px their middles as [trial_id, attempt, left, top] in CSS px of the
// plot area (uPlot's .u-over); the
// table below has a row per worker (timeline-row: data-worker, data-bars,
// data-busy-s, data-idle-s), and timeline-idle the overall idle share
// (data-idle-pct).
import { h, setText } from '../dom.js';
import { duration } from '../format.js';
import { chartWidth, onWidth } from './uplot.js';

const LANE_PX = 26;
export const STATE_COLORS = {
  pending: '#8a94a6', running: '#1d72c9', paused: '#8b5cf6', preempted: '#0e7c86',
  completed: '#1e8e3e', stopped: '#c77800', failed: '#d93025', canceled: '#5f6368',
};

/** The length of the union of intervals [[start, end], ...]. Pure. */
export function unionLength(intervals) {
  const s = intervals.filter((iv) => iv[1] > iv[0]).sort((a, b) => a[0] - b[0]);
  let total = 0;
  let from = -Infinity;
  let to = -Infinity;
  for (const [a, b] of s) {
    if (a > to) {
      if (to > from) total += to - from;
      from = a;
      to = b;
    } else if (b > to) to = b;
  }
  if (to > from) total += to - from;
  return total;
}

/** Lanes for bars sorted by start (greedy: the first lane free at the
 * bar's start), so that no two bars of a lane overlap; sets bar.lane and
 * answers how many lanes. Pure. */
export function assignLanes(bars) {
  const ends = []; // per lane: when its last bar ends
  for (const b of bars) {
    let k = ends.findIndex((e) => e <= b.start);
    if (k < 0) {
      k = ends.length;
      ends.push(0);
    }
    ends[k] = b.end;
    b.lane = k;
  }
  return Math.max(1, ends.length);
}

/** The rows of the chart from the endpoint's answer; now (ms) ends the
 * running attempts. Rows in the order of each worker's first start; each
 * {worker, name, bars: [{trial, attempt, worker, start, end, state,
 * running, lane}], lanes, busyMs, spanMs, idleMs}, busy being the time
 * some attempt of it ran and idle the rest of its span (first start to last
 * end). Also the overall {idleMs, spanMs, t0, t1}. Pure. */
export function timelineRows(doc, now) {
  const items = doc && Array.isArray(doc.items) ? doc.items : [];
  const names = (doc && doc.workers) || {};
  const byWorker = new Map();
  let t0 = Infinity;
  let t1 = -Infinity;
  for (const it of items) {
    const [trial, attempt, worker, started, ended, state] = it;
    if (typeof started !== 'number') continue;
    const running = ended === null || ended === undefined;
    const end = running ? Math.max(now, started) : Math.max(ended, started);
    const key = worker === null || worker === undefined ? 'none' : String(worker);
    if (!byWorker.has(key)) byWorker.set(key, []);
    byWorker.get(key).push({ trial, attempt, worker, start: started, end, state, running, lane: 0 });
    if (started < t0) t0 = started;
    if (end > t1) t1 = end;
  }
  const rows = [];
  for (const [key, bars] of byWorker) {
    bars.sort((a, b) => a.start - b.start || a.trial - b.trial || a.attempt - b.attempt);
    const lanes = assignLanes(bars);
    const busyMs = unionLength(bars.map((b) => [b.start, b.end]));
    const first = bars[0].start;
    const last = Math.max(...bars.map((b) => b.end));
    const spanMs = last - first;
    rows.push({
      worker: key === 'none' ? null : bars[0].worker,
      name: key === 'none' ? '(no worker)' : names[key] || `worker ${key}`,
      bars, lanes, busyMs, spanMs, idleMs: Math.max(0, spanMs - busyMs), first,
    });
  }
  rows.sort((a, b) => a.first - b.first);
  const idleMs = rows.reduce((s, r) => s + r.idleMs, 0);
  const spanMs = rows.reduce((s, r) => s + r.spanMs, 0);
  return { rows, idleMs, spanMs, t0: Number.isFinite(t0) ? t0 : 0, t1: Number.isFinite(t1) ? t1 : 1 };
}

export function createTimelineChart(el, uPlot, { onPick }) {
  const idle = h('p', { class: 'muted', testid: 'timeline-idle' });
  const plot = h('div', { class: 'chart-plot' });
  const info = h('div', { class: 'chart-info' });
  const body = h('tbody');
  const table = h('table', { class: 'grid', testid: 'timeline-workers' },
    h('thead', null, h('tr', null, h('th', { text: 'Worker' }), h('th', { class: 'num', text: 'Attempts' }),
      h('th', { class: 'num', text: 'Busy' }), h('th', { class: 'num', text: 'Idle' }))), body);
  el.replaceChildren(idle, plot, info, h('div', { class: 'table-wrap' }, table));
  Object.assign(el.dataset, { bars: '0', rows: '0', drawn: '[]' });
  if (!uPlot) {
    plot.append(h('p', { class: 'chart-missing', text: 'charts need `npm ci` in web/' }));
  }
  let u = null;
  let model = { rows: [], idleMs: 0, spanMs: 0, t0: 0, t1: 1 };
  let base = []; // each row's first lane from the top
  let lanesTotal = 1;
  let hot = null;
  let recorded = false; // data-px written for this answer

  const height = () => Math.max(2, lanesTotal) * LANE_PX + 50;
  // Lane position: row r's lane k is centred at y = base[r] + k + 0.5,
  // counted from the top (the y scale runs downwards).
  function draw(self) {
    const ctx = self.ctx;
    const { left, top, width, height: ht } = self.bbox;
    const dpr = self.pxRatio || window.devicePixelRatio || 1;
    ctx.save();
    ctx.beginPath();
    ctx.rect(left, top, width, ht);
    ctx.clip();
    const Y = (v) => self.valToPos(v, 'y', true);
    const X = (ms) => self.valToPos(ms / 1000, 'x', true);
    if (!recorded) {
      // Each bar's middle in CSS px of the plot area (uPlot's .u-over),
      // once per answer: tests hover and click them.
      recorded = true;
      const at = (v) => Math.round(v * 10) / 10;
      el.dataset.px = JSON.stringify(model.rows.flatMap((row, r) => row.bars.map((b) => [b.trial, b.attempt,
        at(self.valToPos((b.start + b.end) / 2000, 'x')), at(self.valToPos(base[r] + b.lane + 0.5, 'y'))])));
    }
    model.rows.forEach((row, r) => {
      if (r % 2 === 1) {
        ctx.fillStyle = '#f3f4f6';
        ctx.fillRect(left, Y(base[r]), width, Y(base[r] + row.lanes) - Y(base[r]));
      }
      for (const b of row.bars) {
        const y0 = Y(base[r] + b.lane + 0.15);
        const y1 = Y(base[r] + b.lane + 0.85);
        const x0 = X(b.start);
        // A short attempt still shows; one pixel left out at its end tells
        // it from a next attempt that starts as it ends.
        const w = Math.max(2 * dpr, X(b.end) - x0 - dpr);
        ctx.fillStyle = STATE_COLORS[b.state] || '#6b7280';
        ctx.globalAlpha = b === hot ? 1 : 0.85;
        ctx.fillRect(x0, y0, w, y1 - y0);
        if (b === hot) {
          ctx.strokeStyle = '#111827';
          ctx.lineWidth = 2 * dpr;
          ctx.strokeRect(x0, y0, w, y1 - y0);
        }
        if (b.running) { // an open end: it still runs
          ctx.fillStyle = '#ffffff';
          ctx.fillRect(x0 + w - 2 * dpr, y0, 2 * dpr, y1 - y0);
        }
      }
    });
    ctx.globalAlpha = 1;
    ctx.restore();
  }

  function nearest(self) {
    const { left, top } = self.cursor;
    if (left === null || left < 0) return null;
    const ms = self.posToVal(left, 'x') * 1000;
    const lane = self.posToVal(top, 'y');
    const slack = (self.posToVal(left + 3, 'x') * 1000) - ms; // 3 px: thin bars are hard to hit
    for (let r = 0; r < model.rows.length; r++) {
      const row = model.rows[r];
      if (lane < base[r] || lane >= base[r] + row.lanes) continue;
      const k = Math.floor(lane - base[r]);
      for (const b of row.bars) if (b.lane === k && ms >= b.start - slack && ms <= b.end + slack) return b;
    }
    return null;
  }

  function describe(b) {
    const name = (model.rows.find((r) => r.bars.includes(b)) || {}).name;
    return `trial id ${b.trial}, attempt ${b.attempt} on ${name}: ${b.state}, ` +
      `${new Date(b.start).toLocaleTimeString()} to ${b.running ? 'now (running)' : new Date(b.end).toLocaleTimeString()}, ` +
      `${duration(b.end - b.start)} (click to open)`;
  }

  function make() {
    u = new uPlot({
      width: chartWidth(el),
      height: height(),
      legend: { show: false },
      cursor: { drag: { x: true, y: false, setScale: true }, points: { show: false } },
      scales: {
        x: { time: true, range: (s, min, max) => (min !== null && max !== null && max > min ? [min, max] : [model.t0 / 1000, model.t1 / 1000]) },
        y: { time: false, dir: -1, range: () => [0, lanesTotal] },
      },
      axes: [
        {},
        {
          size: 120,
          splits: () => model.rows.map((row, r) => base[r] + row.lanes / 2),
          values: () => model.rows.map((row) => row.name),
          grid: { show: false },
        },
      ],
      series: [{}, { stroke: 'transparent', paths: () => null, points: { show: false } }],
      hooks: {
        draw: [draw],
        setCursor: [(self) => {
          const next = nearest(self);
          if (next) setText(info, describe(next));
          if (next !== hot) {
            hot = next;
            plot.style.cursor = next ? 'pointer' : '';
            self.redraw(false);
          }
        }],
      },
    }, [[model.t0 / 1000, model.t1 / 1000], [null, null]], plot);
    u.over.addEventListener('click', () => {
      if (hot && onPick) onPick(hot.trial);
    });
  }

  const stopWidth = onWidth(el, (w) => {
    if (u && u.width !== w) {
      recorded = false; // the dots move
      u.setSize({ width: w, height: height() });
    }
  });

  return {
    /** doc: the endpoint's answer, or null with error (an ApiError). */
    update(doc, error, now = Date.now()) {
      if (error) {
        setText(idle, `timeline not available: ${error.message}`);
        return;
      }
      model = timelineRows(doc, now);
      base = [];
      let k = 0;
      for (const row of model.rows) {
        base.push(k);
        k += row.lanes;
      }
      lanesTotal = Math.max(1, k);
      hot = null;
      recorded = false;
      const bars = model.rows.flatMap((row) => row.bars);
      Object.assign(el.dataset, {
        bars: String(bars.length),
        rows: String(model.rows.length),
        drawn: JSON.stringify(bars.map((b) => [b.trial, b.attempt, b.worker, b.start, b.running ? null : b.end, b.state, b.lane])),
      });
      const pct = model.spanMs > 0 ? (100 * model.idleMs) / model.spanMs : 0;
      idle.dataset.idlePct = String(pct);
      setText(idle, model.rows.length
        ? `${bars.length} attempts on ${model.rows.length} worker${model.rows.length === 1 ? '' : 's'}; idle ${pct.toFixed(1)}% ` +
          `(${duration(model.idleMs)} of ${duration(model.spanMs)}: each worker's gaps between its first start and its last end). Drag to zoom, double click to reset.`
        : 'No attempt leased yet.');
      body.replaceChildren(...model.rows.map((row) => h('tr', {
        testid: 'timeline-row', 'data-worker': row.worker === null ? '' : String(row.worker), 'data-name': row.name,
        'data-bars': String(row.bars.length), 'data-busy-s': String(row.busyMs / 1000), 'data-idle-s': String(row.idleMs / 1000),
        'data-lanes': String(row.lanes),
      },
      h('td', { text: row.name }), h('td', { class: 'num', text: String(row.bars.length) }),
      h('td', { class: 'num', text: duration(row.busyMs) }), h('td', { class: 'num', text: duration(row.idleMs) }))));
      if (!uPlot) return;
      if (u && u.height !== height()) u.setSize({ width: u.width, height: height() });
      if (!u) make();
      else u.setData([[model.t0 / 1000, model.t1 / 1000], [null, null]]);
    },
    destroy() {
      stopWidth();
      if (u) u.destroy();
    },
  };
}

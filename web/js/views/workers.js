// #/workers — the workers, their GPUs (utilization and memory from the last
// heartbeat) and the trials they run.
import * as api from '../api.js';
import { h, setAttr, setText, syncRows } from '../dom.js';
import { DASH, ago, time } from '../format.js';
import { startPoll } from '../poll.js';

/** Text for a worker's GPUs: "NVIDIA H100 · 97% · 40211/81559 MiB" each. */
function gpuLines(w) {
  const gpus = Array.isArray(w.gpus) ? w.gpus : [];
  if (gpus.length === 0) return [`no GPU \u00b7 ${w.cpus ?? '?'} CPUs`];
  const beat = w.heartbeat && Array.isArray(w.heartbeat.gpus) ? w.heartbeat.gpus : [];
  return gpus.map((g) => {
    const hb = beat.find((b) => b.index === g.index);
    const util = hb && typeof hb.util === 'number' ? `${Math.round(hb.util * 100)}%` : '?%';
    const used = hb && typeof hb.memory_used_mb === 'number' ? hb.memory_used_mb : '?';
    const totalMb = typeof g.memory_mb === 'number' ? g.memory_mb : '?';
    return `GPU ${g.index}: ${g.name || 'GPU'} \u00b7 ${util} \u00b7 ${used}/${totalMb} MiB`;
  });
}

export function mount(root) {
  document.title = 'Workers · Rung';
  const rows = new Map();
  const tbody = h('tbody');
  const empty = h('p', { class: 'empty', hidden: true },
    'No workers yet. Start one with ', h('code', { text: 'rung-worker --server URL' }), '.');
  root.append(
    h('section', { class: 'page' },
      h('h1', { text: 'Workers' }),
      h('div', { class: 'table-wrap' },
        h('table', { class: 'grid', testid: 'workers' },
          h('thead', null, h('tr', null,
            h('th', { class: 'num', text: 'ID' }),
            h('th', { text: 'Name' }),
            h('th', { text: 'Host' }),
            h('th', { text: 'State' }),
            h('th', { text: 'GPUs' }),
            h('th', { text: 'Running trials' }),
            h('th', { text: 'Last seen' }),
            h('th', { text: 'Registered' }))),
          tbody)),
      empty));

  function createRow(w) {
    const c = {
      id: h('td', { class: 'num' }),
      name: h('td', { testid: 'worker-name' }),
      host: h('td'),
      alive: h('span', { testid: 'worker-alive' }),
      gpus: h('td', { testid: 'worker-gpus', class: 'gpus' }),
      running: h('td', { testid: 'worker-running' }),
      seen: h('td', { testid: 'worker-seen' }),
      registered: h('td'),
    };
    const row = h('tr', { testid: 'worker-row', 'data-id': w.id },
      c.id, c.name, c.host, h('td', null, c.alive), c.gpus, c.running, c.seen, c.registered);
    row.cells_ = c;
    row.key_ = { gpus: '', running: null };
    return row;
  }

  function updateRow(row, w) {
    const c = row.cells_;
    setText(c.id, w.id);
    setText(c.name, w.name || DASH);
    setText(c.host, w.hostname || DASH);
    const alive = Boolean(w.alive);
    setText(c.alive, alive ? 'alive' : 'gone');
    const cls = `state state-${alive ? 'running' : 'canceled'}`;
    if (c.alive.className !== cls) c.alive.className = cls;
    const lines = gpuLines(w);
    const gk = lines.join('\n');
    if (row.key_.gpus !== gk) {
      row.key_.gpus = gk;
      c.gpus.replaceChildren(...lines.map((l) => h('div', { text: l })));
    }
    const ids = Array.isArray(w.running_trials) ? w.running_trials : [];
    const rk = ids.join(',');
    if (row.key_.running !== rk) {
      row.key_.running = rk;
      const parts = [];
      ids.forEach((tid, i) => {
        if (i) parts.push(', ');
        parts.push(h('a', { href: `#/trials/${tid}`, text: String(tid) }));
      });
      c.running.replaceChildren(...parts); // empty shows a dash from style.css
    }
    setText(c.seen, time(w.last_seen_at));
    setAttr(c.seen, 'title', ago(w.last_seen_at));
    setText(c.registered, time(w.registered_at));
  }

  const poller = startPoll('workers', async (signal) => {
    const doc = await api.listWorkers(signal);
    const items = doc.items || [];
    syncRows(tbody, rows, items, (w) => w.id, createRow, updateRow);
    empty.hidden = items.length > 0;
    return undefined;
  });

  return () => poller.stop();
}

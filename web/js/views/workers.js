// #/workers — the workers, their GPUs (utilization, memory and whether each is
// spare, held by a trial, busy with other people's work or waiting, from the
// last heartbeat), when a worker outside its --hours leases next, and the
// trials they run.
import * as api from '../api.js';
import { h, setAttr, setText, syncRows } from '../dom.js';
import { DASH, ago, time } from '../format.js';
import { startPoll } from '../poll.js';

// What a GPU's state means to a person (docs/workers.md, "Spare GPUs").
const GPU_STATES = {
  spare: 'spare',
  trial: 'trial',
  busy: 'busy',
  waiting: 'waiting',
};

/** A GPU's state from the heartbeat: "spare", "trial 17", "busy: others
 * hold 2048 MiB, use 40%", "waiting" (other work left; the GPU must stay
 * idle a while first); null when the worker sends none. */
function gpuState(hb) {
  if (!hb || typeof hb.state !== 'string' || !GPU_STATES[hb.state]) return null;
  const mb = typeof hb.foreign_mb === 'number' ? hb.foreign_mb : 0;
  const pct = typeof hb.foreign_util === 'number' ? Math.round(hb.foreign_util * 100) : 0;
  const others = `others hold ${mb} MiB, use ${pct}%`;
  let text = GPU_STATES[hb.state];
  if (hb.state === 'trial' && Number.isInteger(hb.trial_id)) text = `trial ${hb.trial_id}`;
  if (hb.state === 'busy') text = `busy: ${others}`;
  else if (hb.state === 'waiting') text = 'waiting: idle first';
  else if (mb > 0 || pct >= 1) text += ` (${others})`;
  return { state: hb.state, text, trial: hb.state === 'trial' ? hb.trial_id : null };
}

/** A worker's GPUs: "GPU 0: NVIDIA H100 · 97% · 40211/81559 MiB" and its state each. */
function gpuLines(w) {
  const gpus = Array.isArray(w.gpus) ? w.gpus : [];
  if (gpus.length === 0) return [{ text: `no GPU \u00b7 ${w.cpus ?? '?'} CPUs`, state: null }];
  const beat = w.heartbeat && Array.isArray(w.heartbeat.gpus) ? w.heartbeat.gpus : [];
  return gpus.map((g) => {
    const hb = beat.find((b) => b.index === g.index);
    const util = hb && typeof hb.util === 'number' ? `${Math.round(hb.util * 100)}%` : '?%';
    const used = hb && typeof hb.memory_used_mb === 'number' ? hb.memory_used_mb : '?';
    const totalMb = typeof g.memory_mb === 'number' ? g.memory_mb : '?';
    return { text: `GPU ${g.index}: ${g.name || 'GPU'} \u00b7 ${util} \u00b7 ${used}/${totalMb} MiB`, state: gpuState(hb) };
  });
}

/** One GPU line: its text, then its state (a link for a trial's). */
function gpuLine(l) {
  if (!l.state) return h('div', { text: l.text });
  const st = l.state.trial
    ? h('a', { href: `#/trials/${l.state.trial}`, text: l.state.text })
    : document.createTextNode(l.state.text);
  return h('div', null, l.text, ' \u00b7 ',
    h('span', { testid: 'worker-gpu-state', class: `gpu-state gpu-${l.state.state}`, 'data-state': l.state.state }, st));
}

/** "next lease Mon 19:00" for a worker outside its --hours, or ''. */
function nextLease(w) {
  const at = w.heartbeat && typeof w.heartbeat.next_lease_at === 'string' ? w.heartbeat.next_lease_at : null;
  if (!at || !w.alive) return '';
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return '';
  const day = d.toLocaleDateString(undefined, { weekday: 'short' });
  return `next lease ${day} ${String(d.getHours()).padStart(2, '0')}:${String(d.getMinutes()).padStart(2, '0')}`;
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
      next: h('div', { testid: 'worker-next-lease', class: 'next-lease muted' }),
      gpus: h('td', { testid: 'worker-gpus', class: 'gpus' }),
      running: h('td', { testid: 'worker-running' }),
      seen: h('td', { testid: 'worker-seen' }),
      registered: h('td'),
    };
    const row = h('tr', { testid: 'worker-row', 'data-id': w.id },
      c.id, c.name, c.host, h('td', null, c.alive, c.next), c.gpus, c.running, c.seen, c.registered);
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
    const gk = JSON.stringify(lines);
    if (row.key_.gpus !== gk) {
      row.key_.gpus = gk;
      c.gpus.replaceChildren(...lines.map(gpuLine));
    }
    // Outside its --hours: when it takes trials again (heartbeat next_lease_at).
    const next = nextLease(w);
    setText(c.next, next);
    c.next.hidden = next === '';
    setAttr(c.next, 'title', next ? time(w.heartbeat.next_lease_at) + (w.heartbeat.hours ? ` (--hours ${w.heartbeat.hours})` : '') : '');
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

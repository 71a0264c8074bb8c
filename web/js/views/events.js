// #/events — the event log (docs/api.md, "Events"): who did what, when, to
// which experiment, trial or worker, newest first; #/experiments/ID/events
// is one experiment's timeline. New events are asked for after the last one
// seen, so a poll costs one small request.
import * as api from '../api.js';
import { h } from '../dom.js';
import { DASH, time } from '../format.js';
import { startPoll } from '../poll.js';

const SHOWN = 500; // the newest rows kept on the page

/** The detail object as one short line: "running: finish, trials: 3". */
function detailText(d) {
  if (!d || typeof d !== 'object') return '';
  return Object.entries(d)
    .map(([k, v]) => `${k}: ${typeof v === 'object' ? JSON.stringify(v) : v}`)
    .join(', ');
}

/** One row: time, actor, kind, what it is about, detail. */
export function eventRow(e) {
  const about = [];
  if (e.experiment_id) about.push(h('a', { href: `#/experiments/${e.experiment_id}` }, `experiment ${e.experiment_id}`));
  if (e.trial_id) about.push(' ', h('a', { href: `#/trials/${e.trial_id}` }, `trial ${e.trial_id}`));
  if (e.worker_id) about.push(' ', h('a', { href: '#/workers' }, `worker ${e.worker_id}`));
  const actor = e.actor || {};
  return h('tr', { testid: 'event-row', 'data-id': e.id, 'data-kind': e.kind },
    h('td', { text: time(e.at) }),
    h('td', { testid: 'event-actor', text: actor.kind === 'rungd' ? 'rungd' : `${actor.name} (${actor.kind})` }),
    h('td', { testid: 'event-kind', class: `event-kind event-${String(e.kind).split('.')[0]}`, text: e.kind }),
    h('td', null, ...(about.length ? about : [DASH])),
    h('td', { class: 'detail', text: detailText(e.detail) }));
}

/** A table of events fed by polling GET /events (filter: {experiment}),
 * newest on top. Returns {el, stop}. */
export function eventTable(filter = {}) {
  const tbody = h('tbody');
  const empty = h('p', { class: 'empty', testid: 'events-empty', text: 'No events yet.' });
  const el = h('div', null,
    h('div', { class: 'table-wrap' },
      h('table', { class: 'grid events', testid: 'events' },
        h('thead', null, h('tr', null,
          h('th', { text: 'When' }), h('th', { text: 'Who' }), h('th', { text: 'What' }),
          h('th', { text: 'About' }), h('th', { text: 'Detail' }))),
        tbody)),
    empty);
  let after = 0;
  const poller = startPoll('events', async (signal) => {
    for (;;) {
      const page = await api.listEvents({ after, limit: 1000, ...filter }, signal);
      if (!page) return undefined;
      for (const e of page.items) tbody.prepend(eventRow(e));
      after = page.next_after;
      while (tbody.rows.length > SHOWN) tbody.lastElementChild.remove();
      empty.hidden = tbody.rows.length > 0;
      if (page.items.length < 1000) return undefined;
    }
  }, { interval: 2000 });
  return { el, stop: () => poller.stop() };
}

export function mount(root, { id } = {}) {
  document.title = id ? `Experiment ${id} events · Rung` : 'Events · Rung';
  const table = eventTable(id ? { experiment: id } : {});
  root.append(
    h('section', { class: 'page' },
      h('h1', { text: id ? `Experiment ${id}: timeline` : 'Events' }),
      id ? h('p', null, h('a', { href: `#/experiments/${id}` }, `Back to experiment ${id}`)) : null,
      table.el));
  return () => table.stop();
}

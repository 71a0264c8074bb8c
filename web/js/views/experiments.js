// #/ — the experiments, newest first, with progress by trial state and
// tags; #/?tag=T lists those tagged T (GET /experiments?tag=T). A checkbox
// per row picks experiments to compare (picks.js, views/compare.js).
import * as api from '../api.js';
import { h, setAttr, setState, setText, syncRows } from '../dom.js';
import { STATES, countDone, num, time, typeOf } from '../format.js';
import { compareBar, pickBox } from '../picks.js';
import { startPoll } from '../poll.js';
import { tagChips } from './tags.js';

const PAGE = 100;
// Bar segments: final states first, then what is still to come.
const BAR_STATES = ['completed', 'stopped', 'failed', 'canceled', 'running', 'preempted', 'paused', 'pending'];

/** "loss (min)", or with several objectives each one: "loss (min), latency (min)". */
export function objectivesText(x) {
  const objectives = x.metrics || [{ name: x.metric, mode: x.mode }];
  return objectives.map((m) => `${m.name || ''} (${m.mode || ''})`).join(', ');
}

export function mount(root, { query } = {}) {
  const tag = query ? query.get('tag') || '' : '';
  document.title = tag ? `Experiments tagged ${tag} · Rung` : 'Experiments · Rung';
  let offset = 0;
  let total = 0;
  const rows = new Map();
  const tbody = h('tbody');
  const empty = h('p', { class: 'empty', hidden: true },
    'No experiments yet. Submit one with ', h('code', { text: 'rung submit SPEC.json' }), '.');
  const prev = h('button', { type: 'button', onclick: () => page(-PAGE) }, '\u2039 Newer');
  const next = h('button', { type: 'button', onclick: () => page(PAGE) }, 'Older \u203a');
  const info = h('span', { class: 'page-info' });
  const pager = h('div', { class: 'pager', hidden: true }, prev, info, next);

  if (tag) {
    empty.replaceChildren(`No experiment is tagged ${tag}.`); // a text node: tags are user input
  }
  // Tagged T: says so, with the way back to every experiment.
  const filter = tag
    ? h('p', { class: 'tag-filter', testid: 'tag-filter', 'data-tag': tag }, 'Tagged ', tagChips([tag]), ' \u00b7 ',
      h('a', { href: '#/', testid: 'tag-filter-clear' }, 'all experiments'))
    : null;
  root.append(
    h('section', { class: 'page' },
      h('h1', { text: 'Experiments' }),
      filter,
      h('div', { class: 'toolbar' }, compareBar('experiments', tbody)),
      h('div', { class: 'table-wrap' },
        h('table', { class: 'grid', testid: 'experiments' },
          h('thead', null, h('tr', null,
            h('th', { class: 'pick', title: 'pick to compare' }),
            h('th', { class: 'num', text: 'ID' }),
            h('th', { text: 'Name' }),
            h('th', { text: 'State' }),
            h('th', { text: 'Trials' }),
            h('th', { class: 'num', text: 'Best' }),
            h('th', { text: 'Metric' }),
            h('th', { text: 'Searcher' }),
            h('th', { text: 'Scheduler' }),
            h('th', { text: 'Tags' }),
            h('th', { text: 'Created' }))),
          tbody)),
      empty,
      pager));

  function page(delta) {
    offset = Math.max(0, Math.min(offset + delta, Math.max(0, total - 1)));
    poller.kick();
  }

  function createRow(x) {
    const cells = {
      id: h('td', { class: 'num' }),
      name: h('a', { testid: 'exp-name', href: `#/experiments/${x.id}` }),
      state: h('span', { testid: 'exp-state' }),
      // Why it ended (docs/api.md, the experiment object), and for a failed
      // one its error: shown when the API has them.
      reason: h('span', { class: 'ended-reason muted', testid: 'exp-ended-reason', hidden: true }),
      error: h('div', { class: 'exp-error-line', testid: 'exp-error', hidden: true }),
      bar: h('div', { class: 'bar' }, BAR_STATES.map((s) => h('span', { class: `seg state-bg-${s}` }))),
      label: h('span', { class: 'progress-text' }),
      best: h('td', { class: 'num', testid: 'exp-best' }),
      metric: h('td', { testid: 'exp-metric' }),
      searcher: h('td', { testid: 'exp-searcher' }),
      scheduler: h('td', { testid: 'exp-scheduler' }),
      tags: h('td', { class: 'tags-cell', testid: 'exp-tags' }),
      created: h('td', { testid: 'exp-created' }),
    };
    cells.progress = h('div', { class: 'progress', testid: 'exp-progress' }, cells.bar, cells.label);
    const row = h('tr', { testid: 'experiment-row', 'data-id': x.id },
      h('td', { class: 'pick' }, pickBox('experiments', x.id)),
      cells.id,
      h('td', null, cells.name),
      h('td', { class: 'state-cell' }, cells.state, cells.reason, cells.error),
      h('td', null, cells.progress),
      cells.best, cells.metric, cells.searcher, cells.scheduler, cells.tags, cells.created);
    row.cells_ = cells;
    return row;
  }

  function updateRow(row, x) {
    const c = row.cells_;
    setText(c.id, x.id);
    setText(c.name, x.name || `experiment ${x.id}`);
    setState(c.state, x.state);
    row.classList.toggle('exp-failed', x.state === 'failed');
    row.classList.toggle('exp-paused', x.state === 'paused');
    // "canceled (canceled)" says nothing more: the reason only when it adds.
    const reason = x.ended_reason && x.ended_reason !== x.state ? x.ended_reason : '';
    setText(c.reason, reason ? `(${reason})` : '');
    c.reason.hidden = !reason;
    // The whole error in the text (and the title, for a long one cut by CSS).
    setText(c.error, x.error || '');
    setAttr(c.error, 'title', x.error ? x.error : null);
    c.error.hidden = !x.error;
    const counts = x.counts || {};
    const totalTrials = x.total_trials || 0;
    const denom = Math.max(totalTrials, 1);
    BAR_STATES.forEach((s, i) => {
      const w = `${(100 * Math.min(counts[s] || 0, denom)) / denom}%`;
      const seg = c.bar.children[i];
      if (seg.style.width !== w) seg.style.width = w;
    });
    setText(c.label, `${countDone(counts)}/${totalTrials}`);
    setAttr(c.progress, 'title',
      STATES.filter((s) => counts[s]).map((s) => `${s} ${counts[s]}`).join(', ') || 'no trials yet');
    setText(c.best, x.best ? num(x.best.value) : num(null));
    setText(c.metric, objectivesText(x));
    setText(c.searcher, typeOf(x.searcher, 'random'));
    setText(c.scheduler, typeOf(x.scheduler, 'fifo'));
    const tags = JSON.stringify(x.tags || []);
    if (c.tags.dataset.tags !== tags) {
      c.tags.dataset.tags = tags;
      c.tags.replaceChildren(...tagChips(x.tags)); // a click lists those tagged so
    }
    setText(c.created, time(x.created_at));
  }

  const poller = startPoll('experiments', async (signal) => {
    const doc = await api.listExperiments({ limit: PAGE, offset, tag }, signal);
    total = doc.total || 0;
    if (offset > 0 && offset >= total) {
      offset = Math.max(0, Math.floor((total - 1) / PAGE) * PAGE);
      return 0; // that page is gone: fetch the last one now
    }
    syncRows(tbody, rows, doc.items || [], (x) => x.id, createRow, updateRow);
    empty.hidden = total > 0;
    pager.hidden = total <= PAGE;
    prev.disabled = offset === 0;
    next.disabled = offset + PAGE >= total;
    setText(info, `${total ? offset + 1 : 0}\u2013${offset + (doc.items || []).length} of ${total}`);
    return undefined;
  });

  return () => poller.stop();
}

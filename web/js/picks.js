// What the user picked to compare (#/compare, views/compare.js): trial ids
// (the trials table's checkboxes, shift-click on a learning curve) and
// experiment ids (the experiments list's checkboxes), in the order picked.
// Kept in sessionStorage, so paging, another experiment's page or a reload
// keep them for the tab's life; every change is told as `rung:picks`.
import { h, setText } from './dom.js';

const KEY = 'rung.picks';
// kind -> the checkbox's data-testid, the Compare button's, and the route's query key.
const KINDS = {
  trials: { box: 'trial-pick', button: 'compare-trials', clear: 'compare-trials-clear' },
  experiments: { box: 'exp-pick', button: 'compare-experiments', clear: 'compare-experiments-clear' },
};

let state = null; // {trials: [ids], experiments: [ids]}

function load() {
  if (state) return state;
  state = { trials: [], experiments: [] };
  try {
    const s = JSON.parse(window.sessionStorage.getItem(KEY) || '{}');
    for (const k of Object.keys(KINDS)) {
      if (Array.isArray(s[k])) state[k] = s[k].filter((x) => Number.isInteger(x) && x > 0);
    }
  } catch {
    /* storage off or garbled: start empty */
  }
  return state;
}

function save() {
  try {
    window.sessionStorage.setItem(KEY, JSON.stringify(state));
  } catch {
    /* storage off: the picks last while the page does */
  }
  window.dispatchEvent(new Event('rung:picks'));
}

/** The ids of `kind` ('trials' or 'experiments') picked, in pick order. */
export function picked(kind) {
  return [...load()[kind]];
}

export function isPicked(kind, id) {
  return load()[kind].includes(id);
}

/** Picks id (on true), unpicks it (false) or flips it (undefined). */
export function togglePick(kind, id, on) {
  const list = load()[kind];
  const i = list.indexOf(id);
  const want = on === undefined ? i < 0 : on;
  if (want && i < 0) list.push(id);
  else if (!want && i >= 0) list.splice(i, 1);
  else return;
  save();
}

export function clearPicks(kind) {
  load()[kind] = [];
  save();
}

/** The compare page's address for these ids. */
export function compareHref(kind, ids) {
  return `#/compare?${kind}=${ids.join(',')}`;
}

/** A row's checkbox for id (data-testid trial-pick or exp-pick). */
export function pickBox(kind, id) {
  const box = h('input', {
    type: 'checkbox', testid: KINDS[kind].box, 'data-pick': kind, 'data-id': id,
    'aria-label': `pick ${kind === 'trials' ? 'trial' : 'experiment'} ${id} to compare`,
    onchange: () => togglePick(kind, id, box.checked),
  });
  box.checked = isPicked(kind, id);
  return box;
}

/**
 * "Compare (N)" and "clear" for `kind`, and the checkboxes under `scope`
 * kept in step with the picks (a pick made elsewhere: a chart, another
 * tab of the table). The listener goes away with the bar: the first
 * change after it left the page removes it.
 */
export function compareBar(kind, scope) {
  const k = KINDS[kind];
  const button = h('button', { type: 'button', testid: k.button,
    onclick: () => { window.location.hash = compareHref(kind, picked(kind)); } });
  const clear = h('button', { type: 'button', class: 'link-button', testid: k.clear, onclick: () => clearPicks(kind) }, 'clear');
  const el = h('span', { class: 'compare-bar' }, button, clear);
  function render() {
    const ids = picked(kind);
    setText(button, `Compare (${ids.length})`);
    button.disabled = ids.length < 2;
    button.title = ids.length < 2 ? `pick two ${kind} or more` : `compare ${kind} ${ids.join(', ')}`;
    clear.hidden = ids.length === 0;
    const root = scope || document;
    for (const box of root.querySelectorAll(`input[data-pick="${kind}"]`)) {
      box.checked = ids.includes(Number(box.dataset.id));
    }
  }
  function onPicks() {
    if (!el.isConnected && started) {
      window.removeEventListener('rung:picks', onPicks);
      return;
    }
    render();
  }
  let started = false;
  window.addEventListener('rung:picks', onPicks);
  render();
  // Not connected until its view appends it: only then may it be dropped.
  queueMicrotask(() => { started = true; });
  return el;
}

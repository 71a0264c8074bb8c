// The experiment page's spec panel (collapsed at first): the spec as it
// was submitted and with every default filled in, the two answers of GET
// /experiments/{id}/spec (docs/api.md), as indented JSON in a text node,
// and a button that copies the one shown. Read when first opened, and
// again after a change made on the page (refresh: tags, notes).
import * as api from '../api.js';
import { h, setText } from '../dom.js';
import { clearError, reportError } from '../shell.js';

export function createSpecPanel(id) {
  let spec = null; // {submitted, effective}
  let view = 'submitted';
  let loading = null;

  const tabs = {
    submitted: h('button', { type: 'button', class: 'tab', testid: 'spec-tab-submitted', onclick: () => show('submitted') }, 'As submitted'),
    effective: h('button', { type: 'button', class: 'tab', testid: 'spec-tab-effective', onclick: () => show('effective') }, 'With defaults'),
  };
  const copy = h('button', { type: 'button', testid: 'spec-copy', onclick: onCopy }, 'Copy');
  const copied = h('span', { class: 'muted', testid: 'spec-copied', 'aria-live': 'polite' });
  const note = h('p', { class: 'muted', testid: 'spec-note', hidden: true });
  const pre = h('pre', { class: 'spec-json', testid: 'spec-json' });
  const el = h('details', { class: 'spec-panel', testid: 'spec-panel', ontoggle: () => { if (el.open) load(); } },
    h('summary', { text: 'Spec' }),
    h('div', { class: 'toolbar', role: 'tablist' }, tabs.submitted, tabs.effective, h('span', { class: 'spacer' }), copied, copy),
    note, pre);

  function text() {
    const v = spec ? spec[view] : null;
    return v === null || v === undefined ? '' : JSON.stringify(v, null, 2);
  }

  function render() {
    for (const [k, b] of Object.entries(tabs)) {
      b.classList.toggle('active', k === view);
      b.setAttribute('aria-selected', String(k === view));
    }
    pre.dataset.view = view;
    const t = text();
    setText(pre, t); // a text node: spec strings are user input
    pre.hidden = !t;
    copy.disabled = !t;
    const missing = spec && view === 'submitted' && spec.submitted === null;
    setText(note, missing ? 'Submitted before rungd kept specs as they came: see "With defaults".' : '');
    note.hidden = !missing;
    setText(copied, '');
  }

  function show(v) {
    view = v;
    render();
  }

  async function load() {
    if (loading) return loading;
    loading = (async () => {
      try {
        spec = await api.getSpec(id);
        clearError('spec');
        render();
      } catch (e) {
        reportError('spec', e);
        spec = null;
      } finally {
        loading = null;
      }
    })();
    return loading;
  }

  async function onCopy() {
    const t = text();
    try {
      await navigator.clipboard.writeText(t);
      setText(copied, 'copied');
    } catch {
      // No clipboard (a page served over plain http from another host):
      // the text is selected for the user's own copy.
      const r = document.createRange();
      r.selectNodeContents(pre);
      const sel = window.getSelection();
      sel.removeAllRanges();
      sel.addRange(r);
      setText(copied, 'selected: press Ctrl+C');
    }
  }

  render();
  return {
    el,
    /** Reads the spec again if it was read (a change made on the page). */
    refresh() {
      if (spec || el.open) load();
    },
    destroy() {
      clearError('spec');
    },
  };
}

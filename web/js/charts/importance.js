// Parameter importance (GET /experiments/{id}/importance, docs/api.md): one
// entry per objective and constraint (or the reported metric asked for),
// each with every parameter's share of the metric's variance (fANOVA) and
// its spread as std. Horizontal bars, most important first, in the order
// the API gives; the std as a whisker on each bar. Plain DOM (a bar is a
// box whose width is the share): no axes to compute, and every bar is an
// element a test can read (data-param, data-importance, data-std).
import { h, setText } from '../dom.js';
import { num } from '../format.js';

/** The bars of one entry: [{param, importance, std, trials, width,
 * whiskerLo, whiskerHi}] in the API's order (most important first), widths
 * and whisker ends as fractions of the widest bar plus its std (so no
 * whisker leaves the chart), clamped to [0, 1]. Pure: tested in node. */
export function importanceBars(entry) {
  const rows = entry && Array.isArray(entry.importance) ? entry.importance : [];
  let top = 0;
  for (const r of rows) {
    const hi = (Number(r.importance) || 0) + (Number(r.std) || 0);
    if (hi > top) top = hi;
  }
  const scale = top > 0 ? top : 1;
  const clamp = (v) => Math.min(1, Math.max(0, v));
  return rows.map((r) => {
    const imp = Number(r.importance) || 0;
    const std = Number(r.std) || 0;
    return {
      param: r.param,
      importance: imp,
      std,
      trials: r.trials,
      width: clamp(imp / scale),
      whiskerLo: clamp((imp - std) / scale),
      whiskerHi: clamp((imp + std) / scale),
    };
  });
}

/** el: the container. onMetric(name): the select or the metric box chose
 * another metric (name; '' for the default entries). Returns {update(doc,
 * error), pending(), destroy()}; doc: the endpoint's answer. */
export function createImportanceChart(el, { onMetric }) {
  const select = h('select', { testid: 'importance-metric', 'aria-label': 'metric whose importances to show', onchange: () => show() });
  const other = h('input', { type: 'text', testid: 'importance-other', placeholder: 'another reported metric', size: 18 });
  const form = h('form', { class: 'inline-form', onsubmit: (e) => {
    e.preventDefault();
    onMetric(other.value.trim());
  } }, other, h('button', { type: 'submit', text: 'Show' }));
  const status = h('p', { class: 'muted', testid: 'importance-status' });
  const bars = h('div', { class: 'imp-bars' });
  const info = h('p', { class: 'chart-info', testid: 'importance-info' });
  el.replaceChildren(h('div', { class: 'toolbar' }, h('label', null, 'Metric ', select), form), status, bars, info);
  Object.assign(el.dataset, { bars: '0', metric: '' });
  let doc = null;
  let names = '';

  function show() {
    const entries = doc && Array.isArray(doc.metrics) ? doc.metrics : [];
    const entry = entries.find((m) => m.name === select.value) || entries[0] || null;
    const rows = importanceBars(entry);
    el.dataset.metric = entry ? entry.name : '';
    el.dataset.bars = String(rows.length);
    el.dataset.order = JSON.stringify(rows.map((r) => r.param));
    if (!entry) setText(status, doc ? 'No objective to rank the parameters by.' : 'computing\u2026');
    else if (!rows.length) setText(status, `${entry.name}: ${entry.reason || 'computing\u2026'}`);
    else {
      const mode = entry.mode ? `, ${entry.mode}` : '';
      setText(status, `${entry.name} (${entry.kind}${mode}): ${doc.method || 'fanova'} over ${entry.trials} completed trials, ` +
        `computed ${doc.computed_at || ''}. The whisker is \u00b1 one std.`);
    }
    bars.replaceChildren(...rows.map((r) => {
      const bar = h('div', { class: 'imp-bar' });
      bar.style.width = `${(r.width * 100).toFixed(2)}%`;
      const whisker = h('div', { class: 'imp-whisker' });
      whisker.style.left = `${(r.whiskerLo * 100).toFixed(2)}%`;
      whisker.style.width = `${((r.whiskerHi - r.whiskerLo) * 100).toFixed(2)}%`;
      const text = `${r.param}: ${num(r.importance)} \u00b1 ${num(r.std)} (active in ${r.trials} trials)`;
      return h('div', {
        class: 'imp-row', testid: 'importance-bar', title: text,
        'data-param': r.param, 'data-importance': String(r.importance), 'data-std': String(r.std),
        onmouseenter: () => setText(info, text),
      },
      h('span', { class: 'imp-label', text: r.param }),
      h('span', { class: 'imp-track' }, bar, whisker),
      h('span', { class: 'imp-value num', text: num(r.importance) }));
    }));
  }

  return {
    /** doc: the endpoint's answer, or null with error (an ApiError);
     * pick: the entry to show now (a metric just asked for). */
    update(next, error, pick) {
      if (error) {
        doc = null;
        setText(status, `importance not available: ${error.message}`);
        bars.replaceChildren();
        el.dataset.bars = '0';
        return;
      }
      doc = next;
      const entries = Array.isArray(doc.metrics) ? doc.metrics : [];
      const key = entries.map((m) => m.name).join('\u0000');
      if (key !== names) {
        names = key;
        const was = select.value;
        select.replaceChildren(...entries.map((m) => h('option', { value: m.name, text: `${m.name} (${m.kind})` })));
        if (entries.some((m) => m.name === was)) select.value = was;
      }
      if (pick && entries.some((m) => m.name === pick)) select.value = pick;
      show();
    },
    /** Before the first answer, and while another metric is asked for. */
    pending() {
      setText(status, 'computing\u2026');
    },
    /** A line in place of the status, the bars kept (a metric asked for
     * that the API refused). */
    note(text) {
      setText(status, text);
    },
    destroy() {},
  };
}

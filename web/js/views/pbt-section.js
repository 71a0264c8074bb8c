// The experiment page's Population Based Training section (docs/schedulers.md,
// "pbt"), shown only under that scheduler: the families (one colour per
// original member, web/js/pbt.js), the learning curves coloured by family,
// one schedule chart per parameter of hyperparam_mutations, and the lineage
// of one trial (the best by default): each exploit's step, donor, the
// family it took and the parameters it changed.
import { createFamilyCurvesChart } from '../charts/families.js';
import { createScheduleChart } from '../charts/schedule.js';
import { PALETTE } from '../charts/uplot.js';
import { h, setAttr, setText } from '../dom.js';
import { DASH, configValue, num, time } from '../format.js';
import { changes, familyColors, familyTable, lastStep, lineageOf } from '../pbt.js';

const BEST_CHOICE = 'best';

/** x: the experiment (its scheduler); uPlot: the charts' constructor or
 * null; onPick(trialId): a click on a curve. Returns {el, update(data,
 * bestId), destroy()}; data: the page's ExperimentData. */
export function createPbtSection(x, uPlot, { onPick }) {
  const sched = x.scheduler || {};
  // pb2 names its parameters in hyperparam_bounds.
  const named = sched.hyperparam_mutations || sched.hyperparam_bounds;
  const mutations = {};
  for (const [k, v] of Object.entries(named && typeof named === 'object' ? named : {}))
    mutations[k] = sched.type === 'pb2' && Array.isArray(v) ? { type: 'uniform', low: v[0], high: v[1] } : v;
  const metric = x.metric || ((x.metrics || [])[0] || {}).name;

  const settings = h('p', { class: 'meta', testid: 'pbt-settings' });
  const familiesBody = h('tbody');
  const families = h('table', { class: 'grid', testid: 'pbt-families' },
    h('thead', null, h('tr', null,
      h('th', { text: 'Family' }),
      h('th', { class: 'num', text: 'Segments', title: 'stretches of trials\u2019 histories (between exploits) that descend from this member' }),
      h('th', { text: 'Trials in it now', title: 'the trials whose latest segment is of this family' }),
      h('th', { class: 'num', text: `Best ${metric} now` }))),
    familiesBody);
  const curvesEl = h('div', { class: 'chart', testid: 'chart-pbt-curves' });
  const scheduleGrid = h('div', { class: 'chart-grid' });
  const params = Object.keys(mutations);
  const scheduleEls = params.map((p) => h('div', { class: 'chart', testid: `chart-pbt-schedule-${p}` }));
  scheduleGrid.append(...scheduleEls);
  const scheduleBest = h('p', { class: 'muted', testid: 'pbt-schedule-best' });

  const pick = h('select', { testid: 'pbt-lineage-trial', 'aria-label': 'trial whose lineage to show', onchange: () => renderLineage() },
    h('option', { value: BEST_CHOICE, text: 'the best trial' }));
  const lineageTitle = h('span', { testid: 'pbt-lineage-title' });
  const lineageBody = h('tbody');
  const lineageTable = h('table', { class: 'grid', testid: 'pbt-lineage' },
    h('thead', null, h('tr', null,
      h('th', { class: 'num', text: 'Step' }),
      h('th', { text: 'Donor' }),
      h('th', { class: 'num', text: 'Donor step' }),
      h('th', { text: 'Family taken' }),
      h('th', { text: 'Changed (from \u2192 to)' }),
      h('th', { text: 'Time' }))),
    lineageBody);
  const lineageEmpty = h('p', { class: 'muted', testid: 'pbt-lineage-empty', hidden: true });

  const el = h('div', { class: 'pbt', testid: 'pbt-section' },
    h('h2', { text: 'Population Based Training' }), settings,
    h('div', { class: 'table-wrap' }, families),
    h('h2', { text: 'Learning curves by family' }), curvesEl,
    h('h2', { text: 'Schedules of the mutated parameters' }), scheduleBest, scheduleGrid,
    h('h2', null, 'Lineage of ', lineageTitle),
    h('div', { class: 'toolbar' }, h('label', null, 'Trial ', pick)),
    h('div', { class: 'table-wrap' }, lineageTable), lineageEmpty);

  setText(settings, [
    `perturbation_interval ${sched.perturbation_interval}`,
    sched.synch ? 'synchronous' : 'asynchronous',
    `quantile_fraction ${sched.quantile_fraction ?? 0.25}`,
    `resample_probability ${sched.resample_probability ?? 0.25}`,
    sched.burn_in_period ? `burn_in_period ${sched.burn_in_period}` : null,
    sched.max_t ? `max_t ${sched.max_t}` : null,
    `mutating ${params.join(', ') || DASH}`,
  ].filter(Boolean).join(' \u00b7 '));

  const curves = createFamilyCurvesChart(curvesEl, uPlot, { metric, onPick });
  const schedules = params.map((p, i) => createScheduleChart(scheduleEls[i], uPlot, { param: p, domain: mutations[p], onPick }));

  let state = { trials: new Map(), fams: new Map(), colors: new Map(), bestId: null };
  let pickIds = '';

  // A changed value: numbers to 6 digits (the exact ones in the title).
  const exact = (v) => (v === undefined ? DASH : configValue(v));
  const short = (v) => (typeof v === 'number' ? num(v) : exact(v));
  const trialName = (id) => {
    const t = state.trials.get(id);
    return t ? `#${t.number} (id ${id})` : `id ${id}`;
  };
  const swatch = (color) => {
    const sw = h('span', { class: 'swatch', 'aria-hidden': 'true' });
    sw.style.background = color;
    return sw;
  };
  const familyCell = (f) => h('span', { class: 'family', 'data-family': f },
    swatch(state.colors.get(f) || '#9ca3af'), `#${(state.trials.get(f) || { number: '?' }).number}`);

  function renderFamilies(order) {
    const segments = new Map();
    const now = new Map();
    for (const [id, fams] of state.fams) {
      for (const f of fams) segments.set(f, (segments.get(f) || 0) + 1);
      const f = fams[fams.length - 1];
      if (!now.has(f)) now.set(f, []);
      now.get(f).push(state.trials.get(id));
    }
    familiesBody.replaceChildren(...order.map((m) => {
      const holders = (now.get(m.id) || []).sort((a, b) => a.number - b.number);
      const values = holders.map((t) => (t.best ? t.best.value : null)).filter((v) => typeof v === 'number');
      const better = x.mode === 'min' ? Math.min : Math.max;
      return h('tr', { testid: 'pbt-family-row', 'data-family': m.id, 'data-color': m.color, 'data-segments': segments.get(m.id) || 0 },
        h('td', null, swatch(m.color), h('a', { href: `#/trials/${m.id}`, text: `#${m.number} (id ${m.id})` })),
        h('td', { class: 'num', text: String(segments.get(m.id) || 0) }),
        h('td', { text: holders.length ? holders.map((t) => `#${t.number}`).join(', ') : DASH }),
        h('td', { class: 'num', text: values.length ? num(better(...values)) : DASH }));
    }));
  }

  function renderPick() {
    const ids = [...state.trials.values()].sort((a, b) => a.number - b.number).map((t) => t.id);
    const key = ids.join(',');
    if (key === pickIds) return;
    pickIds = key;
    const was = pick.value;
    pick.replaceChildren(h('option', { value: BEST_CHOICE, text: 'the best trial' }),
      ...ids.map((id) => h('option', { value: String(id), text: `trial ${trialName(id)}` })));
    pick.value = ids.includes(Number(was)) ? was : BEST_CHOICE;
  }

  function renderLineage() {
    const id = pick.value === BEST_CHOICE ? state.bestId : Number(pick.value);
    const t = id === null ? null : state.trials.get(id);
    setAttr(lineageTable, 'data-trial', t ? t.id : null);
    setText(lineageTitle, t ? `trial ${trialName(t.id)}${t.id === state.bestId ? ', the best' : ''}` : 'the best trial');
    const entries = lineageOf(t);
    const fams = t ? state.fams.get(t.id) || [] : [];
    lineageBody.replaceChildren(...entries.map((e, k) => h('tr', { testid: 'pbt-lineage-row', 'data-step': e.step, 'data-donor': e.donor, 'data-donor-step': e.donor_step },
      h('td', { class: 'num', text: String(e.step) }),
      h('td', null, h('a', { href: `#/trials/${e.donor}`, text: trialName(e.donor) })),
      h('td', { class: 'num', text: String(e.donor_step) }),
      h('td', null, fams[k + 1] === undefined ? DASH : familyCell(fams[k + 1])),
      h('td', { class: 'pbt-changes' }, changes(e).map((c, i) => h('span', {
        class: 'pbt-change', 'data-param': c.param, title: `${c.param}: ${exact(c.from)} \u2192 ${exact(c.to)}`,
      }, i ? '; ' : '', `${c.param} ${short(c.from)} \u2192 ${short(c.to)}`))),
      h('td', { text: time(e.time) }))));
    lineageEmpty.hidden = entries.length > 0;
    setText(lineageEmpty, t ? 'No exploits: this trial kept its own weights and config.' : 'No best trial yet.');
  }

  return {
    el,
    /** data: ExperimentData (trials with their lineage, curves); bestId. */
    update(data, bestId) {
      const colorList = familyColors(data.trials.values(), PALETTE);
      state = {
        trials: data.trials,
        fams: familyTable(data.trials),
        colors: new Map(colorList.map((m) => [m.id, m.color])),
        bestId,
      };
      renderFamilies(colorList);
      curves.update(data.curves, data.trials, state.fams, state.colors, bestId);
      const ends = new Map();
      for (const [id, t] of data.trials) ends.set(id, lastStep(t, data.curves.get(id)));
      for (const s of schedules) s.update(data.trials, ends, state.fams, state.colors, bestId);
      setAttr(scheduleBest, 'data-trial', bestId);
      setText(scheduleBest, bestId === null ? 'Bold: the best trial, once there is one.' : `Bold: the best trial, ${trialName(bestId)}.`);
      renderPick();
      renderLineage();
    },
    destroy() {
      curves.destroy();
      schedules.forEach((s) => s.destroy());
    },
  };
}

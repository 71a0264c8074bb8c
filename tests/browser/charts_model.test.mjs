// Unit tests of the log axes' arithmetic in web/js/charts/uplot.js (no DOM
// at import, so node imports it as it is): the splits always end, whatever
// range uPlot hands them, and a padded range stays one a log axis can draw;
// tick labels that differ on a narrow range, whole-number step ticks, the
// log-or-linear decision, and web/js/views/metric-state.js.
// Run by ctest in `browser_dashboard`. uPlot's own log splits never ended on
// some ordinary ranges (a low end just under a power of ten) and threw
// "RangeError: Invalid array length" from a scatter's axis.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  INT_INCRS, LINEAR_NOTE, decadesOnly, distinctTicks, intSplits, logOrLinear, logRange, logSplits, logTicks, paddedRange,
} from '../../web/js/charts/uplot.js';
import {
  getBrushed, getMetric, inferMode, metricValue, resetMetricState, setBrushed, setMetric, subscribe,
} from '../../web/js/views/metric-state.js';

test('logSplits: 1 to 9 times each power of ten inside the range, as written in decimal', () => {
  assert.deepEqual(logSplits(null, 0, 2e-4, 3e-3),
    [2e-4, 3e-4, 4e-4, 5e-4, 6e-4, 7e-4, 8e-4, 9e-4, 1e-3, 2e-3, 3e-3]);
  assert.deepEqual(logSplits(null, 0, 0.5, 0.5), [0.5]);
  // Less than one step of those: a tenth of each.
  assert.deepEqual(logSplits(null, 0, 3.2e-6, 4.1e-6), [3.2e-6, 3.3e-6, 3.4e-6, 3.5e-6, 3.6e-6, 3.7e-6, 3.8e-6, 3.9e-6, 4e-6, 4.1e-6]);
  assert.deepEqual(logSplits(null, 0, 0.0407, 0.0494), [0.041, 0.042, 0.043, 0.044, 0.045, 0.046, 0.047, 0.048, 0.049]);
  // ... labelled each, where none is 1, 2 or 5 times a power of ten.
  assert.deepEqual(logTicks(null, [0.041, 0.042, 0.043]), ['0.041', '0.042', '0.043']);
  assert.deepEqual(logTicks(null, [0.01, 0.02, 0.03]), ['0.01', '0.02', '']);
  // 1.05 to 2.5: fifteen tenths, no power of ten; grid lines at every second.
  const tenths = logSplits(null, 0, 1.05, 2.5);
  assert.deepEqual(tenths, [1.1, 1.2, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9, 2, 2.1, 2.2, 2.3, 2.4, 2.5]);
  const shown = decadesOnly(null, tenths).filter((v) => v !== null);
  assert.deepEqual(shown, [1.1, 1.3, 1.5, 1.7, 1.9, 2.1, 2.3, 2.5]);
  // Over a decade and more, only its powers of ten.
  assert.deepEqual(decadesOnly(null, logSplits(null, 0, 0.5, 20)).filter((v) => v !== null), [1, 10]);
  // 3e-5 exactly, not 3 * 10 ** -5 (0.000030000000000000004)
  assert.ok(logSplits(null, 0, 1e-5, 1e-4).includes(3e-5));
  // Ranges on which uPlot 1.6's log splits never ended.
  assert.deepEqual(logSplits(null, 0, 0.0009568379658440586, 0.08631992695591606),
    [1e-3, 2e-3, 3e-3, 4e-3, 5e-3, 6e-3, 7e-3, 8e-3, 9e-3, 0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08]);
  assert.deepEqual(logSplits(null, 0, 0.09940881120705512, 1.7427531397548537), [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1]);
});

test('logSplits: only powers of ten over many decades, and never without end', () => {
  const wide = logSplits(null, 0, 1, 1e20);
  assert.equal(wide.length, 21);
  assert.deepEqual(wide.slice(0, 3), [1, 10, 100]);
  assert.ok(logSplits(null, 0, 5e-324, 0.1).length <= 400);
  assert.ok(logSplits(null, 0, 1, 1.7e308).length <= 400);
  for (const [lo, hi] of [[1e-5, Infinity], [0, 1], [-1, 1], [NaN, 1], [1, NaN], [2, 1]]) {
    assert.deepEqual(logSplits(null, 0, lo, hi), [], `[${lo}, ${hi}]`);
  }
});

test('paddedRange(true): a margin on each side, and a range a log axis can draw', () => {
  const r = paddedRange(true);
  const [lo, hi] = r(null, 1e-5, 0.1);
  assert.ok(lo < 1e-5 && lo > 0 && hi > 0.1 && Number.isFinite(hi));
  assert.ok(Math.abs(Math.log10(1e-5 / lo) - Math.log10(hi / 0.1)) < 1e-9, 'the same margin in decades');
  // max / min overflows: no margin rather than [0, Infinity].
  assert.deepEqual(r(null, 5e-324, 0.1), [5e-324, 0.1]);
  assert.deepEqual(r(null, 1e-5, 1.7e308), [1e-5, 1.7e308]);
  assert.deepEqual(r(null, null, null), [1, 10]);
  assert.deepEqual(r(null, 0, 1), [1, 10]);
  assert.deepEqual(r(null, 1, Infinity), [1, 10]);
});

test('paddedRange(false): a margin, and never an infinite end', () => {
  const r = paddedRange(false);
  assert.deepEqual(r(null, 0, 100), [-4, 104]);
  assert.deepEqual(r(null, 5, 5), [4.5, 5.5]);
  assert.deepEqual(r(null, -1.7e308, 1.7e308), [-1.7e308, 1.7e308]);
  assert.deepEqual(r(null, null, null), [0, 1]);
});

// ---- issue 39's fixes: tick labels, whole-number step ticks, log or linear ----

test('distinctTicks: enough digits that consecutive labels differ', () => {
  // The PBT toy's best-so-far axis read "1.189, 1.189, 1.189".
  const narrow = [1.18902, 1.18904, 1.18906, 1.18908];
  const labels = distinctTicks(narrow);
  for (let i = 1; i < labels.length; i++) assert.notEqual(labels[i], labels[i - 1], labels.join(', '));
  labels.forEach((l, i) => assert.ok(Math.abs(Number(l) - narrow[i]) < 1e-9, `${l} reads back as ${narrow[i]}`));
  // An ordinary range keeps the compact 4 digits.
  assert.deepEqual(distinctTicks([0, 0.25, 0.5, 0.75, 1]), ['0', '0.25', '0.5', '0.75', '1']);
  assert.deepEqual(distinctTicks([1.2345678, 2.3456789]), ['1.235', '2.346']);
  // Exponents too: 1.0000001e-4 and 1.0000002e-4 apart.
  const tiny = distinctTicks([1.0000001e-4, 1.0000002e-4]);
  assert.notEqual(tiny[0], tiny[1]);
  // A hidden split (null) stays empty.
  assert.deepEqual(distinctTicks([1, null, 3]), ['1', '', '3']);
});

test('intSplits: a step axis never gets a fractional tick', () => {
  // uPlot hands the increment it picked from INT_INCRS; whole numbers only.
  assert.ok(INT_INCRS.every((v) => Number.isInteger(v) && v >= 1));
  assert.deepEqual(intSplits(null, 0, 0.6, 5.4, 1), [1, 2, 3, 4, 5]);
  assert.deepEqual(intSplits(null, 0, -3, 12, 5), [0, 5, 10]);
  // An increment below one (a range of a step or two) is rounded up to 1.
  assert.deepEqual(intSplits(null, 0, 1.5, 4, 0.5), [2, 3, 4]);
  assert.deepEqual(intSplits(null, 0, 2.2, 2.8, 0.1), []);
  for (const [lo, hi] of [[0, 1e6], [0.5, 99.5], [3, 7]]) {
    for (const incr of [0.2, 1, 2.5, 20]) {
      const s = intSplits(null, 0, lo, hi, incr);
      assert.ok(s.every(Number.isInteger), `${lo}..${hi} by ${incr}: ${s.slice(0, 5)}`);
      assert.ok(s.every((v) => v >= lo && v <= hi));
    }
  }
  assert.deepEqual(intSplits(null, 0, NaN, 3, 1), []);
});

test('logOrLinear: a log axis only when every value is > 0, else linear with a note', () => {
  assert.deepEqual(logOrLinear([[0.5, 2, 30]], true), { log: true, note: '' });
  assert.deepEqual(logOrLinear([[0.5, 2], new Float64Array([-0.1])], true), { log: false, note: LINEAR_NOTE });
  assert.deepEqual(logOrLinear([[0, 1]], true), { log: false, note: LINEAR_NOTE });
  assert.equal(LINEAR_NOTE, 'linear: values \u2264 0');
  // Gaps (null, NaN) are no values.
  assert.deepEqual(logOrLinear([[null, 1, NaN]], true), { log: true, note: '' });
  // Not asked for: linear, and nothing to say.
  assert.deepEqual(logOrLinear([[-5, 1]], false), { log: false, note: '' });
  const [lo, hi] = logRange([[1, 10, 100]]);
  assert.ok(lo > 0 && lo < 1 && hi > 100);
});

test('metric-state: a reported metric by its last value, an objective by its best; the mode inferred', () => {
  const t = { best: { value: 0.3 }, last: { loss: 0.4, acc: 0.9, bad: 'NaN' }, values: { loss: 0.4, lat: 12 } };
  assert.equal(metricValue(t, { name: 'loss', kind: 'objective', single: true }), 0.3);
  assert.equal(metricValue(t, { name: 'lat', kind: 'objective', single: false }), 12);
  assert.equal(metricValue(t, { name: 'acc', kind: 'metric' }), 0.9);
  assert.equal(metricValue(t, { name: 'bad', kind: 'metric' }), null);
  assert.equal(metricValue(t, { name: 'none', kind: 'metric' }), null);
  assert.equal(inferMode('val_acc'), 'max');
  assert.equal(inferMode('accuracy'), 'max');
  assert.equal(inferMode('reward'), 'max');
  assert.equal(inferMode('loss'), 'min');
  assert.equal(inferMode('val_loss'), 'min');
  assert.equal(inferMode('latency_ms'), 'min');
  let heard = [];
  const off = subscribe((w) => heard.push(w));
  setMetric({ name: 'acc', kind: 'metric', mode: 'max', log: false });
  setMetric({ name: 'acc', kind: 'metric', mode: 'max', log: false }); // the same: no event
  setBrushed(new Set([1, 2]));
  assert.deepEqual(heard, ['metric', 'brush']);
  assert.equal(getMetric().name, 'acc');
  assert.deepEqual([...getBrushed()], [1, 2]);
  off();
  setBrushed(null);
  assert.equal(heard.length, 2);
  resetMetricState();
});

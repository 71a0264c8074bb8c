// Unit tests of the log axes' arithmetic in web/js/charts/uplot.js (no DOM
// at import, so node imports it as it is): the splits always end, whatever
// range uPlot hands them, and a padded range stays one a log axis can draw.
// Run by ctest in `browser_dashboard`. uPlot's own log splits never ended on
// some ordinary ranges (a low end just under a power of ten) and threw
// "RangeError: Invalid array length" from a scatter's axis.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decadesOnly, logSplits, logTicks, paddedRange } from '../../web/js/charts/uplot.js';

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

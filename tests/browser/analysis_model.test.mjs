// Unit tests of the analysis charts' pure logic (web/js/charts/importance.js,
// contour.js, edf.js, timeline.js; no DOM at import, so node imports them as
// they are): the bars keep the API's order and no whisker leaves the chart,
// the contour's bands cover the grid and its cells meet, the EDF never
// decreases and ends at 1, and the timeline's lanes never overlap and its
// idle time is what the gaps add up to. Run by ctest in `browser_analysis`.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { importanceBars } from '../../web/js/charts/importance.js';
import { bandColor, bandOf, cellEdges, contourLevels } from '../../web/js/charts/contour.js';
import { edfInput, edfSteps } from '../../web/js/charts/edf.js';
import { assignLanes, timelineRows, unionLength } from '../../web/js/charts/timeline.js';

test('importanceBars: the API order, widths against the widest bar plus its std, whiskers inside', () => {
  const bars = importanceBars({
    importance: [
      { param: 'a', importance: 0.6, std: 0.2, trials: 10 },
      { param: 'b', importance: 0.3, std: 0.05, trials: 10 },
      { param: 'c', importance: 0.1, std: 0.3, trials: 4 },
    ],
  });
  assert.deepEqual(bars.map((b) => b.param), ['a', 'b', 'c']);
  assert.equal(bars[0].whiskerHi, 1); // 0.6 + 0.2 is the scale
  assert.ok(Math.abs(bars[0].width - 0.75) < 1e-12);
  assert.ok(Math.abs(bars[1].width - 0.375) < 1e-12);
  assert.equal(bars[2].whiskerLo, 0); // 0.1 - 0.3 clamped
  for (const b of bars) assert.ok(b.whiskerLo <= b.width && b.width <= b.whiskerHi && b.whiskerHi <= 1);
  assert.deepEqual(importanceBars({ importance: [], reason: 'too few trials' }), []);
  assert.deepEqual(importanceBars(null), []);
});

test('contourLevels and bandOf: equal bands over the finite values; null has none', () => {
  const z = [[1, 2, null], [3, 4, 5]];
  const lv = contourLevels(z, 4);
  assert.deepEqual(lv, [1, 2, 3, 4, 5]);
  assert.equal(bandOf(1, lv), 0);
  assert.equal(bandOf(1.99, lv), 0);
  assert.equal(bandOf(2, lv), 1);
  assert.equal(bandOf(5, lv), 3); // the top boundary is in the last band
  assert.equal(bandOf(null, lv), -1);
  assert.equal(bandOf(NaN, lv), -1);
  // Every defined cell gets a band, and the bands rise with the value.
  const flat = z.flat().filter((v) => v !== null).sort((a, b) => a - b);
  const bands = flat.map((v) => bandOf(v, lv));
  for (let i = 1; i < bands.length; i++) assert.ok(bands[i] >= bands[i - 1]);
  assert.deepEqual(contourLevels([[null]]), []);
  const one = contourLevels([[2, 2]]);
  assert.equal(one.length, 2);
  assert.ok(one[0] < 2 && one[1] > 2);
  // The better end is bright whichever way the metric goes.
  assert.equal(bandColor(0, 10, 'min'), bandColor(9, 10, 'max'));
  assert.notEqual(bandColor(0, 10, 'min'), bandColor(9, 10, 'min'));
});

test('cellEdges: cells meet halfway (geometrically on log axes) and cover the ends', () => {
  assert.deepEqual(cellEdges([0, 1, 2], false), [-0.5, 0.5, 1.5, 2.5]);
  const e = cellEdges([1e-4, 1e-3, 1e-2], true);
  const want = [10 ** -4.5, 10 ** -3.5, 10 ** -2.5, 10 ** -1.5];
  e.forEach((v, i) => assert.ok(Math.abs(Math.log10(v) - Math.log10(want[i])) < 1e-12, `${v} vs ${want[i]}`));
  assert.equal(cellEdges([], false).length, 0);
  assert.equal(cellEdges([3], false).length, 2);
});

test('edfSteps: one step per value, sorted, non-decreasing, ending at 1', () => {
  const steps = edfSteps([{ id: 3, value: 0.5 }, { id: 1, value: 0.2 }, { id: 2, value: 0.5 }, { id: 4, value: null }]);
  assert.deepEqual(steps.map((s) => [s.id, s.value]), [[1, 0.2], [2, 0.5], [3, 0.5]]);
  assert.deepEqual(steps.map((s) => s.share), [1 / 3, 2 / 3, 1]);
  assert.deepEqual(edfSteps([]), []);
  const trials = new Map([
    [1, { id: 1, state: 'completed', best: { value: 1 } }],
    [2, { id: 2, state: 'completed', best: { value: 2 }, feasible: false, last: { acc: 0.9 } }],
    [3, { id: 3, state: 'failed', best: null }],
    [4, { id: 4, state: 'running', best: null }],
    [5, { id: 5, state: 'stopped', best: { value: 0.5 }, last: { acc: 0.7 } }],
  ]);
  const input = edfInput(trials);
  assert.deepEqual(input.feasible.map((p) => p.id), [1, 5]);
  assert.deepEqual(input.all.map((p) => p.id), [1, 2, 5]);
  assert.equal(input.infeasible, 1);
  assert.equal(input.noValue, 1); // the failed one; the running one may still report
  // Another metric picked (metric-state.js): its last reported value, not the best.
  const last = edfInput(trials, (t) => (t.last ? t.last.acc : null));
  assert.deepEqual(last.all.map((p) => [p.id, p.value]), [[2, 0.9], [5, 0.7]]);
});

test('unionLength and assignLanes: overlaps counted once, lanes never overlap', () => {
  assert.equal(unionLength([[0, 10], [5, 15], [20, 30]]), 25);
  assert.equal(unionLength([[0, 10], [2, 3]]), 10);
  assert.equal(unionLength([]), 0);
  const bars = [{ start: 0, end: 10 }, { start: 5, end: 8 }, { start: 9, end: 12 }, { start: 10, end: 11 }];
  assert.equal(assignLanes(bars), 2);
  assert.deepEqual(bars.map((b) => b.lane), [0, 1, 1, 0]);
  for (const a of bars) {
    for (const b of bars) if (a !== b && a.lane === b.lane) assert.ok(a.end <= b.start || b.end <= a.start);
  }
});

test('timelineRows: a row per worker in order of first start, idle the gaps, running bars end now', () => {
  const doc = {
    items: [
      [1, 1, 7, 1000, 3000, 'completed'],
      [2, 1, 8, 1500, 2500, 'failed'],
      [3, 1, 7, 4000, 5000, 'stopped'],
      [4, 1, 8, 6000, null, 'running'],
    ],
    workers: { 7: 'alpha', 8: 'beta' },
  };
  const m = timelineRows(doc, 9000);
  assert.deepEqual(m.rows.map((r) => r.name), ['alpha', 'beta']);
  assert.deepEqual(m.rows.map((r) => r.bars.length), [2, 2]);
  const [a, b] = m.rows;
  assert.equal(a.busyMs, 3000);
  assert.equal(a.spanMs, 4000);
  assert.equal(a.idleMs, 1000);
  assert.equal(b.bars[1].end, 9000);
  assert.ok(b.bars[1].running);
  assert.equal(b.idleMs, 3500); // 2500 .. 6000
  assert.equal(m.idleMs, 4500);
  assert.equal(m.spanMs, 4000 + 7500);
  assert.equal(m.t0, 1000);
  assert.equal(m.t1, 9000);
  assert.deepEqual(timelineRows({ items: [], workers: {} }, 0).rows, []);
});

// Unit tests of web/js/pbt.js, the dashboard's Population Based Training
// bookkeeping (no DOM, so node imports it as it is): segments cut at
// exploits, families through the donors' lineages, curves cut into
// segments, the parameters' schedules, what an exploit changed, colours.
// Run by ctest in `browser_pbt`, before pbt.test.mjs.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  changes, curveSegments, familyColors, familyTable, isPbt, lastStep, schedule, segmentIndex,
} from '../../web/js/pbt.js';

const ex = (step, donor, from, config) => ({ step, donor, donor_step: step, from, config, time: '2026-01-01T00:00:00Z' });

// Three members: 2 took 1's weights at 4; 1 took 2's at 8 (2's stretch
// after 4, of family 1); 3 took 2's at 8 too (family 1, not 2); 2 took 3's
// at 12 (3's stretch after 8: family 1).
function population() {
  const t1 = { id: 1, number: 0, step: 16, config: { a: 0.3, b: 'x' }, lineage: [ex(8, 2, { a: 0.1, b: 'x' }, { a: 0.3, b: 'x' })] };
  const t2 = {
    id: 2, number: 1, step: 16, config: { a: 0.6, b: 'y' },
    lineage: [ex(4, 1, { a: 0.9, b: 'y' }, { a: 0.2, b: 'y' }), ex(12, 3, { a: 0.2, b: 'y' }, { a: 0.6, b: 'y' })],
  };
  const t3 = { id: 3, number: 2, step: 16, config: { a: 0.5, b: 'z' }, lineage: [ex(8, 2, { a: 0.4, b: 'x' }, { a: 0.5, b: 'z' })] };
  return new Map([[1, t1], [2, t2], [3, t3]]);
}

test('isPbt', () => {
  assert.equal(isPbt({ scheduler: { type: 'pbt' } }), true);
  assert.equal(isPbt({ scheduler: { type: 'asha' } }), false);
  assert.equal(isPbt({}), false);
  assert.equal(isPbt(null), false);
});

test('a step at an exploit belongs to the segment before it', () => {
  const L = [{ step: 4 }, { step: 8 }];
  assert.deepEqual([1, 4, 5, 8, 9, 100].map((s) => segmentIndex(L, s)), [0, 0, 1, 1, 2, 2]);
  assert.equal(segmentIndex([], 7), 0);
});

test('families follow the donors\' own lineages', () => {
  const f = familyTable(population());
  assert.deepEqual(f.get(1), [1, 1]); // 2's stretch (4, 8] is of family 1
  assert.deepEqual(f.get(2), [2, 1, 1]); // 3's stretch (8, ...] is of family 1
  assert.deepEqual(f.get(3), [3, 1]); // donor 2, but family 1
  // An iterable of trials works as well as a Map.
  assert.deepEqual(familyTable([...population().values()]), f);
});

test('a donor that is not listed is its own family; a cycle ends', () => {
  const f = familyTable([{ id: 5, number: 0, lineage: [ex(4, 99, {}, {})] }]);
  assert.deepEqual(f.get(5), [5, 99]);
  const loop = familyTable([
    { id: 1, number: 0, lineage: [{ step: 4, donor: 2, donor_step: 8, from: {}, config: {} }] },
    { id: 2, number: 1, lineage: [{ step: 4, donor: 1, donor_step: 8, from: {}, config: {} }] },
  ]);
  assert.equal(loop.get(1).length, 2);
  assert.equal(loop.get(2).length, 2);
});

test('a curve is cut at the exploits, each part joined to the one before', () => {
  const trials = population();
  const f = familyTable(trials);
  // Out of order on purpose: parts come in step order.
  const curve = { steps: [3, 1, 2, 4, 5, 6, 9, 10], values: [0.3, 0.1, 0.2, 0.4, 0.5, 0.6, 0.9, null] };
  const parts = curveSegments(trials.get(3), curve, f.get(3));
  assert.deepEqual(parts.map((p) => [p.segment, p.family, p.first, p.last, p.points, p.joined]),
    [[0, 3, 1, 6, 6, false], [1, 1, 9, 10, 2, true]]);
  assert.deepEqual(parts[0].steps, [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(parts[1].steps, [6, 9, 10]); // starts at the last point before it
  assert.deepEqual(parts[1].values, [0.6, 0.9, null]);
  // A segment without reports has no part.
  const t2 = curveSegments(trials.get(2), { steps: [1, 2, 13], values: [1, 2, 3] }, f.get(2));
  assert.deepEqual(t2.map((p) => [p.segment, p.family]), [[0, 2], [2, 1]]);
});

test('a parameter\'s schedule: from, then each exploit\'s config from its step on', () => {
  const trials = population();
  const f = familyTable(trials);
  assert.deepEqual(schedule(trials.get(2), 'a', f.get(2), 16), [
    { segment: 0, family: 2, start: 0, end: 4, value: 0.9 },
    { segment: 1, family: 1, start: 4, end: 12, value: 0.2 },
    { segment: 2, family: 1, start: 12, end: 16, value: 0.6 },
  ]);
  assert.deepEqual(schedule(trials.get(3), 'b', f.get(3), 8).map((p) => [p.start, p.end, p.value]),
    [[0, 8, 'x'], [8, 8, 'z']]); // not past the exploit yet: an empty last piece
  const plain = { id: 7, number: 0, config: { a: 0.25 }, lineage: [] };
  assert.deepEqual(schedule(plain, 'a', [7], 5), [{ segment: 0, family: 7, start: 0, end: 5, value: 0.25 }]);
  assert.deepEqual(schedule(plain, 'missing', [7], null), [{ segment: 0, family: 7, start: 0, end: 0, value: null }]);
});

test('lastStep', () => {
  assert.equal(lastStep({ step: 3 }, { steps: [1, 5, 2] }), 5);
  assert.equal(lastStep({ step: 9 }, { steps: [1, 5] }), 9);
  assert.equal(lastStep({ step: null }, null), null);
});

test('changes lists what an exploit changed', () => {
  assert.deepEqual(changes({ from: { a: 1, b: 'x', c: [1] }, config: { a: 1.2, b: 'x', c: [1] } }), [{ param: 'a', from: 1, to: 1.2 }]);
  assert.deepEqual(changes({ from: { a: 1, gone: 2 }, config: { a: 1, new: 3 } }),
    [{ param: 'new', from: undefined, to: 3 }, { param: 'gone', from: 2, to: undefined }]);
  assert.deepEqual(changes(null), []);
});

test('familyColors: one colour per member in number order, distinct past the palette', () => {
  const trials = [{ id: 9, number: 2 }, { id: 4, number: 0 }, { id: 6, number: 1 }];
  assert.deepEqual(familyColors(trials, ['red', 'green']), [
    { id: 4, number: 0, color: 'red' },
    { id: 6, number: 1, color: 'green' },
    { id: 9, number: 2, color: 'hsl(275, 65%, 42%)' },
  ]);
  const many = familyColors(Array.from({ length: 40 }, (_, i) => ({ id: i, number: i })), []);
  assert.equal(new Set(many.map((m) => m.color)).size, 40);
});

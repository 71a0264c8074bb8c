// Unit tests of the compare page's bookkeeping, web/js/compare-model.js (no
// DOM, so node imports it as it is): which keys differ among configs or
// specs, a spec's key paths, an experiment's best value so far, the ids of
// a #/compare address. Run by ctest in `browser_compare`; compare.test.mjs
// checks the page against a real rungd.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { bestSoFar, flatten, idList, keyDiff, specOfExperiment } from '../../web/js/compare-model.js';

test('keyDiff: a key differs when its values differ or some lack it; equal objects are equal in any key order', () => {
  const d = keyDiff([
    { lr: 0.1, layers: 2, opt: { name: 'adam', beta: 0.9 }, only: 1 },
    { lr: 0.2, layers: 2, opt: { beta: 0.9, name: 'adam' } },
    { lr: 0.1, layers: 2, opt: { name: 'adam', beta: 0.9 } },
  ]);
  assert.deepEqual(d.keys, ['lr', 'layers', 'opt', 'only']);
  assert.deepEqual(d.differ, ['lr', 'only']);
  assert.deepEqual(d.same, ['layers', 'opt']);
  // 1 and "1" and true are three values; null is one of its own.
  assert.deepEqual(keyDiff([{ a: 1, b: null }, { a: '1', b: null }]).differ, ['a']);
  assert.deepEqual(keyDiff([{ a: [1, 2] }, { a: [2, 1] }]).differ, ['a']);
});

test('flatten: objects walked to dotted paths; arrays, {} and scalars are values', () => {
  assert.deepEqual(flatten({
    metric: 'loss',
    search_space: { x: { type: 'uniform', low: 0, high: 1 }, c: 3, g: { type: 'grid', values: [1, 2] } },
    searcher: {},
    tags: ['a'],
    notes: '',
    stop: null,
  }), {
    metric: 'loss',
    'search_space.x.type': 'uniform',
    'search_space.x.low': 0,
    'search_space.x.high': 1,
    'search_space.c': 3,
    'search_space.g.type': 'grid',
    'search_space.g.values': [1, 2],
    searcher: {},
    tags: ['a'],
    notes: '',
    stop: null,
  });
});

test('specOfExperiment: the experiment object less its runtime fields', () => {
  const x = { id: 3, name: 'n', state: 'running', counts: {}, best: null, owner: 'bob', created_at: 't', ended_at: null,
    ended_reason: null, error: null, total_trials: 4, pareto: [], metric: 'loss', num_samples: 4 };
  assert.deepEqual(specOfExperiment(x), { name: 'n', metric: 'loss', num_samples: 4 });
});

test('bestSoFar: the running best by trial number, or by end time, in the mode of the objective', () => {
  const x = { metric: 'acc', mode: 'max', created_at: '2026-11-29T00:00:00Z' };
  const trials = [
    { id: 10, number: 2, best: { value: 0.5 }, ended_at: '2026-11-29T00:00:05Z' },
    { id: 11, number: 0, best: { value: 0.3 }, ended_at: '2026-11-29T00:00:09Z' },
    { id: 12, number: 1, best: null, ended_at: '2026-11-29T00:00:01Z' },
    { id: 13, number: 3, best: { value: 0.4 }, ended_at: null },
    { id: 14, number: 4, best: { value: 0.7 }, ended_at: '2026-11-29T00:00:02Z' },
  ];
  assert.deepEqual(bestSoFar(x, trials, 'number'), { x: [0, 2, 3, 4], y: [0.3, 0.5, 0.5, 0.7], ids: [11, 10, 13, 14] });
  assert.deepEqual(bestSoFar(x, trials, 'time'), { x: [2, 5, 9], y: [0.7, 0.7, 0.7], ids: [14, 10, 11] });
  // Several objectives: the first, from each trial's values.
  const multi = { metrics: [{ name: 'loss', mode: 'min' }, { name: 'ms', mode: 'min' }], created_at: x.created_at };
  const mt = [{ id: 1, number: 0, best: null, values: { loss: 2, ms: 1 } }, { id: 2, number: 1, best: null, values: { loss: 1, ms: 5 } }];
  assert.deepEqual(bestSoFar(multi, mt).y, [2, 1]);
});

test('idList: positive integers once each, in order', () => {
  assert.deepEqual(idList('3,1,x,3,-2,0,2.5, 7'), [3, 1, 7]);
  assert.deepEqual(idList(null), []);
});

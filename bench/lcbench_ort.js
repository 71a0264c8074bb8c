// An independent reference for bench/lcbench_export.py's evaluators: ONNX
// Runtime (the runtime YAHPO Gym uses) on model.onnx itself, through npm's
// onnxruntime-node (bench/README.md, "LCBench", says how to install it; it
// is not one of Rung's dependencies).
//
//   node bench/lcbench_ort.js MODEL_ONNX ROWS_FILE
//
// ROWS_FILE: one row a line, "x_cat x_cont[0] .. x_cont[7]"; prints the
// six outputs of each row, one row a line, as lcbench_eval --eval does.
'use strict';
const fs = require('fs');

let ort;
try {
  ort = require('onnxruntime-node');
} catch (e) {
  console.error('lcbench_ort: needs onnxruntime-node (npm install --ignore-scripts onnxruntime-node in a folder D, then NODE_PATH=D/node_modules)');
  process.exit(2);
}

(async () => {
  const [model, rowsFile] = process.argv.slice(2);
  if (!model || !rowsFile) {
    console.error('usage: node bench/lcbench_ort.js MODEL_ONNX ROWS_FILE');
    process.exit(2);
  }
  const rows = fs.readFileSync(rowsFile, 'utf8').trim().split('\n').map((l) => l.trim().split(/\s+/).map(Number));
  const n = rows.length;
  const cat = new Int32Array(n);
  const cont = new Float32Array(n * 8);
  rows.forEach((r, i) => {
    cat[i] = r[0];
    cont.set(r.slice(1, 9), i * 8);
  });
  const s = await ort.InferenceSession.create(model);
  const feeds = {};
  // x_cat's type is the graph's (int32 in LCBench's model)
  feeds[s.inputNames[0]] = new ort.Tensor('int32', cat, [n, 1]);
  feeds[s.inputNames[1]] = new ort.Tensor('float32', cont, [n, 8]);
  const out = (await s.run(feeds))[s.outputNames[0]].data;
  const lines = [];
  for (let i = 0; i < n; i++) lines.push(Array.from(out.slice(i * 6, i * 6 + 6)).map((v) => v.toPrecision(9)).join(' '));
  process.stdout.write(lines.join('\n') + '\n');
})();

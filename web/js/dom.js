// DOM building without innerHTML: every piece of data (trial names, errors,
// configs are user input) goes in as a text node.

/** Element `tag` with props and children. Props: testid (data-testid),
 * class, text (textContent), on<event> (listener), hidden/disabled (booleans),
 * anything else as an attribute. Children: nodes, strings (text), arrays,
 * null (skipped). */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'testid') el.dataset.testid = v;
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'hidden' || k === 'disabled' || k === 'selected') el[k] = true;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** Sets the text of el when it differs (no needless layout work). */
export function setText(el, text) {
  const s = String(text);
  if (el.textContent !== s) el.textContent = s;
}

/** Sets or removes an attribute when it differs. */
export function setAttr(el, name, value) {
  if (value === null || value === undefined) {
    if (el.hasAttribute(name)) el.removeAttribute(name);
  } else if (el.getAttribute(name) !== String(value)) {
    el.setAttribute(name, String(value));
  }
}

/** Sets el's class list to `base` plus the state's colour class. */
export function setState(el, state, base = 'state') {
  const cls = `${base} state-${state || 'unknown'}`;
  if (el.className !== cls) el.className = cls;
  setText(el, state || '—');
}

/**
 * Keyed update of a list of rows in `parent`: rows are kept by key (so a
 * link being hovered or clicked is not replaced every second), created with
 * create(item) and refreshed with update(row, item), in the order of items.
 */
export function syncRows(parent, rows, items, key, create, update) {
  const keep = new Set();
  let prev = null;
  for (const item of items) {
    const k = key(item);
    keep.add(k);
    let row = rows.get(k);
    if (!row) {
      row = create(item);
      rows.set(k, row);
    }
    update(row, item);
    const want = prev ? prev.nextSibling : parent.firstChild;
    if (want !== row) parent.insertBefore(row, want);
    prev = row;
  }
  for (const [k, row] of rows) {
    if (!keep.has(k)) {
      row.remove();
      rows.delete(k);
    }
  }
}

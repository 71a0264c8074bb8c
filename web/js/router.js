// Hash routing: #/ experiments (#/?tag=T: those tagged T), #/experiments/ID,
// #/trials/ID, #/workers, #/events, #/experiments/ID/events (the log, and
// one experiment's timeline) and #/compare?trials=1,2 or ?experiments=1,2.
// A view is a module with mount(root, params) returning its unmount();
// params: {id, query} (query: the URLSearchParams after the path's '?').
import { dropEarly } from './api.js';
import { h } from './dom.js';
import { clearAllErrors, setActiveNav } from './shell.js';
import * as experiments from './views/experiments.js';
import * as experiment from './views/experiment.js';
import * as trial from './views/trial.js';
import * as workers from './views/workers.js';
import * as events from './views/events.js';
import * as compare from './views/compare.js';

const ROUTES = [
  { re: /^#?\/?$/, view: experiments, nav: 'experiments' },
  { re: /^#\/experiments\/?$/, view: experiments, nav: 'experiments' },
  { re: /^#\/experiments\/(\d+)\/?$/, view: experiment, nav: 'experiments' },
  { re: /^#\/trials\/(\d+)\/?$/, view: trial, nav: 'experiments' },
  { re: /^#\/workers\/?$/, view: workers, nav: 'workers' },
  { re: /^#\/events\/?$/, view: events, nav: 'events' },
  { re: /^#\/experiments\/(\d+)\/events\/?$/, view: events, nav: 'events' },
  { re: /^#\/compare\/?$/, view: compare, nav: 'experiments' },
];

let unmount = null;

function route(root) {
  if (unmount) {
    unmount();
    unmount = null;
    dropEarly(); // index.html's early requests were for the first page only
  }
  clearAllErrors();
  root.replaceChildren();
  const hash = window.location.hash || '#/';
  const q = hash.indexOf('?');
  const path = q < 0 ? hash : hash.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : hash.slice(q + 1));
  for (const r of ROUTES) {
    const m = r.re.exec(path);
    if (m) {
      setActiveNav(r.nav);
      unmount = r.view.mount(root, { id: m[1] ? Number(m[1]) : null, query });
      window.scrollTo(0, 0);
      return;
    }
  }
  setActiveNav('');
  document.title = 'Rung';
  root.append(
    h('section', { class: 'page' },
      h('h1', { text: 'Not found' }),
      h('p', null, 'No page at ', h('code', { text: hash }), '. ',
        h('a', { href: '#/' }, 'Back to the experiments'), '.')),
  );
}

export function startRouter(root) {
  window.addEventListener('hashchange', () => route(root));
  route(root);
}

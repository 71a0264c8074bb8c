// The page around the views: the error banner, the token prompt and the
// navigation links' highlight.
import { login, logout, refreshSession, whoAmI } from './api.js';
import { setText } from './dom.js';

const errors = new Map(); // source -> message; the banner shows the latest

function render() {
  const banner = document.getElementById('error');
  if (!banner) return;
  const messages = [...errors.values()];
  if (messages.length === 0) {
    banner.hidden = true;
    setText(banner, '');
  } else {
    setText(banner, messages[messages.length - 1]);
    banner.hidden = false;
  }
}

/** Shows err's message in the banner under the name `source`. */
export function reportError(source, err) {
  const message = err && err.message ? err.message : String(err);
  errors.delete(source); // re-insert: the newest error is the one shown
  errors.set(source, message);
  render();
}

/** Hides the banner's message of `source` (it works again). */
export function clearError(source) {
  if (errors.delete(source)) render();
}

export function clearAllErrors() {
  errors.clear();
  render();
}

function showTokenPrompt() {
  const form = document.getElementById('token-form');
  if (!form || !form.hidden) return;
  form.hidden = false;
  document.getElementById('token-input').focus();
}

/** The top bar's "name (role) · Log out", shown while logged in. */
function renderUser() {
  const box = document.getElementById('user');
  const me = whoAmI();
  box.hidden = !me;
  setText(document.getElementById('user-name'), me ? `${me.name} (${me.role})` : '');
}

/** Wires the token prompt: shown on any 401, it logs in with the token
 * (the session's cookie replaces it: docs/api.md, "Sessions") and makes
 * every poller try again at once. */
export function initShell() {
  const form = document.getElementById('token-form');
  const input = document.getElementById('token-input');
  window.addEventListener('rung:unauthorized', showTokenPrompt);
  window.addEventListener('rung:session', renderUser);
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const token = input.value.trim();
    if (!token) return;
    input.value = '';
    try {
      await login(token);
      form.hidden = true;
      clearError('login');
    } catch (e) {
      reportError('login', e);
      input.focus();
    }
  });
  document.getElementById('logout').addEventListener('click', () => {
    logout().catch((e) => reportError('logout', e));
  });
  refreshSession();
}

/** Marks the navigation link of the current page. */
export function setActiveNav(name) {
  for (const a of document.querySelectorAll('.topbar nav a')) {
    const on = a.dataset.testid === `nav-${name}`;
    a.classList.toggle('active', on);
    if (on) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
}

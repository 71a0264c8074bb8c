// Entry point: wires the shell (banner, token prompt) and starts routing.
import { startRouter } from './router.js';
import { initShell } from './shell.js';

initShell();
startRouter(document.getElementById('main'));

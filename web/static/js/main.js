// ferry's web UI: the entry point. See docs/ui.md.
import { App } from './app.js';
import { registerWorker } from './worker.js';

new App(document.getElementById('app'));
registerWorker();

// ferry's web UI: the entry point. See docs/ui.md.
import { App } from './app.js';

new App(document.getElementById('app'));

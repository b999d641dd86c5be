// The service worker's offline page (sw.js) tries again by itself: once
// the master answers its health check, the page the user asked for loads.
// (A meta refresh would reload on a timer the user cannot stop: WCAG 2.2.1.)

const EVERY = 5000;
let timer = 0;

async function retry() {
  clearTimeout(timer);
  try {
    const r = await fetch('/healthz', { cache: 'no-store' });
    if (r.ok) {
      location.reload();
      return;
    }
  } catch {
    // still unreachable
  }
  timer = setTimeout(retry, EVERY);
}

timer = setTimeout(retry, EVERY);
addEventListener('online', retry);

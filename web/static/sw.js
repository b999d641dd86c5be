importScripts('/swpush.js');

// ferry's service worker, served at /sw.js (scope /) by web.Handler, which
// fills in CONFIG below. See docs/ui.md, "Install the app".
//
// - The app shell (the page and its versioned assets) is kept in a cache
//   named after the assets' version, so a new binary (a new version, so a
//   new sw.js) fills a new cache and the old ones are deleted when it
//   takes over.
// - The page is served from the cache at once and refreshed behind it
//   (stale-while-revalidate); assets, whose URLs change with their
//   content, from the cache first. The app opens instantly, even with the
//   master down, and then says that it is reconnecting.
// - Nothing else is cached: the UI WebSocket, uploads, downloads, the
//   login, the health check go to the network untouched. A navigation to
//   any other page that fails gets an offline page, not a browser error.

const CONFIG = {{CONFIG}};
const PREFIX = 'ferry-shell-';
const CACHE = PREFIX + CONFIG.version;
const PAGE = '/';

self.addEventListener('install', (event) => {
  event.waitUntil((async () => {
    const cache = await caches.open(CACHE);
    await cache.addAll([PAGE, ...CONFIG.shell.map((f) => `${CONFIG.assets}/${f}`)]);
    await self.skipWaiting();
  })());
});

self.addEventListener('activate', (event) => {
  event.waitUntil((async () => {
    for (const name of await caches.keys()) {
      if (name.startsWith(PREFIX) && name !== CACHE) await caches.delete(name);
    }
    await self.clients.claim();
  })());
});

self.addEventListener('fetch', (event) => {
  const req = event.request;
  if (req.method !== 'GET') return;
  const url = new URL(req.url);
  if (url.origin !== self.location.origin) return;
  if (req.mode === 'navigate') {
    if (url.pathname === '/' || url.pathname === '/index.html') event.respondWith(page(event));
    else event.respondWith(fetch(req).catch(() => offline()));
    return;
  }
  if (url.pathname.startsWith(`${CONFIG.assets}/`)) event.respondWith(asset(req));
  // Anything else is not ours to answer: the browser fetches it as if
  // there were no worker, and nothing of it is kept.
});

/** page answers from the cache and refreshes the cached page behind it. */
async function page(event) {
  const cache = await caches.open(CACHE);
  const cached = await cache.match(PAGE);
  const fresh = fetch(PAGE, { cache: 'no-cache', credentials: 'same-origin' }).then(async (res) => {
    if (res.ok) await cache.put(PAGE, res.clone());
    return res;
  });
  if (cached) {
    event.waitUntil(fresh.catch(() => undefined));
    return cached;
  }
  return fresh.catch(() => offline());
}

/** asset answers a versioned asset from the cache, else the network. */
async function asset(req) {
  const cache = await caches.open(CACHE);
  const hit = await cache.match(req, { ignoreSearch: true, ignoreVary: true });
  if (hit) return hit;
  const res = await fetch(req);
  if (res.ok) await cache.put(req, res.clone());
  return res;
}

function escapeHTML(s) {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** offline is the page shown for a navigation the network cannot answer. */
function offline() {
  const host = escapeHTML(self.location.host);
  const a = CONFIG.assets;
  // offline.js tries again by itself; a plain link for those who will not wait.
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>ferry is offline</title>
<link rel="icon" href="${a}/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="${a}/app.css">
<script type="module" src="${a}/js/offline.js"></script>
</head>
<body>
<main class="panel offline-page" id="offline">
<h1>ferry is offline</h1>
<p>ferry is offline: the master at <strong>${host}</strong> cannot be reached; it reconnects by itself.</p>
<p><a href="/">Open ferry</a></p>
</main>
</body>
</html>
`;
  return new Response(html, {
    status: 503,
    statusText: 'Offline',
    headers: {
      'Content-Type': 'text/html; charset=utf-8',
      'Content-Security-Policy': CONFIG.policy,
      'Cache-Control': 'no-store',
      'X-Content-Type-Options': 'nosniff',
      'Referrer-Policy': 'no-referrer',
    },
  });
}

// ferry's service worker (minimal: the installable app's shell caching
// lives in the full version). It takes control at once and handles Web
// Push through swpush.js (docs/notifications.md).
/* global importScripts */
importScripts('/swpush.js');

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

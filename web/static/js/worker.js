// Registers the service worker (/sw.js, scope "/"). The page's Content
// Security Policy requires Trusted Types for script URLs: the one policy
// allowed for this, ferry-worker, passes /sw.js and nothing else.

const SW_URL = '/sw.js';
let policy = null;

function scriptURL() {
  if (!globalThis.trustedTypes) return SW_URL;
  policy ||= globalThis.trustedTypes.createPolicy('ferry-worker', {
    createScriptURL: (u) => {
      if (u !== SW_URL) throw new TypeError(`not the service worker: ${u}`);
      return u;
    },
  });
  return policy.createScriptURL(SW_URL);
}

let registering = null;

/**
 * registerWorker registers the service worker once; it resolves with the
 * ServiceWorkerRegistration, or null where there is none (no support, not
 * a secure context, or the registration failed).
 */
export function registerWorker() {
  if (!('serviceWorker' in navigator) || !globalThis.isSecureContext) return Promise.resolve(null);
  registering ||= navigator.serviceWorker.register(scriptURL(), { scope: '/' })
    .then(() => navigator.serviceWorker.ready)
    .catch(() => null);
  return registering;
}

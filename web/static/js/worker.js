// The service worker (/sw.js): registered at scope / when the app starts,
// so the app shell opens from its cache, even offline, and the app can be
// installed. See docs/ui.md, "Install the app".

const WORKER_URL = '/sw.js';
let policy = null;

/**
 * workerURL is /sw.js as the page's Trusted Types policy wants a script
 * URL: made by the "ferry-worker" policy (web.ContentSecurityPolicy), which
 * passes that one URL and nothing else.
 */
function workerURL() {
  const tt = globalThis.trustedTypes;
  if (!tt?.createPolicy) return WORKER_URL;
  policy ||= tt.createPolicy('ferry-worker', {
    createScriptURL: (url) => {
      if (url !== WORKER_URL) throw new TypeError(`not ferry's service worker: ${url}`);
      return url;
    },
  });
  return policy.createScriptURL(WORKER_URL);
}

/**
 * registerWorker registers /sw.js and resolves with its
 * ServiceWorkerRegistration, or with null where there is none to have:
 * no service worker support, not a secure context (plain http on a host
 * other than localhost), or a registration the browser refused.
 */
export function registerWorker(nav = globalThis.navigator, secure = globalThis.isSecureContext) {
  if (!secure || !nav?.serviceWorker) return Promise.resolve(null);
  let url;
  try {
    url = workerURL();
  } catch (e) {
    return Promise.resolve(warn(e));
  }
  return nav.serviceWorker.register(url, { scope: '/', updateViaCache: 'none' }).catch(warn);
}

function warn(e) {
  console.warn(`ferry: the service worker was not registered: ${e?.message || e}`);
  return null;
}

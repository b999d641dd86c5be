// Web Push in ferry's service worker (loaded by sw.js with importScripts;
// docs/notifications.md).
//
// - push: the master's payload (JSON: kind, session_id, session_title,
//   tool, file, interaction_id, body, url) becomes a notification; a
//   permission gets Allow and Deny actions. Open pages of the app are told
//   too (postMessage {type: 'ferry.push', payload}), for an in-app cue.
// - notificationclick: Allow or Deny answers the permission with POST
//   /v1/push/answer (the cookie share goes by itself, the key share comes
//   from IndexedDB, where the page copies it: a worker cannot read
//   localStorage); anything else, or an answer that fails, opens the app
//   at the session. self.ferryNotificationClick(notification, action) is
//   the same handling, callable from tests (nothing can click an OS
//   notification there).
/* eslint-env serviceworker */

(() => {
  const KEY_HEADER = 'X-Ferry-Key';
  const DB = 'ferry';
  const STORE = 'kv';
  const KEY_ITEM = 'key-share';
  const ACTIONS = { allow: 'allow', deny: 'deny' };

  /** keyShare reads the key share the page copied into IndexedDB. */
  function keyShare() {
    return new Promise((resolve) => {
      let open;
      try {
        open = indexedDB.open(DB, 1);
      } catch {
        resolve('');
        return;
      }
      open.onupgradeneeded = () => open.result.createObjectStore(STORE);
      open.onerror = () => resolve('');
      open.onsuccess = () => {
        const db = open.result;
        try {
          const get = db.transaction(STORE, 'readonly').objectStore(STORE).get(KEY_ITEM);
          get.onsuccess = () => {
            resolve(typeof get.result === 'string' ? get.result : '');
            db.close();
          };
          get.onerror = () => {
            resolve('');
            db.close();
          };
        } catch {
          resolve('');
          db.close();
        }
      };
    });
  }

  function str(v, max) {
    return typeof v === 'string' ? v.slice(0, max) : '';
  }

  /** payloadOf reads a push event's data; unreadable data shows a plain notice. */
  function payloadOf(data) {
    let p = {};
    try {
      p = data ? data.json() : {};
    } catch {
      p = {};
    }
    if (!p || typeof p !== 'object') p = {};
    const url = str(p.url, 512);
    return {
      kind: str(p.kind, 32),
      session_id: str(p.session_id, 128),
      session_title: str(p.session_title, 200),
      tool: str(p.tool, 200),
      file: str(p.file, 200),
      interaction_id: str(p.interaction_id, 128),
      body: str(p.body, 400),
      // Only a path of this origin is ever opened.
      url: url.startsWith('/') && !url.startsWith('//') ? url : '/',
    };
  }

  const TITLES = {
    permission: 'Permission needed',
    question: 'A question for you',
    done: 'Turn finished',
    failed: 'Turn failed',
  };

  async function show(p) {
    const title = `${TITLES[p.kind] || 'ferry'}${p.session_title ? ` · ${p.session_title}` : ''}`;
    const opts = {
      body: p.body || 'Open ferry to see more.',
      tag: p.interaction_id ? `ferry-i-${p.interaction_id}` : `ferry-s-${p.session_id}`,
      data: p,
      requireInteraction: p.kind === 'permission' || p.kind === 'question',
    };
    if (p.kind === 'permission' && p.interaction_id) {
      opts.actions = [{ action: ACTIONS.allow, title: 'Allow' }, { action: ACTIONS.deny, title: 'Deny' }];
    }
    const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    for (const c of windows) c.postMessage({ type: 'ferry.push', payload: p });
    await self.registration.showNotification(title, opts);
  }

  /**
   * openApp shows url in a window of the app (navigated, then focused
   * where the browser allows it), or opens one; {opened: url} or
   * {opened: ''} when the browser allowed neither.
   */
  async function openApp(url) {
    const target = new URL(url, self.location.origin).href;
    const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
    for (const c of windows) {
      if (new URL(c.url).origin !== self.location.origin) continue;
      let w = c;
      try {
        w = (await c.navigate(target)) || c;
      } catch {
        continue; // not controlled by this worker: try the next one
      }
      try {
        await w.focus();
      } catch {
        // focusing needs the click's user activation; the page is there anyway
      }
      return { opened: target };
    }
    try {
      await self.clients.openWindow(target);
      return { opened: target };
    } catch {
      return { opened: '' };
    }
  }

  /** answer posts a permission's answer; {ok, status, code}. */
  async function answer(p, value) {
    const key = await keyShare();
    let resp;
    try {
      resp = await fetch('/v1/push/answer', {
        method: 'POST',
        credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', [KEY_HEADER]: key },
        body: JSON.stringify({ session_id: p.session_id, interaction_id: p.interaction_id, value }),
      });
    } catch {
      return { ok: false, status: 0, code: 'connection_lost' };
    }
    let code = '';
    if (!resp.ok) {
      try {
        code = (await resp.json())?.error?.code || '';
      } catch {
        code = '';
      }
    }
    return { ok: resp.ok, status: resp.status, code };
  }

  /**
   * ferryNotificationClick handles a click on notification (its data is
   * the payload) with action ('' for the body): an Allow or Deny answers
   * the permission, anything else (or a failed answer) opens the app at
   * the session. It closes the notification and resolves with what it did.
   */
  async function ferryNotificationClick(notification, action) {
    const p = notification?.data || {};
    notification?.close?.();
    if ((action === ACTIONS.allow || action === ACTIONS.deny) && p.kind === 'permission' && p.interaction_id) {
      const res = await answer(p, action);
      if (res.ok) return { answered: action, ...res };
      // Settled elsewhere, signed out, or offline: show the session.
      return { answered: '', ...res, ...(await openApp(p.url || '/')) };
    }
    return openApp(p.url || '/');
  }
  self.ferryNotificationClick = ferryNotificationClick;

  self.addEventListener('push', (event) => {
    event.waitUntil(show(payloadOf(event.data)));
  });

  self.addEventListener('notificationclick', (event) => {
    event.waitUntil(ferryNotificationClick(event.notification, event.action || ''));
  });
})();

// Web Push on this device (docs/notifications.md): the "Notifications"
// switch, and ui.focus, which tells the master which session this page
// shows and whether the user is looking (none is pushed for a session a
// page is focused on).
//
// - The switch asks the browser's permission, subscribes with the
//   master's VAPID key (GET /v1/push/key) and posts the subscription
//   (POST /v1/push/subscriptions); off unsubscribes and deletes it
//   (DELETE). It is per device: its state is the browser's own push
//   subscription. Whatever fails is said in the line under it.
// - Once the browser's permission is given, turning on settles within
//   SETTLE_MS, on or off: pushManager.subscribe has no timeout of its own
//   and hangs while no push service answers. A subscription that arrives
//   after the deadline is dropped again.
// - The service worker answers a notification's Allow/Deny with the key
//   share, which it cannot read from localStorage: it is copied into
//   IndexedDB here (and removed when it is gone from localStorage).
// - ui.focus is sent on a session change, on visibilitychange, focus and
//   blur, and after every (re)connection.

import { h } from './util.js';
import { message } from './conn.js';
import { registerWorker } from './worker.js';

const KEY = 'ferry.key'; // the key share (conn.js)
const KEY_HEADER = 'X-Ferry-Key';
const DB = 'ferry';
const STORE = 'kv';
const KEY_ITEM = 'key-share';
// SETTLE_MS bounds turning on, after the permission: docs/notifications.md
// promises 15 s from the click; a loaded phone takes seconds of its own.
const SETTLE_MS = 12000;

/** TimeoutError is what within rejects with when its deadline passed. */
class TimeoutError extends Error {
  constructor(what) {
    super(`${what} did not answer within ${SETTLE_MS / 1000} s`);
    this.name = 'TimeoutError';
  }
}

/**
 * within resolves as p does, or rejects with TimeoutError(what) at the
 * deadline (a Date.now() value); late is called with p's value when it
 * resolves after that, to undo it.
 */
function within(p, deadline, what, late) {
  let timedOut = false;
  let timer = 0;
  const guard = new Promise((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      reject(new TimeoutError(what));
    }, Math.max(0, deadline - Date.now()));
  });
  const run = Promise.resolve(p).then((v) => {
    if (timedOut) late?.(v);
    return v;
  });
  return Promise.race([run, guard]).finally(() => clearTimeout(timer));
}

function storedKey() {
  try {
    return localStorage.getItem(KEY) || '';
  } catch {
    return '';
  }
}

/** idb runs fn on the key-value store; resolves when the transaction ends. */
function idb(mode, fn) {
  return new Promise((resolve) => {
    let open;
    try {
      open = indexedDB.open(DB, 1);
    } catch {
      resolve(false);
      return;
    }
    open.onupgradeneeded = () => open.result.createObjectStore(STORE);
    open.onerror = () => resolve(false);
    open.onsuccess = () => {
      const db = open.result;
      try {
        const tx = db.transaction(STORE, mode);
        fn(tx.objectStore(STORE));
        tx.oncomplete = () => {
          db.close();
          resolve(true);
        };
        tx.onerror = () => {
          db.close();
          resolve(false);
        };
      } catch {
        db.close();
        resolve(false);
      }
    };
  });
}

/** shareKey copies the key share for the service worker (or removes it). */
export function shareKey() {
  const key = storedKey();
  return idb('readwrite', (s) => (key ? s.put(key, KEY_ITEM) : s.delete(KEY_ITEM)));
}

function b64urlToBytes(s) {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: { [KEY_HEADER]: storedKey() } };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const resp = await fetch(path, init);
  let data = null;
  try {
    data = await resp.json();
  } catch {
    data = null;
  }
  if (!resp.ok) {
    const e = new Error(data?.error?.message || `HTTP ${resp.status}`);
    e.code = data?.error?.code || 'internal';
    e.status = resp.status;
    throw e;
  }
  return data;
}

/**
 * activeRegistration is the service worker's registration once it has an
 * active worker (pushManager.subscribe needs one), or null when there is
 * none within 10 s.
 */
async function activeRegistration() {
  const reg = await registerWorker();
  if (!reg) return null;
  if (reg.active) return reg;
  return Promise.race([navigator.serviceWorker.ready, new Promise((r) => { setTimeout(() => r(null), 10000); })]);
}

/** deviceLabel names this browser for the list of subscriptions. */
function deviceLabel() {
  const ua = navigator.userAgent || '';
  const os = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : 'device';
  const browser = /Edg\//.test(ua) ? 'Edge' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom/.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'browser';
  return `${browser} on ${os}`;
}

export class Notifier {
  /**
   * conn is the app's Connection; shown() returns the id of the session
   * the page shows ('' for none); cue(text) tells the user of a
   * notification about another session while the app is open.
   */
  constructor(conn, shown, cue) {
    this.conn = conn;
    this.shown = shown;
    this.last = '';
    this.busy = false;
    this.input = h('input', { id: 'notify-switch', type: 'checkbox', role: 'switch', 'aria-describedby': 'notify-status' });
    this.status = h('p', { id: 'notify-status', class: 'small muted notify-status', role: 'status' });
    this.el = h('section', { class: 'side-settings', 'aria-label': 'Settings' },
      h('label', { class: 'switch', for: 'notify-switch' }, this.input, h('span', { text: 'Notifications on this device' })),
      this.status);
    this.input.addEventListener('change', () => this.toggle(this.input.checked));
    shareKey();
    conn.addEventListener('state', (e) => {
      if (e.detail.state === 'open') {
        this.last = ''; // a new connection knows nothing yet
        shareKey();
        this.focus();
      }
    });
    for (const ev of ['visibilitychange', 'focus', 'blur']) {
      (ev === 'visibilitychange' ? document : window).addEventListener(ev, () => this.focus());
    }
    navigator.serviceWorker?.addEventListener('message', (e) => {
      const p = e.data?.type === 'ferry.push' ? e.data.payload : null;
      if (p && p.session_id !== this.shown()) cue?.(`${p.session_title || 'A session'}: ${p.body}`);
    });
    this.init();
  }

  say(text, state = '') {
    this.status.textContent = text;
    this.status.dataset.state = state;
  }

  supported() {
    return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window && window.isSecureContext;
  }

  async init() {
    if (!this.supported()) {
      this.input.disabled = true;
      this.say('This browser cannot receive notifications from this page: push needs HTTPS (or localhost) and a browser that supports it.', 'unsupported');
      return;
    }
    const reg = await registerWorker();
    const sub = reg ? await reg.pushManager.getSubscription().catch(() => null) : null;
    this.input.checked = !!sub && Notification.permission === 'granted';
    this.say(this.input.checked ? 'On: you are notified when an agent needs you or finishes.' : 'Off.', this.input.checked ? 'on' : 'off');
  }

  /** focus sends ui.focus when what the page shows or its focus changed. */
  focus() {
    const focused = document.visibilityState === 'visible' && document.hasFocus();
    const payload = { session_id: this.shown() || '', focused };
    const sig = `${payload.session_id}|${focused}`;
    if (sig === this.last || this.conn.state !== 'open') return;
    if (this.conn.send(message('ui.focus', payload))) this.last = sig;
  }

  async toggle(on) {
    if (this.busy) return;
    this.busy = true;
    this.input.disabled = true;
    try {
      if (on) await this.turnOn();
      else await this.turnOff();
    } finally {
      this.busy = false;
      this.input.disabled = !this.supported();
    }
  }

  async turnOn() {
    this.say('Turning on…', 'busy');
    let perm = Notification.permission;
    if (perm !== 'granted') perm = await Notification.requestPermission();
    if (perm !== 'granted') {
      this.input.checked = false;
      this.say('Notifications are blocked for this site: allow them in the browser\'s site settings, then try again.', 'error');
      return;
    }
    const deadline = Date.now() + SETTLE_MS;
    const reg = await within(activeRegistration(), deadline, 'the service worker').catch(() => null);
    if (!reg) {
      this.input.checked = false;
      this.say('The service worker could not be registered, so this browser cannot receive notifications here.', 'error');
      return;
    }
    await within(shareKey(), deadline, 'the browser storage').catch(() => {});
    let key;
    try {
      key = (await within(api('GET', '/v1/push/key'), deadline, 'the master')).public_key;
    } catch (e) {
      this.input.checked = false;
      this.say(`The master did not give its push key: ${e.message}`, 'error');
      return;
    }
    const dropLate = (s) => s?.unsubscribe().catch(() => {});
    for (let fresh = false; ; fresh = true) {
      let sub;
      try {
        sub = await within(reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64urlToBytes(key) }),
          deadline, 'the push service', dropLate);
      } catch (e) {
        this.input.checked = false;
        this.say(e instanceof TimeoutError
          ? `This browser's push service did not answer within ${SETTLE_MS / 1000} s (no network, or the push service is blocked or down). Notifications stay off on this device; try again later.`
          : `This browser could not subscribe to its push service (${e.message || e.name}). Notifications stay off on this device.`, 'error');
        return;
      }
      try {
        await within(api('POST', '/v1/push/subscriptions', { ...sub.toJSON(), label: deviceLabel() }), deadline, 'the master');
        break;
      } catch (e) {
        await sub.unsubscribe().catch(() => {});
        // 409: another sign-in (this browser's earlier one) owns this
        // endpoint. Unsubscribed, the browser gets a new one: try once.
        if (e.status === 409 && !fresh) continue;
        this.input.checked = false;
        this.say(`The master refused this device's subscription: ${e.message}`, 'error');
        return;
      }
    }
    this.input.checked = true;
    this.say('On: you are notified when an agent needs you or finishes.', 'on');
  }

  async turnOff() {
    this.say('Turning off…', 'busy');
    const reg = await registerWorker();
    const sub = reg ? await reg.pushManager.getSubscription().catch(() => null) : null;
    if (sub) {
      const endpoint = sub.endpoint;
      await sub.unsubscribe().catch(() => {});
      try {
        await api('DELETE', '/v1/push/subscriptions', { endpoint });
      } catch (e) {
        if (e.code !== 'not_found') {
          this.say(`Off on this device; the master could not forget it yet: ${e.message}`, 'error');
          return;
        }
      }
    }
    this.input.checked = false;
    this.say('Off.', 'off');
  }
}

// The UI WebSocket (/v1/ui): one connection to the master, kept open.
//
// - Messages are the protocol's envelope (docs/protocol.md). request() sends
//   one and resolves with the answer (the message whose parent_id is its
//   message_id), or rejects with the coded error the master answered.
// - Every message received is also dispatched as a "message" event, so
//   session events, machine status and search answers reach their views.
// - When the connection drops it is opened again with exponential backoff
//   and full jitter; "state" events say connecting / open / lost / signedout.
//   The views then resubscribe from the last seq they hold.
// - The sign-in is two halves (internal/master/browser.go): the HttpOnly
//   cookie, which the browser sends by itself, and the key share the login
//   page stored in localStorage, which the page offers as a WebSocket
//   subprotocol beside "ferry.ui". A browser sends 127.0.0.1 cookies to
//   every port, but storage is per origin: no other local server has the
//   key. No key stored means signed out at once.
// - A browser cannot read the HTTP status of a refused WebSocket upgrade, so
//   "signed out" is otherwise inferred: the upgrade fails twice in a row
//   while /readyz answers 200 (a draining or unready node answers 503, and
//   its refusal says nothing about the sign-in), or the master closes the connection with
//   error{code: unauthorized} (a revoked or expired token). A sign-in in
//   another tab (a new key stored) reconnects this one.
// - Signed out, the page asks the master why (POST /v1/signin/status,
//   internal/master/cookie.go): the "signedout" event's reason is
//   "expired", "revoked", "key_gone" (this browser's key share is gone),
//   "elsewhere" (another sign-in replaced this browser's cookie),
//   "no_cookie" (the cookie is gone), or "none" (never signed in here).
// - A master node that drains (a restart or a scale-down) closes with 1012
//   (service restart): the page reconnects at once, with the least backoff,
//   and a load balancer sends it to another node.
// - A heartbeat (ui.machines.list every 25 s while visible, answered within
//   10 s) notices a connection that died silently, as on a phone that
//   changed networks; each one answered is a "heartbeat" event.

import { uuid } from './util.js';

const BACKOFF_BASE = 400;
const BACKOFF_CAP = 10000;
const HEARTBEAT_EVERY = 25000;
const HEARTBEAT_WAIT = 10000;
const REQUEST_WAIT = 45000;
const SIGNED_IN = 'ferry.signedIn';
const KEY = 'ferry.key'; // the key share; the master's login page writes it
const PROTOCOL = 'ferry.ui';
const RESTART = 1012; // the close code of a master node that drains
const STATUS_WAIT = 5000; // bounds the sign-in status request

function storedKey() {
  try {
    return localStorage.getItem(KEY) || '';
  } catch {
    return '';
  }
}

function wasSignedIn() {
  try {
    return localStorage.getItem(SIGNED_IN) === '1';
  } catch {
    return false;
  }
}

/** ProtoError is a coded error the master answered. */
export class ProtoError extends Error {
  constructor(payload) {
    super(payload?.message || payload?.code || 'error');
    this.code = payload?.code || 'internal';
    this.field = payload?.field || '';
  }
}

/** message builds an envelope. */
export function message(type, payload = {}, sessionId = '') {
  const m = { type, message_id: uuid(), payload };
  if (sessionId) m.session_id = sessionId;
  return m;
}

export class Connection extends EventTarget {
  constructor(url) {
    super();
    this.url = url;
    this.state = 'idle';
    this.ws = null;
    this.pending = new Map(); // message_id → {resolve, reject, timer}
    this.attempt = 0;
    this.failedUpgrades = 0;
    this.retryTimer = 0;
    this.heartbeatTimer = 0;
    this.everOpened = false;
    addEventListener('online', () => this.retryNow());
    addEventListener('storage', (ev) => {
      // Signed in (again) in another tab: use the new sign-in here too.
      if (ev.key === KEY && ev.newValue && this.state === 'signedout') this.start();
    });
    document.addEventListener('visibilitychange', () => {
      if (document.hidden) return;
      if (this.state === 'open') this.heartbeat();
      else this.retryNow();
    });
  }

  setState(s, detail = {}) {
    if (this.state === s && !detail.force) return;
    this.state = s;
    this.dispatchEvent(new CustomEvent('state', { detail: { state: s, ...detail } }));
  }

  /** start opens the connection (again, after a sign-in). */
  start() {
    clearTimeout(this.retryTimer);
    this.failedUpgrades = 0;
    this.attempt = 0;
    this.open();
  }

  open() {
    if (this.ws) return;
    const key = storedKey();
    if (!key) {
      this.signedOut(this.everOpened || wasSignedIn() ? 'key_gone' : 'none');
      return;
    }
    this.setState(this.everOpened ? 'lost' : 'connecting');
    let ws;
    try {
      ws = new WebSocket(this.url, [PROTOCOL, key]);
    } catch {
      this.scheduleRetry();
      return;
    }
    this.ws = ws;
    let opened = false;
    let unauthorized = false;
    ws.onopen = () => {
      opened = true;
      this.everOpened = true;
      this.attempt = 0;
      this.failedUpgrades = 0;
      try {
        localStorage.setItem(SIGNED_IN, '1');
      } catch {
        // private mode: "signed out" cannot tell an ended sign-in from none
      }
      this.lostReason = '';
      this.setState('open', { force: true });
      this.scheduleHeartbeat();
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== 'string') return;
      let msg;
      try {
        msg = JSON.parse(ev.data);
      } catch {
        return;
      }
      if (msg.type === 'error' && msg.payload?.code === 'unauthorized' && !msg.parent_id) unauthorized = true;
      this.receive(msg);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      this.ws = null;
      clearTimeout(this.heartbeatTimer);
      this.failPending(new ProtoError({ code: 'connection_lost', message: 'the connection to the master was lost' }));
      if (unauthorized) {
        if (storedKey() && storedKey() !== key) {
          // Another tab signed in anew meanwhile: try with that sign-in.
          this.scheduleRetry(200);
          return;
        }
        this.signedOut('expired');
        return;
      }
      if (!opened) {
        this.checkSignedOut();
        return;
      }
      this.setState('lost');
      if (ev.code === RESTART) this.attempt = 0; // a draining node: come back at once, elsewhere
      this.scheduleRetry();
    };
  }

  async checkSignedOut() {
    let healthy = false;
    try {
      const r = await fetch('/readyz', { cache: 'no-store' });
      healthy = r.ok;
    } catch {
      healthy = false;
    }
    if (healthy) this.failedUpgrades++;
    else this.failedUpgrades = 0;
    if (this.failedUpgrades >= 2) {
      this.signedOut(this.everOpened || wasSignedIn() ? 'expired' : 'none');
      return;
    }
    // Lost, and now the master's health check says whether ferry itself
    // is down (unreachable) or only this connection failed.
    if (this.everOpened) {
      const reason = healthy ? 'refused' : 'unreachable';
      this.setState('lost', { reason, force: this.lostReason !== reason });
      this.lostReason = reason;
    }
    // Never connected and the master does not answer: unreachable (as an
    // app opened from the service worker's cache while it is down).
    else this.setState('connecting', healthy ? {} : { reason: 'unreachable', force: true });
    this.scheduleRetry(healthy ? 200 : 0);
  }

  /**
   * signedOut ends the connection's attempts as signed out, with the
   * reason the master gives (fallback when it cannot say); a master that
   * finds the sign-in good after all (another tab signed in meanwhile)
   * gets another attempt.
   */
  async signedOut(fallback) {
    const key = storedKey();
    let status = null;
    if (fallback !== 'none' || key) {
      try {
        const ctl = new AbortController();
        const timer = setTimeout(() => ctl.abort(), STATUS_WAIT);
        const r = await fetch('/v1/signin/status', {
          method: 'POST', credentials: 'same-origin', cache: 'no-store', signal: ctl.signal,
          headers: key ? { 'X-Ferry-Key': key } : {},
        });
        clearTimeout(timer);
        if (r.ok) status = await r.json();
      } catch {
        status = null;
      }
    }
    if (status?.signed_in && key && this.failedUpgrades < 4) {
      this.scheduleRetry(200);
      return;
    }
    let reason = status?.reason || fallback;
    // No cookie and no key was ever here: never signed in, not an ending.
    if (reason === 'no_cookie' && !key && !this.everOpened && !wasSignedIn()) reason = 'none';
    if (reason === 'key_gone' && !this.everOpened && !wasSignedIn()) reason = 'none';
    this.setState('signedout', { reason, force: true });
  }

  scheduleRetry(fixed = 0) {
    clearTimeout(this.retryTimer);
    const ceiling = Math.min(BACKOFF_CAP, BACKOFF_BASE * 2 ** this.attempt);
    this.attempt++;
    const wait = fixed || Math.random() * ceiling;
    this.retryTimer = setTimeout(() => this.open(), wait);
  }

  /** retryNow reconnects at once when the connection is down. */
  retryNow() {
    if (this.ws || this.state === 'signedout' || this.state === 'idle') return;
    clearTimeout(this.retryTimer);
    this.open();
  }

  /** drop closes the connection; it reconnects as after any loss. */
  drop() {
    if (this.ws) this.ws.close();
  }

  scheduleHeartbeat() {
    clearTimeout(this.heartbeatTimer);
    this.heartbeatTimer = setTimeout(() => this.heartbeat(), HEARTBEAT_EVERY);
  }

  async heartbeat() {
    clearTimeout(this.heartbeatTimer);
    if (this.state !== 'open') return;
    const ws = this.ws;
    try {
      await this.request(message('ui.machines.list'), HEARTBEAT_WAIT);
      this.dispatchEvent(new Event('heartbeat'));
    } catch (e) {
      if (e.code === 'timeout' && this.ws === ws && ws) ws.close();
    }
    if (this.state === 'open') this.scheduleHeartbeat();
  }

  receive(msg) {
    const p = msg.parent_id && this.pending.get(msg.parent_id);
    if (p) {
      this.pending.delete(msg.parent_id);
      clearTimeout(p.timer);
      if (msg.type === 'error') p.reject(new ProtoError(msg.payload));
      else p.resolve(msg);
    }
    this.dispatchEvent(new CustomEvent('message', { detail: msg }));
  }

  failPending(err) {
    for (const [, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(err);
    }
    this.pending.clear();
  }

  /** send sends msg now; false when the connection is not open. */
  send(msg) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify(msg));
    return true;
  }

  /** request sends msg and resolves with its answer. */
  request(msg, wait = REQUEST_WAIT) {
    return new Promise((resolve, reject) => {
      if (!this.send(msg)) {
        reject(new ProtoError({ code: 'connection_lost', message: 'not connected to the master' }));
        return;
      }
      const timer = setTimeout(() => {
        this.pending.delete(msg.message_id);
        reject(new ProtoError({ code: 'timeout', message: 'the master did not answer in time' }));
      }, wait);
      this.pending.set(msg.message_id, { resolve, reject, timer });
    });
  }
}

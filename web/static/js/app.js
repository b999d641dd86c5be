// The application: the connection, the machines and sessions lists, the
// router (#/ the lists, #/new a new session, #/s/<id> a session) and the
// sign-in screen.

import { h, clear, debounce, formatWhen, frameThrottle, uuid } from './util.js';
import { Connection, message } from './conn.js';
import { SessionState } from './session.js';
import { SessionView } from './sessionview.js';
import { WaitingBadge, waitingCount } from './badge.js';
import { Notifier } from './notify.js';
import { PhoneLink } from './phonelink.js';
import { CODES } from './codes.js';
import { branchInfo, showCompare } from './worktreeview.js';
import { MAX_COPIES, isolatedChoice, rememberIsolated, startPayloads, workspaceKey } from './worktree.js';

// LOGO is the app's icon (the favicon), beside the app's versioned modules.
const LOGO = new URL('../favicon.svg', import.meta.url).href;

const ERROR_WAIT = 60000;
// LOST_KEPT is what the banner says survives while ferry is away.
const LOST_KEPT = 'Kept: your sessions and everything shown here; a prompt already sent runs once ferry is back; '
  + 'a question waiting for you is asked again (unless its time runs out). A running turn goes on if only the connection dropped; '
  + 'if ferry on its machine stopped (ferry up or ferry connect), that turn ends there and says so.';
// What the sidebar says of a machine; "unknown" while the UI's own
// connection to the master is down and the last word may be stale.
const MACHINE_STATE = { on: 'online', off: 'offline', unknown: 'unknown — reconnecting' };
function wsURL() {
  const u = new URL('/v1/ui', location.href);
  u.protocol = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return u.href;
}

function parseRoute() {
  const raw = location.hash.replace(/^#/, '');
  if (!raw.startsWith('/')) return { name: 'home' };
  const [path, query] = raw.split('?');
  const params = new URLSearchParams(query || '');
  const m = /^\/s\/([^/]+)$/.exec(path);
  if (m) return { name: 'session', id: decodeURIComponent(m[1]) };
  const g = /^\/compare\/([^/]+)$/.exec(path);
  if (g) return { name: 'compare', group: decodeURIComponent(g[1]) };
  if (path === '/new') return { name: 'new', params };
  return { name: 'home' };
}

export class App {
  constructor(root) {
    this.root = root;
    this.conn = new Connection(wsURL());
    this.machines = [];
    this.sessions = []; // the default list: sessions not archived
    this.archived = []; // archived sessions (so one can be opened by its link)
    // The sidebar's search: a query and the Archived filter; found is the
    // master's answer while either is set (null: not searching).
    this.filter = { query: '', archived: false };
    this.found = null;
    this.listed = false;
    this.states = new Map(); // session id → SessionState
    this.watching = new Set(); // sessions subscribed without a view (watch)
    this.renderCompare = frameThrottle(() => this.compareDraw?.());
    this.view = null; // the SessionView shown
    this.errorHandlers = new Map(); // message_id → {fn, timer}
    this.signedOut = null;
    this.renderSidebar = frameThrottle(() => this.drawSidebar());
    this.badge = new WaitingBadge();
    this.buildShell();
    this.notifier = new Notifier(this.conn, () => this.view?.state.id || '', (text) => this.toast(text));
    this.conn.addEventListener('state', (e) => this.onState(e.detail));
    this.conn.addEventListener('message', (e) => this.onMessage(e.detail));
    this.conn.addEventListener('heartbeat', () => this.refreshSessionsSoon());
    addEventListener('hashchange', () => this.route());
    this.route();
    this.conn.start();
  }

  buildShell() {
    this.back = h('a', { class: 'back', href: '#/', 'aria-label': 'Back to the sessions', text: '‹ Sessions' });
    this.connPill = h('span', { class: 'conn-pill', role: 'status' });
    this.banner = h('div', { class: 'banner', role: 'status', hidden: true });
    this.sidebar = h('nav', { class: 'sidebar', 'aria-label': 'Machines and sessions' });
    this.main = h('main', { id: 'main', tabindex: '-1' });
    this.announcer = h('div', { class: 'sr-only', 'aria-live': 'polite', 'aria-atomic': 'true', id: 'announcer' });
    this.toasts = h('div', { class: 'toasts', 'aria-live': 'assertive' });
    this.topbar = h('header', { class: 'topbar' },
      this.back,
      h('a', { class: 'brand', href: '#/', 'aria-label': 'ferry: home' },
        h('img', { class: 'logo', src: LOGO, alt: '', width: '22', height: '22', decoding: 'async' }), 'ferry'),
      h('span', { class: 'spacer' }),
      (this.phoneLink = new PhoneLink(this)).button,
      this.connPill);
    clear(this.root).append(
      h('a', { class: 'skip', href: '#main', text: 'Skip to the content', onclick: (e) => { e.preventDefault(); this.main.focus(); } }),
      this.topbar, this.banner, h('div', { class: 'shell' }, this.sidebar, this.main), this.announcer, this.toasts);
  }

  /** announce tells screen readers (the polite live region). */
  announce(text) {
    this.announcer.textContent = '';
    setTimeout(() => {
      this.announcer.textContent = text;
    }, 30);
  }

  toast(text) {
    const t = h('div', { class: 'toast', role: 'alert' }, h('span', { text }),
      h('button', { type: 'button', class: 'link', 'aria-label': 'Dismiss', text: '✕', onclick: () => t.remove() }));
    this.toasts.appendChild(t);
    setTimeout(() => t.remove(), 8000);
  }

  /**
   * sendControl sends msg, which has no answer but an error; onError gets
   * that error (or a connection error right away). false when not sent.
   */
  sendControl(msg, onError) {
    if (!this.conn.send(msg)) {
      onError?.({ code: 'connection_lost', message: 'not connected to the master' });
      return false;
    }
    if (onError) {
      const timer = setTimeout(() => this.errorHandlers.delete(msg.message_id), ERROR_WAIT);
      this.errorHandlers.set(msg.message_id, { fn: onError, timer });
    }
    return true;
  }

  /** control sends a control.* message of a session. */
  control(type, payload, sessionId, onError) {
    return this.sendControl(message(type, payload, sessionId), onError || ((err) => this.toast(`${type}: ${err.message}`)));
  }

  onState({ state, reason }) {
    const labels = { connecting: 'Connecting…', open: 'Connected', lost: 'Reconnecting…', signedout: 'Signed out' };
    this.connPill.textContent = labels[state] || state;
    this.connPill.dataset.state = state;
    if (state === 'lost') {
      this.banner.hidden = false;
      this.banner.dataset.kind = 'lost';
      // What survives, exactly (docs/live.md, "Guarantees"): not "nothing
      // is lost", since a turn running when ferry stops ends there.
      // One line on a phone; what is kept folds under it.
      this.banner.replaceChildren(
        h('span', { text: reason === 'unreachable'
          ? `ferry does not answer: the master at ${location.host} is stopped or cannot be reached; reconnecting.`
          : 'Connection lost — resuming…' }),
        h('details', { class: 'banner-kept' },
          h('summary', { text: 'What is kept, and what a running turn does' }),
          h('span', { text: LOST_KEPT })));
      if (!this.wasLost) this.announce('Connection lost. Reconnecting.');
      this.wasLost = true;
      // What the master said about the machines may be out of date now:
      // the sidebar says "unknown" until it answers again.
      this.machinesKnown = false;
      this.renderSidebar();
      this.drawForm?.();
    } else if (state === 'connecting' && reason === 'unreachable') {
      // Never connected in this page (as an app opened from the cache
      // with the master down): say so, as after a loss.
      this.banner.hidden = false;
      this.banner.dataset.kind = 'lost';
      this.banner.textContent = `ferry is offline: the master at ${location.host} cannot be reached; it reconnects by itself.`;
      this.unreachable = true;
      this.drawForm?.();
    } else if (state === 'open') {
      if (this.wasLost) {
        this.banner.hidden = false;
        this.banner.dataset.kind = 'ok';
        this.banner.textContent = 'Reconnected.';
        this.announce('Reconnected.');
        clearTimeout(this.bannerTimer);
        this.bannerTimer = setTimeout(() => {
          this.banner.hidden = true;
        }, 2500);
      } else {
        this.banner.hidden = true;
      }
      this.wasLost = false;
      this.unreachable = false;
      this.signedOut = null;
      this.refreshLists();
    } else if (state === 'signedout') {
      this.banner.hidden = true;
      this.signedOut = reason || 'none';
    }
    this.view?.onConnState(state);
    if (state === 'signedout' || (state === 'open' && this.root.dataset.view === 'signin')) this.route();
  }

  async refreshLists() {
    try {
      const [ms, ss, as] = await Promise.all([
        this.conn.request(message('ui.machines.list')),
        this.conn.request(message('ui.sessions.list', { limit: 200 })),
        this.conn.request(message('ui.sessions.list', { limit: 200, archived: true })),
      ]);
      this.machines = ms.payload.machines || [];
      this.sessions = ss.payload.sessions || [];
      this.archived = as.payload.sessions || [];
      this.listed = true;
      this.machinesKnown = true;
    } catch (e) {
      if (e.code !== 'connection_lost') this.toast(`Could not list the machines: ${e.message}`);
      return;
    }
    for (const s of [...this.sessions, ...this.archived]) {
      const st = this.states.get(s.id);
      if (st) Object.assign(st.info, { title: s.title, archived: !!s.archived, worktree: s.worktree || st.info.worktree });
    }
    this.searchNow();
    this.sessionsChanged();
    if (!this.view) this.route();
    else this.view.render();
  }

  onMessage(msg) {
    if (msg.type === 'error' && !msg.parent_id && msg.payload?.code !== 'unauthorized') {
      this.toast(`The master reports: ${msg.payload?.message || msg.payload?.code}`);
      return;
    }
    if (msg.type === 'error' && msg.parent_id) {
      const hd = this.errorHandlers.get(msg.parent_id);
      if (hd) {
        clearTimeout(hd.timer);
        this.errorHandlers.delete(msg.parent_id);
        hd.fn(msg.payload || {});
      }
      return;
    }
    switch (msg.type) {
      case 'master.machines':
        this.machines = msg.payload.machines || [];
        this.renderSidebar();
        this.view?.render();
        return;
      case 'master.session.changed':
        // A session's status changed, or another UI renamed, archived or
        // deleted it (this UI's own changes come back as answers:
        // SessionActions applies them).
        if (!msg.parent_id) this.applyChange(msg.payload, false);
        return;
      case 'master.machine.status': {
        const m = msg.payload.machine;
        const i = this.machines.findIndex((x) => x.id === m.id);
        if (i >= 0) this.machines[i] = m;
        else this.machines.push(m);
        this.renderSidebar();
        this.view?.render();
        if (this.root.dataset.view === 'new' || this.root.dataset.view === 'home') this.drawForm?.();
        return;
      }
      default:
        break;
    }
    if (msg.session_id && this.view && msg.session_id === this.view.state.id) this.view.onMessage(msg);
    else if (msg.session_id && this.watching.has(msg.session_id)) this.watchMessage(msg);
  }

  /**
   * watch subscribes to session info's events without a view (the compare
   * view adds up each copy's agent.usage), into the state a view of it
   * would use; unwatchAll ends that, but for session keep (a view's own).
   */
  watch(info) {
    if (this.watching.has(info.id) || this.view?.state.id === info.id) return;
    let st = this.states.get(info.id);
    if (!st) {
      st = new SessionState(info);
      this.states.set(info.id, st);
    }
    this.watching.add(info.id);
    this.conn.request(message('ui.session.subscribe', st.subscribePayload(), info.id)).catch(() => this.watching.delete(info.id));
  }

  watchMessage(msg) {
    const st = this.states.get(msg.session_id);
    if (!st) return;
    if (msg.type === 'master.subscribed') st.onSubscribed(msg.payload);
    else if (st.accept(msg) === 'resync') this.conn.send(message('ui.session.subscribe', st.subscribePayload(), st.id));
    this.renderCompare();
  }

  unwatchAll(keep = '') {
    for (const id of this.watching) {
      if (id !== keep && this.conn.state === 'open') this.conn.send(message('ui.session.unsubscribe', {}, id));
    }
    this.watching.clear();
  }

  /** refreshSessionsSoon refreshes the sessions list (the heartbeat's pace). */
  async refreshSessionsSoon() {
    if (document.hidden) return;
    try {
      const [ss, as] = await Promise.all([
        this.conn.request(message('ui.sessions.list', { limit: 200 })),
        this.conn.request(message('ui.sessions.list', { limit: 200, archived: true })),
      ]);
      this.sessions = ss.payload.sessions || [];
      this.archived = as.payload.sessions || [];
      this.searchNow();
      this.sessionsChanged();
    } catch {
      // the next heartbeat tries again
    }
  }

  /** findInfo is what the lists say of session id (null: nothing). */
  findInfo(id) {
    return this.sessions.find((s) => s.id === id) || this.archived.find((s) => s.id === id) ||
      this.found?.find((s) => s.id === id) || null;
  }

  /**
   * applyChange takes a master.session.changed payload: the lists, the
   * session's state and the open view follow. mine: this UI asked for it.
   */
  applyChange({ change, session }, mine = true) {
    if (change === 'status') {
      // A session opened, started or ended a turn, or began or stopped
      // waiting for the user: its row and the waiting count change at once.
      const i = this.sessions.findIndex((x) => x.id === session.id);
      if (i >= 0) this.sessions[i] = { ...this.sessions[i], ...session, waiting: session.waiting || 0 };
      else this.sessions.unshift(session);
      // An isolated session's branch changed (session.worktree.status).
      const st = this.states.get(session.id);
      if (st && session.worktree) {
        st.info.worktree = session.worktree;
        if (this.view?.state === st) this.view.render();
      }
      this.sessionsChanged();
      return;
    }
    const drop = (list) => list.filter((s) => s.id !== session.id);
    this.sessions = drop(this.sessions);
    this.archived = drop(this.archived);
    if (this.found) this.found = drop(this.found);
    if (change === 'deleted') {
      this.states.delete(session.id);
      if (this.view?.state.id === session.id) {
        this.leaveSession();
        if (mine) {
          this.toast(`Deleted “${session.title || 'Untitled session'}”.`);
          location.hash = '#/';
        } else {
          clear(this.main).appendChild(h('section', { class: 'panel', id: 'session-deleted' },
            h('h1', { text: 'This session was deleted' }),
            h('p', {}, 'It was deleted from another window or device; its history is gone. ', h('a', { href: '#/', text: 'Back to the sessions' }))));
          this.announce('This session was deleted elsewhere.');
        }
      } else if (mine) {
        this.toast(`Deleted “${session.title || 'Untitled session'}”.`);
      }
      this.renderSidebar();
      return;
    }
    (session.archived ? this.archived : this.sessions).unshift(session);
    // RFC 3339 strings with trimmed fractions do not sort as text.
    const sortNewest = (a, b) => Date.parse(b.updated_at) - Date.parse(a.updated_at) || (a.id < b.id ? 1 : -1);
    this.sessions.sort(sortNewest);
    this.archived.sort(sortNewest);
    const st = this.states.get(session.id);
    if (st) Object.assign(st.info, { title: session.title, archived: !!session.archived });
    this.searchNow();
    this.renderSidebar();
    this.compareDraw?.();
    if (this.view?.state.id === session.id) this.view.render();
  }

  /** searching reports whether the sidebar shows search results. */
  searching() {
    return this.filter.query.trim() !== '' || this.filter.archived;
  }

  /** searchNow asks the master for the sessions the filter selects. */
  async searchNow() {
    if (!this.searching()) {
      this.found = null;
      this.renderSidebar();
      return;
    }
    const payload = { limit: 200 };
    const q = this.filter.query.trim();
    if (q) payload.query = q;
    if (this.filter.archived) payload.archived = true;
    const asked = JSON.stringify(payload);
    this.searchAsked = asked;
    try {
      const ans = await this.conn.request(message('ui.sessions.list', payload));
      if (this.searchAsked !== asked) return; // a newer search is under way
      this.found = ans.payload.sessions || [];
    } catch (e) {
      if (this.searchAsked !== asked) return;
      this.found = [];
      if (e.code !== 'connection_lost') this.toast(`Search failed: ${e.message}`);
    }
    this.renderSidebar();
  }

  /** sessionChanged updates the session's row after one of its events. */
  sessionChanged(state) {
    const row = this.sessions.find((s) => s.id === state.id);
    if (!row) return;
    const next = state.running ? 'running' : 'idle';
    const waiting = state.openInteractions().length;
    if (row.state !== next || row.mode !== state.mode || (row.waiting || 0) !== waiting) {
      row.state = next;
      row.mode = state.mode;
      row.waiting = waiting;
      row.updated_at = new Date().toISOString();
      this.sessionsChanged();
    }
  }

  /** sessionsChanged redraws the list and updates the title and badge. */
  sessionsChanged() {
    this.renderSidebar();
    this.compareDraw?.();
    // Not in the sidebar's frame: a hidden tab draws no frames, and that
    // is when the title and the badge matter.
    this.badge.show(waitingCount(this.sessions));
  }

  route() {
    setTimeout(() => this.notifier.focus(), 0); // once the view changed
    const r = parseRoute();
    if (this.signedOut) {
      this.leaveSession();
      this.showSignIn(this.signedOut);
      return;
    }
    this.root.dataset.view = r.name;
    this.unwatchAll(r.name === 'session' ? r.id : '');
    if (this.view && !(r.name === 'session' && this.view.state.id === r.id)) this.dropIfEmpty();
    if (r.name === 'session') {
      if (this.view && this.view.state.id === r.id) return;
      this.leaveSession();
      const info = this.findInfo(r.id);
      if (!info) {
        clear(this.main).appendChild(h('section', { class: 'panel' },
          this.listed ? h('h1', { text: 'No such session' }) : h('p', { class: 'muted', text: 'Loading…' }),
          this.listed ? h('p', {}, 'It may have been removed, or this login may not see it. ', h('a', { href: '#/', text: 'Back to the sessions' })) : null));
        this.renderSidebar();
        return;
      }
      let st = this.states.get(r.id);
      if (!st) {
        st = new SessionState(info);
        this.states.set(r.id, st);
      }
      this.view = new SessionView(this, st);
      this.view.mount(this.main);
      this.renderSidebar();
      return;
    }
    this.leaveSession();
    this.compareDraw = null;
    if (r.name === 'compare') {
      this.compareDraw = showCompare(this, r.group, this.main);
      this.renderSidebar();
      return;
    }
    this.showStart(r.name === 'new' ? r.params : null);
    this.renderSidebar();
  }

  /**
   * dropIfEmpty deletes the open session when the person leaves it never
   * used: no title, nothing sent, nothing typed. The master deletes it only
   * while it is so (if_empty: not prompted by anyone, not named, not open
   * in another UI), so nothing anyone typed is lost; a tab closed or
   * reloaded deletes nothing (the master sweeps what stays empty).
   */
  dropIfEmpty() {
    const v = this.view;
    const st = v?.state;
    if (!st || st.info.title || st.info.archived || st.running || st.prompts.size || st.turns.size) return;
    if (v.composer && !v.composer.isEmpty()) return;
    const id = st.id;
    this.conn.request(message('ui.session.delete', { if_empty: true }, id)).then((ans) => {
      if (ans.type === 'master.session.changed') this.applyChange(ans.payload, false);
    }, () => {
      // kept: it was used meanwhile, or another UI has it open
    });
  }

  leaveSession() {
    if (this.view) {
      this.view.unmount();
      this.view = null;
    }
  }

  showSignIn(reason) {
    this.root.dataset.view = 'signin';
    clear(this.sidebar);
    const input = h('input', { id: 'login-link', type: 'text', autocomplete: 'off', spellcheck: 'false', placeholder: 'http://…/login?token=ferry_login_…', 'aria-describedby': 'login-help' });
    const err = h('p', { class: 'form-error', role: 'alert' });
    const submit = h('button', { type: 'submit', class: 'btn primary', text: 'Sign in' });
    const form = h('form', { class: 'stack signin-form' },
      h('label', { for: 'login-link', text: 'Login link or token' }), input, err, submit);
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      const v = input.value.trim();
      let tok = '';
      try {
        tok = new URL(v).searchParams.get('token') || '';
      } catch {
        tok = v;
      }
      err.textContent = '';
      if (!/^ferry_login_[A-Za-z0-9_-]+$/.test(tok)) {
        err.textContent = 'That is not a login link: it looks like …/login?token=ferry_login_…';
        return;
      }
      const url = `/login?token=${encodeURIComponent(tok)}`;
      // GET /login consumes nothing: ask first, so a link that does not
      // work is said here, in place, rather than on another page.
      submit.disabled = true;
      let status = 0;
      try {
        status = (await fetch(url, { headers: { Accept: 'application/json' }, cache: 'no-store', credentials: 'same-origin' })).status;
      } catch {
        status = 0;
      }
      submit.disabled = false;
      if (status === 401) {
        err.textContent = 'This login link does not work: it is invalid, expired or already used (each link signs in one browser, once). Run ferry token create --kind login where ferry runs for a new one.';
        input.focus();
        return;
      }
      if (status === 0) {
        err.textContent = `ferry at ${location.host} cannot be reached to check the link; try again once it is back.`;
        return;
      }
      location.assign(url);
    });
    const ended = SIGN_IN_ENDED[reason];
    clear(this.main).appendChild(h('section', { class: 'panel signin', 'aria-labelledby': 'signin-title', dataset: { reason: reason || 'none' } },
      h('h1', { id: 'signin-title', text: ended ? 'Signed out' : 'Sign in to ferry' }),
      ended
        ? h('p', { class: 'callout signin-reason', role: 'status', text: `${ended} Open a new login link to go on; nothing in your sessions is lost.` })
        : h('p', { text: 'This browser is not signed in. Open the one-time login link that ferry printed when it started, or paste it here.' }),
      form,
      h('div', { id: 'login-help', class: 'muted small' },
        h('p', {}, h('code', { text: 'ferry up' }), ' and ', h('code', { text: 'ferry serve' }), ' print a login link when they start. For a new one, run ',
          h('code', { text: 'ferry token create --kind login' }), ' where the master runs and open ', h('code', { text: '/login?token=…' }), ' with it.'),
        h('p', { text: 'A login link works once and for 15 minutes; the sign-in it gives lasts on this browser.' })),
      h('button', { type: 'button', class: 'btn', text: 'Try again', onclick: () => { this.signedOut = null; this.route(); this.conn.start(); } })));
  }

  showStart(params) {
    const wrap = h('section', { class: 'panel new-session', 'aria-labelledby': 'new-title' });
    clear(this.main).appendChild(wrap);
    const machineSel = h('select', { id: 'ns-machine' });
    const wsSel = h('select', { id: 'ns-workspace' });
    const agentSel = h('select', { id: 'ns-agent' });
    const modeSel = h('select', { id: 'ns-mode' });
    // Agents that cannot start here, each with how to enable it.
    const agentHelp = h('ul', { id: 'ns-agent-help', class: 'agent-help small muted', hidden: true });
    agentSel.setAttribute('aria-describedby', 'ns-agent-help');
    const title = h('input', { id: 'ns-title', type: 'text', maxlength: '200', placeholder: 'e.g. fix the login bug', autocomplete: 'off' });
    // Isolated sessions (docs/worktrees.md): offered in a git workspace
    // only, remembered per workspace; a best of N starts N copies on one
    // prompt, each on its own branch.
    const iso = h('input', { id: 'ns-isolated', type: 'checkbox', role: 'switch', 'aria-describedby': 'ns-isolated-help' });
    const baseIn = h('input', { id: 'ns-base', type: 'text', autocomplete: 'off', spellcheck: 'false', maxlength: '250' });
    const copiesSel = h('select', { id: 'ns-copies' });
    for (let n = 1; n <= MAX_COPIES; n++) copiesSel.appendChild(h('option', { value: String(n), text: n === 1 ? '1 session' : `${n} copies (best of ${n})` }));
    const copiesBox = h('div', { class: 'ns-copies stack' });
    const prompt = h('textarea', { id: 'ns-prompt', rows: '3', placeholder: 'The task every copy gets', 'aria-describedby': 'ns-prompt-help' });
    const promptRow = h('div', { class: 'stack', hidden: true },
      h('label', { for: 'ns-prompt', text: 'Prompt (sent to every copy)' }), prompt,
      h('p', { id: 'ns-prompt-help', class: 'muted small', text: 'Each copy gets this prompt on its own branch; then compare them side by side.' }));
    const isoOpts = h('div', { class: 'ns-iso-opts stack', hidden: true },
      h('label', { for: 'ns-base', text: 'Base branch' }), baseIn,
      h('label', { for: 'ns-copies', text: 'Run' }), copiesSel, copiesBox, promptRow);
    const isoBox = h('div', { class: 'ns-iso stack', hidden: true },
      h('div', { class: 'switch-row' }, iso, h('label', { for: 'ns-isolated', text: 'Isolated (own branch)' })),
      h('p', { id: 'ns-isolated-help', class: 'muted small', text: 'The agent works in a worktree of its own on a new branch ferry/NAME: your checkout is not touched until you ship.' }),
      isoOpts);
    const err = h('p', { class: 'form-error', role: 'alert' });
    const startBtn = h('button', { type: 'submit', class: 'btn primary', text: 'Start session' });
    const unreachable = h('p', { class: 'callout', id: 'ns-unreachable', role: 'status', hidden: true,
      text: 'ferry cannot reach the master right now, so whether a machine is online is unknown. It reconnects by itself; then you can start a session.' });
    const form = h('form', { class: 'stack' },
      unreachable,
      h('label', { for: 'ns-machine', text: 'Machine' }), machineSel,
      h('label', { for: 'ns-workspace', text: 'Workspace' }), wsSel,
      h('label', { for: 'ns-agent', text: 'Agent' }), agentSel, agentHelp,
      h('label', { for: 'ns-mode', text: 'Mode' }), modeSel,
      h('label', { for: 'ns-title', text: 'Title (optional)' }), title,
      isoBox, err, startBtn);
    const none = h('div', { class: 'callout', hidden: true },
      h('p', { text: 'No machine is connected yet.' }),
      h('p', { class: 'small' }, 'Run ', h('code', { text: 'ferry up' }), ' on the machine with your code, or ', h('code', { text: 'ferry connect --master URL --token-file FILE' }), ' with a client token from ', h('code', { text: 'ferry token create' }), '.'));
    const loading = h('p', { class: 'muted', text: 'Loading the machines…' });
    wrap.append(h('h1', { id: 'new-title', text: 'New session' }), loading,
      h('p', { class: 'muted narrow-hide', text: 'Pick a workspace and an agent, or reopen a session from the list.' }), none, form);
    const want = { machine: params?.get('machine') || '', workspace: params?.get('workspace') || '' };
    const fill = (sel, items, value) => {
      const keep = value || sel.value;
      clear(sel);
      for (const it of items) sel.appendChild(h('option', { value: it.value, disabled: !!it.disabled, text: it.label }));
      if (items.some((it) => it.value === keep && !it.disabled)) sel.value = keep;
    };
    const draw = () => {
      const ms = this.machines;
      // While the master is unreachable, what it last said of the
      // machines may be stale: none is offered as online.
      const down = this.machinesKnown === false;
      const online = (m) => m.online && !down;
      none.hidden = !this.listed || down || ms.some((m) => m.online);
      form.hidden = !ms.length;
      loading.hidden = this.listed;
      loading.textContent = this.unreachable ? 'The machines show once the master answers.' : 'Loading the machines…';
      unreachable.hidden = !down;
      machineSel.disabled = down;
      if (down) machineSel.setAttribute('aria-describedby', 'ns-unreachable');
      else machineSel.removeAttribute('aria-describedby');
      const prev = want.machine || machineSel.value;
      fill(machineSel, ms.map((m) => ({ value: m.id, label: `${m.name}${down ? ' (unknown, reconnecting)' : m.online ? '' : ' (offline)'}`, disabled: !online(m) })), prev);
      // Every option is disabled then: keep showing the one picked.
      if (down && prev && ms.some((m) => m.id === prev)) machineSel.value = prev;
      want.machine = '';
      const m = ms.find((x) => x.id === machineSel.value);
      fill(wsSel, (m?.workspaces || []).map((w) => ({ value: w.id, label: `${w.name} — ${w.path}` })), want.workspace);
      want.workspace = '';
      // Only agents that can start are offered; the others are shown
      // disabled, with what the machine says would enable them.
      const ads = m?.adapters || [];
      const startable = ads.filter((a) => !a.unavailable);
      fill(agentSel, ads.map((a) => ({ value: a.id, disabled: !!a.unavailable,
        label: `${a.name === a.id ? a.id : `${a.name} (${a.id})`}${a.unavailable ? ' (not available)' : ''}` })),
      startable.some((a) => a.id === agentSel.value) ? agentSel.value : startable[0]?.id);
      clear(agentHelp);
      for (const a of ads.filter((x) => x.unavailable)) {
        agentHelp.appendChild(h('li', { dataset: { adapter: a.id } }, h('strong', { text: a.name }), `: ${a.unavailable}`));
      }
      agentHelp.hidden = !agentHelp.firstChild;
      const a = startable.find((x) => x.id === agentSel.value);
      fill(modeSel, (a?.modes?.length ? a.modes : ['default']).map((x) => ({ value: x, label: x })), modeSel.value || 'default');
      startBtn.disabled = !m || !online(m) || !a;
      const w = m?.workspaces?.find((x) => x.id === wsSel.value);
      isoBox.hidden = !w?.git;
      const key = w ? workspaceKey(m.id, w.id) : '';
      if (key !== isoKey) {
        // Another workspace: its own remembered choice and current branch.
        isoKey = key;
        iso.checked = !!w?.git && isolatedChoice(localStorage, key);
        baseIn.value = w?.branch || '';
        baseIn.placeholder = w?.branch || 'the current branch';
      }
      drawCopies(startable);
    };
    let isoKey = null;
    const drawCopies = (startable) => {
      isoOpts.hidden = !iso.checked || isoBox.hidden;
      const n = isoOpts.hidden ? 1 : Number(copiesSel.value);
      promptRow.hidden = n < 2;
      firstModelRow.hidden = n < 2;
      startBtn.textContent = n > 1 ? `Start ${n} sessions` : 'Start session';
      // Copies 2..n each pick an agent and a model (default: the first's).
      while (copiesBox.children.length > n - 1) copiesBox.lastChild.remove();
      for (let i = copiesBox.children.length + 2; i <= n; i++) {
        const sel = h('select', { id: `ns-copy-agent-${i}` });
        const model = h('input', { id: `ns-copy-model-${i}`, type: 'text', autocomplete: 'off', spellcheck: 'false', maxlength: '200', placeholder: 'the agent’s default' });
        copiesBox.appendChild(h('fieldset', { class: 'ns-copy', dataset: { copy: String(i) } },
          h('legend', { text: `Copy ${i}` }),
          h('label', { for: sel.id, text: 'Agent' }), sel,
          h('label', { for: model.id, text: 'Model (optional)' }), model));
      }
      for (const fs of copiesBox.children) {
        const sel = fs.querySelector('select');
        const keep = sel.value || agentSel.value;
        fill(sel, [{ value: '', label: 'Same as the first' }, ...startable.map((x) => ({ value: x.id, label: x.name === x.id ? x.id : `${x.name} (${x.id})` }))], keep === agentSel.value ? '' : keep);
      }
    };
    // The first copy's model, when a best of N compares models.
    const firstModel = h('input', { id: 'ns-copy-model-1', type: 'text', autocomplete: 'off', spellcheck: 'false', maxlength: '200', placeholder: 'the agent’s default' });
    const firstModelRow = h('div', { class: 'stack ns-first-model', hidden: true }, h('label', { for: 'ns-copy-model-1', text: 'Model of the first (optional)' }), firstModel);
    copiesSel.after(firstModelRow);
    iso.addEventListener('change', () => {
      rememberIsolated(localStorage, isoKey, iso.checked);
      draw();
    });
    copiesSel.addEventListener('change', draw);
    wsSel.addEventListener('change', draw);
    this.drawForm = () => {
      if (wrap.isConnected) draw();
    };
    machineSel.addEventListener('change', draw);
    agentSel.addEventListener('change', draw);
    draw();
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      err.textContent = '';
      const payload = { machine_id: machineSel.value, workspace_id: wsSel.value, adapter: agentSel.value, mode: modeSel.value };
      if (title.value.trim()) payload.title = title.value.trim();
      const isolated = !isoBox.hidden && iso.checked;
      const n = isolated ? Number(copiesSel.value) : 1;
      if (n > 1 && !prompt.value.trim()) {
        err.textContent = 'Write the prompt every copy gets.';
        prompt.focus();
        return;
      }
      const copies = [...copiesBox.children].map((fs) => ({ adapter: fs.querySelector('select').value, model: fs.querySelector('input').value.trim() }));
      const group = uuid();
      const payloads = startPayloads(payload, isolated ? { base: baseIn.value.trim() } : null, n, copies, group);
      const label = startBtn.textContent;
      startBtn.disabled = true;
      startBtn.textContent = 'Starting…';
      const started = [];
      try {
        for (const p of payloads) {
          const ans = await this.conn.request(message('ui.session.start', p), 60000);
          const info = ans.payload.session;
          started.push(info);
          // Its status change (master.session.changed) may have listed it already.
          this.sessions = [info, ...this.sessions.filter((x) => x.id !== info.id)];
        }
      } catch (ex) {
        err.textContent = `${started.length ? `${started.length} of ${payloads.length} sessions started; the next did not` : 'The session did not start'}: ${ex.message}${codeHelp(ex.code)}`;
        startBtn.disabled = false;
        startBtn.textContent = label;
        if (!started.length) return;
      }
      if (n < 2) {
        location.hash = `#/s/${encodeURIComponent(started[0].id)}`;
        return;
      }
      // Best of N: each copy's model, then the same prompt to each.
      const models = [firstModel.value.trim(), ...copies.map((c) => c.model)];
      started.forEach((info, i) => {
        const onErr = (e) => this.toast(`Copy ${i + 1}: ${e.message}`);
        if (models[i]) this.control('control.session.settings', { model: models[i] }, info.id, onErr);
        this.sendControl(message('ui.prompt', { segments: [{ kind: 'text', text: prompt.value.trim() }] }, info.id), onErr);
      });
      location.hash = `#/compare/${encodeURIComponent(group)}`;
    });
  }

  /**
   * buildSearch makes the sidebar's head once: the title, New session, and
   * the search box with the Archived filter. It is kept across redraws so
   * that typing never loses focus.
   */
  buildSearch() {
    const input = h('input', {
      id: 'session-search', type: 'search', autocomplete: 'off', spellcheck: 'false', maxlength: '256',
      placeholder: 'Find a session', 'aria-label': 'Find a session by its title or what was said in it',
    });
    const run = debounce(() => this.searchNow(), 250);
    input.addEventListener('input', () => {
      this.filter.query = input.value;
      run();
    });
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Escape' && input.value) {
        input.value = '';
        this.filter.query = '';
        this.searchNow();
      }
    });
    const arch = h('button', {
      type: 'button', class: 'btn small filter-toggle', id: 'archived-filter', 'aria-pressed': 'false', text: 'Archived',
      onclick: () => {
        this.filter.archived = !this.filter.archived;
        arch.setAttribute('aria-pressed', String(this.filter.archived));
        this.searchNow();
      },
    });
    this.sideList = h('div', { class: 'side-list' });
    this.sideTop = h('div', { class: 'side-top' },
      h('div', { class: 'side-head' }, h('h2', { text: 'Sessions' }), h('a', { class: 'btn primary small', href: '#/new', text: 'New session' })),
      h('div', { class: 'side-search', role: 'search' }, input, arch));
  }

  /** drawFound lists the search results, flat, newest first. */
  drawFound(side, current) {
    const what = this.filter.archived ? 'archived sessions' : 'sessions';
    if (this.found === null) {
      side.appendChild(h('p', { class: 'muted small pad', text: 'Searching…' }));
      return;
    }
    if (!this.found.length) {
      const q = this.filter.query.trim();
      side.appendChild(h('p', { class: 'muted small pad no-match', role: 'status', text: q ? `No match among the ${what}.` : `No ${what}.` }));
      return;
    }
    const names = new Map(this.machines.map((m) => [m.id, m]));
    const ul = h('ul', { class: 'sessions found', 'aria-label': `Found ${what}` });
    for (const s of this.found) {
      const m = names.get(s.machine_id);
      const ws = m?.workspaces?.find((w) => w.id === s.workspace_id);
      ul.appendChild(h('li', {}, h('a', {
        href: `#/s/${encodeURIComponent(s.id)}`, class: 'session-link', 'aria-current': s.id === current ? 'page' : false,
        dataset: { session: s.id },
      }, h('span', { class: 'session-name', text: sessionLabel(s) }),
      matchLine(s.match) || previewLine(s),
      h('span', { class: 'session-sub small muted', text: `${m?.name || s.machine_id} · ${ws?.name || s.workspace_id} · ${formatWhen(s.updated_at)}` }))));
    }
    side.appendChild(ul);
  }

  drawSidebar() {
    if (this.root.dataset.view === 'signin') return;
    const current = this.view?.state.id || '';
    if (!this.sideTop) this.buildSearch();
    if (!this.sideTop.isConnected) clear(this.sidebar).append(this.sideTop, this.sideList);
    const side = clear(this.sideList);
    if (!this.listed) {
      side.appendChild(h('p', { class: 'muted small pad', text: this.conn.state === 'open' ? 'Loading…' : 'Connecting…' }));
      return;
    }
    if (this.searching()) {
      this.drawFound(side, current);
      return;
    }
    if (!this.machines.length) side.appendChild(h('p', { class: 'muted small pad', text: 'No machine has connected yet.' }));
    const ul = h('ul', { class: 'machines' });
    for (const m of this.machines) {
      const state = this.machinesKnown === false ? 'unknown' : m.online ? 'on' : 'off';
      const sess = this.sessions.filter((s) => s.machine_id === m.id);
      const wsIDs = new Set((m.workspaces || []).map((w) => w.id));
      const groups = (m.workspaces || []).map((w) => ({ w, list: sess.filter((s) => s.workspace_id === w.id) }));
      const stray = sess.filter((s) => !wsIDs.has(s.workspace_id));
      if (stray.length) groups.push({ w: { id: '', name: 'Other workspaces', path: '' }, list: stray });
      const wsList = h('ul', { class: 'workspaces' });
      for (const { w, list } of groups) {
        const sl = h('ul', { class: 'sessions' });
        for (const s of list) {
          sl.appendChild(h('li', {}, h('a', {
            href: `#/s/${encodeURIComponent(s.id)}`, class: 'session-link', 'aria-current': s.id === current ? 'page' : false,
            dataset: { session: s.id },
          }, h('span', { class: 'session-name', text: sessionLabel(s) }),
          previewLine(s),
          branchInfo(s.worktree),
          h('span', { class: 'session-sub small muted' }, sessionState(s), `${s.adapter} · ${formatWhen(s.updated_at)}`))));
        }
        if (!list.length) sl.appendChild(h('li', { class: 'muted small none', text: 'No sessions yet' }));
        const head = h('div', { class: 'ws-head' },
          h('span', { class: 'ws-name', title: w.path, text: w.name }),
          w.id && state === 'on' ? h('a', { class: 'link small', href: `#/new?machine=${encodeURIComponent(m.id)}&workspace=${encodeURIComponent(w.id)}`, 'aria-label': `New session in ${w.name}`, text: '+ New' }) : null);
        wsList.appendChild(h('li', { class: 'workspace' }, head, sl));
      }
      ul.appendChild(h('li', { class: 'machine' },
        h('div', { class: 'machine-head' }, h('span', { class: `dot ${state}`, 'aria-hidden': 'true' }),
          h('span', { class: 'machine-name', text: m.name }), h('span', { class: 'small muted machine-state', text: MACHINE_STATE[state] })),
        wsList));
    }
    side.appendChild(ul);
    side.appendChild(this.notifier.el);
  }
}

/** codeHelp is what a start's refusal adds: what its code means (codes.js). */
function codeHelp(code) {
  const line = CODES[code];
  return line ? ` (${line})` : '';
}

/**
 * sessionLabel is what a session row is called: its title (a person's, or
 * the master's from the first prompt, or the agent's); a session without
 * one was never prompted, and is new.
 */
function sessionLabel(s) {
  return s.title || 'New session';
}

/** previewLine is a row's one-line preview of the last message (null: none). */
function previewLine(s) {
  if (!s.preview) return null;
  return h('span', { class: 'session-preview small', text: s.preview });
}

const MATCH_FIELD = { title: 'Title', prompt: 'Prompt', answer: 'Answer' };

/**
 * matchLine says why a search found a session: what matched (title,
 * prompt, answer) and the snippet with each match marked; ranges are in
 * UTF-16 units, as JavaScript slices strings.
 */
function matchLine(m) {
  if (!m) return null;
  const line = h('span', { class: 'session-match small', dataset: { field: m.field } },
    h('span', { class: 'match-field', text: `${MATCH_FIELD[m.field] || m.field}: ` }));
  const text = m.snippet || '';
  if (!text) {
    line.append(h('span', { class: 'muted', text: 'in an earlier message' }));
    return line;
  }
  let at = 0;
  for (const r of m.ranges || []) {
    if (r.start < at || r.end > text.length || r.end <= r.start) continue;
    if (r.start > at) line.append(text.slice(at, r.start));
    line.append(h('mark', { text: text.slice(r.start, r.end) }));
    at = r.end;
  }
  if (at < text.length) line.append(text.slice(at));
  return line;
}

/**
 * SIGN_IN_ENDED says why a sign-in ended, by the reason the master gave
 * (conn.js, internal/master/cookie.go); "none" (never signed in here) is
 * not an ending.
 */
const SIGN_IN_ENDED = {
  expired: 'Your sign-in expired: a sign-in lasts 30 days.',
  revoked: 'Your sign-in was revoked (ferry token revoke, or its token was deleted).',
  key_gone: 'This browser\'s key for the sign-in is gone: the site data of this address was cleared.',
  elsewhere: 'This browser signed in elsewhere — to another ferry on this host, or to this one at another address — which replaced this sign-in.',
  no_cookie: 'This browser\'s sign-in cookie is gone: it was cleared, or it expired.',
};

/**
 * sessionState is a session row's state label: "waiting for you" (an
 * interaction waits for the user) apart from "running", each with its own
 * words and colour; nothing for an idle session.
 */
function sessionState(s) {
  if (s.waiting > 0) return h('span', { class: 'session-state waiting', dataset: { state: 'waiting' }, text: 'waiting for you' });
  if (s.state === 'running') {
    return h('span', { class: 'session-state running', dataset: { state: 'running' } },
      h('span', { class: 'run-dot', 'aria-hidden': 'true' }), 'running');
  }
  return null;
}

// "Open on your phone": a button in the top bar opens a dialog that asks
// the master for a fresh one-time login link (ui.login_link.create) and
// shows it as a QR code for a phone's camera, with the link as text and
// when it expires. The master chooses the link's origin (its public URL,
// else the one this page reached); a link that names this computer only
// (127.0.0.1, localhost) is shown with a note saying a phone cannot open
// it and where to read how to reach ferry from one (docs/reach.md).
//
// The code is drawn as SVG elements (never as markup) by a vendored QR
// encoder (qrcode-generator), dark modules on white with the four-module
// quiet zone in both colour schemes, since a camera wants dark on light.

import { h } from './util.js';
import { message } from './conn.js';
import { CODES } from './codes.js';
import { icon } from './attach.js';
import qrcode from '../vendor/qrcode-generator/qrcode.mjs';

const SVG = 'http://www.w3.org/2000/svg';
const QUIET = 4; // modules of white around the code, as the standard asks

/** qrSVG draws text as a QR code: an <svg> of one path. */
export function qrSVG(text) {
  const qr = qrcode(0, 'M'); // the smallest version that holds text
  qr.addData(text, 'Byte');
  qr.make();
  const n = qr.getModuleCount();
  const size = n + 2 * QUIET;
  let d = '';
  for (let r = 0; r < n; r++) {
    for (let c = 0; c < n; c++) {
      if (qr.isDark(r, c)) d += `M${c + QUIET} ${r + QUIET}h1v1h-1z`;
    }
  }
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', `0 0 ${size} ${size}`);
  svg.setAttribute('shape-rendering', 'crispEdges');
  svg.setAttribute('class', 'qr');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', 'QR code of the login link');
  const bg = document.createElementNS(SVG, 'rect');
  bg.setAttribute('width', String(size));
  bg.setAttribute('height', String(size));
  bg.setAttribute('fill', '#fff');
  const path = document.createElementNS(SVG, 'path');
  path.setAttribute('d', d);
  path.setAttribute('fill', '#000');
  svg.append(bg, path);
  return svg;
}

/** until says when a link expires, as a person reads it. */
function until(iso) {
  const t = new Date(iso);
  if (!isFinite(t)) return '';
  const mins = Math.max(1, Math.round((t - Date.now()) / 60000));
  return `${t.toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' })} (in ${mins} min)`;
}

export class PhoneLink {
  /** app is the App: its connection, toasts and announcer. */
  constructor(app) {
    this.app = app;
    this.button = h('button', { type: 'button', class: 'btn small phone-btn', id: 'open-on-phone', 'aria-haspopup': 'dialog', onclick: () => this.open() },
      icon('phone'),
      h('span', { class: 'phone-label', text: 'Open on your phone' }));
  }

  build() {
    this.code = h('div', { class: 'qr-box', id: 'phone-qr' });
    this.link = h('input', { type: 'text', id: 'phone-url', readonly: true, class: 'phone-url', 'aria-label': 'Login link', spellcheck: 'false' });
    this.expiry = h('p', { class: 'muted small', id: 'phone-expiry' });
    this.note = h('p', { class: 'form-error small', id: 'phone-note', role: 'alert' });
    this.copyBtn = h('button', { type: 'button', class: 'btn small', id: 'phone-copy', text: 'Copy', onclick: () => this.copy() });
    this.dialog = h('dialog', { class: 'dialog phone-dialog', id: 'phone-dialog', 'aria-labelledby': 'phone-title', 'aria-describedby': 'phone-how' },
      h('div', { class: 'dialog-head' },
        h('h2', { id: 'phone-title', text: 'Open on your phone' }),
        h('button', { type: 'button', class: 'btn small', id: 'phone-close', text: 'Close', onclick: () => this.dialog.close() })),
      h('p', { id: 'phone-how', text: 'Point your phone’s camera at the code, or open the link on it. The link signs one device in, once.' }),
      this.code,
      h('div', { class: 'phone-url-row' }, this.link, this.copyBtn),
      this.expiry,
      this.note,
      h('div', { class: 'q-actions' },
        h('button', { type: 'button', class: 'btn', id: 'phone-new', text: 'New link', onclick: () => this.fetch() })));
    this.app.root.appendChild(this.dialog);
  }

  open() {
    if (!this.dialog) this.build();
    if (!this.dialog.open) this.dialog.showModal();
    this.dialog.querySelector('#phone-close').focus();
    this.fetch();
  }

  async fetch() {
    this.code.replaceChildren(h('p', { class: 'muted', text: 'Making a link…' }));
    this.link.value = '';
    this.expiry.textContent = '';
    this.note.textContent = '';
    try {
      const ans = await this.app.conn.request(message('ui.login_link.create'));
      const { url, expires_at: exp, loopback } = ans.payload;
      this.code.replaceChildren(qrSVG(url));
      this.link.value = url;
      this.expiry.textContent = `Works once, until ${until(exp)}.`;
      this.dialog.dataset.expiresAt = exp;
      if (loopback) {
        this.note.textContent = `This link names this computer (${new URL(url).host}), which a phone cannot open. `
          + 'Start ferry where a phone reaches it (Tailscale, HTTPS on your own name): see docs/reach.md.';
      }
      this.app.announce('A new login link is shown.');
    } catch (err) {
      const why = CODES[err.code];
      this.code.replaceChildren();
      this.note.textContent = `No link: ${err.message || err.code}${why && why !== err.message ? ` (${why})` : ''}`;
    }
  }

  async copy() {
    try {
      await navigator.clipboard.writeText(this.link.value);
      this.app.announce('Link copied.');
    } catch {
      this.link.select(); // the user copies it by hand
    }
  }
}

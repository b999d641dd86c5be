// A menu button (the ARIA menu button pattern): a button with
// aria-haspopup="menu" that opens a list of menu items under it (a sheet
// at the bottom of a phone's screen). Enter, Space or ↓ open it on the
// first item, ↑ on the last; ↑/↓/Home/End move, Esc closes it and gives
// the focus back to the button, Tab or a click elsewhere closes it. An
// item that is off says why in its own text and stays focusable
// (aria-disabled), so a screen reader hears the reason too.

import { h } from './util.js';

export class Menu {
  /**
   * opts: id (the menu's), label (its accessible name), button: the
   * attributes and children of the button, cls: the wrapper's class.
   */
  constructor({ id, label, button, children = [], cls = '' }) {
    this.list = h('div', { class: 'menu', id, role: 'menu', 'aria-label': label, hidden: true });
    this.button = h('button', { type: 'button', 'aria-haspopup': 'menu', 'aria-expanded': 'false', 'aria-controls': id, ...button.attrs }, ...(button.children || []));
    this.button.addEventListener('click', () => (this.isOpen() ? this.close() : this.open(0)));
    this.button.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        this.open(e.key === 'ArrowDown' ? 0 : -1);
      }
    });
    this.list.addEventListener('keydown', (e) => this.onKey(e));
    this.list.addEventListener('click', (e) => {
      const it = e.target.closest('[role="menuitem"]');
      if (!it) return;
      if (it.getAttribute('aria-disabled') === 'true') {
        e.preventDefault();
        e.stopImmediatePropagation();
        return;
      }
      this.close(false);
    }, true);
    this.onOutside = (e) => {
      if (!this.el.contains(e.target)) this.close(false);
    };
    this.el = h('div', { class: `menu-wrap ${cls}` }, this.button, this.list, ...children);
  }

  /** add appends menu items (buttons; each gets role menuitem). */
  add(...items) {
    for (const it of items) {
      it.setAttribute('role', 'menuitem');
      it.classList.add('menu-item');
      this.list.appendChild(it);
    }
  }

  items() {
    return [...this.list.querySelectorAll('[role="menuitem"]')].filter((x) => !x.hidden);
  }

  isOpen() {
    return !this.list.hidden;
  }

  /** open shows the menu and focuses item at (-1: the last). */
  open(at = 0) {
    this.list.hidden = false;
    this.button.setAttribute('aria-expanded', 'true');
    document.addEventListener('pointerdown', this.onOutside, true);
    const items = this.items();
    items.at(at)?.focus();
  }

  /** close hides the menu; focus gives the focus back to its button. */
  close(focus = true) {
    if (!this.isOpen()) return;
    this.list.hidden = true;
    this.button.setAttribute('aria-expanded', 'false');
    document.removeEventListener('pointerdown', this.onOutside, true);
    if (focus) this.button.focus();
  }

  onKey(e) {
    const items = this.items();
    const i = items.indexOf(document.activeElement);
    const go = (n) => {
      e.preventDefault();
      items[(n + items.length) % items.length]?.focus();
    };
    switch (e.key) {
      case 'ArrowDown': go(i + 1); break;
      case 'ArrowUp': go(i - 1); break;
      case 'Home': go(0); break;
      case 'End': go(items.length - 1); break;
      case 'Escape':
        e.preventDefault();
        e.stopPropagation();
        this.close();
        break;
      case 'Tab':
        this.close(false);
        break;
      default:
        break;
    }
  }
}

// Drafts: what the prompt box of a session holds is kept in this
// browser, so that a reload, a discarded tab or a restart of ferry loses
// nothing typed (docs/ui.md, "Drafts").
//
// - One draft per session, in localStorage under DRAFT_PREFIX + session
//   id. localStorage is per origin, that is per master (a master and its
//   port); session ids are random, so two masters that use one port at
//   different times do not meet either.
// - A draft is the box's segments (text and picked files), its uploaded
//   attachments by upload id (with what is needed to show and send them
//   again; files still uploading cannot be kept), and the time it was
//   saved. A prompt that Rewind or "Edit again" put back is a draft like
//   any other.
// - Sending does not delete the draft: it is marked sent with the
//   prompt's message id and deleted only when the master accepted that
//   prompt (its control.prompt.request comes back). A refused prompt
//   comes back into the box, and so into the draft.
// - Bounded: a draft holds at most MAX_CHARS characters of text, at most
//   MAX_DRAFTS drafts are kept and none older than MAX_AGE_MS; the oldest
//   go first, also when the storage is full.

export const DRAFT_PREFIX = 'ferry.draft.';
export const MAX_DRAFTS = 50;
export const MAX_CHARS = 100000;
export const MAX_AGE_MS = 30 * 24 * 3600 * 1000;
const SAVE_DELAY = 250;

function storage() {
  try {
    return window.localStorage;
  } catch {
    return null; // storage forbidden (some private modes): no drafts
  }
}

/** read returns the stored draft of sessionId, or null. */
export function readDraft(sessionId) {
  const ls = storage();
  if (!ls || !sessionId) return null;
  try {
    const d = JSON.parse(ls.getItem(DRAFT_PREFIX + sessionId) || 'null');
    if (!d || typeof d !== 'object' || !Array.isArray(d.segs)) return null;
    if (Date.now() - (d.at || 0) > MAX_AGE_MS) {
      ls.removeItem(DRAFT_PREFIX + sessionId);
      return null;
    }
    d.files = Array.isArray(d.files) ? d.files.filter((f) => f && typeof f.upload_id === 'string') : [];
    d.segs = d.segs.filter((s) => (s?.kind === 'text' && typeof s.text === 'string') || (s?.kind === 'file' && typeof s.file?.path === 'string'));
    return d;
  } catch {
    return null;
  }
}

/** deleteDraft forgets the draft of sessionId. */
export function deleteDraft(sessionId) {
  try {
    storage()?.removeItem(DRAFT_PREFIX + sessionId);
  } catch {
    // nothing to forget
  }
}

/** drafts lists the stored drafts' keys with their times, oldest first. */
function drafts(ls) {
  const out = [];
  for (let i = 0; i < ls.length; i++) {
    const k = ls.key(i);
    if (!k?.startsWith(DRAFT_PREFIX)) continue;
    let at = 0;
    try {
      at = JSON.parse(ls.getItem(k))?.at || 0;
    } catch {
      at = 0;
    }
    out.push({ k, at });
  }
  return out.sort((a, b) => a.at - b.at);
}

/** prune deletes expired drafts and the oldest beyond keep. */
export function pruneDrafts(keep = MAX_DRAFTS) {
  const ls = storage();
  if (!ls) return;
  const list = drafts(ls);
  const now = Date.now();
  let n = list.length;
  for (const d of list) {
    if (n > keep || now - d.at > MAX_AGE_MS) {
      ls.removeItem(d.k);
      n--;
    }
  }
}

/** bound cuts a draft's text to MAX_CHARS characters in all. */
export function bound(segs) {
  let left = MAX_CHARS;
  const out = [];
  for (const s of segs) {
    if (s.kind !== 'text') {
      out.push(s);
      continue;
    }
    if (left <= 0) continue;
    out.push({ kind: 'text', text: s.text.slice(0, left) });
    left -= s.text.length;
  }
  return out;
}

/** writeDraft stores d for sessionId, making room by dropping the oldest other drafts. */
export function writeDraft(sessionId, d) {
  const ls = storage();
  if (!ls || !sessionId) return false;
  const key = DRAFT_PREFIX + sessionId;
  const v = JSON.stringify({ ...d, segs: bound(d.segs), at: Date.now() });
  for (;;) {
    try {
      ls.setItem(key, v);
      pruneDrafts();
      return true;
    } catch {
      // Full: the oldest other draft goes, and again.
      const oldest = drafts(ls).find((x) => x.k !== key);
      if (!oldest) return false;
      ls.removeItem(oldest.k);
    }
  }
}

/**
 * DraftKeeper keeps one prompt box's draft. box: sessionId() → the
 * session, read() → {segs, files} (the box as it is), empty() → whether
 * the box holds nothing, show(draft) puts a draft in the box, clearBox()
 * empties it, stored(id) → whether the master already holds prompt id.
 */
export class DraftKeeper {
  constructor(box) {
    this.box = box;
    this.timer = 0;
    this.sent = ''; // message id of a sent prompt not yet accepted
    this.shown = ''; // what restore put in the box, to tell whether it was edited
    this.flush = () => this.save();
    addEventListener('pagehide', this.flush);
    document.addEventListener('visibilitychange', this.flush);
  }

  /** destroy saves what is pending and stops listening. */
  destroy() {
    if (this.timer) this.save();
    removeEventListener('pagehide', this.flush);
    document.removeEventListener('visibilitychange', this.flush);
  }

  /** changed is called on every change of the box: the draft is saved soon. */
  changed() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.save(), SAVE_DELAY);
  }

  save() {
    clearTimeout(this.timer);
    this.timer = 0;
    const id = this.box.sessionId();
    if (!id) return;
    if (this.box.empty()) {
      // A sent prompt stays the draft until the master accepts it.
      if (!this.sent) deleteDraft(id);
      return;
    }
    this.sent = '';
    writeDraft(id, this.box.read());
  }

  /**
   * sending is called with the box's content just before a prompt is sent;
   * sentAs with the prompt's message id once it went.
   */
  sending(content) {
    clearTimeout(this.timer);
    this.timer = 0;
    this.pendingContent = content;
  }

  sentAs(messageId) {
    const id = this.box.sessionId();
    if (!id || !this.pendingContent) return;
    this.sent = messageId;
    writeDraft(id, { ...this.pendingContent, sent: messageId });
    this.pendingContent = null;
  }

  /** accepted is called when the master stored prompt messageId. */
  accepted(messageId) {
    const id = this.box.sessionId();
    const d = readDraft(id);
    if (!d || d.sent !== messageId) return;
    deleteDraft(id);
    if (this.sent === messageId) this.sent = '';
    // Restored from a draft the master had accepted meanwhile, untouched:
    // it is in the transcript now, not a draft.
    if (this.shown === messageId && JSON.stringify(this.box.read()) === JSON.stringify({ segs: d.segs, files: d.files })) {
      this.box.clearBox();
    }
    this.shown = '';
  }

  /** restore puts the session's draft in the (empty) box. */
  restore() {
    const id = this.box.sessionId();
    const d = readDraft(id);
    if (!d) return;
    if (d.sent && this.box.stored(d.sent)) {
      deleteDraft(id);
      return;
    }
    if (!this.box.empty()) return;
    this.box.show(d);
    this.sent = d.sent || '';
    this.shown = d.sent || '';
  }
}

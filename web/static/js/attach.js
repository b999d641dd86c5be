// Files attached to a prompt (docs/ui.md, "Attachments"): picked with the
// attach or camera button, pasted, or dropped on the prompt box. Each file
// is a chip that uploads itself at once to the master (POST
// /v1/sessions/{id}/uploads, XMLHttpRequest for its progress) and then
// holds the upload's id; the prompt carries the uploaded ones as
// context_files with a ferry-upload: URL. The master and the client check
// everything again: the checks here only say early what would fail.
//
// The functions above the Attachments class are pure (no DOM), so Node
// tests them (web/e2e/units.mjs).

import { h, clear, formatBytes } from './util.js';

/** THUMB_MAX_BYTES is the largest image a chip shows a thumbnail of. */
const THUMB_MAX_BYTES = 8 << 20;

/** MAX_FILE_BYTES is the largest file the UI uploads (attachment.MaxBytes). */
export const MAX_FILE_BYTES = 20 << 20;

/** MAX_FILES is how many files one prompt may carry. */
export const MAX_FILES = 10;

/**
 * KEY_HEADER carries the key share of the browser's sign-in with an upload;
 * the cookie share goes with the request as a cookie, so neither half
 * alone authorises it (as for the UI WebSocket).
 */
export const KEY_HEADER = 'X-Ferry-Key';

const KEY = 'ferry.key';

const EXT = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/gif': 'gif', 'image/webp': 'webp' };

/** INLINE_IMAGE_TYPES are the image types a tool card shows inline. */
export const INLINE_IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** MAX_INLINE_IMAGE_BASE64 caps one inline image (the protocol's 1 MiB). */
export const MAX_INLINE_IMAGE_BASE64 = 1 << 20;

const pad = (n, w = 2) => String(n).padStart(w, '0');

/** mib says a size in MiB, as the limit is stated: 20 MiB, 25.5 MiB. */
const mib = (n) => `${Number((n / 1048576).toFixed(1))} MiB`;

/**
 * pastedName names a pasted image after the local time it was pasted:
 * pasted-YYYYMMDD-HHMMSS.png (the extension from its type).
 */
export function pastedName(date, type) {
  const ext = EXT[type] || (/^image\/([a-z0-9.+-]+)$/.exec(type || '')?.[1].replace(/[^a-z0-9]/g, '') || 'png');
  const d = date;
  return `pasted-${d.getFullYear()}${pad(d.getMonth() + 1)}${pad(d.getDate())}-${pad(d.getHours())}${pad(d.getMinutes())}${pad(d.getSeconds())}.${ext}`;
}

/** uniqueName returns name, or name-2, name-3… before its extension when taken has it. */
export function uniqueName(name, taken) {
  if (!taken.has(name)) return name;
  const dot = name.lastIndexOf('.');
  const stem = dot > 0 ? name.slice(0, dot) : name;
  const ext = dot > 0 ? name.slice(dot) : '';
  for (let i = 2; ; i++) {
    const n = `${stem}-${i}${ext}`;
    if (!taken.has(n)) return n;
  }
}

/**
 * precheck decides which of files ({name, size}) may join the count files
 * already attached: at most MAX_FILES in all, none empty or over
 * MAX_FILE_BYTES. It answers {accept: [file], refuse: [{file, code,
 * message}], over: [file]} (over: beyond the count, not added at all).
 */
export function precheck(count, files) {
  const out = { accept: [], refuse: [], over: [] };
  let n = count;
  for (const f of files) {
    if (n >= MAX_FILES) {
      out.over.push(f);
      continue;
    }
    n++;
    if (f.size > MAX_FILE_BYTES) {
      out.refuse.push({ file: f, code: 'too_large', message: `too large: ${mib(f.size)}; the limit is ${mib(MAX_FILE_BYTES)}` });
    } else if (f.size === 0) {
      out.refuse.push({ file: f, code: 'invalid_value', message: 'the file is empty' });
    } else {
      out.accept.push(f);
    }
  }
  return out;
}

/** overMessage says which files were not added because of the count. */
export function overMessage(over) {
  if (!over.length) return '';
  const names = over.map((f) => f.name);
  const list = names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
  return `At most ${MAX_FILES} files per prompt: ${list} ${names.length === 1 ? 'was' : 'were'} not added.`;
}

/**
 * fileKind is the kind of attached file a File ({type}) is, as
 * capabilities' attachments name them: image, pdf, else text (the master
 * and the client sniff the bytes and refuse anything else).
 */
export function fileKind(file) {
  const t = file.type || '';
  if (t.startsWith('image/')) return 'image';
  if (t === 'application/pdf') return 'pdf';
  return 'text';
}

/**
 * byKind splits files into those of a kind the agent takes (kinds, its
 * capability's attachments) and the others: {take: [file], refuse: [file]}.
 */
export function byKind(kinds, files) {
  const out = { take: [], refuse: [] };
  for (const f of files) (kinds.includes(fileKind(f)) ? out.take : out.refuse).push(f);
  return out;
}

/**
 * contextFiles is the ui.prompt's context_files for chips ({state,
 * upload}): every uploaded one, in order, as a ferry-upload: URL.
 */
export function contextFiles(chips) {
  return chips.filter((c) => c.state === 'done' && c.upload?.upload_id).map((c) => {
    const f = { file_url: `ferry-upload:${c.upload.upload_id}`, file_name: c.upload.file_name || c.name };
    if (c.upload.mime_type) f.mime_type = c.upload.mime_type;
    return f;
  });
}

/**
 * faultIndex is the index of the context file an error's field names
 * (payload.context_files[2].file_url → 2), or -1.
 */
export function faultIndex(field) {
  const m = /^payload\.context_files\[(\d+)\](?:\.|$)/.exec(field || '');
  return m ? Number(m[1]) : -1;
}

/**
 * uploadOutcome reads an upload's answer (status, body text): {upload}
 * on 201 with an upload_id, else {error: {code, field, message}} — the
 * master's coded error, or one made up from the status.
 */
export function uploadOutcome(status, text) {
  let body = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  if (status === 201 && body && typeof body.upload_id === 'string' && /^upl_[A-Za-z0-9_-]+$/.test(body.upload_id)) return { upload: body };
  const e = body?.error;
  if (e && typeof e.code === 'string') return { error: { code: e.code, field: e.field || '', message: e.message || e.code } };
  if (status === 0) return { error: { code: 'connection_lost', field: '', message: 'the master could not be reached' } };
  const byStatus = { 401: 'unauthorized', 403: 'unauthorized', 404: 'not_found', 410: 'not_found', 413: 'too_large', 415: 'unsupported' };
  return { error: { code: byStatus[status] || 'internal', field: '', message: `the upload failed (HTTP ${status})` } };
}

/**
 * errorText is what an error chip says: the message, which says what is
 * wrong ("too large: 25 MiB; the limit is 20 MiB"); the code is for
 * support, in the chip's title.
 */
export function errorText(e) {
  return e.message || 'the file could not be attached';
}

const ICONS = {
  // Paper clip and camera, drawn so they need no emoji font.
  attach: 'M16.5 6.5v10a4.5 4.5 0 0 1-9 0V5a3 3 0 0 1 6 0v10.5a1.5 1.5 0 0 1-3 0V6.5',
  camera: 'M4 8h3l1.5-2h7L17 8h3v11H4zM12 17a3.5 3.5 0 1 0 0-7a3.5 3.5 0 0 0 0 7z',
  // The session view's plus, menu (three dots), back and settings.
  plus: 'M12 5v14M5 12h14',
  more: 'M6.5 12a1.5 1.5 0 1 1-3 0a1.5 1.5 0 1 1 3 0zM13.5 12a1.5 1.5 0 1 1-3 0a1.5 1.5 0 1 1 3 0zM20.5 12a1.5 1.5 0 1 1-3 0a1.5 1.5 0 1 1 3 0z',
  back: 'M15 5l-7 7l7 7',
  sliders: 'M4 7h10M18 7h2M4 17h4M12 17h8M16 5v4M10 15v4',
  // The top bar's "Open on your phone".
  phone: 'M8 3h8a1.5 1.5 0 0 1 1.5 1.5v15a1.5 1.5 0 0 1-1.5 1.5H8a1.5 1.5 0 0 1-1.5-1.5v-15A1.5 1.5 0 0 1 8 3zM11 18h2',
};

/** icon draws one of ICONS as an inline SVG (built as DOM, never as HTML). */
export function icon(name) {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  for (const [k, v] of Object.entries({ viewBox: '0 0 24 24', width: '20', height: '20', fill: 'none', stroke: 'currentColor', 'stroke-width': '1.8', 'stroke-linecap': 'round', 'stroke-linejoin': 'round', 'aria-hidden': 'true', focusable: 'false' })) svg.setAttribute(k, v);
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', ICONS[name]);
  svg.appendChild(p);
  return svg;
}

/**
 * imageDataURL returns a data: URL for a tool's image ({media_type,
 * data}), or '' for anything not shown: another type, data that is not
 * canonical base64, or larger than MAX_INLINE_IMAGE_BASE64.
 */
export function imageDataURL(img) {
  if (!img || typeof img !== 'object') return '';
  const type = typeof img.media_type === 'string' ? img.media_type.toLowerCase() : '';
  const data = img.data;
  if (!INLINE_IMAGE_TYPES.has(type) || typeof data !== 'string') return '';
  if (!data.length || data.length > MAX_INLINE_IMAGE_BASE64 || data.length % 4 !== 0) return '';
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(data)) return '';
  return `data:${type};base64,${data}`;
}

function storedKey() {
  try {
    return localStorage.getItem(KEY) || '';
  } catch {
    return '';
  }
}

/**
 * busyWait is how long to wait before trying a busy upload again, in ms:
 * its Retry-After (whole seconds, 1 to 30), else 2 s.
 */
export function busyWait(retryAfter) {
  const n = Number.parseInt(retryAfter, 10);
  return (Number.isFinite(n) && n >= 1 ? Math.min(n, 30) : 2) * 1000;
}

/** MAX_BUSY_TRIES bounds the tries of an upload the master keeps answering busy. */
const MAX_BUSY_TRIES = 60;

/**
 * upload sends file to the session's uploads with XMLHttpRequest (fetch
 * reports no upload progress). onProgress gets a fraction; the promise
 * resolves with uploadOutcome's answer, never rejects. An answer busy (the
 * master already reads as many uploads as it takes at once) is tried
 * again after its Retry-After. abort() stops it.
 */
export function upload(sessionId, file, name, onProgress) {
  const cancelled = { error: { code: 'cancelled', field: '', message: 'the upload was stopped' } };
  let xhr = null;
  let stopped = false;
  let wake = () => {};
  const once = () => new Promise((resolve) => {
    xhr = new XMLHttpRequest();
    xhr.open('POST', `/v1/sessions/${encodeURIComponent(sessionId)}/uploads`);
    const key = storedKey();
    if (key) xhr.setRequestHeader(KEY_HEADER, key);
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable && e.total) onProgress(e.loaded / e.total);
    });
    xhr.addEventListener('load', () => resolve({ res: uploadOutcome(xhr.status, xhr.responseText), retryAfter: xhr.getResponseHeader('Retry-After') }));
    xhr.addEventListener('error', () => resolve({ res: uploadOutcome(0, '') }));
    xhr.addEventListener('abort', () => resolve({ res: cancelled }));
    const form = new FormData();
    form.append('file', file, name);
    xhr.send(form);
  });
  const done = (async () => {
    for (let tries = 1; ; tries++) {
      const { res, retryAfter } = await once();
      if (stopped) return cancelled;
      if (res.error?.code !== 'busy' || tries >= MAX_BUSY_TRIES) return res;
      onProgress(0);
      await new Promise((r) => {
        const id = setTimeout(r, busyWait(retryAfter));
        wake = () => { clearTimeout(id); r(); };
      });
      if (stopped) return cancelled;
    }
  })();
  return { done, abort: () => { stopped = true; xhr?.abort(); wake(); } };
}

let chipSeq = 0;

/**
 * Attachments is the chips of the prompt box. opts: sessionId() → id,
 * onChange() (a chip started, finished, failed or went), upload (for
 * tests: the upload function).
 */
export class Attachments {
  constructor(opts) {
    this.opts = opts;
    this.chips = []; // {id, name, size, type, file, state, progress, upload, error, xhr, el}
    this.list = h('ul', { class: 'attachments', 'aria-label': 'Attached files', hidden: true });
    this.note = h('p', { class: 'attach-note small', role: 'alert', hidden: true });
    this.el = h('div', { class: 'attach-box' }, this.list, this.note);
  }

  /** busy is true while a file uploads: the prompt waits for it. */
  busy() {
    return this.chips.some((c) => c.state === 'uploading');
  }

  failed() {
    return this.chips.filter((c) => c.state === 'error');
  }

  contextFiles() {
    return contextFiles(this.chips);
  }

  say(text) {
    this.note.textContent = text;
    this.note.hidden = !text;
  }

  /**
   * add attaches files (File objects); pasted images get a pasted-… name.
   * Files beyond MAX_FILES are not added, and the note says which.
   */
  add(files, pasted = false) {
    const taken = new Set(this.chips.map((c) => c.name));
    const items = [...files].map((file) => {
      let name = file.name || '';
      if (pasted && file.type.startsWith('image/') && (!name || /^image\.[a-z]+$/i.test(name))) name = pastedName(new Date(), file.type);
      if (!name) name = 'file';
      name = uniqueName(name, taken);
      taken.add(name);
      return { name, size: file.size, type: file.type, file };
    });
    const pc = precheck(this.chips.length, items);
    this.say(overMessage(pc.over));
    for (const it of items) {
      if (pc.over.includes(it)) continue;
      const r = pc.refuse.find((x) => x.file === it);
      const chip = { id: `att-${++chipSeq}`, ...it, state: r ? 'error' : 'uploading', progress: 0, upload: null, error: r ? { code: r.code, field: '', message: r.message } : null, xhr: null };
      this.chips.push(chip);
      chip.el = h('li', { class: 'attachment' });
      this.list.appendChild(chip.el);
      this.draw(chip);
      if (!r) this.start(chip);
    }
    this.list.hidden = !this.chips.length;
    this.opts.onChange?.();
  }

  start(chip) {
    const up = (this.opts.upload || upload)(this.opts.sessionId(), chip.file, chip.name, (f) => {
      chip.progress = f;
      this.drawProgress(chip);
    });
    chip.xhr = up;
    up.done.then((res) => {
      chip.xhr = null;
      if (!this.chips.includes(chip)) return; // removed meanwhile
      if (res.upload) {
        chip.state = 'done';
        chip.upload = res.upload;
      } else {
        chip.state = 'error';
        chip.error = res.error;
      }
      this.draw(chip);
      this.opts.onChange?.();
    });
  }

  remove(chip) {
    const i = this.chips.indexOf(chip);
    if (i < 0) return;
    this.chips.splice(i, 1);
    chip.xhr?.abort();
    chip.el.remove();
    this.list.hidden = !this.chips.length;
    if (this.chips.length < MAX_FILES) this.say('');
    this.opts.onChange?.();
  }

  /** take empties the box and returns its chips (a sent prompt). */
  take() {
    const chips = this.chips;
    this.chips = [];
    clear(this.list);
    this.list.hidden = true;
    this.say('');
    return chips;
  }

  /**
   * uploaded lists the uploaded chips as a draft keeps them (draft.js):
   * what is needed to show and send them again.
   */
  uploaded() {
    return this.chips.filter((c) => c.state === 'done' && c.upload?.upload_id).map((c) => ({
      upload_id: c.upload.upload_id, file_name: c.upload.file_name || c.name, mime_type: c.upload.mime_type || '',
      name: c.name, size: c.size, type: c.type,
    }));
  }

  /** restoreUploaded shows a draft's uploaded files (uploaded()) as chips again. */
  restoreUploaded(files) {
    for (const f of files || []) {
      if (this.chips.some((c) => c.upload?.upload_id === f.upload_id)) continue;
      const chip = { id: `att-${++chipSeq}`, name: f.name || f.file_name, size: f.size || 0, type: f.type || f.mime_type, file: null, state: 'done',
        progress: 1, upload: { upload_id: f.upload_id, file_name: f.file_name, mime_type: f.mime_type || undefined }, error: null, xhr: null };
      chip.el = h('li', { class: 'attachment' });
      this.chips.push(chip);
      this.list.appendChild(chip.el);
      this.draw(chip);
    }
    this.list.hidden = !this.chips.length;
    if (files?.length) this.opts.onChange?.();
  }

  /** restore puts chips back (a refused prompt comes back to be fixed). */
  restore(chips) {
    for (const c of chips) {
      if (this.chips.includes(c)) continue;
      this.chips.push(c);
      this.list.appendChild(c.el);
    }
    this.list.hidden = !this.chips.length;
    this.opts.onChange?.();
  }

  /**
   * thumbnail is a small picture of an image chip (PNG, JPEG, GIF, WebP up
   * to THUMB_MAX_BYTES), read once as a data: URL (the page's policy
   * allows data: images, not blob:); null for any other file.
   */
  thumbnail(chip) {
    if (!INLINE_IMAGE_TYPES.has(String(chip.type).toLowerCase()) || !chip.file || chip.file.size > THUMB_MAX_BYTES) return null;
    const img = h('img', { class: 'attach-thumb', alt: '', width: '32', height: '32', decoding: 'async' });
    if (chip.thumb) img.src = chip.thumb;
    else if (!chip.reading) {
      chip.reading = true;
      const r = new FileReader();
      r.onload = () => {
        if (typeof r.result !== 'string' || !r.result.startsWith('data:image/')) return;
        chip.thumb = r.result;
        chip.el.querySelector('img.attach-thumb')?.setAttribute('src', chip.thumb);
      };
      r.readAsDataURL(chip.file);
    }
    return img;
  }

  draw(chip) {
    const el = chip.el;
    el.dataset.state = chip.state;
    el.dataset.name = chip.name;
    const label = chip.state === 'error' ? `${chip.name}: ${errorText(chip.error)}` : chip.name;
    chip.bar = chip.state === 'uploading'
      ? h('progress', { class: 'attach-progress', max: '1', value: String(chip.progress), 'aria-label': `Uploading ${chip.name}` })
      : null;
    clear(el).append(
      this.thumbnail(chip) || '',
      h('span', { class: 'attach-info' },
        h('span', { class: 'attach-name', text: chip.name, title: chip.name }),
        h('span', { class: 'attach-meta small', title: chip.state === 'error' ? chip.error.code || false : false, text: chip.state === 'error' ? errorText(chip.error) : formatBytes(chip.size) }),
        chip.bar),
      h('button', {
        type: 'button', class: 'attach-remove', 'aria-label': `Remove ${label}`, title: 'Remove', text: '✕',
        onclick: () => this.remove(chip),
      }));
  }

  drawProgress(chip) {
    if (chip.bar) chip.bar.value = chip.progress;
  }
}

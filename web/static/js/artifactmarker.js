// The "changed since" note of an artifact card. A download serves the
// version the agent made while its machine keeps a snapshot of it; once
// that is gone it serves the file as it is then, and the master marks the
// answer with Ferry-Artifact-Changed: 1 (see docs/artifacts.md,
// "Snapshots"). A card asks with a HEAD of its link once it is in view and
// has a link, again after a download; at most MAX_INFLIGHT ask at once,
// and an answer is reused for FRESH_MS.

export const CHANGED_HEADER = 'Ferry-Artifact-Changed';
export const CHANGED_TEXT = 'Changed since the agent made it — downloads the current file';

const MAX_INFLIGHT = 3;
const MAX_WAITING = 50; // the oldest waiting card gives way
const FRESH_MS = 30000;
const AFTER_DOWNLOAD_MS = 1500;
const TIMEOUT_MS = 15000;

const answers = new Map(); // artifact_id → { changed, at }
const waiting = [];
let inflight = 0;
let viewObserver = null;

function linkOf(anchor) {
  const url = anchor.getAttribute('href') || '';
  return url.startsWith('/v1/artifacts/') ? url : '';
}

function show(card, changed) {
  let note = card.querySelector('.artifact-changed');
  if (!changed) {
    note?.remove();
    return;
  }
  if (note) return;
  note = document.createElement('span');
  note.className = 'artifact-changed small';
  note.setAttribute('role', 'note');
  note.textContent = CHANGED_TEXT;
  (card.querySelector('.artifact-info') || card).appendChild(note);
}

function pump() {
  while (inflight < MAX_INFLIGHT && waiting.length) {
    const job = waiting.shift();
    if (!job.card.isConnected) continue;
    inflight++;
    fetch(job.url, { method: 'HEAD', credentials: 'same-origin', cache: 'no-store', signal: AbortSignal.timeout(TIMEOUT_MS) })
      .then((r) => {
        if (!r.ok) return; // an expired link, or the machine offline: no news
        const changed = r.headers.get(CHANGED_HEADER) === '1';
        answers.set(job.id, { changed, at: Date.now() });
        for (const c of document.querySelectorAll('.artifact')) if (c.dataset.artifactId === job.id) show(c, changed);
      })
      .catch(() => {})
      .finally(() => {
        inflight--;
        pump();
      });
  }
}

function ask(card, anchor, force) {
  const id = card.dataset.artifactId;
  const url = linkOf(anchor);
  if (!url || !id) return;
  const known = answers.get(id);
  if (known && !force && Date.now() - known.at < FRESH_MS) {
    show(card, known.changed);
    return;
  }
  if (waiting.some((j) => j.card === card)) return;
  waiting.push({ card, id, url });
  if (waiting.length > MAX_WAITING) waiting.shift();
  pump();
}

/**
 * watchChanged shows the note on an artifact card (data-artifact-id) whose
 * download would not be the agent's version; anchor is its download link.
 */
export function watchChanged(card, anchor) {
  let seen = typeof IntersectionObserver === 'undefined';
  new MutationObserver(() => seen && ask(card, anchor, false)).observe(anchor, { attributes: true, attributeFilter: ['href'] });
  anchor.addEventListener('click', () => setTimeout(() => ask(card, anchor, true), AFTER_DOWNLOAD_MS));
  if (seen) {
    ask(card, anchor, false);
    return;
  }
  viewObserver ??= new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (!e.isIntersecting) continue;
      viewObserver.unobserve(e.target);
      e.target.dispatchEvent(new Event('ferry-artifact-in-view'));
    }
  });
  card.addEventListener('ferry-artifact-in-view', () => {
    seen = true;
    ask(card, anchor, false);
  }, { once: true });
  viewObserver.observe(card);
}

// The notes of an artifact card on which version Download gives. A
// download serves the version the agent made while its machine keeps a
// snapshot of it; once that is gone it serves the file as it is then, and
// the master marks the answer with Ferry-Artifact-Changed: 1. While it
// serves the snapshot but the workspace's file is another version (undone,
// changed or removed since), the answer carries
// Ferry-Artifact-Workspace-Differs: 1, and the card says so and names its
// link "Download the agent's version" (see docs/artifacts.md,
// "Snapshots"). A card asks with a HEAD of its link once it is in view and
// has a link, again after a download and after files were restored
// (undo, rewind: recheckArtifacts); at most MAX_INFLIGHT ask at once, and
// an answer is reused for FRESH_MS.

export const CHANGED_HEADER = 'Ferry-Artifact-Changed';
export const CHANGED_TEXT = 'Changed since the agent made it — downloads the current file';
export const DIFFERS_HEADER = 'Ferry-Artifact-Workspace-Differs';
export const DIFFERS_TEXT = 'The file in the workspace is no longer this version (undone, changed or removed since) — Download gives the version the agent made.';

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

function note(card, cls, text) {
  let el = card.querySelector(`.${cls}`);
  if (!text) {
    el?.remove();
    return;
  }
  if (el) return;
  el = document.createElement('span');
  el.className = `${cls} small`;
  el.setAttribute('role', 'note');
  el.textContent = text;
  (card.querySelector('.artifact-info') || card).appendChild(el);
}

function show(card, { changed, differs }) {
  note(card, 'artifact-changed', changed ? CHANGED_TEXT : '');
  note(card, 'artifact-differs', differs ? DIFFERS_TEXT : '');
  const a = card.querySelector('a.download');
  if (!a) return;
  const name = card.querySelector('.artifact-name')?.textContent || '';
  a.textContent = differs ? 'Download the agent\'s version' : 'Download';
  a.setAttribute('aria-label', differs ? `Download the agent's version of ${name}` : `Download ${name}`);
}

function pump() {
  while (inflight < MAX_INFLIGHT && waiting.length) {
    const job = waiting.shift();
    if (!job.card.isConnected) continue;
    inflight++;
    fetch(job.url, { method: 'HEAD', credentials: 'same-origin', cache: 'no-store', signal: AbortSignal.timeout(TIMEOUT_MS) })
      .then((r) => {
        if (!r.ok) return; // an expired link, or the machine offline: no news
        const v = { changed: r.headers.get(CHANGED_HEADER) === '1', differs: r.headers.get(DIFFERS_HEADER) === '1' };
        answers.set(job.id, { ...v, at: Date.now() });
        for (const c of document.querySelectorAll('.artifact')) if (c.dataset.artifactId === job.id) show(c, v);
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
    show(card, known);
    return;
  }
  if (waiting.some((j) => j.card === card)) return;
  waiting.push({ card, id, url });
  if (waiting.length > MAX_WAITING) waiting.shift();
  pump();
}

/**
 * recheckArtifacts forgets every answer and asks again for each card on
 * the page that was asked before: files were restored (undo, rewind), so
 * which version a download gives may have changed.
 */
export function recheckArtifacts() {
  if (typeof document === 'undefined') return; // the state's unit tests run without a page
  const asked = new Set(answers.keys());
  answers.clear();
  for (const c of document.querySelectorAll('.artifact')) {
    const a = c.querySelector('a.download');
    if (a && asked.has(c.dataset.artifactId)) ask(c, a, true);
  }
}

/**
 * watchChanged shows the notes on an artifact card (data-artifact-id) whose
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

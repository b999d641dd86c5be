// How many sessions wait for the user, where the user looks without
// opening ferry: the document title ("(2) ferry") and the app badge of an
// installed app (the Badging API, where the browser has it). See
// docs/ui.md, "Waiting for you".

const TITLE = 'ferry';

/** waitingCount is how many sessions wait for the user (SessionInfo.waiting). */
export function waitingCount(sessions) {
  return sessions.filter((s) => s.waiting > 0).length;
}

/** titleFor is the document title with n sessions waiting. */
export function titleFor(n) {
  return n > 0 ? `(${n}) ${TITLE}` : TITLE;
}

/** WaitingBadge shows a count in the title and the badge, each set once per change. */
export class WaitingBadge {
  constructor(doc = globalThis.document, nav = globalThis.navigator) {
    this.doc = doc;
    this.nav = nav;
    this.shown = -1; // nothing set yet: the first count clears or sets the badge
  }

  show(n) {
    const title = titleFor(n);
    if (this.doc.title !== title) this.doc.title = title;
    if (n === this.shown) return;
    this.shown = n;
    try {
      const done = n > 0 ? this.nav?.setAppBadge?.(n) : this.nav?.clearAppBadge?.();
      done?.catch?.(() => undefined); // refused (no permission): the title still says it
    } catch {
      // a browser without the API's promise: nothing else to do
    }
  }
}

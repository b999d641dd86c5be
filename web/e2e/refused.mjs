// Browser test of a prompt its client refused (docs/live.md, "A refusal
// reaches every UI"): Playwright driving headless Chromium, on a phone's
// screen, against a real `ferry up` with a slow script agent. While the
// page's turn runs, a second UI connection (the page's own sign-in, as
// another tab or device would have) sends a prompt and goes away; the
// client refuses it as busy. The page, which did not send it, marks that
// prompt "Not run: … Send it again." at once and after a reload, and
// "Edit again" puts its text back in the prompt box.
// Started by web/refused_test.go, which passes a config file.

import assert from 'node:assert/strict';
import { cfg, main, shot, step, watch } from './harness.mjs';

const WAIT = 15000;
const SECOND = 'second prompt, sent while busy';

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'refused');
  const refused = () => page.locator('article.msg.user', { hasText: SECOND }).locator('.prompt-error');

  await step('sign in and start a script session', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.goto(`${cfg.base}/#/new`);
    await page.locator(`#ns-agent option[value="${cfg.script}"]`).waitFor({ state: 'attached' });
    await page.locator('#ns-agent').selectOption(cfg.script);
    await page.locator('#ns-title').fill('Refused prompt');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/#\/s\//);
    await page.getByRole('heading', { name: 'Refused prompt' }).waitFor();
  });

  await step('another UI sends a prompt while the turn runs, and is gone', async () => {
    await page.locator('#prompt').click();
    await page.keyboard.type('first prompt');
    await page.locator('button.send').tap();
    await page.locator('article.msg.agent[data-state="running"]').waitFor();
    const sid = decodeURIComponent(new URL(page.url()).hash.replace(/^#\/s\//, ''));
    const answer = await page.evaluate(([sessionID, text]) => new Promise((resolve, reject) => {
      const ws = new WebSocket(`${location.origin.replace(/^http/, 'ws')}/v1/ui`, ['ferry.ui', localStorage.getItem('ferry.key')]);
      const id = crypto.randomUUID();
      const timer = setTimeout(() => reject(new Error('no answer to the prompt')), 10000);
      ws.onopen = () => ws.send(JSON.stringify({ type: 'ui.prompt', message_id: id, session_id: sessionID, payload: { segments: [{ kind: 'text', text }] } }));
      ws.onmessage = (ev) => {
        const m = JSON.parse(ev.data);
        if (m.type !== 'error' || m.parent_id !== id) return;
        clearTimeout(timer);
        ws.close();
        resolve(m.payload);
      };
    }), [sid, SECOND]);
    assert.equal(answer.code, 'busy', `the client answered ${JSON.stringify(answer)}`);
  });

  await step('the page shows the prompt not run, with what to do', async () => {
    await refused().waitFor();
    const text = await refused().innerText();
    // What the refusal means, not its code (busy), which is in the title.
    assert.match(text, /^Not run: the session already runs a turn\. Send it again\./, text);
    assert.equal(await refused().getAttribute('title'), 'busy');
    await shot(page, 'phone-prompt-not-run');
  });

  await step('after a reload too; Edit again puts it back in the box', async () => {
    await page.reload();
    await refused().waitFor();
    assert.match(await refused().innerText(), /^Not run: .* Send it again\./);
    await page.locator('article.msg.agent[data-state="done"]').waitFor();
    await refused().getByRole('button', { name: 'Edit again' }).tap();
    assert.equal((await page.locator('#prompt').innerText()).trim(), SECOND);
  });

  await step('a prompt put back in the box is the draft: it survives a reload (issue 32)', async () => {
    await page.waitForTimeout(600); // saved within 250 ms of the change
    await page.reload();
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.waitForFunction((t) => document.getElementById('prompt')?.innerText.trim() === t, SECOND, { timeout: 5000 });
  });
  await ctx.close();
});

// Browser test of capabilities (docs/protocol.md, "Capabilities never
// over-claim"): Playwright driving headless Chromium against a real
// `ferry up` with the echo agent, a script agent and an ACP agent (the
// acppeer binary). The UI offers only what each session's agent declares:
// echo and script sessions get no attach button and a pasted file is not
// attached (the note says why); the script session has no Compact and a
// single mode; the ACP session offers the plan mode its agent has (which
// the adapter's own declaration cannot promise), no camera (no image
// support), and Compact once the agent lists its compact command.
// Started by web/caps_test.go, which passes a config file.

import assert from 'node:assert/strict';
import { cfg, closeSettings, main, offered, openSettings, shot, step, until, watch } from './harness.mjs';

const WAIT = 15000;

/** start starts a session of agent with a title. */
async function start(page, agent, title) {
  await page.goto(`${cfg.base}/#/new`);
  await page.locator(`#ns-agent option[value="${agent}"]`).waitFor({ state: 'attached' });
  await page.locator('#ns-agent').selectOption(agent);
  await page.locator('#ns-title').fill(title);
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/#\/s\//, { timeout: WAIT });
  await page.getByRole('heading', { name: title }).waitFor();
  await page.locator('.status-pill', { hasText: 'Ready' }).waitFor();
}

/** paste pastes a text file into the prompt box, as a clipboard would. */
async function pasteFile(page) {
  await page.locator('#prompt').evaluate((el) => {
    const dt = new DataTransfer();
    dt.items.add(new File(['pasted notes\n'], 'notes.txt', { type: 'text/plain' }));
    el.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  });
}

/** modes lists the mode menu's options. */
const modes = (page) => page.locator('#mode-select option').evaluateAll((os) => os.map((o) => o.value));

/** ask sends a prompt and waits for its answer. */
async function ask(page, text) {
  await page.locator('#prompt').click();
  await page.keyboard.type(text);
  await page.keyboard.press('Enter');
  await page.locator('article.msg.agent[data-state="done"]').last().waitFor();
}

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'caps');
  const attach = () => offered(page, 'plus', 'Attach files');
  const compact = () => offered(page, 'session', 'Compact…');

  await step('sign in', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
  });

  await step('an echo session: no attach button, a pasted file is not attached', async () => {
    await start(page, cfg.echo, 'Echo caps');
    assert.equal(await attach(), false, 'an attach button for echo, which takes no attachments');
    await pasteFile(page);
    await page.locator('.attach-note', { hasText: 'This agent takes no attached files.' }).waitFor();
    assert.equal(await page.locator('.attachment').count(), 0, 'the pasted file was attached');
    // Echo compacts and switches modes: those stay.
    assert.equal(await compact(), true, 'no Compact for echo');
    assert.deepEqual(await modes(page), ['default', 'plan', 'review']);
    await shot(page, 'caps-echo');
  });

  await step('a script session: no attach button, no Compact, one mode', async () => {
    await start(page, cfg.script, 'Script caps');
    assert.equal(await attach(), false, 'an attach button for a script agent, which takes no attachments');
    assert.equal(await compact(), false, 'Compact for a script agent');
    assert.deepEqual(await modes(page), ['default']);
    assert.equal(await page.locator('#mode-select').isDisabled(), true, 'a mode menu with one mode');
    await ask(page, 'hello script');
    await shot(page, 'caps-script');
  });

  await step('an ACP session: the modes its agent has, text attachments only, Compact once listed', async () => {
    await start(page, cfg.acp, 'ACP caps');
    // The adapter declares default only; the session's agent has a plan mode.
    await page.waitForFunction(() => [...document.querySelectorAll('#mode-select option')].map((o) => o.value).join() === 'default,plan');
    assert.equal(await attach(), true, 'no attach button for an ACP agent, which takes text');
    assert.equal(await page.locator('button.camera-btn').getAttribute('hidden'), '', 'a camera for an agent that takes no images');
    assert.equal(await compact(), false, 'Compact before the agent listed a compact command');
    await ask(page, 'hello peer');
    await until('Compact in the menu', compact, WAIT);
    await openSettings(page);
    await page.locator('#mode-select').selectOption('plan');
    await closeSettings(page);
    await page.locator('div.note.mode', { hasText: 'Mode switched to plan.' }).waitFor();
    await shot(page, 'caps-acp');
  });
  await ctx.close();
});

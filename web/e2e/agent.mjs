// Browser tests of the agent choices in ferry's web UI (issue 20): the
// model picker and thinking effort, deny with a note, and the new-session
// form that offers only agents that can start. Playwright (playwright-core)
// drives headless Chromium against real `ferry up` processes started by
// web/agent_test.go (TestBrowserAgent), which checks on the fake Anthropic
// server what the browser's choices made the agent send. Every wait is
// bounded.

import assert from 'node:assert/strict';
import { cfg, closeSettings, main, openSettings, shot, step, watch } from './harness.mjs';

const WAIT = 15000;

/**
 * routeSockets records every frame the page sends on its UI socket;
 * sent.page is the page's side of the newest socket, to inject frames.
 */
async function routeSockets(page) {
  const sent = [];
  await page.routeWebSocket(/\/v1\/ui$/, (ws) => {
    sent.page = ws;
    const server = ws.connectToServer();
    ws.onMessage((m) => {
      if (typeof m === 'string') {
        try {
          sent.push(JSON.parse(m));
        } catch {
          // not JSON: forwarded as it is
        }
      }
      server.send(m);
    });
    server.onMessage((m) => {
      if (typeof m === 'string') {
        try {
          const f = JSON.parse(m);
          if (f.seq) sent.last = { seq: f.seq, epoch: f.epoch }; // the newest event the page holds
        } catch {
          // not JSON: forwarded as it is
        }
      }
      ws.send(m);
    });
  });
  return sent;
}

async function pickerSuite(browser) {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'picker');
  const sent = await routeSockets(page);
  await step('sign in; ferry\'s agent is offered and pre-selected', async () => {
    await page.goto(cfg.picker.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.locator('#ns-agent option[value="builtin"]').waitFor({ state: 'attached' });
    assert.equal(await page.locator('#ns-agent').inputValue(), 'builtin');
    assert.equal(await page.locator('#ns-agent-help').isVisible(), false, 'an available agent was explained away');
  });
  await step('the session offers the provider\'s models; picking one with an effort sends the settings', async () => {
    await page.locator('#ns-title').fill('Models');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/#\/s\//);
    const model = page.locator('#model-select');
    await openSettings(page);
    await page.locator(`#model-select option[value="${cfg.picker.model}"]`).waitFor({ state: 'attached' });
    assert.match(await page.locator('#model-select option[value=""]').innerText(), new RegExp(`${cfg.picker.default_model} \\(default\\)`));
    // The default model is listed once: as the default.
    const labels = await page.locator('#model-select option').allInnerTexts();
    assert.equal(labels.filter((l) => l.includes(cfg.picker.default_model)).length, 1, `the default model twice: ${JSON.stringify(labels)}`);
    // The default model takes no effort: none is offered.
    assert.equal(await page.locator('#effort-select').isVisible(), false, 'an effort offered for a model without thinking');
    await model.selectOption(cfg.picker.model);
    await page.locator('#effort-select').waitFor({ state: 'visible' });
    await page.locator('#effort-select').selectOption('high');
    await page.waitForFunction(() => document.getElementById('effort-select').value === 'high');
    const last = sent.filter((m) => m.type === 'control.session.settings').at(-1);
    assert.deepEqual(last?.payload, { model: cfg.picker.model, effort: 'high' });
    // session.settings confirms it: the pick stays after a redraw.
    await page.waitForTimeout(300);
    assert.equal(await model.inputValue(), cfg.picker.model);
    await shot(page, 'model-picker');
  });
  await step('a timeout change keeps the model', async () => {
    await page.locator('#timeout-select').selectOption('300000');
    await closeSettings(page);
    const last = sent.filter((m) => m.type === 'control.session.settings').at(-1);
    assert.deepEqual(last?.payload, { permission_timeout_ms: 300000, model: cfg.picker.model, effort: 'high' });
  });
  await step('deny with a note: the note goes with the denial', async () => {
    await page.locator('#prompt').click();
    await page.keyboard.type('rename a.txt to b.txt', { delay: 5 });
    await page.keyboard.press('Enter');
    const card = page.locator('.interaction.open').first();
    await card.waitFor();
    const note = card.locator('input.q-note');
    await note.fill(cfg.picker.note);
    await shot(page, 'deny-with-note');
    await card.locator('button[data-value="deny"]').click();
    await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
    const ans = sent.filter((m) => m.type === 'control.interaction.response').at(-1);
    assert.deepEqual([ans?.payload.selected_value, ans?.payload.note], ['deny', cfg.picker.note]);
    await page.locator('.interaction.settled', { hasText: cfg.picker.note }).waitFor();
  });
  await step("the agent's own slash commands are completed and sent as commands", async () => {
    const sid = decodeURIComponent(new URL(page.url()).hash.replace(/^#\/s\//, ''));
    // As a client relays an agent's available_commands_update, as the
    // session's next event (the last step: the master's own next event
    // then looks like a duplicate to the page).
    sent.page.send(JSON.stringify({ type: 'agent.commands', message_id: crypto.randomUUID(), session_id: sid, seq: sent.last.seq + 1, epoch: sent.last.epoch,
      payload: { commands: [{ name: 'review', description: 'Review the changes', hint: 'focus' }] } }));
    await page.locator('#prompt').click();
    await page.keyboard.type('/rev', { delay: 20 });
    const opt = page.locator('.popup .opt', { hasText: '/review' });
    await opt.waitFor();
    assert.match(await opt.innerText(), /Review the changes/);
    await page.keyboard.press('Escape');
    await page.keyboard.type('iew', { delay: 20 });
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.getElementById('prompt').innerText.trim() === '');
    const p = sent.filter((m) => m.type === 'ui.prompt').at(-1);
    assert.deepEqual([p?.payload.input_type, p?.payload.segments?.[0]?.text], ['slash_command', '/review']);
    assert.equal(await page.locator('.attach-note', { hasText: 'is not a command here' }).count(), 0, 'the command was refused as unknown');
  });
  await ctx.close();
}

async function noProviderSuite(browser) {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'no provider');
  await step('no provider: only startable agents are offered, the others say how for ferry up', async () => {
    await page.goto(cfg.none.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.locator('#ns-agent option[value="builtin"]').waitFor({ state: 'attached' });
    if (!(await page.locator('#ns-agent').isVisible())) {
      // A phone shows the list first.
      await page.getByRole('link', { name: 'New session' }).first().tap();
      await page.locator('#ns-agent').waitFor();
    }
    assert.equal(await page.locator('#ns-agent').inputValue(), 'echo', 'the first startable agent is pre-selected');
    assert.equal(await page.locator('#ns-agent option[value="builtin"]').isDisabled(), true, 'an agent that cannot start is offered');
    const help = page.locator('#ns-agent-help li[data-adapter="builtin"]');
    await help.waitFor();
    const text = await help.innerText();
    assert.match(text, /ANTHROPIC_API_KEY/);
    assert.match(text, /restart ferry up/);
    assert.doesNotMatch(text, /ferry connect/);
    await shot(page, 'phone-agent-unavailable');
  });
  await step('the startable agent starts', async () => {
    await page.locator('#ns-title').fill('Echo');
    await page.getByRole('button', { name: 'Start session' }).tap();
    await page.waitForURL(/#\/s\//);
    // The echo agent offers no model choice.
    assert.equal(await page.locator('.model-setting').isVisible(), false);
  });
  await ctx.close();
}

await main(async (browser) => {
  await pickerSuite(browser);
  await noProviderSuite(browser);
});

// Browser tests of ferry's web UI: Playwright (playwright-core) driving
// headless Chromium against a real `ferry up` whose agent talks to a fake
// Anthropic server. Started by web/e2e_test.go (go test ./web), which
// passes a config file: the master's URLs, a control URL for what only Go
// can do (new login links, revoking UI tokens), the flows and where to put
// screenshots and downloads. Every wait is bounded.

import fs from 'node:fs/promises';
import path from 'node:path';
import assert from 'node:assert/strict';
import { cfg, closeSettings, control, log, main, menuItem, offered, openSettings, problems, shot, step, watch } from './harness.mjs';

const WAIT = 15000;

/**
 * routeSockets passes the page's UI WebSocket through Playwright, so the
 * test sees every frame the page sends, can inject frames, and can drop the
 * connection from the server's side.
 */
async function routeSockets(page) {
  const r = { sent: [], sockets: [], refuse: false };
  await page.routeWebSocket(/\/v1\/ui$/, (ws) => {
    // refuse: the master is unreachable (every new connection is closed).
    if (r.refuse) {
      ws.close({ code: 1011, reason: 'master down' });
      return;
    }
    const server = ws.connectToServer();
    const pair = { ws, server };
    r.sockets.push(pair);
    ws.onMessage((m) => {
      if (typeof m === 'string') {
        try {
          r.sent.push(JSON.parse(m));
        } catch {
          // not JSON: forwarded as it is
        }
      }
      server.send(m);
    });
    server.onMessage((m) => ws.send(m));
  });
  // A master that is down does not answer its health checks either.
  await page.route(/\/(healthz|readyz)$/, (rt) => (r.refuse ? rt.abort() : rt.continue()));
  r.last = () => r.sockets[r.sockets.length - 1];
  return r;
}

const sessionID = (page) => decodeURIComponent(new URL(page.url()).hash.replace(/^#\/s\//, ''));

/** lastTurn is the newest agent answer of the conversation. */
const lastTurn = (page) => page.locator('article.msg.agent').last();

async function turnText(page) {
  return (await lastTurn(page).locator('.block.k-text').last().innerText()).trim();
}

/** startSession fills the new-session form. */
async function startSession(page, title) {
  await page.locator('#ns-agent').selectOption('builtin');
  await page.locator('#ns-title').fill(title);
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/#\/s\//, { timeout: WAIT });
  await page.getByRole('heading', { name: title }).waitFor({ timeout: WAIT });
}

/** startSessionWith starts a session with the agent whose id is agent. */
async function startSessionWith(page, agent, title) {
  if (!(await page.locator('#ns-agent').isVisible())) {
    await page.getByRole('link', { name: 'New session' }).first().click();
    await page.locator('#ns-agent').waitFor();
  }
  await page.locator('#ns-agent').selectOption(agent);
  await page.locator('#ns-title').fill(title);
  await page.getByRole('button', { name: 'Start session' }).click();
  await page.waitForURL(/#\/s\//, { timeout: WAIT });
  await page.getByRole('heading', { name: title }).waitFor({ timeout: WAIT });
}

/** send sends what the prompt box holds: Enter, or Send on a touch screen. */
async function send(page, phone) {
  if (phone) await page.locator('button.send').tap();
  else await page.keyboard.press('Enter');
}

/** typePrompt types text into the prompt box, key by key. */
async function typePrompt(page, text) {
  await page.locator('#prompt').click();
  await page.keyboard.type(text, { delay: 15 });
}

async function pickFile(page, f, phone, routed) {
  await typePrompt(page, 'Please fix the check in ');
  await page.keyboard.type('@');
  const popup = page.locator('.popup-box');
  await popup.waitFor({ state: 'visible', timeout: WAIT });
  // Empty query: the most recently modified files.
  await page.locator('.popup .opt').first().waitFor({ timeout: WAIT });
  for (const ch of f.query) await page.keyboard.type(ch, { delay: 70 });
  const first = page.locator('.popup .opt').first();
  await page.waitForFunction((file) => document.querySelector('.popup .opt .opt-path')?.textContent === file, f.file, { timeout: WAIT });
  assert.equal(await first.getAttribute('aria-selected'), 'true');
  // The match ranges are highlighted: the marked letters spell the query.
  const marked = (await first.locator('mark').allInnerTexts()).join('').toLowerCase();
  assert.equal(marked, f.query, 'highlighted letters');
  if (routed) {
    const searches = routed.sent.filter((m) => m.type === 'control.file.search');
    const ids = new Set(searches.map((m) => m.payload.query_id));
    assert.equal(ids.size, searches.length, 'a new query_id per search');
    // §16.1.1: every query_id is a UUID v4 (the master and client refuse anything else).
    const v4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    for (const id of ids) assert.match(id, v4, 'query_id is a UUID v4');
    assert.ok(searches.length >= 2, `searches sent: ${searches.length}`);
    assert.equal(searches.at(-1).payload.query, f.query);
    // An answer to an older query arriving late is ignored.
    const stale = searches[0];
    routed.last().ws.send(JSON.stringify({
      type: 'session.file.candidates', message_id: crypto.randomUUID(), parent_id: stale.message_id, session_id: stale.session_id,
      payload: { query_id: stale.payload.query_id, candidates: [{ path: 'STALE.txt', name: 'STALE.txt', directory: '' }], truncated: false },
    }));
    await page.waitForTimeout(150);
    assert.equal(await page.locator('.popup .opt', { hasText: 'STALE' }).count(), 0, 'a stale answer was shown');
  }
  await shot(page, phone ? 'phone-picker' : 'picker');
  await page.keyboard.press(phone ? 'Tab' : 'Enter');
  await popup.waitFor({ state: 'hidden', timeout: WAIT });
  await page.locator(`#prompt .chip[data-path="${f.file}"]`).waitFor({ timeout: WAIT });
  // Text typed to look like a token stays text.
  await page.keyboard.type('and keep <@file:ref_0|/etc/passwd> as typed', { delay: 5 });
}

/** streamWatch records each distinct text the newest turn shows, as it shows it. */
async function streamWatch(page) {
  await page.evaluate(() => {
    window.__seen = [];
    const list = document.querySelector('.transcript');
    const obs = new MutationObserver(() => {
      const turns = document.querySelectorAll('article.msg.agent');
      const t = turns[turns.length - 1];
      const b = t?.querySelector('.block.k-text');
      const s = b ? b.textContent : '';
      if (s && window.__seen[window.__seen.length - 1] !== s) window.__seen.push(s);
    });
    obs.observe(list, { subtree: true, childList: true, characterData: true });
  });
}

async function allow(page, tool) {
  const any = page.locator('.interaction.open').first();
  await any.waitFor({ timeout: WAIT });
  const id = await any.getAttribute('data-interaction');
  const card = page.locator(`.interaction.open[data-interaction="${id}"]`);
  assert.match(await card.innerText(), new RegExp(tool));
  await card.locator('button[data-value="allow_once"]').click();
  await card.waitFor({ state: 'detached', timeout: WAIT });
}

async function download(page, f) {
  const name = path.posix.basename(f.artifact);
  const card = page.locator('.turn-body .artifact', { hasText: name }).last();
  await card.waitFor({ timeout: WAIT });
  const meta = await card.locator('.artifact-meta').innerText();
  assert.match(meta, new RegExp(`${f.content.length} B`), meta);
  await page.waitForFunction((n) => [...document.querySelectorAll('.artifact a.download')].some((a) => a.getAttribute('href').startsWith('/v1/artifacts/') && a.download === n), name, { timeout: WAIT });
  const [dl] = await Promise.all([page.waitForEvent('download', { timeout: WAIT }), card.locator('a.download').click()]);
  assert.equal(dl.suggestedFilename(), name);
  const file = path.join(cfg.downloads, `${Date.now()}-${name}`);
  await dl.saveAs(file);
  assert.equal(await fs.readFile(file, 'utf8'), f.content, 'downloaded bytes');
}

/** flow is one whole pass through the UI, on a desktop or on a phone. */
async function flow(browser, f) {
  const phone = f.name === 'phone';
  const ctx = await browser.newContext(phone
    ? { viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1, acceptDownloads: true, colorScheme: 'dark' }
    : { viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, f.name);
  const routed = phone ? null : await routeSockets(page);
  const P = (s) => `${f.name}: ${s}`;

  if (phone) {
    await step(P('sign in with a login link'), async () => {
      const link = await control('/login');
      await page.goto(link);
      await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
      // The lists: machine, workspace, the desktop's session.
      await page.locator('.machine-name').first().waitFor();
      await page.locator('.session-link').first().waitFor();
      assert.ok(await page.locator('.sidebar').isVisible());
      await shot(page, 'phone-sessions');
      await page.getByRole('link', { name: 'New session' }).first().tap();
      await page.locator('#ns-agent').waitFor();
    });
  } else {
    await step(P('signed out, then sign in by pasting the login link'), async () => {
      await page.goto(cfg.base);
      await page.getByRole('heading', { name: 'Sign in to ferry' }).waitFor();
      await shot(page, 'signin');
      await page.locator('#login-link').fill(cfg.login);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
      await page.locator('#ns-agent option[value="builtin"]').waitFor({ state: 'attached' });
      await page.locator('.machine-name').first().waitFor();
    });
  }

  await step(P('start a session with ferry\'s agent'), () => startSession(page, phone ? 'Move the home route' : 'Fix the token check'));

  await step(P('@ picks a file by fuzzy query; Esc and deleting @ cancel'), async () => {
    if (!phone) {
      // Esc closes the picker and cancels the search; the text stays text.
      await typePrompt(page, 'mail a@b.c then @gui');
      await page.locator('.popup .opt').first().waitFor();
      await page.keyboard.press('Escape');
      await page.locator('.popup-box').waitFor({ state: 'hidden' });
      let cancels = routed.sent.filter((m) => m.type === 'control.file.search.cancel');
      let searches = routed.sent.filter((m) => m.type === 'control.file.search');
      assert.equal(cancels.at(-1)?.payload.query_id, searches.at(-1).payload.query_id, 'Esc cancels the latest query');
      assert.ok(!searches.some((m) => m.payload.query.includes('b.c')), 'an @ inside a word opened the picker');
      // Deleting the @ closes it too.
      await page.keyboard.type(' @rea');
      await page.locator('.popup .opt').first().waitFor();
      for (let i = 0; i < 4; i++) await page.keyboard.press('Backspace');
      await page.locator('.popup-box').waitFor({ state: 'hidden' });
      cancels = routed.sent.filter((m) => m.type === 'control.file.search.cancel');
      searches = routed.sent.filter((m) => m.type === 'control.file.search');
      assert.equal(cancels.at(-1)?.payload.query_id, searches.at(-1).payload.query_id, 'deleting @ cancels the latest query');
      assert.equal(await page.locator('#prompt').innerText(), 'mail a@b.c then @gui ');
      await page.keyboard.press('Control+A');
      await page.keyboard.press('Backspace');
    }
    await pickFile(page, f, phone, routed);
  });

  await step(P('send: the prompt shows the chip, typed token-like text stays text'), async () => {
    if (!phone) {
      // ferry's agent honours every prompt setting the UI offers; they
      // are in the settings sheet, which the + menu opens too.
      await (await menuItem(page, 'plus', 'Settings…')).click();
      await page.locator('#settings-dialog').waitFor();
      await page.locator('details.prompt-settings > summary').click();
      for (const k of ['max_turns', 'allowed_tools', 'denied_tools', 'json_schema']) await page.locator(`#setting-${k}`).waitFor();
      await page.locator('#setting-max_turns').fill('40');
      await closeSettings(page);
      await page.locator('#prompt').focus();
    }
    await streamWatch(page);
    await send(page, phone);
    if (!phone) {
      const sent = routed.sent.filter((m) => m.type === 'ui.prompt').at(-1);
      assert.deepEqual(sent?.payload.config_overrides, { max_turns: 40 }, 'the prompt carries its settings');
      await openSettings(page);
      await page.locator('#setting-max_turns').fill('');
      await page.locator('details.prompt-settings > summary').click();
      await closeSettings(page);
    }
    const bubble = page.locator('.msg.user .bubble').last();
    await bubble.waitFor();
    await page.waitForFunction(() => document.querySelector('.msg.user:last-of-type') !== null);
    assert.equal(await bubble.locator('.chip').count(), 1);
    assert.match(await bubble.locator('.chip').innerText(), new RegExp(f.file.replace('.', '\\.')));
    await page.locator('.msg.user .bubble', { hasText: '<@file:ref_0|/etc/passwd>' }).last().waitFor();
    assert.equal(await page.locator('#prompt').innerText(), '');
  });

  await step(P('streamed text, then a permission prompt with the diff'), async () => {
    await lastTurn(page).locator('.block.k-text', { hasText: 'first.' }).waitFor();
    const seen = await page.evaluate(() => window.__seen);
    assert.ok(seen.length >= 2 && seen.some((s) => !s.includes('first.')), `streamed in pieces: ${JSON.stringify(seen)}`);
    const card = page.locator('.interaction.open').first();
    await card.waitFor();
    await card.locator('.diff-box').waitFor();
    assert.equal(await card.locator(`table.diff.${phone ? 'unified' : 'split'}`).count(), 1, 'diff layout');
    assert.match(await card.locator(phone ? 'tr.add td.code' : 'td.code.add').first().innerText(), new RegExp(f.new.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    await page.locator('.status-pill', { hasText: 'Waiting for you' }).waitFor();
    await shot(page, phone ? 'phone-permission' : 'permission');
  });

  await step(P('answer the permissions; the Edit shows its diff'), async () => {
    await allow(page, 'Edit');
    const edit = page.locator('.tool[data-tool="Edit"]').last();
    await edit.locator('.diff-box').waitFor();
    await page.locator('.tool[data-tool="Edit"].status-ok').last().waitFor();
    await allow(page, 'Write');
  });

  await step(P('the artifact downloads with its bytes'), () => download(page, f));

  await step(P('the turn ends: Markdown, highlighted code, usage and cost'), async () => {
    await page.locator('article.msg.agent[data-state="done"]').last().waitFor();
    const md = lastTurn(page).locator('.block.k-text').last();
    await md.locator(phone ? 'li code' : 'pre code.hljs').first().waitFor();
    if (!phone) assert.ok(await md.locator('pre code.language-ts .hljs-keyword').count() > 0, 'highlighted');
    assert.match(await page.locator('.usage-total').textContent(), /tokens · \$/);
    assert.match(await lastTurn(page).locator('.usage').innerText(), /in · .* out/);
    await page.locator('.status-pill', { hasText: 'Done' }).waitFor();
    await page.locator('.transcript').evaluate((e) => { e.scrollTop = e.scrollHeight; });
    await shot(page, phone ? 'phone-session' : 'session');
  });

  if (f.deep) {
    await step(P('a tool row shows its path workspace-relative, cut from the left'), async () => {
      const row = lastTurn(page).locator('.tool[data-tool="Read"] .tool-path').filter({ has: page.locator('bdi', { hasText: /router-table\.ts$/ }) });
      await row.waitFor();
      assert.equal(await row.getAttribute('title'), f.deep, 'the full path is the title');
      const shown = await row.locator('bdi').innerText();
      assert.ok(!shown.startsWith('/') && shown.endsWith('routing/tables/router-table.ts'), `relative: ${shown}`);
      // The box is narrower than the path, and the file name's last letters
      // are inside it: the cut is on the left.
      const geo = await row.evaluate((box) => {
        const t = box.querySelector('bdi').firstChild;
        const r = document.createRange();
        r.setStart(t, t.length - 3);
        r.setEnd(t, t.length);
        const last = r.getBoundingClientRect();
        r.setStart(t, 0);
        r.setEnd(t, 1);
        const first = r.getBoundingClientRect();
        const b = box.getBoundingClientRect();
        return { over: box.scrollWidth > box.clientWidth, inside: last.left >= b.left - 1 && last.right <= b.right + 1, firstOut: first.right <= b.left + 1 };
      });
      assert.deepEqual(geo, { over: true, inside: true, firstOut: true }, 'cut on the left at phone width');
    });
  }

  await step(P('the session\'s file list'), async () => {
    await (await menuItem(page, 'session', 'Files (1)')).click();
    const dlg = page.locator('dialog[open]');
    await dlg.locator('.artifact', { hasText: path.posix.basename(f.artifact) }).waitFor();
    await dlg.getByRole('button', { name: 'Close' }).click();
  });

  await step(P('cancel a running turn'), async () => {
    await typePrompt(page, 'Analyse everything');
    await send(page, phone);
    await lastTurn(page).locator('.block.k-text', { hasText: 'analysis of everything' }).waitFor();
    await page.locator('.status-pill', { hasText: 'Running' }).waitFor();
    const stop = page.locator('button.stop');
    if (phone) await stop.tap();
    else await stop.click();
    await page.locator('article.msg.agent[data-state="cancelled"]').last().waitFor();
    await page.locator('.status-pill', { hasText: 'Cancelled' }).waitFor();
  });

  await step(P('switch to plan mode'), async () => {
    if (phone) {
      // With the slash command and its completion.
      await typePrompt(page, '/mo');
      await page.locator('.popup .opt', { hasText: '/mode' }).waitFor();
      await page.keyboard.press('Tab');
      await page.locator('.popup .opt', { hasText: 'plan' }).waitFor();
      await page.keyboard.type('p');
      await page.keyboard.press('Tab');
      assert.equal(await page.locator('#prompt').innerText(), '/mode plan');
      await page.locator('button.send').tap();
    } else {
      await openSettings(page);
      await page.locator('#mode-select').selectOption('plan');
      await closeSettings(page);
    }
    await page.locator('.note.mode', { hasText: 'Mode switched to plan' }).waitFor();
    assert.equal(await page.locator('#mode-select').inputValue(), 'plan');
    assert.equal(await page.locator('.mode-chip').innerText(), 'plan', 'the mode chip');
  });

  const expect = (p) => Array.from({ length: f.long_words }, (_, i) => `${p}${String(i + 1).padStart(2, '0')}`).join(' ');

  await step(P('reload mid-turn: the turn goes on without a gap'), async () => {
    await typePrompt(page, 'Explain at length');
    await send(page, phone);
    await lastTurn(page).locator('.block.k-text', { hasText: 'r05' }).waitFor();
    const t0 = Date.now();
    await page.reload();
    log(`reloaded in ${Date.now() - t0} ms`);
    await page.waitForFunction(() => document.querySelectorAll('article.msg.agent').length >= 3, null, { timeout: WAIT });
    log(`history back in ${Date.now() - t0} ms, the turn at ${(await turnText(page).catch(() => '')).split(' ').length} words`);
    // Back in the same session, with its history, while the turn still runs.
    const states = await page.locator('article.msg.agent').evaluateAll((els) => els.map((e) => e.dataset.state));
    assert.deepEqual(states.slice(0, 2), ['done', 'cancelled'], `history after the reload: ${states}`);
    assert.equal(states.at(-1), 'running', 'the turn was still running after the reload');
    await streamWatch(page);
    await page.locator('article.msg.agent[data-state="done"]').nth(1).waitFor();
    assert.equal(await turnText(page), expect('r'));
    const seen = await page.evaluate(() => window.__seen);
    assert.ok(seen.length >= 2, `it kept streaming after the reload: ${seen.length} updates`);
    assert.equal(await page.locator('#mode-select').inputValue(), 'plan', 'the mode after the reload');
  });

  if (f.drop) {
    await step(P('connection lost mid-turn: resumed from the last seq'), async () => {
      await typePrompt(page, 'Once more');
      await send(page, phone);
      await lastTurn(page).locator('.block.k-text', { hasText: 'd05' }).waitFor();
      const before = routed.sockets.length;
      // Every state the banner and the session's pill go through.
      await page.evaluate(() => {
        window.__states = [];
        // The pill is gone while another view shows (a later step opens the new-session form).
        const note = () => window.__states.push(`${document.querySelector('.banner').textContent} | ${document.querySelector('.status-pill')?.textContent}`);
        const obs = new MutationObserver(note);
        for (const sel of ['.banner', '.status-pill']) obs.observe(document.querySelector(sel), { subtree: true, childList: true, characterData: true, attributes: true });
      });
      await routed.last().server.close();
      await page.locator('.banner', { hasText: 'Reconnected' }).waitFor();
      const states = await page.evaluate(() => window.__states);
      assert.ok(states.some((x) => x.startsWith('Connection lost') && x.includes('resuming')), `states: ${states.join(' / ')}`);
      assert.equal(routed.sockets.length, before + 1, 'one new connection');
      const sub = routed.sent.filter((m) => m.type === 'ui.session.subscribe').at(-1);
      assert.ok(sub.payload.after_seq > 0 && sub.payload.epoch, `resubscribed from the last seq: ${JSON.stringify(sub.payload)}`);
      await page.locator('article.msg.agent[data-state="done"]').nth(2).waitFor();
      assert.equal(await turnText(page), expect('d'));
    });
    await step(P('while the master is unreachable, machines are "unknown", not online'), async () => {
      const state = page.locator('.machine .machine-state').first();
      await state.filter({ hasText: /^online$/ }).waitFor();
      routed.refuse = true;
      await routed.last().server.close();
      await state.filter({ hasText: 'unknown — reconnecting' }).waitFor();
      // Retries keep failing: it stays unknown, never "online".
      await page.waitForTimeout(1500);
      assert.equal(await state.innerText(), 'unknown — reconnecting');
      assert.equal(await page.locator('.machine .dot.on').count(), 0, 'an online dot while the master is unreachable');
      routed.refuse = false;
      await state.filter({ hasText: /^online$/ }).waitFor({ timeout: 30000 });
    });
  }

  if (!phone) {
    await step(P('compact with an instruction, /cost (the echo agent)'), async () => {
      await page.getByRole('link', { name: 'New session' }).first().click();
      await page.locator('#ns-agent').selectOption('echo');
      await page.locator('#ns-title').fill('Echo');
      await page.getByRole('button', { name: 'Start session' }).click();
      await page.getByRole('heading', { name: 'Echo' }).waitFor();
      // echo honours none of the settings the UI offers: none is shown.
      assert.ok(await page.locator('details.prompt-settings').isHidden(), 'prompt settings offered for echo');
      await typePrompt(page, 'hello there');
      await page.keyboard.press('Enter');
      await page.locator('article.msg.agent[data-state="done"]').waitFor();
      await (await menuItem(page, 'session', 'Compact…')).click();
      await page.locator('#compact-instruction').fill('keep the greetings');
      await page.locator('#compact-ratio').fill('50'); // echo aims at a ratio
      await page.locator('dialog[open]').getByRole('button', { name: 'Compact', exact: true }).click();
      await page.locator('div.note', { hasText: 'History compacted' }).waitFor();
      const sent = routed.sent.filter((m) => m.type === 'control.session.compact').at(-1);
      assert.equal(sent?.payload.instruction, 'keep the greetings');
      assert.equal(sent?.payload.target_token_ratio, 0.5);
      await typePrompt(page, '/cos');
      await page.locator('.popup .opt', { hasText: '/cost' }).waitFor();
      await page.keyboard.press('Enter'); // completes
      await page.keyboard.press('Enter'); // runs
      await page.locator('div.note', { hasText: /No usage reported yet|This session:/ }).waitFor();
    });
    await step(P('an unknown /command is not sent; a refused one stays alone, selected'), async () => {
      const prompts = () => routed.sent.filter((m) => m.type === 'ui.prompt').length;
      const before = prompts();
      const box = page.locator('#prompt');
      await typePrompt(page, '/bogus');
      await page.keyboard.press('Enter');
      await page.locator('.attach-note', { hasText: '/bogus is not a command here' }).waitFor();
      assert.equal(prompts(), before, '/bogus was sent to the agent');
      assert.equal(await box.innerText(), '/bogus');
      assert.equal(await page.evaluate(() => getSelection().toString()), '/bogus', 'the unknown command is selected');
      // What is typed next replaces it; a refused command is kept the same way.
      await page.keyboard.type('/mode nope');
      assert.equal(await box.innerText(), '/mode nope');
      await page.keyboard.press('Enter');
      await page.locator('div.note', { hasText: 'Say /mode' }).waitFor();
      assert.equal(await box.innerText(), '/mode nope');
      assert.equal(await page.evaluate(() => getSelection().toString()), '/mode nope', 'the refused command is selected');
      await page.keyboard.type('/help');
      assert.equal(await box.innerText(), '/help', 'not glued onto the refused command');
      await page.keyboard.press('Enter'); // the exact command runs at once
      await page.locator('div.note', { hasText: 'Commands: /compact' }).waitFor();
      assert.equal(await box.innerText(), '');
      assert.equal(prompts(), before, 'no command reached the agent as a prompt');
    });
    await step(P('questions of every kind, with their timeout'), () => questions(page));
    await step(P('agent text cannot inject HTML or script'), () => hostileMarkdown(page));
    await step(P('a question times out: countdown, then "Timed out → Deny"'), () => questionTimesOut(page, routed));
  }
  if (phone) {
    await step(P('the ask timeout is a session setting in the settings sheet'), async () => {
      await page.locator('.mode-chip').tap();
      const sel = page.locator('#timeout-select');
      await sel.waitFor();
      // Every setting of the sheet stays on screen with it.
      for (const c of await page.locator('#settings-dialog select:visible, #settings-dialog button:visible').all()) {
        const box = await c.boundingBox();
        assert.ok(box.x >= 0 && box.x + box.width <= 360, `${await c.evaluate((e) => e.id || e.textContent)} off screen: ${JSON.stringify(box)}`);
      }
      await sel.selectOption('300000');
      await page.locator('div.note', { hasText: 'Questions now time out after 5 min' }).waitFor();
      assert.equal(await sel.inputValue(), '300000');
      await shot(page, 'phone-timeout-setting');
      await closeSettings(page);
    });
  }
  return { ctx, page };
}

/**
 * questionTimesOut: in an echo session, the header's setting changes the
 * session's timeout; with 4 s (sent as the page would, through its own
 * socket) an "ask:" permission counts down on its card, then resolves as
 * timed out with the answer the timeout applied (deny), and the agent is
 * told so.
 */
async function questionTimesOut(page, routed) {
  const sid = sessionID(page);
  await openSettings(page);
  await page.locator('#timeout-select').selectOption('60000');
  await closeSettings(page);
  await page.locator('div.note', { hasText: 'Questions now time out after 1 min' }).waitFor();
  const sent = routed.sent.filter((m) => m.type === 'control.session.settings').at(-1);
  assert.deepEqual(sent?.payload, { permission_timeout_ms: 60000 });
  routed.last().server.send(JSON.stringify({ type: 'control.session.settings', message_id: crypto.randomUUID(), session_id: sid,
    payload: { permission_timeout_ms: 4000 } }));
  await page.locator('div.note', { hasText: 'Questions now time out after 4 s' }).waitFor();
  assert.equal(await page.locator('#timeout-select').inputValue(), '4000');
  await typePrompt(page, 'ask: may I write?');
  await page.keyboard.press('Enter');
  const card = page.locator('.interaction.open').last();
  const line = card.locator('.q-timeout');
  await line.waitFor();
  assert.match(await line.innerText(), /Answer within \d s, or it is denied\./);
  // The permission advertises deny, what the timeout applies: no button
  // presents a grant as its default.
  assert.equal(await card.locator('button.primary').count(), 0, 'a grant is shown as the default');
  const first = Number(await line.getAttribute('data-left'));
  await page.waitForFunction((n) => Number(document.querySelector('.interaction.open .q-timeout')?.dataset.left) < n, first);
  await shot(page, 'question-timeout');
  const settled = page.locator('.interaction.settled.timeout').last();
  await settled.waitFor();
  assert.match(await settled.innerText(), /Timed out.*→ Deny/s);
  await page.locator('article.msg.agent[data-state="done"]').last().waitFor();
  assert.equal(await turnText(page), 'denied');
}

/** hostileMarkdown renders hostile agent text and checks what is left of it. */
async function hostileMarkdown(page) {
  const out = await page.evaluate(async () => {
    const base = new URL('.', document.querySelector('script[type="module"]').src).href;
    const { renderMarkdown } = await import(`${base}markdown.js`);
    const el = document.createElement('div');
    document.querySelector('.transcript').appendChild(el);
    renderMarkdown(el, [
      '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=1</script>',
      '[x](javascript:window.__pwned=1) <a href="javascript:window.__pwned=1">a</a> ![i](https://example.com/t.png)',
      '<iframe src="https://example.com"></iframe> <style>body{display:none}</style> <svg onload="window.__pwned=1"></svg>',
      '',
      '`<b>code</b>` [ok](https://example.com/ok) <details open ontoggle="window.__pwned=1">d</details>',
      '',
      '```html',
      '<script>alert(1)</script>',
      '```',
    ].join('\n'));
    await new Promise((r) => setTimeout(r, 100));
    const html = el.innerHTML;
    const all = [...el.querySelectorAll('*')];
    const tags = [...new Set(all.map((e) => e.tagName.toLowerCase()))].sort();
    const attrs = [...new Set(all.flatMap((e) => [...e.attributes].map((a) => a.name)))].sort();
    const links = [...el.querySelectorAll('a')].map((a) => a.getAttribute('href'));
    el.remove();
    return { html, tags, attrs, links, pwned: !!window.__pwned };
  });
  assert.equal(out.pwned, false, 'a script ran');
  assert.deepEqual(out.tags.filter((t) => !['p', 'a', 'code', 'pre', 'span'].includes(t)), [], out.html);
  assert.deepEqual(out.attrs.filter((a) => !['href', 'target', 'rel', 'class'].includes(a)), [], out.html);
  assert.deepEqual(out.links, ['https://example.com/t.png', 'https://example.com/ok']);
  assert.match(out.html, /&lt;b&gt;code&lt;\/b&gt;/);
}

/** questions renders single, multiple and text questions and answers them. */
async function questions(page) {
  await page.evaluate(async () => {
    const base = new URL('.', document.querySelector('script[type="module"]').src).href;
    const { renderInteraction } = await import(`${base}interaction.js`);
    const mk = (req) => ({ id: req.interaction_id, req, status: 'open', seenAt: Date.now(), live: true, resolved: null, sending: false, error: '' });
    window.__answers = [];
    const respond = (it, value, text) => window.__answers.push({ id: it.id, value, text });
    const box = document.createElement('div');
    box.id = 'fixture';
    const reqs = [
      { interaction_id: 'q1', turn_id: 't', kind: 'single_select', title: 'Which database?', timeout_ms: 300000,
        options: [{ value: 'pg', label: 'PostgreSQL', description: 'the shared one' }, { value: 'lite', label: 'SQLite', description: 'a file' }] },
      { interaction_id: 'q2', turn_id: 't', kind: 'multi_select', title: 'Which checks?', default_value: 'lint', timeout_ms: 300000,
        options: [{ value: 'lint', label: 'Lint' }, { value: 'test', label: 'Tests' }, { value: 'vet', label: 'Vet' }] },
      { interaction_id: 'q3', turn_id: 't', kind: 'text_input', title: 'Anything else?', default_value: 'no' },
    ];
    for (const r of reqs) box.appendChild(renderInteraction(mk(r), respond));
    document.querySelector('.transcript').prepend(box);
  });
  const fx = page.locator('#fixture');
  assert.match(await fx.locator('.q-timeout').first().innerText(), /Answer within (5:00|4:5\d)/);
  // The card says what a timeout answers, and pre-selects that and only
  // that: q1 has no default (no option checked, unanswered), q2 takes Lint.
  assert.match(await fx.locator('[data-interaction="q1"] .q-timeout').innerText(), /or it goes unanswered, which the agent takes as a denial\./);
  assert.equal(await fx.locator('[data-interaction="q1"] input:checked').count(), 0, 'q1 pre-selects an option it has no default for');
  assert.deepEqual(await fx.locator('[data-interaction="q2"] input:checked').evaluateAll((els) => els.map((e) => e.value)), ['lint']);
  assert.match(await fx.locator('[data-interaction="q2"] .q-timeout').innerText(), /or it takes “Lint”\./);
  await fx.getByLabel('SQLite').check();
  await fx.locator('[data-interaction="q1"] button[type="submit"]').click();
  await fx.getByLabel('Tests').check();
  await fx.locator('[data-interaction="q2"] button[type="submit"]').click();
  await fx.locator('[data-interaction="q3"] textarea').fill('also run vet');
  await fx.locator('[data-interaction="q3"] button[type="submit"]').click();
  const answers = await page.evaluate(() => JSON.parse(JSON.stringify(window.__answers)));
  assert.deepEqual(answers, [
    { id: 'q1', value: 'lite' },
    { id: 'q2', value: ['lint', 'test'] },
    { id: 'q3', value: [], text: 'also run vet' },
  ]);
  await page.evaluate(() => document.getElementById('fixture').remove());
}

/**
 * historyFlow is undo and rewind on a phone (docs/ui.md): undo from an
 * edit's diff card, the Changes view, a refused undo and a refused rewind
 * (a file changed on disk after the agent's edit: the refusal names it and
 * the file stays as it is), then a rewind to before a turn that puts the
 * turn's prompt back in the box, resent. The Go side scripts the model
 * (historyScript) and checks the files and the last model request.
 */
async function historyFlow(browser) {
  const ctx = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1 });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'undo');
  const P = (s) => `undo (phone): ${s}`;
  const file = async (rel, content) => {
    const r = await fetch(`${cfg.control}/file?path=${encodeURIComponent(rel)}`, content === undefined ? {} : { method: 'POST', body: content });
    if (!r.ok) throw new Error(`file ${rel}: ${r.status} ${await r.text()}`);
    return r.text();
  };
  const tapTarget = async (loc) => {
    const box = await loc.boundingBox();
    assert.ok(box && box.height >= 44 && box.x >= 0 && box.x + box.width <= 360, `tap target ${JSON.stringify(box)}`);
    await loc.tap();
  };
  const prompt = async (text) => {
    await page.locator('#prompt').tap();
    await page.keyboard.type(text, { delay: 5 });
    await send(page, true);
  };
  const editCard = (n) => page.locator('.tool[data-tool="Edit"]').nth(n);

  await step(P('sign in and start a session'), async () => {
    await page.goto(await control('/login'));
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.getByRole('link', { name: 'New session' }).first().tap();
    await page.locator('#ns-agent').waitFor();
    await startSession(page, 'Undo and rewind');
  });
  await step(P('an edit, undone from its diff card'), async () => {
    await prompt('UNDO-A change beta');
    await allow(page, 'Edit');
    await page.locator('article.msg.agent[data-state="done"]').nth(0).waitFor();
    await tapTarget(editCard(0).getByRole('button', { name: 'Undo this edit of src/undo.txt' }));
    await editCard(0).getByText('Undone: src/undo.txt restored.').waitFor();
    await page.locator('.note.restore', { hasText: 'Undid the edit: restored src/undo.txt' }).waitFor();
    assert.equal(await file('src/undo.txt'), 'alpha\nbeta\n');
  });
  await step(P('two more turns; the Changes view lists both files with their diffs'), async () => {
    await prompt('REWIND-B change one');
    await allow(page, 'Edit');
    await page.locator('article.msg.agent[data-state="done"]').nth(1).waitFor();
    await prompt('REFUSE-C change alpha');
    await allow(page, 'Edit');
    await page.locator('article.msg.agent[data-state="done"]').nth(2).waitFor();
    await tapTarget(await menuItem(page, 'session', 'Changes'));
    const dlg = page.locator('dialog.changes-dialog');
    await dlg.locator('.change[data-path="src/undo.txt"]').waitFor();
    await dlg.locator('.change[data-path="src/rewind.txt"] .diff-box').waitFor();
    assert.match(await dlg.locator('.change[data-path="src/undo.txt"]').innerText(), /ALPHA/);
    await shot(page, 'phone-changes');
    await dlg.getByRole('button', { name: 'Close' }).tap();
  });
  await step(P('the file changed on disk: undo and rewind are refused, naming it, and change nothing'), async () => {
    await file('src/undo.txt', 'ALPHA\nbeta\nmine\n');
    await tapTarget(editCard(2).getByRole('button', { name: 'Undo this edit of src/undo.txt' }));
    const err = editCard(2).locator('.history-error');
    await err.waitFor();
    assert.match(await err.innerText(), /src\/undo\.txt changed since the agent's edit; nothing was restored/);
    assert.equal(await file('src/undo.txt'), 'ALPHA\nbeta\nmine\n');
    const turnB = page.locator('article.msg.agent').nth(1);
    await tapTarget(turnB.getByRole('button', { name: 'Rewind files to before this turn' }));
    const rerr = turnB.locator('.history-error');
    await rerr.waitFor();
    assert.match(await rerr.innerText(), /src\/undo\.txt/);
    assert.equal(await file('src/rewind.txt'), 'two\n', 'a refused rewind restored another file');
    assert.equal(await file('src/undo.txt'), 'ALPHA\nbeta\nmine\n');
    await (await menuItem(page, 'session', 'Changes')).tap();
    const dlg = page.locator('dialog.changes-dialog');
    const item = dlg.locator('.change[data-path="src/undo.txt"]');
    await item.getByText("changed since the agent's last edit").waitFor();
    await item.getByRole('button', { name: 'Undo changes to this file: src/undo.txt' }).tap();
    await item.locator('.history-error', { hasText: 'src/undo.txt' }).waitFor();
    assert.equal(await file('src/undo.txt'), 'ALPHA\nbeta\nmine\n');
    await shot(page, 'phone-undo-refused');
    await dlg.getByRole('button', { name: 'Close' }).tap();
  });
  await step(P('rewind to before a turn: files restored, its prompt back in the box, resent'), async () => {
    await file('src/undo.txt', 'ALPHA\nbeta\n');
    const turnB = page.locator('article.msg.agent').nth(1);
    await tapTarget(turnB.getByRole('button', { name: 'Rewind files to before this turn' }));
    await page.locator('.note.restore', { hasText: 'Rewound files to before the turn' }).waitFor();
    const note = await page.locator('.note.restore').last().innerText();
    assert.match(note, /src\/rewind\.txt/);
    assert.match(note, /src\/undo\.txt/);
    assert.match(note, /conversation was rewound too/);
    assert.equal(await file('src/rewind.txt'), 'one\n');
    assert.equal(await file('src/undo.txt'), 'alpha\nbeta\n');
    await page.waitForFunction(() => document.getElementById('prompt').innerText.includes('REWIND-B change one'));
    await page.locator('article.msg.agent.rewound').nth(1).waitFor();
    await shot(page, 'phone-rewound');
    await send(page, true);
    await page.locator('article.msg.agent[data-state="done"]').nth(3).waitFor();
    assert.match(await turnText(page), /Resent B\./);
  });
  await ctx.close();
}

/** mainSuite is TestBrowser's run: the desktop and phone flows, sign-in, undo. */
async function mainSuite(browser) {
  const desktop = await flow(browser, cfg.flows[0]);
  await step('desktop: the lists show the session, and a second reopens it with its history', async () => {
    const page = await desktop.ctx.newPage();
    watch(page, 'desktop, second page');
    await page.goto(cfg.base);
    const link = page.locator('.session-link', { hasText: 'Fix the token check' });
    await link.waitFor();
    await link.click();
    await page.locator('article.msg.agent[data-state="done"]').nth(2).waitFor();
    assert.equal(await page.locator('.turn-body .artifact').count(), 1);
    assert.equal(await page.locator('.tool[data-tool="Edit"] .diff-box').count(), 1);
    assert.equal(await page.locator('.msg.user .bubble .chip').count(), 1);
    assert.equal(await turnText(page), Array.from({ length: cfg.flows[0].long_words }, (_, i) => `d${String(i + 1).padStart(2, '0')}`).join(' '));
  });
  await step('desktop: another local server gets the cookie but cannot use it, and a login link it plants asks first', async () => {
    const key = await desktop.page.evaluate(() => localStorage.getItem('ferry.key'));
    assert.match(key || '', /^ferry_uikey_/, 'the key share is in the storage of ferry\'s origin');
    const session = async () => (await desktop.ctx.cookies(cfg.base)).find((c) => c.name.startsWith('ferry_session_'));
    const before = await session();
    assert.ok(before && before.httpOnly && before.sameSite === 'Strict' && before.value.startsWith('ferry_uicookie_'), `cookie ${JSON.stringify(before)}`);
    const page = await desktop.ctx.newPage();
    watch(page, 'desktop, another server');
    await page.goto(`${cfg.control}/probe?link=1`);
    assert.equal(await page.evaluate(() => localStorage.getItem('ferry.key')), null, 'another port reads no key');
    assert.equal(await control('/replay'), '401 401', 'the cookie replayed with forged headers');
    // The planted link asks, says a session would be replaced, and
    // replaces nothing until the person confirms.
    await page.locator('#go').click();
    await page.getByRole('heading', { name: 'Sign in to ferry?' }).waitFor();
    await page.locator('#replace').waitFor();
    assert.equal((await session()).value, before.value, 'opening the planted link replaced the session');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    assert.notEqual((await session()).value, before.value, 'the confirmed login did not sign in');
    await page.close();
  });
  const phone = await flow(browser, cfg.flows[1]);
  await step('signed out: a revoked sign-in shows the sign-in screen', async () => {
    const n = Number(await control('/revoke-ui'));
    assert.ok(n >= 2, `revoked ${n} UI tokens`);
    const { page } = phone;
    await page.reload();
    await page.getByRole('heading', { name: 'Signed out' }).waitFor();
    await page.getByText('Open a new login link').waitFor();
  });
  await historyFlow(browser);
  await desktop.ctx.close();
  await phone.ctx.close();
}

/**
 * filesSuite is TestBrowserFiles's run (docs/ui.md, "Attachments"): files
 * both ways. cfg.files names the script agent and the file it makes.
 */
async function filesSuite(browser) {
  const fx = cfg.files;
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'files');
  const P = (s) => `files: ${s}`;
  await step(P('sign in'), async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.locator(`#ns-agent option[value="${fx.script_agent}"]`).waitFor({ state: 'attached' });
  });
  await step(P('a script agent\'s file: a card, and a download with its exact bytes'), async () => {
    await startSessionWith(page, fx.script_agent, 'A file from a script');
    await typePrompt(page, 'Make the chart');
    await send(page, false);
    await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
    const name = path.posix.basename(fx.artifact);
    const want = await fs.readFile(fx.expected);
    const card = page.locator('.turn-body .artifact', { hasText: name });
    await card.waitFor();
    assert.match(await card.locator('.artifact-meta').innerText(), new RegExp(`^${want.length} B`));
    await page.waitForFunction((n) => [...document.querySelectorAll('.turn-body .artifact a.download')].some((a) => a.getAttribute('href').startsWith('/v1/artifacts/') && a.download === n), name);
    const [dl] = await Promise.all([page.waitForEvent('download'), card.locator('a.download').click()]);
    assert.equal(dl.suggestedFilename(), name);
    const file = path.join(cfg.downloads, `script-${name}`);
    await dl.saveAs(file);
    assert.ok((await fs.readFile(file)).equals(want), 'the downloaded bytes differ from the script\'s file');
    await page.locator('#session-menu button', { hasText: 'Files (1)' }).waitFor({ state: 'attached' });
    await shot(page, 'files-script-artifact');
  });
  await attachFlow(browser, ctx, page);
  await refusedFlow(browser);
  await ctx.close();
}

const pngBuffer = () => Buffer.from(cfg.files.png, 'base64');

/**
 * attachFlow, on a desktop with ferry's agent: an image pasted from the
 * clipboard and a text file attached with the picker, uploaded with a
 * progress bar while Send waits, a file over 20 MiB refused before any
 * upload, then the prompt with both (the Go side checks what the model
 * got); then a Read of a PNG shows the image inline in its tool card.
 */
async function attachFlow(browser, ctx, page) {
  const fx = cfg.files;
  const P = (s) => `files: ${s}`;
  const routed = await routeSockets(page);
  await step(P('paste an image and attach a text file: chips upload, Send waits'), async () => {
    await page.goto(cfg.base);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await startSessionWith(page, 'builtin', 'Attachments');
    // Hold the first upload back, to see its progress and Send waiting.
    let release;
    const held = new Promise((r) => { release = r; });
    let first = true;
    await page.route(/\/v1\/sessions\/[^/]+\/uploads$/, async (route) => {
      if (first) {
        first = false;
        await held;
      }
      await route.continue();
    });
    await page.locator('#prompt').click();
    await page.evaluate((b64) => {
      const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const dt = new DataTransfer();
      dt.items.add(new File([bytes], 'image.png', { type: 'image/png' }));
      document.getElementById('prompt').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }, fx.png);
    const pasted = page.locator('.attachment').first();
    await pasted.waitFor();
    assert.match(await pasted.getAttribute('data-name'), /^pasted-\d{8}-\d{6}\.png$/);
    assert.equal(await pasted.getAttribute('data-state'), 'uploading');
    await pasted.locator('progress').waitFor();
    assert.ok(await page.locator('button.send').isDisabled(), 'Send is enabled while a file uploads');
    await page.keyboard.type('SEE-ATTACHED what do you make of these?');
    await page.keyboard.press('Enter');
    await page.locator('.attach-note', { hasText: 'Wait for the files to upload' }).waitFor();
    assert.equal(await page.locator('.msg.user').count(), 0, 'a prompt went out while a file uploaded');
    // The attach button opens the file chooser, several files at once.
    const [chooser] = await Promise.all([page.waitForEvent('filechooser'), (await menuItem(page, 'plus', 'Attach files')).click()]);
    assert.ok(chooser.isMultiple(), 'the file chooser takes one file only');
    await chooser.setFiles([{ name: fx.text_name, mimeType: 'text/plain', buffer: Buffer.from(fx.text) }]);
    await page.locator(`.attachment[data-name="${fx.text_name}"][data-state="done"]`).waitFor();
    release();
    await pasted.and(page.locator('[data-state="done"]')).waitFor();
    assert.ok(!(await page.locator('button.send').isDisabled()), 'Send stays disabled after the uploads');
    await page.unroute(/\/v1\/sessions\/[^/]+\/uploads$/);
  });
  await step(P('a file over 20 MiB dropped on the prompt box is refused before any upload'), async () => {
    const uploads = [];
    const onReq = (r) => { if (/\/uploads$/.test(r.url())) uploads.push(r.url()); };
    page.on('request', onReq);
    // Made in the page: 20 MiB through the driver would take seconds.
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array((20 << 20) + 1)], 'huge.log', { type: 'text/plain' }));
      const form = document.querySelector('form.composer');
      form.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
      form.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    });
    const big = page.locator('.attachment[data-name="huge.log"]');
    await big.and(page.locator('[data-state="error"]')).waitFor();
    // The chip says what is wrong; the code name is only its tooltip.
    assert.match(await big.innerText(), /too large: 20 MiB; the limit is 20 MiB/);
    assert.doesNotMatch(await big.innerText(), /too_large/);
    assert.equal(await big.locator('.attach-meta').getAttribute('title'), 'too_large');
    page.off('request', onReq);
    assert.deepEqual(uploads, [], 'the oversized file was uploaded');
    await page.locator('#prompt').click();
    await page.keyboard.press('Enter');
    await page.locator('.attach-note', { hasText: 'Remove the files that could not be attached (huge.log)' }).waitFor();
    await shot(page, 'files-attachments');
    await big.getByRole('button', { name: /^Remove huge\.log/ }).click();
    await big.waitFor({ state: 'detached' });
  });
  await step(P('a file the master refuses is an error chip with its coded message'), async () => {
    // Bytes of no type ferry takes: the master sniffs them and answers 415.
    await page.locator('input.file-input[multiple]').setInputFiles([{ name: 'blob.bin', mimeType: 'application/octet-stream', buffer: Buffer.from(Array.from({ length: 256 }, (_, i) => i)) }]);
    const chip = page.locator('.attachment[data-name="blob.bin"]');
    await chip.and(page.locator('[data-state="error"]')).waitFor();
    const meta = chip.locator('.attach-meta');
    assert.match(await meta.innerText(), /not an image/);
    assert.equal(await meta.getAttribute('title'), 'unsupported');
    await chip.getByRole('button', { name: /^Remove blob\.bin/ }).click();
    await chip.waitFor({ state: 'detached' });
  });
  await step(P('send: context_files with ferry-upload: URLs, the names under the prompt'), async () => {
    await page.locator('#prompt').click();
    await page.keyboard.press('Enter');
    await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
    const sent = routed.sent.filter((m) => m.type === 'ui.prompt').at(-1);
    const cf = sent?.payload.context_files || [];
    assert.equal(cf.length, 2, JSON.stringify(sent?.payload));
    assert.match(cf[0].file_url, /^ferry-upload:upl_[A-Za-z0-9_-]+$/);
    assert.match(cf[0].file_name, /^pasted-\d{8}-\d{6}\.png$/);
    assert.equal(cf[0].mime_type, 'image/png');
    assert.match(cf[1].file_url, /^ferry-upload:upl_/);
    assert.equal(cf[1].file_name, fx.text_name);
    assert.equal(await page.locator('.attachment').count(), 0, 'the chips stayed after sending');
    const files = await page.locator('.msg.user .prompt-file').allInnerTexts();
    assert.ok(files.some((f) => f.includes(fx.text_name)) && files.some((f) => /pasted-/.test(f)), `files under the prompt: ${files}`);
    assert.match(await turnText(page), /Got the picture and the notes/);
  });
  await step(P('a Read of a PNG shows the image inline; a click opens it full size'), async () => {
    await typePrompt(page, 'READ-IMAGE show me the picture');
    await send(page, false);
    await page.locator('article.msg.agent[data-state="done"]').nth(1).waitFor();
    const img = page.locator('.tool[data-tool="Read"] .tool-images img').last();
    await img.waitFor();
    assert.match(await img.getAttribute('src'), /^data:image\/png;base64,/);
    const size = await img.evaluate((e) => [e.naturalWidth, e.naturalHeight, e.complete]);
    assert.deepEqual(size, [fx.png_width, fx.png_height, true], 'the inline image did not decode');
    await shot(page, 'files-tool-image');
    await page.locator('.tool[data-tool="Read"] button.tool-image').last().click();
    const dlg = page.locator('dialog.image-dialog[open]');
    await dlg.locator('img').waitFor();
    await dlg.getByRole('button', { name: 'Close' }).click();
    await dlg.waitFor({ state: 'detached' });
  });
}

/**
 * refusedFlow, on a phone: chips wrap; an ACP agent without image support
 * gets no camera button, an image picked for it is not attached and the
 * note says why, and a prompt with a text file goes through (the Go side
 * checks that the agent got only that prompt, without an image).
 */
async function refusedFlow(browser) {
  const fx = cfg.files;
  const ctx = await browser.newContext({ viewport: { width: 360, height: 740 }, isMobile: true, hasTouch: true, deviceScaleFactor: 1, colorScheme: 'dark' });
  ctx.setDefaultTimeout(WAIT);
  const page = await ctx.newPage();
  watch(page, 'files, phone');
  const P = (s) => `files (phone): ${s}`;
  const picker = () => page.locator('input.file-input[multiple]');
  await step(P('chips wrap on a phone'), async () => {
    await page.goto(fx.phone_login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    await page.getByRole('link', { name: 'New session' }).first().tap();
    await page.locator('#ns-agent').waitFor();
    await startSessionWith(page, fx.acp_agent, 'No images here');
    assert.ok(await offered(page, 'plus', 'Attach files'), 'no Attach files for an ACP agent, which takes text');
    await picker().setInputFiles([
      { name: 'a-rather-long-file-name-for-notes.txt', mimeType: 'text/plain', buffer: Buffer.from('one\n') },
      { name: 'another-long-name-of-a-file.md', mimeType: 'text/markdown', buffer: Buffer.from('# two\n') },
      { name: 'kept-note.txt', mimeType: 'text/plain', buffer: Buffer.from('three\n') },
    ]);
    await page.waitForFunction(() => document.querySelectorAll('.attachment[data-state="done"]').length === 3);
    const boxes = await page.locator('.attachment').evaluateAll((els) => els.map((e) => e.getBoundingClientRect().toJSON()));
    for (const b of boxes) assert.ok(b.x >= 0 && b.right <= 360, `a chip leaves the screen: ${JSON.stringify(b)}`);
    assert.ok(new Set(boxes.map((b) => Math.round(b.y))).size > 1, 'the chips did not wrap');
    for (const b of await page.locator('.attachment .attach-remove').all()) {
      const r = await b.boundingBox();
      assert.ok(r.height >= 44 && r.width >= 44, `remove button ${JSON.stringify(r)}`);
    }
    await shot(page, 'phone-attachments');
    for (const n of ['a-rather-long-file-name-for-notes.txt', 'another-long-name-of-a-file.md']) {
      await page.locator(`.attachment[data-name="${n}"] .attach-remove`).tap();
    }
    await page.waitForFunction(() => document.querySelectorAll('.attachment').length === 1);
  });
  await step(P('an ACP agent without image support: no camera, an image is not attached and the note says why'), async () => {
    // The session's agent said it takes text only (agent.capabilities).
    assert.equal(await offered(page, 'plus', 'Take a photo'), false, 'Take a photo for an agent that takes no images');
    await picker().setInputFiles([{ name: 'photo.png', mimeType: 'image/png', buffer: pngBuffer() }]);
    await page.locator('.attach-note', { hasText: 'This agent takes only text files: photo.png not attached.' }).waitFor();
    assert.equal(await page.locator('.attachment').count(), 1, 'the image was attached');
    await shot(page, 'phone-attachment-refused');
  });
  await step(P('the prompt with the text file goes through'), async () => {
    await page.locator('#prompt').tap();
    await page.keyboard.type('NO-IMAGE look at this note', { delay: 5 });
    await send(page, true);
    await page.locator('article.msg.agent[data-state="done"]').first().waitFor();
    assert.match(await turnText(page), /Text only, fine\./);
  });
  await ctx.close();
}

await main(async (browser) => {
  await fs.mkdir(cfg.downloads, { recursive: true });
  if (cfg.suite === 'files') await filesSuite(browser);
  else await mainSuite(browser);
});

// Browser test of Web Push: Playwright (playwright-core) driving headless
// Chromium against a real `ferry up` (built-in agent, fake model,
// --push-allow-loopback) and the Go test's stand-in push service.
// Headless Chromium cannot subscribe to a real push service, so the
// subscription is registered through the API with keys the Go test made;
// what the stand-in service decrypted is delivered to the real service
// worker with the DevTools protocol (ServiceWorker.deliverPushMessage).
// Started by web/push_test.go, which passes a config file.

import fs from 'node:fs/promises';
import assert from 'node:assert/strict';
import { cfg, main, problems, screenshot as shot, step, until } from './harness.mjs';

const WAIT = 20000;

// drawNotification draws a notification the service worker showed (its
// title, body and actions as registration.getNotifications() returns
// them) the way a phone's lock screen lists it: headless Chromium has no
// notification centre to photograph. Only the text comes from the worker.
async function drawNotification(ctx, n) {
  const p = await ctx.newPage();
  await p.setViewportSize({ width: 390, height: 420 });
  const icon = (await fs.readFile(new URL('../static/icons/icon-192.png', import.meta.url))).toString('base64');
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]));
  const labels = { allow: 'Allow', deny: 'Deny' };
  await p.setContent(`<!doctype html><html><body style="margin:0;font:15px system-ui,sans-serif;background:linear-gradient(#1f3b57,#0e1c2a);height:100vh">
    <div style="color:#fff;text-align:center;padding-top:48px;font-size:56px;font-weight:300">9:41</div>
    <div style="margin:40px 12px 0;background:rgba(245,245,247,.92);border-radius:18px;padding:12px 14px;box-shadow:0 4px 20px rgba(0,0,0,.35)">
      <div style="display:flex;align-items:center;gap:8px;color:#555;font-size:12px;text-transform:uppercase;letter-spacing:.04em">
        <img src="data:image/png;base64,${icon}" width="18" height="18" style="border-radius:4px" alt="">ferry · now</div>
      <div style="font-weight:600;margin-top:6px;color:#111">${esc(n.title)}</div>
      <div style="color:#222;margin-top:2px">${esc(n.body)}</div>
      <div style="display:flex;gap:8px;margin-top:10px">${n.actions.map((a) => `<span style="flex:1;text-align:center;padding:8px;border-radius:10px;background:#fff;color:#0a5f5b;font-weight:600">${esc(labels[a] || a)}</span>`).join('')}</div>
    </div></body></html>`);
  await p.waitForLoadState('load');
  await shot(p, 'phone-notification');
  await p.close();
}

async function pushed() {
  const resp = await fetch(cfg.messages);
  return resp.json();
}

await main(async (browser) => {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  ctx.setDefaultTimeout(WAIT);
  await ctx.grantPermissions(['notifications'], { origin: cfg.base });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/push service|Push API|Registration failed|AbortError|status of (400|401|404|409)/i.test(m.text())) problems.push(`console: ${m.text()}`);
  });
  let sessionURL = '';
  let sw;

  await step('sign in; the service worker controls the page; start a session', async () => {
    await page.goto(cfg.login);
    await page.locator('.conn-pill[data-state="open"]').waitFor({ state: 'attached' });
    const scope = await page.evaluate(() => navigator.serviceWorker.ready.then((r) => r.scope));
    assert.equal(scope, `${cfg.base}/`);
    sw = ctx.serviceWorkers().find((w) => w.url().endsWith('/sw.js')) || await ctx.waitForEvent('serviceworker');
    assert.equal(await sw.evaluate(() => typeof self.ferryNotificationClick), 'function');
    await page.locator('#ns-agent option[value="builtin"]').waitFor({ state: 'attached' });
    await page.locator('#ns-agent').selectOption('builtin');
    await page.locator('#ns-title').fill('Push test');
    await page.getByRole('button', { name: 'Start session' }).click();
    await page.waitForURL(/#\/s\//);
    sessionURL = page.url();
  });

  await step('the key share is copied for the service worker', async () => {
    const key = await page.evaluate(() => localStorage.getItem('ferry.key'));
    const copied = await until('the key share in IndexedDB', () => sw.evaluate(() => new Promise((resolve) => {
      const open = indexedDB.open('ferry', 1);
      open.onupgradeneeded = () => open.result.createObjectStore('kv');
      open.onsuccess = () => {
        const get = open.result.transaction('kv').objectStore('kv').get('key-share');
        get.onsuccess = () => resolve(get.result || '');
        get.onerror = () => resolve('');
      };
      open.onerror = () => resolve('');
    })), WAIT);
    assert.equal(copied, key);
  });

  await step('register the Go test\'s subscription through the API (cookie + key share)', async () => {
    const res = await page.evaluate(async (s) => {
      const r = await fetch('/v1/push/subscriptions', {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-Ferry-Key': localStorage.getItem('ferry.key') },
        body: JSON.stringify({ endpoint: s.endpoint, expirationTime: null, keys: { p256dh: s.p256dh, auth: s.auth }, label: 'e2e' }),
      });
      return { status: r.status, body: await r.json() };
    }, cfg);
    assert.equal(res.status, 201, JSON.stringify(res.body));
    const bad = await page.evaluate(async (s) => {
      const r = await fetch('/v1/push/subscriptions', {
        method: 'POST', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', 'X-Ferry-Key': localStorage.getItem('ferry.key') },
        body: JSON.stringify({ endpoint: 'https://10.0.0.1/push/x', keys: { p256dh: s.p256dh, auth: s.auth } }),
      });
      return { status: r.status, body: await r.json() };
    }, cfg);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'invalid_value');
    assert.equal(bad.body.error.field, 'endpoint');
  });

  let payload;
  await step('the agent asks a permission while the page shows another view: it is pushed', async () => {
    await page.locator('#prompt').click();
    await page.keyboard.type('fix the check');
    await page.keyboard.press('Enter');
    await page.locator('article.msg.agent').first().waitFor();
    await page.evaluate(() => { location.hash = '#/'; }); // away from the session
    const msgs = await until('a pushed permission', async () => {
      const list = await pushed();
      return list.length ? list : null;
    }, 40000);
    payload = JSON.parse(msgs[0].payload);
    assert.equal(payload.kind, 'permission');
    assert.equal(payload.tool, 'Edit');
    assert.equal(payload.file, 'auth.ts');
    assert.equal(payload.session_title, 'Push test');
    assert.ok(payload.interaction_id);
    assert.equal(cfg.base + payload.url, sessionURL);
  });

  await step('delivered to the service worker, the notification shows with Allow and Deny, and the open page notes it', async () => {
    const cdp = await ctx.newCDPSession(page);
    const regs = new Map();
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => {
      for (const r of e.registrations) regs.set(r.scopeURL, r.registrationId);
    });
    await cdp.send('ServiceWorker.enable');
    const id = await until('the registration id', () => regs.get(`${cfg.base}/`), WAIT);
    const notifications = () => sw.evaluate(() => self.registration.getNotifications().then((l) => l.map((n) => ({
      title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => a.action), data: n.data }))));
    assert.equal(await sw.evaluate(() => Notification.permission), 'granted');
    // A push the browser drops (a worker being restarted under load) is
    // delivered again, as a push service would; the tag keeps it one.
    let shown = null;
    for (let attempt = 1; !shown; attempt++) {
      await cdp.send('ServiceWorker.deliverPushMessage', { origin: cfg.base, registrationId: id, data: JSON.stringify(payload) });
      try {
        shown = await until('the notification', async () => {
          const ns = await notifications();
          return ns.length ? ns : null;
        }, 5000);
      } catch (e) {
        if (attempt >= 4) throw e;
        console.log(`      no notification after delivery ${attempt}; delivering again`);
        sw = ctx.serviceWorkers().find((w) => w.url().endsWith('/sw.js')) || sw;
      }
    }
    assert.equal(shown.length, 1);
    assert.equal(shown[0].title, 'Permission needed · Push test');
    assert.equal(shown[0].body, 'Allow Edit on auth.ts?');
    assert.deepEqual(shown[0].actions, ['allow', 'deny']);
    assert.equal(shown[0].data.interaction_id, payload.interaction_id);
    assert.equal(shown[0].tag, `ferry-i-${payload.interaction_id}`);
    // The open page shows another view: it gets an in-app note too.
    await page.locator('.toast', { hasText: 'Push test: Allow Edit on auth.ts?' }).first().waitFor();
    await shot(page, 'notification-in-app');
    await drawNotification(ctx, shown[0]);
    await page.setViewportSize({ width: 390, height: 844 });
    await page.locator('.session-state.waiting').first().waitFor();
    await shot(page, 'phone-waiting');
    await page.setViewportSize({ width: 1280, height: 800 });
  });

  await step('its Allow answers the permission: the edit runs and the turn ends', async () => {
    const res = await sw.evaluate(async () => {
      const [n] = await self.registration.getNotifications();
      return self.ferryNotificationClick(n, 'allow');
    });
    assert.equal(res.answered, 'allow', JSON.stringify(res));
    assert.equal(res.status, 200);
    assert.equal(await sw.evaluate(() => self.registration.getNotifications().then((l) => l.length)), 0, 'the notification was closed');
    await page.goto(sessionURL);
    await page.locator('article.msg.agent[data-state="done"]', { hasText: 'Fixed the comparison.' }).waitFor({ timeout: 40000 });
    await page.locator('.interaction.settled').first().waitFor();
  });

  await step('a second answer from the notification (Deny) is refused as settled and opens the session', async () => {
    const res = await sw.evaluate(async (p) => self.ferryNotificationClick({ data: p, close() {} }, 'deny'), payload);
    assert.equal(res.answered, '');
    assert.equal(res.status, 409);
    assert.equal(res.code, 'interaction_settled');
    assert.equal(res.opened, sessionURL);
  });

  await step('the Notifications switch says clearly what happened on this device', async () => {
    const sw1 = page.locator('#notify-switch');
    await sw1.waitFor();
    assert.equal(await sw1.isChecked(), false);
    await sw1.check({ force: true }).catch(() => {}); // it unchecks itself when subscribing fails
    const status = page.locator('#notify-status');
    await page.waitForFunction(() => ['on', 'error'].includes(document.querySelector('#notify-status')?.dataset.state), null, { timeout: WAIT });
    const state = await status.getAttribute('data-state');
    const text = await status.textContent();
    if (state === 'error') {
      // Headless Chromium has no push service to subscribe to.
      assert.match(text, /could not subscribe to its push service/);
      assert.match(text, /Notifications stay off on this device/);
      assert.equal(await sw1.isChecked(), false);
    } else {
      assert.match(text, /^On:/);
      assert.equal(await sw1.isChecked(), true);
      await sw1.uncheck();
      await page.locator('#notify-status[data-state="off"]').waitFor();
    }
    console.log(`      switch: ${state}: ${text}`);
  });
});

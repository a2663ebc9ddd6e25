// Headless Debian Chromium driven by puppeteer-core, for the UI tests:
// launched once per test file, one fresh browser context (no cache, no
// storage) per page, every wait bounded, screenshots and figures saved to
// the artifact directory, and the browser killed on the way out whatever
// happened.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { within } from '../../../clients/node/test_support/env.js';

export const UI_TEST_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const REPO = path.resolve(UI_TEST_DIR, '..', '..');

export const CHROMIUM = process.env.UNDERSTUDY_CHROMIUM || '/usr/bin/chromium';

// Where screenshots and figures go: $UNDERSTUDY_ARTIFACTS, else
// build/test-artifacts/ui (gitignored with the rest of build/).
export const ARTIFACTS = process.env.UNDERSTUDY_ARTIFACTS || path.join(REPO, 'build', 'test-artifacts', 'ui');

export const WAIT_MS = 10000;

async function puppeteer() {
  const dir = path.join(UI_TEST_DIR, 'node_modules', 'puppeteer-core');
  if (!fs.existsSync(dir)) {
    throw new Error(`tests/ui: npm dependency "puppeteer-core" is not installed in ${path.dirname(dir)}; ` +
      'run scripts/setup (it runs `npm ci` in tests/ui from the committed lockfile)');
  }
  return (await import('puppeteer-core')).default;
}

const launched = new Set();
process.on('exit', () => {
  for (const child of launched) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
});

// `promise`, or a rejection naming `what` after `ms` (the clients' tests' own).
export { within };

export class Browser {
  static async launch() {
    if (!fs.existsSync(CHROMIUM)) {
      throw new Error(`Chromium not found at ${CHROMIUM}: install Debian's chromium (scripts/setup) or set UNDERSTUDY_CHROMIUM`);
    }
    const pptr = await puppeteer();
    const b = new Browser();
    b.browser = await within(30000, `launching ${CHROMIUM}`, pptr.launch({
      executablePath: CHROMIUM,
      headless: true,
      // The sandbox needs user namespaces, which containers and root lack;
      // the browser only ever loads the page under test from loopback.
      args: ['--no-sandbox', '--disable-dev-shm-usage', '--disable-gpu', '--no-first-run', '--no-default-browser-check',
        '--disable-extensions', '--disable-background-networking', '--disable-component-update'],
      protocolTimeout: 30000,
      timeout: 30000,
    }));
    b.process = b.browser.process();
    if (b.process) launched.add(b.process);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    return b;
  }

  // A page in a fresh context, 1440x900, that records console errors,
  // page errors, failed requests and every URL it requested.
  async page({ width = 1440, height = 900 } = {}) {
    const context = await this.browser.createBrowserContext();
    const page = await context.newPage();
    page.setDefaultTimeout(WAIT_MS);
    page.setDefaultNavigationTimeout(WAIT_MS);
    await page.setViewport({ width, height });
    const problems = [];
    const urls = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('requestfailed', (r) => {
      // EventSource connections are aborted when the page moves on.
      if (!/\/watch\?/.test(r.url())) problems.push(`request failed: ${r.url()} ${r.failure()?.errorText}`);
    });
    page.on('request', (r) => urls.push(r.url()));
    page.problems = problems;
    page.urls = urls;
    page.closeAll = () => within(10000, 'closing a browser context', context.close()).catch(() => {});
    return page;
  }

  async screenshot(page, name) {
    const file = path.join(ARTIFACTS, `${name}.png`);
    await within(15000, `screenshot ${name}`, page.screenshot({ path: file, fullPage: false }));
    return file;
  }

  async close() {
    try {
      await within(10000, 'closing Chromium', this.browser.close());
    } catch {
      this.process?.kill('SIGKILL');
    }
    if (this.process) launched.delete(this.process);
  }
}

// Writes `name` into the artifact directory.
export function saveArtifact(name, text) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, name);
  fs.writeFileSync(file, text);
  return file;
}

// Opens `base` + /ui/ + hash and waits for `selector`.
export async function open(page, base, hash, selector) {
  await page.goto(`${base}/ui/${hash}`, { waitUntil: 'domcontentloaded' });
  if (selector) await page.waitForSelector(selector, { timeout: WAIT_MS });
}

// The text of the first element matching `selector`, or null.
export function textOf(page, selector) {
  return page.$eval(selector, (el) => el.textContent).catch(() => null);
}

// Waits until fn (evaluated in the page with args) returns truthy.
export function waitInPage(page, fn, args = [], what = 'a condition in the page', timeout = WAIT_MS) {
  return page.waitForFunction(fn, { timeout, polling: 'mutation' }, ...args).catch((e) => {
    throw new Error(`timed out after ${timeout} ms waiting for ${what}: ${e.message}`);
  });
}

// Drives VS Code (code-server in headless Chromium) as a person would:
// opens a patch config of the demo project, types a misspelt patch target,
// waits for patchgen's squiggle, opens the hover on it and takes a
// screenshot. Run by scripts/vscode-screenshot.sh, which starts code-server
// with the patchgen .vsix installed.
//
// usage: node vscode-drive.js URL CONFIG_PATH OLD NEW OUT.png
//   URL          code-server's URL with ?folder=<the project>
//   CONFIG_PATH  the config file, relative to the folder (typed into Quick Open)
//   OLD, NEW     the target string in the config and its misspelling
// env: CHROMIUM (default /usr/bin/chromium), NODE_PATH for puppeteer-core
// Prints what it saw; exits 1 when the squiggle or the hover does not come.
"use strict";
const fs = require("fs");
const path = require("path");
const puppeteer = require("puppeteer-core");

const [url, configRel, oldTarget, newTarget, out] = process.argv.slice(2);
if (!out) {
  console.error("usage: node vscode-drive.js URL CONFIG_PATH OLD NEW OUT.png");
  process.exit(2);
}
const folder = new URL(url).searchParams.get("folder");
const text = fs.readFileSync(path.join(folder, configRel), "utf8").split("\n");
const row = text.findIndex((l) => l.includes(`"${oldTarget}"`));
if (row < 0) {
  console.error(`"${oldTarget}" is not in ${configRel}`);
  process.exit(1);
}
// The column of the method name inside the target string (1-based).
const dot = oldTarget.lastIndexOf(".");
const col = text[row].indexOf(`"${oldTarget}"`) + 1 + dot + 2;
const word = oldTarget.slice(dot + 1);
const misspelt = newTarget.slice(newTarget.lastIndexOf(".") + 1);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function until(what, fn, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await fn();
    if (v) return v;
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what}`);
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--window-size=1400,900"],
    defaultViewport: { width: 1400, height: 900 },
  });
  let code = 0;
  const page = await browser.newPage();
  try {
    await page.goto(url, { waitUntil: "domcontentloaded", timeout: 120000 });
    await page.waitForSelector(".monaco-workbench", { timeout: 120000 });
    await sleep(3000);
    // Quick Open the config.
    await page.keyboard.down("Control");
    await page.keyboard.press("KeyP");
    await page.keyboard.up("Control");
    await page.waitForSelector(".quick-input-widget input", { visible: true, timeout: 30000 });
    await page.keyboard.type(path.basename(configRel), { delay: 20 });
    await page.waitForSelector(".quick-input-list .monaco-list-row", { visible: true, timeout: 30000 });
    await sleep(1000);
    await page.keyboard.press("Enter");
    await page.waitForSelector(".monaco-editor .view-lines", { visible: true, timeout: 30000 });
    await sleep(2000);
    // Go to the method name in the target string, select it, type the misspelling.
    await page.keyboard.down("Control");
    await page.keyboard.press("KeyG");
    await page.keyboard.up("Control");
    await page.waitForSelector(".quick-input-widget input", { visible: true, timeout: 30000 });
    await page.keyboard.type(`${row + 1}:${col}`, { delay: 20 });
    await page.keyboard.press("Enter");
    await sleep(500);
    await page.keyboard.down("Shift");
    for (let i = 0; i < word.length; i++) await page.keyboard.press("ArrowRight");
    await page.keyboard.up("Shift");
    await page.keyboard.type(misspelt, { delay: 60 });
    console.log(`typed ${newTarget} at ${configRel}:${row + 1}:${col}`);
    // patchgen's squiggle under the target.
    await until("patchgen's squiggle", () => page.$(".monaco-editor .squiggly-error, .monaco-editor .squiggly-warning"), 60000);
    console.log("squiggle: yes");
    // The hover at the cursor (Ctrl+K Ctrl+I), over the misspelt name.
    await page.keyboard.press("ArrowLeft");
    await page.keyboard.down("Control");
    await page.keyboard.press("KeyK");
    await page.keyboard.press("KeyI");
    await page.keyboard.up("Control");
    const hover = await until(
      "the hover",
      async () => {
        const el = await page.$(".monaco-hover:not(.hidden) .monaco-hover-content, .monaco-hover-content");
        if (!el) return null;
        const t = await page.evaluate((e) => e.innerText, el);
        return t && t.trim() ? t : null;
      },
      30000
    );
    console.log("hover: " + hover.replace(/\s+/g, " ").slice(0, 300));
    await sleep(500);
  } catch (e) {
    console.error("FAIL: " + e.message);
    code = 1;
  }
  await page.screenshot({ path: out });
  console.log(`screenshot: ${out}`);
  await browser.close();
  process.exit(code);
})();
